"""Users, tokens and isolation: one user's studies and trials are invisible
(404, not 403) to another on every route; only the admin creates users; a user
mints their own tokens; a revoked token is refused; the admin token file is
private (0600)."""

import os
import stat
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bdtest  # noqa: E402
from bdtest import check_status, create_study, suggest  # noqa: E402


class Isolation(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon()
        cls.alice = bdtest.create_user(cls.d, "alice")
        cls.bob = bdtest.create_user(cls.d, "bob")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def req(self, *a, **kw):
        return self.d.request(*a, **kw)

    @bdtest.sqlite_only("the mode of the token file the daemon writes next to its database; on PostgreSQL "
                        "the fixture gives the token (--admin-token-file)")
    def test_admin_token_file_mode(self):
        path = self.d.db_path + ".admin-token"
        mode = stat.S_IMODE(os.stat(path).st_mode)
        self.assertEqual(mode, 0o600, "%s has mode %o" % (path, mode))
        me = check_status(self, self.req("GET", "/v1/me"), 200)
        self.assertIs(me["admin"], True)

    def test_create_user_answer(self):
        st, u, _ = self.req("POST", "/v1/users", {"name": "carol", "admin": False})
        self.assertEqual(st, 201, u)
        self.assertEqual(u["name"], "carol")
        self.assertIs(u["admin"], False)
        self.assertIn("id", u)
        self.assertIn("created_at", u)
        token, token_id = bdtest.create_token(self.d, "carol")
        self.assertTrue(token.startswith("bdt_"), token)
        self.assertIsInstance(token_id, int)
        me = check_status(self, self.req("GET", "/v1/me", token=token), 200)
        self.assertEqual((me["name"], me["admin"], me["id"]), ("carol", False, u["id"]))

    def test_me(self):
        me = check_status(self, self.req("GET", "/v1/me", token=self.alice), 200)
        self.assertEqual(me["name"], "alice")
        self.assertIs(me["admin"], False)
        me2 = check_status(self, self.req("GET", "/v1/me", token=self.bob), 200)
        self.assertEqual(me2["name"], "bob")
        self.assertNotEqual(me["id"], me2["id"])

    def test_other_users_study_is_not_found_everywhere(self):
        s = create_study(self.d, token=self.alice)
        self.assertIn(s["owner"], ("alice", check_status(self, self.req("GET", "/v1/me", token=self.alice),
                                                         200)["id"]))
        sid = s["id"]
        (t,) = suggest(self.d, sid, token=self.alice)
        tid = t["id"]
        check_status(self, self.req("POST", "/v1/trials/%d/measurements" % tid, {"step": 1, "value": 0.5},
                                    token=self.alice), 200)
        routes = [
            ("GET", "/v1/studies/%d" % sid, None),
            ("GET", "/v1/studies/%d/trials" % sid, None),
            ("GET", "/v1/studies/%d/trials?state=running" % sid, None),
            ("POST", "/v1/studies/%d/suggest" % sid, {"worker": "bob", "count": 1}),
            ("DELETE", "/v1/studies/%d" % sid, None),
            ("GET", "/v1/trials/%d" % tid, None),
            ("POST", "/v1/trials/%d/measurements" % tid, {"step": 2, "value": 0.1}),
            ("POST", "/v1/trials/%d/heartbeat" % tid, {}),
            ("POST", "/v1/trials/%d/complete" % tid, {"value": 0.1}),
            ("POST", "/v1/trials/%d/fail" % tid, {"reason": "bob was here"}),
        ]
        for method, path, body in routes:
            with self.subTest(route="%s %s" % (method, path)):
                self.assertError(self.req(method, path, body, token=self.bob), 404, "not_found",
                                 check_field=False, what="bob: %s %s" % (method, path))
        # A trial id that does not exist at all answers the same as alice's.
        self.assertError(self.req("GET", "/v1/trials/%d" % (tid + 100000), token=self.bob), 404, "not_found",
                         check_field=False)

        # Nothing bob did changed alice's study.
        g = check_status(self, self.req("GET", "/v1/studies/%d" % sid, token=self.alice), 200)
        self.assertEqual(g["trials"]["total"], 1)
        self.assertEqual(g["trials"]["running"], 1)
        gt = check_status(self, self.req("GET", "/v1/trials/%d" % tid, token=self.alice), 200)
        self.assertEqual(gt["state"], "running")
        self.assertEqual([(m["step"], m["value"]) for m in gt["measurements"]], [(1, 0.5)])

        bob_ids = [x["id"] for x in check_status(self, self.req("GET", "/v1/studies", token=self.bob),
                                                 200)["studies"]]
        self.assertNotIn(sid, bob_ids)
        alice_ids = [x["id"] for x in check_status(self, self.req("GET", "/v1/studies", token=self.alice),
                                                   200)["studies"]]
        self.assertIn(sid, alice_ids)

    def test_lists_are_per_user(self):
        sa = create_study(self.d, token=self.alice)
        sb = create_study(self.d, token=self.bob)
        bob_studies = check_status(self, self.req("GET", "/v1/studies", token=self.bob), 200)["studies"]
        self.assertIn(sb["id"], [x["id"] for x in bob_studies])
        self.assertNotIn(sa["id"], [x["id"] for x in bob_studies])
        for x in bob_studies:
            self.assertEqual(x["owner"], sb["owner"], "bob sees only his own studies: %r" % x)
        alice_studies = check_status(self, self.req("GET", "/v1/studies", token=self.alice), 200)["studies"]
        self.assertNotIn(sb["id"], [x["id"] for x in alice_studies])

    def test_non_admin_cannot_create_users(self):
        self.assertError(self.req("POST", "/v1/users", {"name": "mallory"}, token=self.alice), 403, "forbidden",
                         check_field=False)
        self.assertError(self.req("POST", "/v1/users", {"name": "mallory2", "admin": True}, token=self.bob),
                         403, "forbidden", check_field=False)
        # mallory was not created: the admin can still create that name.
        check_status(self, self.req("POST", "/v1/users", {"name": "mallory"}), 201)

    def test_user_mints_own_token_not_others(self):
        st, body, _ = self.req("POST", "/v1/users/alice/tokens", token=self.alice)
        self.assertEqual(st, 201, body)
        me = check_status(self, self.req("GET", "/v1/me", token=body["token"]), 200)
        self.assertEqual(me["name"], "alice")
        # The contract allows "admin or that user"; it does not say whether a stranger
        # gets 403 or 404, so only a refusal is asserted.
        st, body, _ = self.req("POST", "/v1/users/bob/tokens", token=self.alice)
        self.assertIn(st, (403, 404), "alice minted a token for bob: %r" % (body,))
        bdtest.assert_error_shape(self, body)

    def test_revoked_token_is_refused(self):
        token, token_id = bdtest.create_token(self.d, "alice", token=self.alice)
        check_status(self, self.req("GET", "/v1/me", token=token), 200)
        # bob cannot revoke alice's token (403 or 404: the contract says "admin, or the token's owner").
        st, body, _ = self.req("DELETE", "/v1/tokens/%d" % token_id, token=self.bob)
        self.assertIn(st, (403, 404), body)
        check_status(self, self.req("GET", "/v1/me", token=token), 200, "after bob's attempt")

        st, body, _ = self.req("DELETE", "/v1/tokens/%d" % token_id, token=self.alice)
        self.assertEqual((st, body), (200, {"revoked": True, "token_id": token_id}))
        for method, path, b in (("GET", "/v1/me", None), ("GET", "/v1/studies", None),
                                ("POST", "/v1/studies", bdtest.study_body())):
            self.assertError(self.req(method, path, b, token=token), 401, "unauthenticated",
                             check_field=False, what="revoked token: %s %s" % (method, path))
        check_status(self, self.req("GET", "/v1/me", token=self.alice), 200, "alice's other token still works")

        # The admin may revoke anyone's token.
        t2, t2_id = bdtest.create_token(self.d, "bob")
        check_status(self, self.req("DELETE", "/v1/tokens/%d" % t2_id), 200)
        self.assertError(self.req("GET", "/v1/me", token=t2), 401, "unauthenticated", check_field=False)

    def test_idempotency_keys_are_per_user(self):
        # Bob sending the key alice used must never get alice's stored answer.
        sa = create_study(self.d, token=self.alice)
        sb = create_study(self.d, token=self.bob)
        key = {"Idempotency-Key": "shared-key-1"}
        st, a, _ = self.req("POST", "/v1/studies/%d/suggest" % sa["id"], {}, token=self.alice, headers=key)
        self.assertEqual(st, 200, a)
        st, b, _ = self.req("POST", "/v1/studies/%d/suggest" % sb["id"], {}, token=self.bob, headers=key)
        self.assertNotEqual(b, a, "bob received alice's stored answer")
        self.assertEqual(st, 200, "bob's own request with a key alice used: %r" % (b,))
        self.assertEqual(b["trials"][0]["study_id"], sb["id"])
        # The same key on alice's own route, sent by bob, is still 404.
        self.assertError(self.req("POST", "/v1/studies/%d/suggest" % sa["id"], {}, token=self.bob, headers=key),
                         404, "not_found", check_field=False, what="bob replays alice's request and key")

    def test_admin_created_admin(self):
        st, u, _ = self.req("POST", "/v1/users", {"name": "root2", "admin": True})
        self.assertEqual(st, 201, u)
        self.assertIs(u["admin"], True)
        tok = bdtest.create_token(self.d, "root2")[0]
        self.assertIs(check_status(self, self.req("GET", "/v1/me", token=tok), 200)["admin"], True)
        check_status(self, self.req("POST", "/v1/users", {"name": "dave"}, token=tok), 201, "a second admin")
        dave = bdtest.create_token(self.d, "dave", token=tok)[0]
        self.assertEqual(check_status(self, self.req("GET", "/v1/me", token=dave), 200)["name"], "dave")

    def test_idempotent_user_creation(self):
        key = {"Idempotency-Key": "make-erin"}
        a = self.req("POST", "/v1/users", {"name": "erin"}, headers=key)
        b = self.req("POST", "/v1/users", {"name": "erin"}, headers=key)
        self.assertEqual(a[0], 201, a[1])
        self.assertEqual(b[:2], a[:2], "a retried user creation returns the first answer, not 409")
        self.assertError(self.req("POST", "/v1/users", {"name": "erin"}), 409, "conflict", check_field=False,
                         what="the name is taken")

    def test_idempotent_token_creation(self):
        # A retried mint must not create a second token, and the token is never
        # stored (only its hash), so the retry cannot be shown it again: 409
        # naming the token that was minted (openapi.yaml).
        check_status(self, self.req("POST", "/v1/users", {"name": "frank"}), 201)
        tkey = {"Idempotency-Key": "frank-token"}
        t1 = self.req("POST", "/v1/users/frank/tokens", headers=tkey)
        t2 = self.req("POST", "/v1/users/frank/tokens", headers=tkey)
        self.assertEqual(t1[0], 201, t1[1])
        self.assertEqual(check_status(self, self.req("GET", "/v1/me", token=t1[1]["token"]), 200)["name"], "frank")
        self.assertError(t2, 409, "conflict", field="Idempotency-Key")
        self.assertIn("token %d" % t1[1]["token_id"], t2[1]["error"]["message"])
        t3 = self.req("POST", "/v1/users/frank/tokens")
        self.assertEqual(t3[0], 201, t3[1])
        self.assertEqual(t3[1]["token_id"], t1[1]["token_id"] + 1, "the retry minted no token in between")

    def test_user_cannot_revoke_others_tokens(self):
        alice2, alice2_tid = bdtest.create_token(self.d, "alice")
        # The admin's token was made first (id 1 when ids count from 1); ids are
        # guessable, so a user must not be able to revoke it or alice's.
        for token_id in (1, alice2_tid):
            st, body, _ = self.req("DELETE", "/v1/tokens/%d" % token_id, token=self.bob)
            self.assertIn(st, (403, 404), "bob revoking token %d: %d %r" % (token_id, st, body))
        check_status(self, self.req("GET", "/v1/me"), 200, "the admin token still works")
        check_status(self, self.req("GET", "/v1/me", token=alice2), 200, "alice's token still works")

    def test_revocation_survives_restart(self):
        token, token_id = bdtest.create_token(self.d, "bob", token=self.bob)
        check_status(self, self.req("DELETE", "/v1/tokens/%d" % token_id, token=self.bob), 200)
        old_admin = self.d.token
        self.d.restart()
        self.assertError(self.req("GET", "/v1/me", token=token), 401, "unauthenticated", check_field=False)
        check_status(self, self.req("GET", "/v1/me", token=self.bob), 200, "bob's first token survives")
        self.assertEqual(self.d.token, old_admin, "the admin token file is written on first start only")
        check_status(self, self.req("GET", "/v1/me", token=old_admin), 200, "the admin token survives")


if __name__ == "__main__":
    unittest.main()
