"""Several daemons on one PostgreSQL database (issue 16, cluster mode:
--advertise-url): each study is served by one daemon at a time under an
ownership lease with a fencing token (storage/pg_cluster.c); a request that
reaches another daemon is forwarded to the holder, one hop, and its answer
returned as is (issue 42; server/README.md "Several daemons"). Checked here:
- a study created on A is served through B, and A sees B's writes;
- two daemons driven alternately hand out the same (config, budget) sequence
  as one daemon on its own database (no rung slot handed out twice, ids in
  order across moves), and so do two daemons driven at the same time from two
  threads (every rung slot once);
- kill -9 of the owner: another daemon answers at once, and no acknowledged
  write is lost;
- /metrics counts the studies a daemon owns; a second daemon without
  --advertise-url is still refused;
- issue 42: three daemons driven round-robin per request answer every
  request of one study (no 503 "moved", no 5xx) and hand out each rung slot
  once; a live lease is neither waited out nor stolen (the request is
  forwarded); a listing through any member shows the studies every member
  holds; a request forwarded to an address where another daemon now runs
  is refused (421) and the study taken over; one user flooding a member with
  reads of a study another member holds leaves another user's requests on
  that member fast (the medium defect: the flood waited out leases holding
  handler threads).
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


def metric(d, name):
    m = expect(d.request("GET", "/metrics"), 200, "metrics")
    return int(float(next(l.split()[1] for l in m.splitlines() if l.startswith(name + " "))))


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

    def test_a_live_lease_is_forwarded_to_not_waited_out(self):
        a, b = self.cluster(lease="30")
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on A")
        loads = metric(a, "banditd_study_loads_total")
        t0 = time.monotonic()
        for _ in range(3):
            got = expect(b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on B")
            self.assertEqual(len(got["trials"]), 1)
        waited = (time.monotonic() - t0) / 3
        # Before issue 42 B waited for A's 30 s lease (at most 5 s), then
        # answered 503 "moved". Now A answers through B: A keeps the study.
        self.assertLess(waited, 5.0, "B waited for A's lease")
        self.assertEqual(metric(a, "banditd_studies_owned"), 1)
        self.assertEqual(metric(b, "banditd_studies_owned"), 0)
        self.assertEqual(metric(a, "banditd_study_loads_total"), loads, "A replayed the study")
        self.assertEqual(len(expect(a.request("GET", "/v1/studies/%d/trials" % sid), 200, "list")["trials"]), 4)
        # Reads, the CSV export and a trial through B are A's answers too.
        self.assertEqual(expect(b.request("GET", "/v1/studies/%d" % sid), 200, "GET on B")["trials"]["total"], 4)
        st, csv, headers = b.request("GET", "/v1/studies/%d/trials.csv" % sid)
        self.assertEqual(st, 200)
        self.assertEqual(len(csv.strip().splitlines()), 5, csv)
        self.assertIn("text/csv", {k.lower(): v for k, v in dict(headers).items()}.get("content-type", ""))
        sys.stderr.write("cluster: a request through a peer answered in %.1f ms (forwarded)\n" % (waited * 1e3))

    def test_a_listing_through_any_member_shows_every_members_studies(self):
        a, b = self.cluster()
        sa = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create on A")["id"]
        sb = expect(b.request("POST", "/v1/studies", sh_study()), 201, "create on B")["id"]
        expect(a.request("POST", "/v1/studies/%d/suggest" % sa, {"worker": "w"}), 200, "A holds sa")
        expect(b.request("POST", "/v1/studies/%d/suggest" % sb, {"worker": "w"}), 200, "B holds sb")
        for d in (a, b):
            got = expect(d.request("GET", "/v1/studies"), 200, "list")["studies"]
            by_id = {s["id"]: s for s in got}
            self.assertEqual({sa, sb} <= set(by_id), True, got)
            for sid in (sa, sb):
                self.assertEqual(by_id[sid]["trials"]["running"], 1, by_id[sid])
                self.assertNotIn("forward", by_id[sid])
        self.assertEqual(metric(a, "banditd_studies_owned"), 1)
        self.assertEqual(metric(b, "banditd_studies_owned"), 1)

    def test_three_daemons_round_robin_per_request(self):
        lone = bdtest.Daemon()
        want = drive([lone], expect(lone.request("POST", "/v1/studies", sh_study(seed=11)), 201, "create")["id"])
        daemons = self.cluster(3)
        sid = expect(daemons[0].request("POST", "/v1/studies", sh_study(seed=11)), 201, "create")["id"]
        clients = [[d.client() for d in daemons] for _ in range(3)]
        errors, answers = [], []
        turn = [0]
        lock = threading.Lock()

        def call(cs, method, path, body=None):
            with lock:  # the next daemon in turn, whoever asks: round-robin per request
                c = cs[turn[0] % len(cs)]
                turn[0] += 1
            st, ans, _ = c.request(method, path, body)
            answers.append(st)
            self.assertLess(st, 500, ans)
            self.assertEqual(st, 200, ans)
            return ans

        def worker(cs, name):
            try:
                for _ in range(300):
                    ans = call(cs, "POST", "/v1/studies/%d/suggest" % sid, {"worker": name})
                    if ans.get("done"):
                        return
                    for t in ans["trials"]:
                        call(cs, "POST", "/v1/trials/%d/measurements" % t["id"], {"value": 1.0, "step": 1})
                        call(cs, "GET", "/v1/trials/%d" % t["id"])
                        call(cs, "POST", "/v1/trials/%d/complete" % t["id"], {"value": loss_of(t["config"], t["budget"])})
                    if not ans["trials"]:
                        time.sleep(0.01)
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                errors.append(e)

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker, args=(clients[i], "w%d" % i)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for cs in clients:
            for c in cs:
                c.close()
        self.assertEqual(errors, [])
        self.assertTrue(answers and all(st == 200 for st in answers), sorted(set(answers)))
        trials = expect(daemons[2].request("GET", "/v1/studies/%d/trials?limit=1000" % sid), 200, "list")["trials"]
        self.assertEqual(sorted((sorted(t["config"].items()), t["budget"]) for t in trials),
                         sorted((c, b) for c, b, _ in want), "one trial per rung slot")
        self.assertEqual(sum(metric(d, "banditd_studies_owned") for d in daemons), 1)
        sys.stderr.write("cluster: three daemons round-robin: %d requests in %.1f s, all 200\n"
                         % (len(answers), time.monotonic() - t0))

    def test_a_restarted_peer_address_refuses_forwards_and_the_study_is_taken(self):
        a, b = self.cluster(lease="30")
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "A holds it")
        expect(b.request("GET", "/v1/studies/%d" % sid), 200, "B forwards to A")
        # A request meant for another daemon id is refused, nothing done.
        st, ans, _ = a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"},
                               headers={"Banditd-Forwarded-To": "999999"})
        self.assertEqual((st, ans["error"]["code"], ans["error"]["field"]), (421, "misdirected", "daemon"), ans)
        # kill -9 and a new daemon at A's address: A's 30 s lease is live, yet
        # B finds another daemon there (421) and takes the study at once.
        a.kill()
        a.start()
        t0 = time.monotonic()
        got = expect(b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on B")
        self.assertEqual(len(got["trials"]), 1)
        self.assertLess(time.monotonic() - t0, 10.0, "B waited for the dead daemon's lease")
        self.assertEqual(metric(b, "banditd_studies_owned"), 1)
        trials = expect(b.request("GET", "/v1/studies/%d/trials" % sid), 200, "list")["trials"]
        self.assertEqual(len(trials), 2)  # one from A before the kill, none from the refused request, one now
        sys.stderr.write("cluster: the study was taken from a restarted address in %.0f ms\n"
                         % ((time.monotonic() - t0) * 1e3))

    def test_a_flood_of_reads_through_a_member_leaves_other_users_fast(self):
        # The medium defect of issue 42: bob's study is hot on A; his
        # parallel reads of it through B each waited out A's lease holding
        # the study's lock and a handler thread (503 "moved" after 2.5 s
        # each), and alice's suggest on B waited seconds behind them.
        a, b = self.cluster()
        bob = bdtest.create_user(a, unique_name("bob"))
        alice = bdtest.create_user(a, unique_name("alice"))
        s_bob = expect(a.request("POST", "/v1/studies", sh_study(), token=bob), 201, "bob's study")["id"]
        s_alice = expect(b.request("POST", "/v1/studies", sh_study(), token=alice), 201, "alice's study")["id"]
        stop = threading.Event()
        flood, errors = [], []

        def hot():  # keeps bob's study held by A
            c = a.client()
            try:
                while not stop.is_set():
                    c.request("GET", "/v1/studies/%d" % s_bob, token=bob)
                    time.sleep(0.05)
            finally:
                c.close()

        def flooder():
            c = b.client()
            try:
                while not stop.is_set():
                    st, ans, _ = c.request("GET", "/v1/studies/%d" % s_bob, token=bob)
                    flood.append(st)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            finally:
                c.close()

        def alice_suggests(n):
            c = b.client()
            times = []
            try:
                for _ in range(n):
                    t0 = time.monotonic()
                    expect(c.request("GET", "/v1/studies/%d" % s_alice, token=alice), 200, "alice's read")
                    times.append(time.monotonic() - t0)
            finally:
                c.close()
            return sorted(times)[int(0.95 * (len(times) - 1))]

        threading.Thread(target=hot, daemon=True).start()
        time.sleep(0.3)
        quiet = alice_suggests(20)
        threads = [threading.Thread(target=flooder) for _ in range(10)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        busy = alice_suggests(40)
        stop.set()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])
        self.assertGreater(len(flood), 10)
        self.assertEqual(sorted(set(flood)), [200], "bob's reads through B")
        sys.stderr.write("cluster: alice's read p95 on B %.1f ms quiet, %.1f ms during bob's flood "
                         "(%d reads)\n" % (quiet * 1e3, busy * 1e3, len(flood)))
        # Ten readers share the two cores with both daemons and PostgreSQL:
        # alice's requests slow down with the machine, never by a lease.
        self.assertLess(busy, max(0.1, 10 * quiet), "alice waited behind bob's flood")
        self.assertEqual(metric(a, "banditd_studies_owned"), 1)

    def test_an_idle_release_keeps_memory_when_no_peer_took_it(self):
        a, b = self.cluster(lease="0.3")
        sid = expect(a.request("POST", "/v1/studies", sh_study()), 201, "create")["id"]
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest")

        loads = metric(a, "banditd_study_loads_total")
        deadline = time.monotonic() + 5
        while metric(a, "banditd_studies_owned") != 0:  # the reaper released it (idle > lease)
            self.assertLess(time.monotonic(), deadline, "never released")
            time.sleep(0.1)
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest again")
        self.assertEqual(metric(a, "banditd_study_loads_total"), loads, "replayed after its own idle release")
        self.assertEqual(metric(a, "banditd_studies_owned"), 1)
        # Through B once A released it again: B takes it (a new token) and
        # replays; A's next request, while B holds it, is forwarded to B.
        deadline = time.monotonic() + 5
        while metric(a, "banditd_studies_owned") != 0:
            self.assertLess(time.monotonic(), deadline, "never released")
            time.sleep(0.1)
        expect(b.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on B")
        expect(a.request("POST", "/v1/studies/%d/suggest" % sid, {"worker": "w"}), 200, "suggest on A")
        self.assertEqual(metric(a, "banditd_study_loads_total"), loads)
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
