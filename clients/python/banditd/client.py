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

429 (busy: the study's queue is full, or the user has too many costly
requests at once) means the daemon did not act: the request is sent again
with the same key after max(Retry-After, backoff) seconds (backoff 0.25 s
doubling, up to 10% jitter, each wait at most 30 s) while the waits fit in
retry_429_seconds (120 s; 0: never); then the 429 is raised. Other errors,
403 quota_exceeded included, are raised at once.
"""

import email.utils
import http.client
import itertools
import json
import math
import random
import threading
import time
import urllib.parse
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from banditd.errors import BanditdError
from banditd.optimize import Study

__all__ = ["Client", "BanditdError", "read_token"]

_MISSING = object()
_RETRYABLE = (OSError, http.client.HTTPException)  # socket.timeout and ConnectionError are OSErrors
_BUSY_FIRST_WAIT = 0.25  # seconds: the first wait after a 429 without a longer Retry-After
_BUSY_MAX_WAIT = 30.0  # seconds: no single wait after a 429 is longer, whatever Retry-After says


def read_token(path: str) -> str:
    """Returns the token stored in a file (such as <db>.admin-token), stripped."""
    with open(path) as f:
        token = f.read().strip()
    if not token:
        raise ValueError("token file %s is empty" % path)
    return token


class Client:
    """A banditd API client. url: "http://host:port" (a path prefix is kept);
    retries: how many times a request is re-sent after a connection error or 503;
    retry_429_seconds: how long, in all, a request may wait for a busy (429)
    daemon before the 429 is raised (0: raise it at once)."""

    def __init__(self, url: str, token: Optional[str], timeout: float = 30.0, retries: int = 5,
                 backoff: float = 0.2, max_backoff: float = 5.0, retry_429_seconds: float = 120.0) -> None:
        u = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if u.scheme not in ("http", "https"):
            raise ValueError("url must be http:// or https://: %r" % url)
        if not (isinstance(retry_429_seconds, (int, float)) and math.isfinite(retry_429_seconds)
                and retry_429_seconds >= 0):
            raise ValueError("retry_429_seconds must be a finite number >= 0: %r" % (retry_429_seconds,))
        self.scheme = u.scheme
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.retry_429_seconds = float(retry_429_seconds)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns = []  # every thread's connection, for close()

    # ---- transport ----

    def close(self) -> None:
        """Closes the connections of all threads; the client reconnects if used again."""
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._local.conn = None

    def close_thread(self) -> None:
        """Closes the calling thread's connection only. A thread that ends should
        call it, or its socket stays open until close()."""
        self._drop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
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

    def _send(self, method: str, path: str, data: Optional[bytes],
              headers: Dict[str, str]) -> Tuple[int, bytes, Optional[str]]:
        """One request on this thread's connection; returns (status, bytes, Retry-After)."""
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
        return resp.status, payload, resp.getheader("Retry-After")

    def request(self, method: str, path: str, body: Any = None, idempotency_key: Optional[str] = None,
                query: Optional[Dict[str, Any]] = None) -> Any:
        """Sends a request, retrying on connection errors, 503 and 429; returns the
        decoded JSON answer or raises BanditdError (or the last OSError/HTTPException)."""
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
        if method in ("POST", "DELETE", "PATCH"):
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        return _answer(*self._retrying(lambda: self._send(method, path, data, headers)))

    def _retrying(self, send: Callable[[], Tuple[int, Any, Optional[str]]]) -> Tuple[int, Any]:
        """The one retry loop: calls send() -> (status, payload, Retry-After) again
        after a connection error or 503 (at most self.retries re-sends) and after a
        429 (while the waits fit in self.retry_429_seconds); returns the last
        (status, payload). send() must repeat the same request (same key)."""
        delay = self.backoff
        busy_delay, busy_left = _BUSY_FIRST_WAIT, self.retry_429_seconds
        resends = 0
        for attempt in itertools.count():
            last = resends >= self.retries
            try:
                status, payload, retry_after = send()
            except _RETRYABLE:
                if last:
                    raise
                # A kept-alive connection closed by the server fails at once: retry without waiting.
                if attempt > 0:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, self.max_backoff)
                resends += 1
                continue
            if status == 503 and not last:
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, self.max_backoff)
                resends += 1
                continue
            if status == 429:
                wait = _busy_wait(retry_after, busy_delay, busy_left)
                if wait is not None:
                    time.sleep(wait)
                    busy_left -= wait
                    busy_delay = min(busy_delay * 2, _BUSY_MAX_WAIT)
                    continue
            return status, payload
        raise AssertionError("unreachable")

    # ---- studies ----

    def create_study(self, name: str, parameters: List[Dict[str, Any]], scheduler: Union[str, Dict[str, Any]],
                     options: Optional[Dict[str, Any]] = None, objective: Optional[Dict[str, Any]] = None,
                     resource: Optional[Dict[str, Any]] = None, seed: Optional[int] = None,
                     lease_seconds: Optional[float] = None, idempotency_key: Optional[str] = None,
                     metadata: Optional[Dict[str, Any]] = None, **extra: Any) -> Dict[str, Any]:
        """Creates a study; scheduler is a name ("hyperband") or {"name", "options"}.
        metadata: the study's own notes (a dict; not part of its definition)."""
        if isinstance(scheduler, str):
            scheduler = {"name": scheduler, "options": options or {}}
        elif options is not None:
            raise ValueError("give options inside the scheduler dict or with a scheduler name, not both")
        body = {"name": name, "parameters": parameters, "scheduler": scheduler}
        for k, v in (("objective", objective), ("resource", resource), ("seed", seed),
                     ("lease_seconds", lease_seconds), ("metadata", metadata)):
            if v is not None:
                body[k] = v
        body.update(extra)
        return self.request("POST", "/v1/studies", body, idempotency_key)

    def get_study(self, study_id: int) -> Dict[str, Any]:
        """Returns the study (trial counts, incumbent, state)."""
        return self.request("GET", "/v1/studies/%d" % study_id)

    def list_studies(self, name: Optional[str] = None, limit: int = 100) -> List[Dict[str, Any]]:
        """Returns every study of the caller (only those named name, when given),
        in id order, fetching page after page of limit (1..1000) studies."""
        out: List[Dict[str, Any]] = []
        after = 0
        while True:
            page = self.request("GET", "/v1/studies", query={"after": after, "limit": limit, "name": name})
            out.extend(page["studies"])
            nxt = page.get("next_after")
            if nxt is None or not page["studies"]:
                return out
            if nxt <= after:
                raise BanditdError(200, "internal", "next_after %r does not advance past %d" % (nxt, after))
            after = nxt

    def delete_study(self, study_id: int, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Deletes the study with its trials; returns {"deleted": true, "id"}."""
        return self.request("DELETE", "/v1/studies/%d" % study_id, None, idempotency_key)

    def pause_study(self, study_id: int, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Pauses the study: suggest hands out nothing (answers "paused": true)
        until resume_study; running trials may still report. Returns the study."""
        return self.request("POST", "/v1/studies/%d/pause" % study_id, {}, idempotency_key)

    def resume_study(self, study_id: int, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Resumes a paused study; returns the study."""
        return self.request("POST", "/v1/studies/%d/resume" % study_id, {}, idempotency_key)

    def set_study_metadata(self, study_id: int, metadata: Dict[str, Any],
                           idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Merges metadata into the study's (a None value removes its key);
        returns the study, with the merged "metadata"."""
        return self.request("PATCH", "/v1/studies/%d" % study_id, {"metadata": metadata}, idempotency_key)

    def study(self, name: Optional[str] = None, parameters: Optional[List[Dict[str, Any]]] = None,
              scheduler: Union[str, Dict[str, Any], None] = None, study_id: Optional[int] = None,
              if_exists: Optional[str] = None, **kwargs: Any) -> Study:
        """Returns a banditd.Study for the optimize loop: the study study_id when
        given, else a new one (create_study's arguments); if_exists="load" loads
        the caller's study of that name instead when it exists."""
        if study_id is not None:
            return Study.load(self, study_id)
        if name is None or parameters is None or scheduler is None:
            raise ValueError("give study_id, or name, parameters and scheduler to create a study")
        return Study.create(self, name, parameters, scheduler, if_exists=if_exists, **kwargs)

    # ---- trials ----

    def suggest(self, study_id: int, worker: Optional[str] = None, count: Optional[int] = None,
                idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Returns {"trials": [...]} plus "retry_after_ms" (nothing to do now) or "done"."""
        body = {}
        if worker is not None:
            body["worker"] = worker
        if count is not None:
            body["count"] = count
        return self.request("POST", "/v1/studies/%d/suggest" % study_id, body, idempotency_key)

    def enqueue_trial(self, study_id: int, config: Dict[str, Any],
                      idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Queues config for the study's next suggest (Optuna's enqueue_trial): a later
        suggest hands it out in place of a fresh config, at the budget the scheduler
        chooses. Returns {"state": "enqueued", "config", "position"}."""
        return self.request("POST", "/v1/studies/%d/trials" % study_id, {"config": config}, idempotency_key)

    def add_trial(self, study_id: int, config: Dict[str, Any], value: float, budget: Optional[float] = None,
                  idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Adds a completed trial with a known value (a warm start, Optuna's add_trial),
        measured at budget (default: resource.max). Returns the trial."""
        body: Dict[str, Any] = {"config": config, "value": value}
        if budget is not None:
            body["budget"] = budget
        return self.request("POST", "/v1/studies/%d/trials" % study_id, body, idempotency_key)

    def measure(self, trial_id: int, step: float, value: Any = _MISSING, elapsed_seconds: Optional[float] = None,
                idempotency_key: Optional[str] = None, values: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
        """Reports an intermediate value (values: {metric: value} of every objective, in
        a study with several); returns {"action": "continue"|"stop", "reason"?}."""
        body: Dict[str, Any] = {"step": step}
        if value is not _MISSING:
            body["value"] = value
        if values is not None:
            body["values"] = values
        if elapsed_seconds is not None:
            body["elapsed_seconds"] = elapsed_seconds
        return self.request("POST", "/v1/trials/%d/measurements" % trial_id, body, idempotency_key)

    def complete(self, trial_id: int, value: Any = _MISSING, status: Optional[str] = None,
                 runtime: Optional[float] = None, elapsed_seconds: Optional[float] = None,
                 reason: Optional[str] = None, idempotency_key: Optional[str] = None,
                 user_attrs: Optional[Dict[str, Any]] = None,
                 values: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
        """Completes a trial with value (None: diverged, give a reason) or status ("timeout");
        values: {metric: value} of every objective and constraint of a study with several
        objectives or with constraints (value may then stand for a lone objective's);
        user_attrs are merged into the trial's in the same request."""
        body = {}
        if value is not _MISSING:
            body["value"] = value
        for k, v in (("status", status), ("runtime", runtime), ("elapsed_seconds", elapsed_seconds),
                     ("reason", reason), ("user_attrs", user_attrs), ("values", values)):
            if v is not None:
                body[k] = v
        return self.request("POST", "/v1/trials/%d/complete" % trial_id, body, idempotency_key)

    def fail(self, trial_id: int, reason: Optional[str] = None,
             idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Fails a running trial (a crash, a bad config); returns the trial."""
        body = {} if reason is None else {"reason": reason}
        return self.request("POST", "/v1/trials/%d/fail" % trial_id, body, idempotency_key)

    def heartbeat(self, trial_id: int, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Renews the trial's lease; returns {"lease_expires_at": t}."""
        return self.request("POST", "/v1/trials/%d/heartbeat" % trial_id, {}, idempotency_key)

    def set_trial_user_attrs(self, trial_id: int, attrs: Dict[str, Any],
                             idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Merges attrs into the trial's user_attrs (a None value removes its
        key), in any state of the trial; returns the trial."""
        return self.request("PATCH", "/v1/trials/%d" % trial_id, {"user_attrs": attrs}, idempotency_key)

    def get_trial(self, trial_id: int) -> Dict[str, Any]:
        """Returns the trial with its "measurements"."""
        return self.request("GET", "/v1/trials/%d" % trial_id)

    def list_trials(self, study_id: int, state: Optional[str] = None, limit: int = 100,
                    measurements: bool = False, instance: Optional[int] = None) -> Iterator[Dict[str, Any]]:
        """Yields the study's trials in id order (optionally of one state or on one
        instance), fetching page after page of up to limit (1..1000); with
        measurements=True each trial carries its "measurements"."""
        after = 0
        include = "measurements" if measurements else None
        while True:
            page = self.request("GET", "/v1/studies/%d/trials" % study_id,
                                query={"state": state, "after": after, "limit": limit, "include": include,
                                       "instance": instance})
            yield from page["trials"]
            nxt = page.get("next_after")
            if nxt is None or not page["trials"]:
                return
            if nxt <= after:
                raise BanditdError(200, "internal", "next_after %r does not advance past %d" % (nxt, after))
            after = nxt

    def best_trials(self, study_id: int, limit: int = 10, measurements: bool = False) -> List[Dict[str, Any]]:
        """The study's limit (1..1000) best completed trials, best first by its goal."""
        return self.request("GET", "/v1/studies/%d/trials" % study_id,
                            query={"order": "best", "limit": limit,
                                   "include": "measurements" if measurements else None})["trials"]

    def history(self, study_id: int, points: int = 500) -> Dict[str, Any]:
        """The best value over time and resource: {"best": [{trial_id, finished_at,
        elapsed_seconds, resource, value}], "completed", "resource_total"}, at most
        points (2..2000) points."""
        return self.request("GET", "/v1/studies/%d/history" % study_id, query={"points": points})

    def export_csv(self, study_id: int, sink: Any, state: Optional[str] = None) -> int:
        """Streams the study's CSV export (GET /v1/studies/{id}/trials.csv: one row
        per trial, parameters as params_<name> columns) into sink.write (bytes);
        returns the bytes written. An error answer raises BanditdError; it is
        retried as request() retries, but never once a byte was written."""
        path = "/v1/studies/%d/trials.csv" % study_id
        if state is not None:
            path += "?" + urllib.parse.urlencode({"state": state})
        headers = {"Accept": "text/csv"}
        if self.token is not None:
            headers["Authorization"] = "Bearer " + self.token
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        conns = []  # its own, one per attempt: the answer is read piece by piece

        def send() -> Tuple[int, Any, Optional[str]]:
            conn = cls(self.host, self.port, timeout=self.timeout)
            conns.append(conn)
            conn.request("GET", self.prefix + path, headers=headers)
            r = conn.getresponse()
            if r.status == 200:
                return r.status, r, None  # streamed below, outside the retry loop
            return r.status, r.read(1 << 20), r.getheader("Retry-After")

        try:
            status, resp = self._retrying(send)
            if status != 200:
                _answer(status, resp)  # raises for an error answer
                raise BanditdError(status, "bad_response", "expected 200 with the CSV, got %d" % status)
            n = 0
            while True:
                chunk = resp.read(65536)
                if not chunk:
                    return n
                sink.write(chunk)
                n += len(chunk)
        finally:
            for conn in conns:
                conn.close()

    # ---- users and tokens ----

    def me(self) -> Dict[str, Any]:
        """Returns the caller: {"id", "name", "admin", ...}."""
        return self.request("GET", "/v1/me")

    def create_user(self, name: str, admin: bool = False, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Creates a user (admin only); returns {"id", "name", "admin", "created_at"}."""
        return self.request("POST", "/v1/users", {"name": name, "admin": admin}, idempotency_key)

    def create_token(self, user: str, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Returns {"token", "token_id"} for a new token of user (admin or that user)."""
        return self.request("POST", "/v1/users/%s/tokens" % urllib.parse.quote(user, safe=""), None,
                            idempotency_key)

    def set_user_limits(self, user: str, studies: Any = _MISSING, definition_bytes: Any = _MISSING,
                        idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Sets user's own quotas (admin only): a number, or None for the daemon's
        default; a limit not given is kept. Returns the user with "limits"."""
        limits = {k: v for k, v in (("studies", studies), ("definition_bytes", definition_bytes))
                  if v is not _MISSING}
        return self.request("PATCH", "/v1/users/%s" % urllib.parse.quote(user, safe=""), {"limits": limits},
                            idempotency_key)

    def revoke_token(self, token_id: int, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """Revokes a token; returns {"revoked": true, "token_id"}."""
        return self.request("DELETE", "/v1/tokens/%d" % token_id, None, idempotency_key)

    def healthz(self) -> Dict[str, Any]:
        """GET /healthz: {"status": "ok"} while the daemon serves."""
        return self.request("GET", "/healthz")


def _retry_after(value: Optional[str]) -> float:
    """Retry-After in seconds (delay-seconds, or an HTTP date as libcurl also
    reads it), clamped to 0.._BUSY_MAX_WAIT; 0 when absent or unreadable (a
    negative or fractional number, garbage) or a date already past."""
    v = (value or "").strip()[:64]
    if v.isascii() and v.isdigit():
        return _BUSY_MAX_WAIT if len(v) > 6 else min(float(v), _BUSY_MAX_WAIT)
    try:
        when = email.utils.parsedate_to_datetime(v)
        seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return 0.0
    return min(max(seconds, 0.0), _BUSY_MAX_WAIT) if math.isfinite(seconds) else 0.0


def _busy_wait(retry_after: Optional[str], backoff: float, left: float) -> Optional[float]:
    """The wait before re-sending after a 429, or None to give up: the larger of
    Retry-After and backoff, plus up to 10% jitter, at most _BUSY_MAX_WAIT and
    left (what remains of retry_429_seconds). Gives up when nothing remains or
    the server asks for longer than what remains."""
    asked = _retry_after(retry_after)
    if left <= 0 or asked > left:
        return None
    return min(max(asked, backoff) * (1 + 0.1 * random.random()), _BUSY_MAX_WAIT, left)


def _answer(status: int, payload: bytes) -> Any:
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

