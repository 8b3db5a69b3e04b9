"""banditd.client: a small Python client for the banditd HTTP API (stdlib only).
(It was the one-module banditd_client, which still re-exports it.)

    from banditd import Client
    c = Client("http://127.0.0.1:8080", token)
    study = c.create_study("demo", [{"name": "x", "type": "float", "low": 0, "high": 1}], "random")
    for t in c.suggest(study["id"], worker="w1")["trials"]:
        c.complete(t["id"], value=(t["config"]["x"] - 0.3) ** 2)

Every method returns the decoded JSON answer; an error answer raises BanditdError.
Each thread gets its own kept-alive connection, so one Client may be shared by
threads; close() (or a with block) closes them all. Every POST and DELETE carries an Idempotency-Key (a fresh uuid4 per
call unless one is given), so a request that failed on the wire (connection
refused or reset, timeout) or got 503 is sent again with the same key: the
daemon acts once and a retried suggest returns the same trials.
"""

import http.client
import json
import random
import threading
import time
import urllib.parse
import uuid

__all__ = ["Client", "BanditdError", "read_token"]

_MISSING = object()
_RETRYABLE = (OSError, http.client.HTTPException)  # socket.timeout and ConnectionError are OSErrors


class BanditdError(Exception):
    """An error answer: HTTP status, error code ("not_found", ...), message, field (or None)."""

    def __init__(self, status, code, message, field=None):
        super().__init__(status, code, message, field)
        self.status = status
        self.code = code
        self.message = message
        self.field = field

    def __str__(self):
        where = " (field %s)" % self.field if self.field else ""
        return "HTTP %d %s: %s%s" % (self.status, self.code, self.message, where)


def read_token(path):
    """Returns the token stored in a file (such as <db>.admin-token), stripped."""
    with open(path) as f:
        token = f.read().strip()
    if not token:
        raise ValueError("token file %s is empty" % path)
    return token


class Client:
    """A banditd API client. url: "http://host:port" (a path prefix is kept);
    retries: how many times a request is re-sent after a connection error or 503."""

    def __init__(self, url, token, timeout=30.0, retries=5, backoff=0.2, max_backoff=5.0):
        u = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if u.scheme not in ("http", "https"):
            raise ValueError("url must be http:// or https://: %r" % url)
        self.scheme = u.scheme
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns = []  # every thread's connection, for close()

    # ---- transport ----

    def close(self):
        """Closes the connections of all threads; the client reconnects if used again."""
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._local.conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout)
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def _drop(self):
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)

    def _send(self, method, path, data, headers):
        """One request on this thread's connection; returns (status, bytes)."""
        conn = self._conn()
        try:
            conn.request(method, self.prefix + path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        except BaseException:
            self._drop()
            raise
        if resp.will_close:
            self._drop()
        return resp.status, payload

    def request(self, method, path, body=None, idempotency_key=None, query=None):
        """Sends a request, retrying on connection errors and 503; returns the decoded
        JSON answer or raises BanditdError (or the last OSError/HTTPException)."""
        if query:
            path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        headers = {"Accept": "application/json"}
        if self.token is not None:
            headers["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = json.dumps(body, allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = "0"
        if method in ("POST", "DELETE"):
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        delay = self.backoff
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                status, payload = self._send(method, path, data, headers)
            except _RETRYABLE:
                if last:
                    raise
                # A kept-alive connection closed by the server fails at once: retry without waiting.
                if attempt > 0:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, self.max_backoff)
                continue
            if status == 503 and not last:
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, self.max_backoff)
                continue
            return _answer(status, payload)
        raise AssertionError("unreachable")

    # ---- studies ----

    def create_study(self, name, parameters, scheduler, options=None, objective=None, resource=None,
                     seed=None, lease_seconds=None, idempotency_key=None, **extra):
        """Creates a study; scheduler is a name ("hyperband") or {"name", "options"}."""
        if isinstance(scheduler, str):
            scheduler = {"name": scheduler, "options": options or {}}
        elif options is not None:
            raise ValueError("give options inside the scheduler dict or with a scheduler name, not both")
        body = {"name": name, "parameters": parameters, "scheduler": scheduler}
        for k, v in (("objective", objective), ("resource", resource), ("seed", seed),
                     ("lease_seconds", lease_seconds)):
            if v is not None:
                body[k] = v
        body.update(extra)
        return self.request("POST", "/v1/studies", body, idempotency_key)

    def get_study(self, study_id):
        return self.request("GET", "/v1/studies/%d" % study_id)

    def list_studies(self):
        """Returns the list of the caller's studies."""
        return self.request("GET", "/v1/studies")["studies"]

    def delete_study(self, study_id, idempotency_key=None):
        return self.request("DELETE", "/v1/studies/%d" % study_id, None, idempotency_key)

    # ---- trials ----

    def suggest(self, study_id, worker=None, count=None, idempotency_key=None):
        """Returns {"trials": [...]} plus "retry_after_ms" (nothing to do now) or "done"."""
        body = {}
        if worker is not None:
            body["worker"] = worker
        if count is not None:
            body["count"] = count
        return self.request("POST", "/v1/studies/%d/suggest" % study_id, body, idempotency_key)

    def measure(self, trial_id, step, value, elapsed_seconds=None, idempotency_key=None):
        """Reports an intermediate value; returns {"action": "continue"|"stop", "reason"?}."""
        body = {"step": step, "value": value}
        if elapsed_seconds is not None:
            body["elapsed_seconds"] = elapsed_seconds
        return self.request("POST", "/v1/trials/%d/measurements" % trial_id, body, idempotency_key)

    def complete(self, trial_id, value=_MISSING, status=None, runtime=None, elapsed_seconds=None,
                 reason=None, idempotency_key=None):
        """Completes a trial with value (None: diverged, give a reason) or status ("timeout")."""
        body = {}
        if value is not _MISSING:
            body["value"] = value
        for k, v in (("status", status), ("runtime", runtime), ("elapsed_seconds", elapsed_seconds),
                     ("reason", reason)):
            if v is not None:
                body[k] = v
        return self.request("POST", "/v1/trials/%d/complete" % trial_id, body, idempotency_key)

    def fail(self, trial_id, reason=None, idempotency_key=None):
        body = {} if reason is None else {"reason": reason}
        return self.request("POST", "/v1/trials/%d/fail" % trial_id, body, idempotency_key)

    def heartbeat(self, trial_id, idempotency_key=None):
        """Renews the trial's lease; returns {"lease_expires_at": t}."""
        return self.request("POST", "/v1/trials/%d/heartbeat" % trial_id, {}, idempotency_key)

    def get_trial(self, trial_id):
        """Returns the trial with its "measurements"."""
        return self.request("GET", "/v1/trials/%d" % trial_id)

    def list_trials(self, study_id, state=None, limit=100):
        """Yields the study's trials (optionally of one state), fetching page after page."""
        after = 0
        while True:
            page = self.request("GET", "/v1/studies/%d/trials" % study_id,
                                query={"state": state, "after": after, "limit": limit})
            yield from page["trials"]
            nxt = page.get("next_after")
            if nxt is None or not page["trials"]:
                return
            if nxt <= after:
                raise BanditdError(200, "internal", "next_after %r does not advance past %d" % (nxt, after))
            after = nxt

    # ---- users and tokens ----

    def me(self):
        return self.request("GET", "/v1/me")

    def create_user(self, name, admin=False, idempotency_key=None):
        """Creates a user (admin only); returns {"id", "name", "admin", "created_at"}."""
        return self.request("POST", "/v1/users", {"name": name, "admin": admin}, idempotency_key)

    def create_token(self, user, idempotency_key=None):
        """Returns {"token", "token_id"} for a new token of user (admin or that user)."""
        return self.request("POST", "/v1/users/%s/tokens" % urllib.parse.quote(user, safe=""), None,
                            idempotency_key)

    def revoke_token(self, token_id, idempotency_key=None):
        return self.request("DELETE", "/v1/tokens/%d" % token_id, None, idempotency_key)

    def healthz(self):
        return self.request("GET", "/healthz")


def _answer(status, payload):
    """Decodes a response body; raises BanditdError unless status is 2xx."""
    text = payload.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        doc = None
    if 200 <= status < 300:
        if doc is None and text:
            raise BanditdError(status, "bad_response", "the answer is not JSON: %.200s" % text)
        return doc
    err = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(err, dict):
        raise BanditdError(status, err.get("code") or "http_%d" % status, err.get("message") or "",
                           err.get("field"))
    raise BanditdError(status, "http_%d" % status, text[:200] or http.client.responses.get(status, ""))

