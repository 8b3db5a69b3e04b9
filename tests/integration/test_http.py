"""HTTP-level robustness of banditd over raw sockets: chunked bodies (and the
body limit on them), pipelining, keep-alive reuse, clients that vanish
mid-request, idle connections, malformed request lines, oversized URLs and
headers. Whatever happens, the daemon answers with a 4xx (a 505 for an HTTP
version it does not speak, a 501 for a transfer coding it cannot decode) or
closes that one connection, and keeps serving everyone else. The answers
libmicrohttpd gives by itself are JSON errors like all the others."""

import http.client
import json
import os
import socket
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study  # noqa: E402


class RawHTTP(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(extra_args=["--threads", "2"])

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def setUp(self):
        self._files = {}

    def tearDown(self):
        self.assertTrue(self.d.running(), "banditd died; stderr:\n%s" % self.d.log_tail())
        st, body, _ = self.d.request("GET", "/healthz", token=None)
        self.assertEqual(st, 200, "banditd stopped serving: %r" % (body,))

    def connect(self, timeout=5):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=timeout)
        self.addCleanup(s.close)
        return s

    def read_response(self, s, method="GET"):
        """Reads one response from socket s. Responses are read through one
        buffered file per socket, so pipelined answers are not lost between calls."""
        f = self._files.get(s)
        if f is None:
            f = self._files[s] = s.makefile("rb")

        class Unclosable:  # HTTPResponse closes its file after the body
            def __getattr__(self, name):
                return getattr(f, name)

            def close(self):
                pass

        class OneFile:
            def makefile(self, *a, **kw):
                return Unclosable()
        r = http.client.HTTPResponse(OneFile(), method=method)
        r.begin()
        return r.status, r.read(), r

    def head(self, method, path, extra=""):
        return ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n%s\r\n"
                % (method, path, self.d.token, extra)).encode()

    def test_chunked_body(self):
        body = json.dumps(bdtest.study_body(name="chunked")).encode()
        s = self.connect()
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 50]), body[i:i + 50]) for i in range(0, len(body), 50))
        s.sendall(self.head("POST", "/v1/studies", "Content-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n") + chunks + b"0\r\n\r\n")
        st, data, _ = self.read_response(s, "POST")
        self.assertEqual(st, 201, data)
        self.assertEqual(json.loads(data)["name"], "chunked")

    def test_chunked_body_over_the_limit(self):
        # No Content-Length to check up front: the limit must still hold.
        s = self.connect(10)
        s.sendall(self.head("POST", "/v1/studies", "Content-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\nConnection: close\r\n"))
        chunk = b"a" * 65536

        def send():
            try:
                for _ in range(40):  # 2.5 MiB
                    s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                s.sendall(b"0\r\n\r\n")
            except OSError:
                pass
        t = threading.Thread(target=send, daemon=True)
        t.start()
        st, data, _ = self.read_response(s, "POST")
        self.assertEqual(st, 413, data)
        self.assertEqual(json.loads(data)["error"]["code"], "payload_too_large")

    def check_framed_twice(self, headers):
        # Issue 20: libmicrohttpd framed by the first Content-Length and read
        # the rest of the body as a second request (smuggling behind a proxy
        # that frames by another header). Now: 400, the field, and close.
        body = json.dumps(bdtest.study_body(name="framed-twice")).encode()
        s = self.connect()
        s.sendall(self.head("POST", "/v1/studies", "Content-Type: application/json\r\n" + headers) + body +
                  self.head("GET", "/v1/me"))
        st, data, r = self.read_response(s, "POST")
        self.assertEqual(st, 400, data)
        err = json.loads(data)["error"]
        self.assertEqual((err["code"], err["field"]), ("invalid_argument", "headers.Content-Length"), err)
        self.assertEqual((r.getheader("Connection") or "").lower(), "close")
        s.settimeout(5)
        self.assertEqual(self._files[s].read(), b"", "nothing more is answered on that connection")
        st, listed, _ = self.d.request("GET", "/v1/studies")
        self.assertNotIn("framed-twice", json.dumps(listed), "the study was not created")

    def test_two_content_lengths_are_refused(self):
        n = len(json.dumps(bdtest.study_body(name="framed-twice")))
        self.check_framed_twice("Content-Length: %d\r\nContent-Length: %d\r\n" % (n - 20, n))

    def test_content_length_with_transfer_encoding_is_refused(self):
        n = len(json.dumps(bdtest.study_body(name="framed-twice")))
        self.check_framed_twice("Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % n)

    def test_pipelined_requests(self):
        s = self.connect()
        s.sendall(self.head("GET", "/healthz") + self.head("GET", "/v1/me") + self.head("GET", "/v1/nope") +
                  self.head("GET", "/v1/me", "Connection: close\r\n"))
        got = [self.read_response(s)[:2] for _ in range(4)]
        self.assertEqual([g[0] for g in got], [200, 200, 404, 200])
        self.assertEqual(json.loads(got[1][1])["admin"], True)

    def test_keep_alive_reuse(self):
        c = self.d.client()
        s = create_study(self.d)
        for i in range(300):
            st, body, _ = c.request("GET", "/v1/studies/%d" % s["id"])
            self.assertEqual(st, 200, (i, body))
        self.assertTrue(c.used and c.conn is not None and c.conn.sock is not None,
                        "the connection stayed open across 300 requests")
        c.close()

    def test_clients_vanishing_mid_request(self):
        for i in range(40):
            s = socket.create_connection(("127.0.0.1", self.d.port))
            if i % 4 == 0:
                s.sendall(b"POST /v1/stu")
            elif i % 4 == 1:
                s.sendall(self.head("POST", "/v1/studies", "Content-Type: application/json\r\n"
                                    "Content-Length: 1000\r\n") + b'{"name": "x"')
            elif i % 4 == 2:
                s.sendall(self.head("POST", "/v1/studies", "Content-Type: application/json\r\n"
                                    "Transfer-Encoding: chunked\r\n") + b"10\r\n0123")
            else:
                s.sendall(self.head("GET", "/v1/studies"))  # leave without reading the answer
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()  # with linger 0: a reset
        self.assertEqual(check_status(self, self.d.request("GET", "/v1/me"), 200)["admin"], True)

    def test_idle_connections_do_not_block_others(self):
        idle = []
        for i in range(64):
            s = socket.create_connection(("127.0.0.1", self.d.port))
            if i % 2:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            idle.append(s)
        try:
            c = self.d.client(timeout=3)
            t0 = time.monotonic()
            st, body, _ = c.request("POST", "/v1/studies", bdtest.study_body())
            took = time.monotonic() - t0
            c.close()
            self.assertEqual(st, 201, body)
            self.assertLess(took, 2.0, "64 idle connections delayed a request by %.1f s" % took)
        finally:
            for s in idle:
                s.close()

    def read_error(self, s, raw):
        """Sends raw on socket s (from a thread: the server may answer before
        it has read it all), reads until the server closes, and checks what
        every answer of the HTTP layer must be: one response, Content-Type
        application/json, the error shape, Connection: close, nothing after
        the body. Returns (status, error object)."""
        def send():
            try:
                s.sendall(raw)
            except OSError:
                pass  # the server answered and closed first
        t = threading.Thread(target=send, daemon=True)
        t.start()
        st, data, r = self.read_response(s)
        t.join(5)
        ctype = r.getheader("Content-Type") or ""
        self.assertTrue(ctype.startswith("application/json"), "Content-Type %r, body %r" % (ctype, data[:300]))
        body = json.loads(data)
        self.assertEqual(list(body), ["error"], body)
        err = body["error"]
        self.assertEqual(sorted(err), ["code", "field", "message"], err)
        self.assertTrue(isinstance(err["message"], str) and err["message"], err)
        self.assertNotIn("<", err["message"], "no HTML in the message")
        self.assertEqual((r.getheader("Connection") or "").lower(), "close")
        try:
            rest = self._files[s].read()
        except (ConnectionResetError, socket.timeout):
            rest = b""
        self._files.pop(s).close()
        self.assertEqual(rest, b"", "nothing follows the answer (libmicrohttpd 0.9.75 doubled some headers)")
        return st, err

    # (name, raw request, status, error code, field): the answers libmicrohttpd
    # gives by itself, rewritten to JSON by api/mhd_errors.c, and those of
    # api/http_server.c: the 501 for a transfer coding it cannot decode, the
    # 400 for a missing or repeated Host.
    HTTP_LAYER_ERRORS = [
        ("HTTP/2.0", b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version_not_supported", "version"),
        ("HTTP/9.9", b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 505, "http_version_not_supported", "version"),
        ("HTTP/0.9", b"GET /healthz HTTP/0.9\r\n\r\n", 505, "http_version_not_supported", "version"),
        ("bad version token", b"GET /healthz HTTX/1.1\r\nHost: x\r\n\r\n", 400, "invalid_argument",
         "request_line"),
        ("no version", b"GET /healthz\r\nHost: x\r\n\r\n", 400, "invalid_argument", "request_line"),
        ("header without colon", b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400,
         "invalid_argument", "headers"),
        ("Content-Length negative", b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400,
         "invalid_argument", "headers.Content-Length"),
        ("Content-Length word", b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n{}", 400,
         "invalid_argument", "headers.Content-Length"),
        ("Content-Length past 2^64",
         b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n{}", 413,
         "payload_too_large", "headers.Content-Length"),
        ("chunk size not hex", b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n", 400, "invalid_argument", "body"),
        ("chunk size past 2^64", b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\nabc\r\n", 413, "payload_too_large", "body"),
        ("transfer coding gzip", b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Transfer-Encoding: gzip\r\n\r\nabc", 501, "not_implemented", "headers.Transfer-Encoding"),
        ("chunked twice", b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501, "not_implemented",
         "headers.Transfer-Encoding"),
        ("40 kB header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n", 431,
         "header_fields_too_large", "headers"),
        ("3000 headers", b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(3000))
         + b"\r\n", 431, "header_fields_too_large", "headers"),
        ("40 kB URL", b"GET /healthz?" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long", "path"),
        # RFC 9112 section 3.2 (issue 42: libmicrohttpd, not in its strict
        # mode, served these; api/http_server.c answers them).
        ("HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\n\r\n", 400, "invalid_argument", "headers.Host"),
        ("HTTP/1.1 POST without Host", b"POST /v1/studies HTTP/1.1\r\nContent-Type: application/json\r\n"
         b"Content-Length: 2\r\n\r\n{}", 400, "invalid_argument", "headers.Host"),
        ("two Host headers", b"GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "invalid_argument",
         "headers.Host"),
        ("HTTP/1.0 with two Host headers", b"GET /healthz HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n", 400,
         "invalid_argument", "headers.Host"),
    ]

    def test_http_layer_errors_are_json(self):
        for name, raw, status, code, field in self.HTTP_LAYER_ERRORS:
            with self.subTest(name):
                st, err = self.read_error(self.connect(), raw)
                self.assertEqual((st, err["code"], err["field"]), (status, code, field), err)
                self.assertTrue(self.d.running())

    def test_http_layer_errors_after_a_good_request(self):
        # On a kept-alive connection the second request's error is told
        # apart the same way (the request line of the first was parsed).
        for name, raw, status, code, field in self.HTTP_LAYER_ERRORS[:6]:
            with self.subTest(name):
                s = self.connect()
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertEqual(self.read_response(s)[0], 200)
                st, err = self.read_error(s, raw)
                self.assertEqual((st, err["code"], err["field"]), (status, code, field), err)

    def test_http10_without_host_and_an_empty_host_are_served(self):
        # Host is HTTP/1.1's requirement; an empty value is what a client
        # sends for a target without an authority (RFC 9112 section 3.2).
        for raw in (b"GET /healthz HTTP/1.0\r\n\r\n", b"GET /healthz HTTP/1.1\r\nHost:\r\n\r\n"):
            with self.subTest(raw=raw):
                s = self.connect()
                s.sendall(raw)
                st, data, _ = self.read_response(s)
                self.assertEqual((st, json.loads(data)), (200, {"status": "ok"}))

    def test_requests_without_an_answer(self):
        # libmicrohttpd closes these without an answer, so there is nothing to
        # rewrite (api/mhd_errors.h): a request line without a space, and one
        # of NUL-led bytes (read as empty lines, then closed at the header deadline).
        for raw in (b"GARBAGE\r\n\r\n", b"GET\r\n\r\n"):
            with self.subTest(raw=raw):
                s = self.connect(5)
                s.sendall(raw)
                try:
                    data = s.recv(4096)
                except ConnectionResetError:
                    data = b""
                self.assertEqual(data, b"")
        s = self.connect(2)
        s.sendall(b"\x00\x01\x02\x03\r\n\r\n")
        self.assertRaises(socket.timeout, s.recv, 4096)
        self.assertTrue(self.d.running())

    def test_long_url_and_big_headers(self):
        cases = [
            ("GET", "/v1/studies/" + "1" * 20000, {}),
            ("GET", "/v1/studies?" + "&".join("k%d=v" % i for i in range(2000)), {}),
            ("GET", "/v1/me", {"X-Big": "a" * 100000}),
            ("GET", "/v1/me", {"X-H%d" % i: "v" for i in range(500)}),
            ("POST", "/v1/users/" + "u" * 5000 + "/tokens", {}),
            ("GET", "/v1/me", {"Authorization": "Bearer " + "t" * 50000}),
        ]
        for method, path, headers in cases:
            with self.subTest(path=path[:40], headers=list(headers)[:2]):
                c = self.d.client(timeout=5)
                try:
                    st, body, _ = c.request(method, path, headers=headers)
                except (OSError, http.client.HTTPException):
                    st = None  # the daemon may drop such a connection
                finally:
                    c.close()
                if st is not None:
                    self.assertTrue(400 <= st < 500 or (st == 200 and method == "GET" and "?" in path),
                                    "%s %s... -> %r %r" % (method, path[:40], st, body if st else None))
                self.assertTrue(self.d.running())

    def test_many_connections_in_parallel(self):
        errors = []

        def run(i):
            try:
                c = self.d.client(timeout=10)
                for _ in range(20):
                    st, body, _ = c.request("GET", "/v1/me")
                    if st != 200:
                        errors.append((i, st, body))
                c.close()
            except Exception as e:
                errors.append((i, repr(e)))
        threads = [threading.Thread(target=run, args=(i,)) for i in range(48)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
