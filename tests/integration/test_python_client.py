"""The Python client (clients/python/banditd_client.py) against a real banditd:
every method, BanditdError on error answers, page iteration, keep-alive and
reconnection, and retries that reuse the Idempotency-Key: a proxy lets the
daemon act on a request and then drops its answer, and the retried suggest,
measurement and complete must act once and return the first answer."""

import os
import socket
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.environ.get("BD_SOURCE_DIR") or os.path.join(HERE, "..", ".."),
                                "clients", "python"))
import bdtest  # noqa: E402
from banditd_client import BanditdError, Client, read_token  # noqa: E402

PARAMS = [{"name": "x", "type": "float", "low": 0.0, "high": 1.0},
          {"name": "k", "type": "categorical", "choices": ["a", "b"]}]


class DropProxy:
    """A TCP proxy to the daemon. While drop_answers > 0, the next answer coming
    back from the daemon is swallowed and both sockets are closed: the daemon
    has acted on the request, the client never hears of it."""

    def __init__(self, port):
        self.port_up = port
        self.lock = threading.Lock()
        self.drop_answers = 0
        self.dropped = 0
        self.connections = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                down, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            up = socket.create_connection(("127.0.0.1", self.port_up))
            threading.Thread(target=self._pump, args=(down, up, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, True), daemon=True).start()

    def _pump(self, src, dst, answers):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if answers:
                    with self.lock:
                        drop = self.drop_answers > 0
                        if drop:
                            self.drop_answers -= 1
                            self.dropped += 1
                    if drop:
                        break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


class PythonClient(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(lease_seconds=300)
        cls.url = "http://127.0.0.1:%d" % cls.d.port
        cls.c = Client(cls.url, cls.d.token, timeout=10)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.cleanup()

    def study(self, **kw):
        kw.setdefault("options", {"max_trials": 1000})
        kw.setdefault("objective", {"metric": "loss", "goal": "minimize"})
        return self.c.create_study(bdtest.unique_name("py"), PARAMS, "random", seed=3, **kw)

    def assertBanditdError(self, ctx, status, code, field=None):
        e = ctx.exception
        self.assertEqual((e.status, e.code, e.field), (status, code, field), str(e))
        self.assertTrue(e.message)

    # ---- studies ----

    def test_token_file_and_me(self):
        self.assertEqual(read_token(self.d.token_file()), self.d.token)
        me = self.c.me()
        self.assertEqual((me["name"], me["admin"]), ("admin", True))
        self.assertEqual(self.c.healthz(), {"status": "ok"})

    def test_study_create_get_list_delete(self):
        s = self.c.create_study(bdtest.unique_name("py"), PARAMS,
                                {"name": "random", "options": {"max_trials": 5}},
                                objective={"metric": "acc", "goal": "maximize"},
                                resource={"name": "epochs", "min": 1, "max": 9, "integer": True},
                                seed=11, lease_seconds=60)
        self.assertEqual(s["scheduler"]["name"], "random")
        self.assertEqual(s["objective"], {"metric": "acc", "goal": "maximize"})
        self.assertEqual(s["seed"], 11)
        got = self.c.get_study(s["id"])
        self.assertEqual((got["id"], got["name"]), (s["id"], s["name"]))
        self.assertIn(s["id"], [x["id"] for x in self.c.list_studies()])
        self.assertEqual(self.c.delete_study(s["id"]), {"deleted": True, "id": s["id"]})
        with self.assertRaises(BanditdError) as ctx:
            self.c.get_study(s["id"])
        self.assertBanditdError(ctx, 404, "not_found")
        self.assertNotIn(s["id"], [x["id"] for x in self.c.list_studies()])

    def test_error_answers_raise(self):
        with self.assertRaises(BanditdError) as ctx:
            self.c.create_study("bad", [{"name": "x", "type": "float", "low": 2, "high": 1}], "random")
        self.assertBanditdError(ctx, 400, "invalid_argument", "parameters[0].high")
        with self.assertRaises(BanditdError) as ctx:
            self.c.create_study("bad", PARAMS, "no-such-scheduler")
        self.assertBanditdError(ctx, 400, "invalid_argument", "scheduler.name")
        with self.assertRaises(BanditdError) as ctx:
            self.c.get_trial(10 ** 9)
        self.assertBanditdError(ctx, 404, "not_found")
        with self.assertRaises(BanditdError) as ctx, Client(self.url, "bdt_wrong") as wrong:
            wrong.me()
        self.assertBanditdError(ctx, 401, "unauthenticated")
        with self.assertRaises(ValueError):
            self.c.measure(1, 1, float("nan"))

    # ---- trials ----

    def test_trial_loop(self):
        s = self.study()
        got = self.c.suggest(s["id"], worker="py-w", count=3)
        trials = got["trials"]
        self.assertEqual(len(trials), 3, got)
        t0, t1, t2 = trials
        self.assertEqual({t["worker"] for t in trials}, {"py-w"})
        self.assertEqual(self.c.measure(t0["id"], 1, 0.7, elapsed_seconds=0.5)["action"], "continue")
        self.assertEqual(self.c.measure(t0["id"], 2, 0.4)["action"], "continue")
        hb = self.c.heartbeat(t0["id"])
        self.assertGreater(hb["lease_expires_at"], t0["created_at"])
        done = self.c.complete(t0["id"], value=0.4, runtime=1.5, elapsed_seconds=2.0)
        self.assertEqual((done["state"], done["value"]), ("completed", 0.4))
        full = self.c.get_trial(t0["id"])
        self.assertEqual([(m["step"], m["value"]) for m in full["measurements"]], [(1, 0.7), (2, 0.4)])
        self.assertEqual(full["measurements"][0]["elapsed_seconds"], 0.5)
        with self.assertRaises(BanditdError) as ctx:
            self.c.complete(t0["id"], value=0.1)
        self.assertEqual((ctx.exception.status, ctx.exception.code), (409, "conflict"))
        self.assertEqual(self.c.fail(t1["id"], reason="oom")["state"], "failed")
        diverged = self.c.complete(t2["id"], value=None, reason="diverged")
        self.assertEqual(diverged["state"], "completed")
        self.assertIsNone(diverged.get("value"))
        st = self.c.get_study(s["id"])
        self.assertEqual((st["trials"]["completed"], st["trials"]["failed"]), (2, 1))
        self.assertEqual(st["incumbent"]["trial_id"], t0["id"])

    def test_complete_with_status_timeout(self):
        s = self.study()
        t = self.c.suggest(s["id"])["trials"][0]
        got = self.c.complete(t["id"], status="timeout")
        self.assertIn(got["state"], ("completed", "failed", "stopped"), got)
        self.assertNotEqual(got["state"], "running")

    def test_retry_after_then_done(self):
        s = self.study(options={"max_trials": 2})
        trials = self.c.suggest(s["id"], count=2)["trials"]
        self.assertEqual(len(trials), 2)
        waiting = self.c.suggest(s["id"])
        self.assertEqual(waiting["trials"], [])
        self.assertGreater(waiting.get("retry_after_ms", 0), 0, waiting)
        for t in trials:
            self.c.complete(t["id"], value=1.0)
        finished = self.c.suggest(s["id"])
        self.assertEqual((finished["trials"], finished.get("done")), ([], True))

    def test_list_trials_follows_pages(self):
        s = self.study()
        ids = [t["id"] for t in self.c.suggest(s["id"], count=7)["trials"]]
        for tid in ids[:2]:
            self.c.complete(tid, value=0.5)
        listed = list(self.c.list_trials(s["id"], limit=3))
        self.assertEqual([t["id"] for t in listed], ids)
        self.assertEqual([t["id"] for t in self.c.list_trials(s["id"], state="completed", limit=1)], ids[:2])
        self.assertEqual([t["id"] for t in self.c.list_trials(s["id"], state="running")], ids[2:])

    def test_list_studies_follows_pages_and_filters_by_name(self):
        made = [self.study()["id"] for _ in range(5)]
        listed = [x["id"] for x in self.c.list_studies(limit=2)]
        self.assertEqual(listed, sorted(listed))
        self.assertTrue(set(made) <= set(listed), (made, listed))
        name = self.c.get_study(made[3])["name"]
        self.assertEqual([x["id"] for x in self.c.list_studies(name=name, limit=1)], [made[3]])

    def test_best_trials_history_and_csv_export(self):
        import csv
        import io
        s = self.study()
        trials = self.c.suggest(s["id"], count=6)["trials"]
        values = [0.9, 0.4, 0.7, 0.1, 0.8, 0.3]
        for t, v in zip(trials, values):
            self.c.measure(t["id"], 1, v + 0.05)
            self.c.complete(t["id"], value=v)
        best = self.c.best_trials(s["id"], limit=3, measurements=True)
        self.assertEqual([t["value"] for t in best], [0.1, 0.3, 0.4])
        self.assertEqual(len(best[0]["measurements"]), 1)
        with_m = list(self.c.list_trials(s["id"], limit=4, measurements=True))
        self.assertEqual(len(with_m), 6)
        self.assertTrue(all(len(t["measurements"]) == 1 for t in with_m))
        h = self.c.history(s["id"], points=10)
        self.assertEqual(h["completed"], 6)
        self.assertEqual([p["value"] for p in h["best"]], [0.9, 0.4, 0.1])  # each improvement, in finish order
        out = io.BytesIO()
        n = self.c.export_csv(s["id"], out)
        self.assertEqual(n, len(out.getvalue()))
        rows = list(csv.DictReader(io.StringIO(out.getvalue().decode("utf-8"))))
        self.assertEqual([float(r["value"]) for r in rows], values)
        self.assertEqual({r["params_k"] for r in rows} - {"a", "b"}, set())
        out = io.BytesIO()
        self.c.export_csv(s["id"], out, state="running")
        self.assertEqual(len(out.getvalue().decode().splitlines()), 1)  # the header alone
        with self.assertRaises(BanditdError) as ctx:
            self.c.export_csv(10 ** 9, io.BytesIO())
        self.assertBanditdError(ctx, 404, "not_found")

    def test_explicit_idempotency_key_returns_same_trials(self):
        s = self.study()
        a = self.c.suggest(s["id"], count=2, idempotency_key="py-key-1")
        b = self.c.suggest(s["id"], count=2, idempotency_key="py-key-1")
        self.assertEqual(a, b)
        c = self.c.suggest(s["id"], count=2)
        self.assertTrue(set(t["id"] for t in c["trials"]).isdisjoint(t["id"] for t in a["trials"]))

    # ---- transport ----

    def test_keep_alive_reuses_one_connection(self):
        c = Client(self.url, self.d.token)
        c.me()
        conn = c._local.conn
        for _ in range(5):
            c.me()
        self.assertIs(c._local.conn, conn)
        c.close()

    def test_lost_answers_are_retried_with_the_same_key(self):
        proxy = DropProxy(self.d.port)
        self.addCleanup(proxy.close)
        c = Client("http://127.0.0.1:%d" % proxy.port, self.d.token, timeout=5, backoff=0.01)
        s = c.create_study(bdtest.unique_name("py"), PARAMS, "random", options={"max_trials": 100}, objective={"metric": "loss", "goal": "minimize"})

        proxy.drop_answers = 1
        trials = c.suggest(s["id"], worker="flaky", count=2)["trials"]
        self.assertEqual(proxy.dropped, 1)
        self.assertEqual(len(trials), 2)
        self.assertEqual(sorted(t["id"] for t in self.c.list_trials(s["id"])), sorted(t["id"] for t in trials),
                         "the retried suggest created new trials")

        tid = trials[0]["id"]
        proxy.drop_answers = 1
        self.assertEqual(c.measure(tid, 1, 0.25)["action"], "continue")
        self.assertEqual(len(self.c.get_trial(tid)["measurements"]), 1)

        proxy.drop_answers = 1
        done = c.complete(tid, value=0.25)
        self.assertEqual((proxy.dropped, done["state"], done["value"]), (3, "completed", 0.25))
        self.assertEqual(self.c.get_study(s["id"])["trials"]["total"], 2)

        proxy.drop_answers = 2
        with self.assertRaises(OSError), Client("http://127.0.0.1:%d" % proxy.port, self.d.token,
                                                retries=1, backoff=0.01) as once:
            once.me()
        proxy.drop_answers = 0
        c.close()

    def test_reconnects_after_daemon_restart(self):
        d = bdtest.Daemon(lease_seconds=300)
        self.addCleanup(d.cleanup)
        c = Client("http://127.0.0.1:%d" % d.port, d.token, backoff=0.05, retries=8)
        s = c.create_study(bdtest.unique_name("py"), PARAMS, "random", options={"max_trials": 10}, objective={"metric": "loss", "goal": "minimize"})
        t = c.suggest(s["id"])["trials"][0]
        d.restart()
        self.assertEqual(c.get_study(s["id"])["trials"]["running"], 1)

        d.stop()
        starter = threading.Timer(0.4, d.start)
        starter.start()
        self.addCleanup(starter.cancel)
        t0 = time.monotonic()
        done = c.complete(t["id"], value=0.5)  # connection refused until the daemon is back
        starter.join()
        self.assertGreater(time.monotonic() - t0, 0.3)
        self.assertEqual(done["state"], "completed")
        c.close()

    def test_one_client_shared_by_threads(self):
        s = self.study(options={"max_trials": 40})
        c = Client(self.url, self.d.token)
        self.addCleanup(c.close)
        errors = []

        def work(n):
            try:
                while True:
                    got = c.suggest(s["id"], worker="t%d" % n)
                    if got.get("done"):
                        return
                    if not got["trials"]:
                        time.sleep(got.get("retry_after_ms", 50) / 1000.0)
                        continue
                    t = got["trials"][0]
                    c.measure(t["id"], 1, t["config"]["x"])
                    c.complete(t["id"], value=t["config"]["x"])
            except Exception as e:  # reported below
                errors.append(repr(e))
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        self.assertEqual(errors, [])
        st = self.c.get_study(s["id"])
        self.assertEqual((st["trials"]["completed"], st["done"]), (40, True))

    # ---- users ----

    def test_users_and_tokens(self):
        name = bdtest.unique_name("alice")
        u = self.c.create_user(name)
        self.assertEqual((u["name"], u["admin"]), (name, False))
        tok = self.c.create_token(name)
        self.assertTrue(tok["token"].startswith("bdt_"), tok)
        alice = Client(self.url, tok["token"])
        self.addCleanup(alice.close)
        self.assertEqual(alice.me()["name"], name)
        mine = self.study()
        with self.assertRaises(BanditdError) as ctx:
            alice.get_study(mine["id"])
        self.assertBanditdError(ctx, 404, "not_found")
        with self.assertRaises(BanditdError) as ctx:
            alice.create_user(bdtest.unique_name("mallory"))
        self.assertBanditdError(ctx, 403, "forbidden")
        second = alice.create_token(name)
        self.assertEqual(alice.revoke_token(second["token_id"]), {"revoked": True, "token_id": second["token_id"]})
        with self.assertRaises(BanditdError) as ctx, Client(self.url, second["token"]) as revoked:
            revoked.me()
        self.assertBanditdError(ctx, 401, "unauthenticated")


if __name__ == "__main__":
    if not os.environ.get("BANDITD"):
        sys.stderr.write("test_python_client: BANDITD is not set; run through ctest or set "
                         "BANDITD=/path/to/banditd (skipping)\n")
    unittest.main()
