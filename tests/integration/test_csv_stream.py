"""The CSV export reads storage off libmicrohttpd's polling threads.

The export of a study's trials (GET /v1/studies/{id}/trials.csv) is streamed a
page of trials at a time, and each page is a storage query, which can wait
behind a commit or the replay of a large study. The test daemon
(banditd-test) makes every page take BANDITD_TEST_CSV_PAGE_MS (800 ms here),
and runs one polling thread (--threads 1), which serves every connection:
had the pages been read on it, each would stall every other client for 800
ms. They are read by the request handler threads while the export's
connection is suspended, so /healthz and a suggest to another study answer
at once meanwhile, and the export is still complete and in order.

A slow export may also outlive its study's place in the study cache: the
study is evicted (its definition freed) while its pages are still read, so
the export keeps its own copy of the parameter names (the second test; under
AddressSanitizer, reading the freed definition would abort).

The bound (every probe under 500 ms) is a functional check with a wide
margin, not a benchmark: on a quiet machine a probe takes about a millisecond.
"""

import csv
import io
import threading
import time
import unittest

import bdtest
from bdtest import check_status

PAGE_MS = 800
TRIALS = 2500  # three pages of BD_CSV_PAGE (1,000) trials, the header aside


class CsvStreamOffPollingThread(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = bdtest.Daemon(extra_args=("--threads", "1"), env={"BANDITD_TEST_CSV_PAGE_MS": str(PAGE_MS)})

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_slow_pages_stall_no_other_request(self):
        big = bdtest.create_study(self.d, scheduler={"name": "random"})  # no max_trials
        other = bdtest.create_study(self.d)
        ids = []
        while len(ids) < TRIALS:
            ids += [t["id"] for t in bdtest.suggest(self.d, big["id"], count=100)]
        result = {}
        exporter_client = self.d.client(timeout=60)  # a connection of its own

        def export():
            t0 = time.monotonic()
            st, text, hdrs = exporter_client.request("GET", "/v1/studies/%d/trials.csv" % big["id"])
            result.update(status=st, text=text, seconds=time.monotonic() - t0)

        exporter = threading.Thread(target=export)
        exporter.start()
        probes = []
        while exporter.is_alive():
            t0 = time.monotonic()
            check_status(self, self.d.request("GET", "/healthz", token=None), 200)
            bdtest.suggest(self.d, other["id"])
            probes.append(time.monotonic() - t0)
            time.sleep(0.02)
        exporter.join()

        self.assertEqual(result["status"], 200)
        # the export really was slow (three delayed pages), so the probes ran beside it
        self.assertGreaterEqual(result["seconds"], 3 * PAGE_MS / 1000.0 * 0.9)
        self.assertLess(max(probes), 0.5, "a probe waited for a CSV page: %s" % sorted(probes)[-5:])
        self.assertGreaterEqual(len(probes), 10)
        rows = list(csv.DictReader(io.StringIO(result["text"])))
        self.assertEqual([int(r["trial_id"]) for r in rows], sorted(ids))
        self.assertTrue(all(r["state"] == "running" for r in rows))


def metric(daemon, name):
    st, text, _ = daemon.request("GET", "/metrics", token=None)
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric %s" % name)


class CsvExportOutlivesEviction(bdtest.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        # 1 MiB of study cache: the exported study alone is over it (a tpe
        # study counts 256 bytes a trial: it keeps its running trials'
        # configs), so it is evicted by a trim once it has been idle for 5 s
        # (the hot period). Random search would not do: it says it holds
        # next to nothing (held_bytes) and stays loaded.
        cls.d = bdtest.Daemon(extra_args=("--study-cache-mb", "1"), env={"BANDITD_TEST_CSV_PAGE_MS": "1500"})

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_export_of_an_evicted_study_is_complete(self):
        big = bdtest.create_study(self.d, scheduler={"name": "tpe"})
        ids = []
        while len(ids) < 5000:  # six pages with the header: 9 s
            ids += [t["id"] for t in bdtest.suggest(self.d, big["id"], count=100)]
        others = [bdtest.create_study(self.d) for _ in range(3)]
        evictions = metric(self.d, "banditd_study_evictions_total")
        result = {}
        exporter_client = self.d.client(timeout=60)

        def export():
            result["answer"] = exporter_client.request("GET", "/v1/studies/%d/trials.csv" % big["id"])

        exporter = threading.Thread(target=export)
        exporter.start()
        time.sleep(5.5)  # the first page is being read; the study is past its hot period
        evicted_during = False
        while exporter.is_alive():
            for o in others:  # loads (and trims) while the big study is only exported
                bdtest.suggest(self.d, o["id"])
            evicted_during = evicted_during or metric(self.d, "banditd_study_evictions_total") > evictions
            time.sleep(0.2)
        exporter.join()
        self.assertTrue(evicted_during, "the exported study was never evicted: the test proves nothing")
        st, text, _ = result["answer"]
        self.assertEqual(st, 200)
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual([int(r["trial_id"]) for r in rows], sorted(ids))
        self.assertTrue(all(r["params_k"] in ("a", "b", "c") and 0 <= float(r["params_x"]) <= 1 for r in rows))


if __name__ == "__main__":
    unittest.main()
