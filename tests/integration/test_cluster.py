"""Several daemons on one PostgreSQL database (issue 16, cluster mode:
--advertise-url): each study is served by one daemon at a time under an
ownership lease with a fencing token (storage/pg_cluster.c); a request that
reaches another daemon moves the study there (server/README.md "Several
daemons"). Checked here:
- a study created on A is served through B, and A sees B's writes;
- two daemons driven alternately hand out the same (config, budget) sequence
  as one daemon on its own database (no rung slot handed out twice, ids in
  order across moves), and so do two daemons driven at the same time from two
  threads (every rung slot once);
- kill -9 of the owner: another daemon answers at once, and no acknowledged
  write is lost;
- /metrics counts the studies a daemon owns; a second daemon without
  --advertise-url is still refused.
Runs only with BD_TEST_STORE=postgres (SQLite has one daemon per file)."""

import os
import sys
import threading
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bdtest  # noqa: E402
from bdtest import expect, unique_name  # noqa: E402

PARAMETERS = [
    {"name": "x", "type": "float", "low": 0.0, "high": 1.0},
    {"name": "k", "type": "categorical", "choices": ["a", "b", "c"]},
]


def loss_of(config, budget):
    return (config["x"] - 0.3) ** 2 + {"a": 0.0, "b": 0.02, "c": 0.05}[config["k"]] + 1.0 / (1.0 + budget)


def sh_study(seed=5):
    return {"name": unique_name("cl"), "parameters": PARAMETERS,
            "objective": {"metric": "loss", "goal": "minimize"},
            "resource": {"name": "epochs", "min": 1, "max": 27, "integer": True},
            "scheduler": {"name": "successive_halving", "options": {"n": 9, "budget": 81}}, "seed": seed}


def drive(daemons, sid, limit=200):
    """One worker: suggest one trial, complete it, through daemons[i % len]
    in turn, until the study is done. Returns [(config, budget, resume_from
    given)] in order."""
    seq = []
    for i in range(limit):
        d = daemons[i % len(daemons)]
        ans = expect(d.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w", "count": 1}), 200, "suggest")
        if ans.get("done"):
            return seq
        if not ans["trials"]:
            continue
        t = ans["trials"][0]
        seq.append((sorted(t["config"].items()), t["budget"], bool(t.get("resume_from"))))
        d2 = daemons[(i + 1) % len(daemons)]
        expect(d2.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": loss_of(t["config"], t["budget"])}),
               200, "complete")
    raise AssertionError("study %d not done after %d suggests" % (sid, limit))


@unittest.skipUnless(bdtest.STORE == "postgres", "cluster mode needs PostgreSQL (BD_TEST_STORE=postgres)")
class ClusterTest(bdtest.DaemonTestCase):
    def cluster(self, n=2, lease="2"):
        first = bdtest.Daemon(start=False)
        peers = [first]
        for _ in range(n - 1):
            peers.append(bdtest.Daemon(db=first.db, admin_token_file=first.admin_token_file, start=False))
        for d in peers:
            d.extra_args += ["--advertise-url", "http://127.0.0.1:%d" % d.port, "--ownership-lease-seconds", lease]
            d.start()
        return peers

    def test_study_created_on_a_is_served_through_b(self):
        a, b = self.cluster()
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        got = expect(b.request("GET", "/v1/studies/%d" % sid), 200, "GET on B")
        self.assertEqual(got["id"], sid)
        t = expect(b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on B")["trials"][0]
        expect(a.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": 0.5}), 200, "complete on A")
        seen = expect(b.request("GET", "/v1/trials/%d" % t["id"]), 200, "GET trial on B")
        self.assertEqual((seen["state"], seen["value"]), ("completed", 0.5))
        # Another user's study stays invisible through every member.
        tok = bdtest.create_user(a, unique_name("u"))
        self.assertEqual(b.request("GET", "/v1/studies/%d" % sid, token=tok)[0], 404)
        self.assertEqual(b.request("GET", "/v1/studies/999999")[0], 404)

    def test_alternating_daemons_give_one_daemons_sequence(self):
        lone = bdtest.Daemon()
        sid = expect(lone.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        want = drive([lone], sid)
        # A live lease is waited out, never stolen: a short lease keeps the
        # wait of each move (up to the lease) small.
        a, b, c = self.cluster(3, lease="0.2")
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        t0 = time.monotonic()
        got = drive([a, b, c], sid)
        moving = (time.monotonic() - t0) / max(1, len(got))
        self.assertEqual(got, want, "the cluster's (config, budget) sequence")
        self.assertGreater(len(got), 9)
        sid2 = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        t0 = time.monotonic()
        self.assertEqual(drive([a], sid2), want)
        staying = (time.monotonic() - t0) / max(1, len(want))
        sys.stderr.write("cluster: %.1f ms per suggest+complete when the study moves on every request, "
                         "%.1f ms when it stays on one daemon\n" % (moving * 1e3, staying * 1e3))

    def test_concurrent_daemons_hand_out_each_rung_slot_once(self):
        lone = bdtest.Daemon()
        want = drive([lone], expect(lone.request("POST", "/v1/studies", sh_study(seed=9)), 201, "create")["id"])
        a, b = self.cluster()
        sid = expect(a.request("POST", "/v1/studies", sh_study(seed=9)), 201, "create")["id"]
        errors, moved = [], []

        def call(c, path, body):
            # 503 "moved": the study changed daemons between claim and commit
            # more often than the daemon retries; nothing was written: retry.
            for _ in range(50):
                st, ans, _ = c.request("POST", path, body)
                if st != 503:
                    self.assertEqual(st, 200, ans)
                    return ans
                self.assertEqual(ans["error"]["code"], "moved", ans)
                moved.append(path)
            raise AssertionError("%s: 503 fifty times" % path)

        def worker(d, name):
            c = d.client()
            try:
                for _ in range(300):
                    ans = call(c, "/v1/studies/%d/suggest" % sid, {"worker": name})
                    if ans.get("done"):
                        return
                    for t in ans["trials"]:
                        call(c, "/v1/trials/%d/complete" % t["id"], {"value": loss_of(t["config"], t["budget"])})
                    if not ans["trials"]:
                        time.sleep(0.01)
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)
            finally:
                c.close()

        threads = [threading.Thread(target=worker, args=(d, "w%d" % i)) for i, d in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        sys.stderr.write("cluster: two daemons at once: %d requests answered 503 moved\n" % len(moved))
        trials = expect(b.request("GET", "/v1/studies/%d/trials?limit=1000" % sid), 200, "list")["trials"]
        # Completions arrive in another order than one worker's, but every
        # (config, budget) slot of the plan is handed out exactly once.
        self.assertEqual(sorted((sorted(t["config"].items()), t["budget"]) for t in trials),
                         sorted((c, b) for c, b, _ in want), "one trial per rung slot")
        self.assertEqual(len({t["id"] for t in trials}), len(trials))
        self.assertTrue(all(t["state"] == "completed" for t in trials), trials)

    def test_a_live_lease_is_waited_out_not_stolen(self):
        a, b = self.cluster(lease="1.5")
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on A")
        t0 = time.monotonic()
        expect(b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on B")
        waited = time.monotonic() - t0
        # A's lease runs 1.5 s from its last write; B waits (polls) for it.
        self.assertGreater(waited, 1.0, "B took A's live lease at once")
        self.assertLess(waited, 2.5)
        sys.stderr.write("cluster: a request to a peer waited %.0f ms for the owner's lease\n" % (waited * 1e3))

    def test_a_long_live_lease_answers_moved_with_retry_after(self):
        a, b = self.cluster(lease="30")
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on A")
        t0 = time.monotonic()
        st, ans, headers = b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"})
        self.assertEqual((st, ans["error"]["code"]), (503, "moved"), ans)
        self.assertEqual(ans["error"]["retry_after_seconds"], 30)
        self.assertEqual({k.lower(): v for k, v in dict(headers).items()}.get("retry-after"), "30")
        self.assertLess(time.monotonic() - t0, 6.5, "the wait is bounded (5 s)")

    def test_an_idle_release_keeps_memory_when_no_peer_took_it(self):
        a, b = self.cluster(lease="0.3")
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest")

        def metric(d, name):
            m = expect(d.request("GET", "/metrics"), 200, "metrics")
            return int(float(next(l.split()[1] for l in m.splitlines() if l.startswith(name + " "))))

        loads = metric(a, "banditd_study_loads_total")
        deadline = time.monotonic() + 5
        while metric(a, "banditd_studies_owned") != 0:  # the reaper released it (idle > lease)
            self.assertLess(time.monotonic(), deadline, "never released")
            time.sleep(0.1)
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest again")
        self.assertEqual(metric(a, "banditd_study_loads_total"), loads, "replayed after its own idle release")
        self.assertEqual(metric(a, "banditd_studies_owned"), 1)
        # Through B now (A's lease runs out): B replays, and A's memory is
        # stale; A's next request sees the new token and replays too.
        expect(b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on B")
        time.sleep(0.5)
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on A")
        self.assertEqual(metric(a, "banditd_study_loads_total"), loads + 1)
        trials = expect(a.request("GET", "/v1/studies/%d/trials" % sid), 200, "list")["trials"]
        self.assertEqual(len(trials), 4)
        self.assertEqual(len({(str(sorted(t["config"].items())), t["budget"]) for t in trials}), 4)

    def test_a_token_revoked_through_a_is_refused_by_b_within_a_second(self):
        a, b = self.cluster()
        name = unique_name("rv")
        expect(a.request("POST", "/v1/users", {"name": name}), 201, "user")
        tok, tok_id = bdtest.create_token(a, name)
        expect(b.request("GET", "/v1/studies", token=tok), 200, "B caches the token")
        expect(a.request("DELETE", "/v1/tokens/%d" % tok_id), 200, "revoke through A")
        t0 = time.monotonic()
        while b.request("GET", "/v1/studies", token=tok)[0] != 401:
            self.assertLess(time.monotonic() - t0, 1.0, "B still takes a token revoked through A")
            time.sleep(0.05)

    def test_concurrent_creates_of_one_name_through_two_daemons(self):
        a, b = self.cluster()
        for rnd in range(12):
            body = sh_study()
            barrier = threading.Barrier(2)
            got = {}

            def create(d, key):
                c = d.client()
                try:
                    barrier.wait()
                    got[key] = c.request("POST", "/v1/studies", body)
                finally:
                    c.close()

            threads = [threading.Thread(target=create, args=(d, i)) for i, d in enumerate((a, b))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            codes = sorted(v[0] for v in got.values())
            self.assertEqual(codes, [201, 409], "round %d: %r" % (rnd, got))
            studies = expect(a.request("GET", "/v1/studies?name=%s" % body["name"]), 200, "list")["studies"]
            self.assertEqual(len(studies), 1, studies)

    def test_kill_the_owner_and_a_peer_serves_at_once(self):
        a, b = self.cluster()
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        done = []
        for _ in range(5):
            t = expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest")["trials"][0]
            expect(a.request("POST", "/v1/trials/%d/complete" % t["id"], {"value": 0.1 * len(done)}), 200, "complete")
            done.append(t["id"])
        m = expect(a.request("GET", "/metrics"), 200, "metrics")
        self.assertIn("banditd_studies_owned 1\n", m)
        a.kill()
        t0 = time.monotonic()
        while True:
            st, ans, _ = b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"})
            if st == 200:
                break
            self.assertLess(time.monotonic() - t0, 5, "B did not serve the study within 5 s: %d %r" % (st, ans))
            time.sleep(0.1)
        sys.stderr.write("cluster: the peer answered %.0f ms after the owner was killed\n"
                         % ((time.monotonic() - t0) * 1e3))
        trials = expect(b.request("GET", "/v1/studies/%d/trials" % sid), 200, "list")["trials"]
        completed = {t["id"] for t in trials if t["state"] == "completed"}
        self.assertTrue(set(done) <= completed, "acknowledged completions lost: %r" % (set(done) - completed))
        self.assertEqual(len(trials), 6)
        m = expect(b.request("GET", "/metrics"), 200, "metrics")
        self.assertIn("banditd_studies_owned 1\n", m)

    def test_a_lone_daemon_is_still_refused_beside_another(self):
        (a,) = self.cluster(1)
        lone = bdtest.Daemon(db=a.db, admin_token_file=a.admin_token_file, start=False)
        with self.assertRaises(AssertionError) as cm:
            lone.start(timeout=15)
        self.assertIn("several daemons need --advertise-url", str(cm.exception) + open(lone.log_path).read())


if __name__ == "__main__":
    if bdtest.STORE != "postgres":
        sys.stderr.write("test_cluster: skipped: cluster mode needs PostgreSQL; run with BD_TEST_STORE=postgres "
                         "(tests/pgcluster.sh)\n")
    unittest.main()
