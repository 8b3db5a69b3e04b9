"""The dashboard's static files over real HTTP from the daemon: /ui redirects,
every file the page loads comes with its Content-Type, the security headers
(CSP, nosniff, no-referrer) and an ETag that a conditional GET turns into a
bodyless 304; the files need no token and carry no data; unknown names and
other methods get JSON errors; the daemon's metrics count the /ui routes."""

import os
import re
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


class Dashboard(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def get(self, path, headers=None):
        return self.d.request("GET", path, token=None, headers=headers)

    def check_headers(self, h):
        self.assertEqual(h["Content-Security-Policy"], CSP)
        self.assertEqual(h["X-Content-Type-Options"], "nosniff")
        self.assertEqual(h["Referrer-Policy"], "no-referrer")

    def test_redirect_and_index(self):
        for path in ("/ui", "/"):  # the daemon's bare address leads a browser to the dashboard too
            st, body, h = self.get(path)
            self.assertEqual(st, 301, path)
            self.assertEqual(h["Location"], "/ui/", path)
        st, body, h = self.get("/ui/")
        self.assertEqual(st, 200)
        self.assertEqual(h["Content-Type"], "text/html; charset=utf-8")
        self.check_headers(h)
        self.assertEqual(h["Cache-Control"], "no-cache")
        self.assertRegex(h["ETag"], r'^"[0-9a-f]{20}"$')
        self.assertTrue(body.startswith("<!doctype html>"))
        self.assertNotIn("<script>", body, "inline script would be refused by the CSP")

    def test_every_referenced_file_is_served_with_its_type(self):
        _, index, _ = self.get("/ui/")
        refs = re.findall(r'(?:src|href)="([^"#:]+)"', index)
        self.assertIn("app.js", refs)
        seen, todo = set(), list(refs)
        types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
        while todo:
            ref = todo.pop()
            if ref in seen:
                continue
            seen.add(ref)
            st, body, h = self.get("/ui/" + ref)
            self.assertEqual(st, 200, ref)
            self.assertEqual(h["Content-Type"], types[os.path.splitext(ref)[1]], ref)
            self.check_headers(h)
            if ref.endswith(".js") and not ref.startswith("vendor/"):
                todo += [m.lstrip("./") for m in re.findall(r"from '(\./[^']+)'", body)]
        self.assertGreaterEqual(len([s for s in seen if not s.startswith("vendor/")]), 8, sorted(seen))
        st, body, h = self.get("/ui/vendor/LICENSE")
        self.assertEqual(st, 200)
        self.assertIn("MIT", body)

    def test_conditional_get_is_304_without_body(self):
        _, body, h = self.get("/ui/app.js")
        st, body2, h2 = self.get("/ui/app.js", headers={"If-None-Match": h["ETag"]})
        self.assertEqual(st, 304)
        self.assertEqual(body2, "")
        self.assertEqual(h2["ETag"], h["ETag"])
        st, body3, _ = self.get("/ui/app.js", headers={"If-None-Match": '"other"'})
        self.assertEqual(st, 200)
        self.assertEqual(body3, body)

    def test_files_need_no_token_and_hold_no_data(self):
        bdtest.create_study(self.d, name="secret-study-name")
        for path in ("/ui/", "/ui/app.js", "/ui/study.js"):
            st, body, _ = self.d.request("GET", path, token="bdt_wrong")
            self.assertEqual(st, 200, path)
            self.assertNotIn("secret-study-name", body)
        st, body, _ = self.d.request("GET", "/v1/studies", token=None)
        self.assertEqual(st, 401, "the data stays behind the token")

    def test_unknown_names_and_methods_are_json_errors(self):
        for path in ("/ui/nope.js", "/ui/..%2f..%2fetc%2fpasswd", "/ui/vendor/nope", "/ui/vendor/x/y", "/ui/a/b"):
            st, body, _ = self.get(path)
            self.assertEqual(st, 404, path)
            self.assertEqual(body["error"]["code"], "not_found", path)
        st, body, h = self.d.request("POST", "/ui/", token=None, body={})
        self.assertEqual(st, 405)
        self.assertEqual(h["Allow"], "GET")
        self.assertTrue(self.d.running())

    def test_metrics_count_the_ui_routes(self):
        self.get("/ui/app.js")
        _, text, _ = self.get("/metrics")
        self.assertRegex(text, r'banditd_http_requests_total\{route="/ui/\{file\}",method="GET",status="200"\} [1-9]')


if __name__ == "__main__":
    unittest.main()
