"""Per-user quotas (issue 20): live studies and their definitions' bytes, with
daemon-wide defaults (--max-studies-per-user, --max-definition-bytes-per-user)
and per-user values an admin sets (PATCH /v1/users/{name}). A refusal is 403
quota_exceeded naming the limit; /v1/me shows limits and usage. Before, one
user's 20 studies of 880 KB took the daemon from 10 MB to 650 MB."""

import unittest

import bdtest
from bdtest import check_status

MAX_STUDIES = 3
MAX_BYTES = 6000


class Quotas(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(extra_args=("--max-studies-per-user", str(MAX_STUDIES),
                                          "--max-definition-bytes-per-user", str(MAX_BYTES)))

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def new_user(self):
        name = bdtest.unique_name("quota")
        return name, bdtest.create_user(self.d, name)

    def me(self, token):
        return check_status(self, self.d.request("GET", "/v1/me", token=token), 200)

    def test_the_study_count_quota_refuses_the_next_study_until_one_is_deleted(self):
        _, token = self.new_user()
        made = [bdtest.create_study(self.d, token=token) for _ in range(MAX_STUDIES)]
        got = self.d.request("POST", "/v1/studies", bdtest.study_body(), token=token)
        self.assertError(got, 403, "quota_exceeded", "limits.studies")
        me = self.me(token)
        self.assertEqual(me["limits"]["studies"], MAX_STUDIES)
        self.assertEqual(me["usage"]["studies"], MAX_STUDIES)
        self.assertGreater(me["usage"]["definition_bytes"], 0)
        self.assertEqual(me["usage"]["slow_requests"], 0)
        check_status(self, self.d.request("DELETE", "/v1/studies/%d" % made[0]["id"], token=token), 200)
        bdtest.create_study(self.d, token=token)

    def test_the_definition_bytes_quota_counts_what_is_stored(self):
        _, token = self.new_user()
        wide = [{"name": "p%03d" % i, "type": "float", "low": 0, "high": 1} for i in range(200)]
        got = self.d.request("POST", "/v1/studies", bdtest.study_body(parameters=wide), token=token)
        self.assertError(got, 403, "quota_exceeded", "limits.definition_bytes")
        self.assertEqual(self.me(token)["usage"]["studies"], 0, "a refused study is not stored")

    def test_an_admin_sets_a_users_own_limits_and_they_survive_a_restart(self):
        name, token = self.new_user()
        for _ in range(MAX_STUDIES):
            bdtest.create_study(self.d, token=token)
        body = check_status(self, self.d.request("PATCH", "/v1/users/%s" % name, {"limits": {"studies": 5}}), 200)
        self.assertEqual(body["name"], name)
        self.assertEqual(body["limits"]["studies"], 5)
        self.assertEqual(body["limits"]["definition_bytes"], MAX_BYTES, "a key left out is kept")
        bdtest.create_study(self.d, token=token)
        self.d.restart()
        self.assertEqual(self.me(token)["limits"]["studies"], 5)
        bdtest.create_study(self.d, token=token)
        self.assertError(self.d.request("POST", "/v1/studies", bdtest.study_body(), token=token), 403,
                         "quota_exceeded", "limits.studies")
        body = check_status(self, self.d.request("PATCH", "/v1/users/%s" % name, {"limits": {"studies": None}}), 200)
        self.assertEqual(body["limits"]["studies"], MAX_STUDIES, "null: back to the daemon's default")

    def test_only_an_admin_sets_limits_and_bad_bodies_name_the_field(self):
        name, token = self.new_user()
        self.assertError(self.d.request("PATCH", "/v1/users/%s" % name, {"limits": {"studies": 99}}, token=token),
                         403, "forbidden")
        self.assertEqual(self.me(token)["limits"]["studies"], MAX_STUDIES)
        self.assertError(self.d.request("PATCH", "/v1/users/nosuchuser", {"limits": {"studies": 1}}), 404,
                         "not_found")
        for body, field in (({"limits": {"studies": -1}}, "limits.studies"),
                            ({"limits": {"studies": 1.5}}, "limits.studies"),
                            ({"limits": {"definition_bytes": "big"}}, "limits.definition_bytes"),
                            ({"limits": {"trials": 3}}, "limits.trials"),
                            ({"limits": 3}, "limits"),
                            ({}, "limits"),
                            ({"limits": {}, "extra": 1}, "extra")):
            self.assertError(self.d.request("PATCH", "/v1/users/%s" % name, body), 400, "invalid_argument", field,
                             what=repr(body))


if __name__ == "__main__":
    unittest.main()
