#!/usr/bin/python3
"""replay_selftest: checks of the replay cost model and trace (no daemon needed).

    /usr/bin/python3 tests/bench/replay_selftest.py
"""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_common import Table, Trace  # noqa: E402

T = Table()


class TableTest(unittest.TestCase):
    def test_counts_match_the_data_readme(self):
        self.assertEqual(T.n, 345)
        self.assertEqual(T.n_complete, 341)
        self.assertEqual(sorted(c for c in range(T.n) if T.length(c) < 50), [186, 235, 238, 250])
        self.assertAlmostEqual(T.best, 4.569, places=3)
        self.assertAlmostEqual(T.worst, 7.546, places=3)

    def test_one_percent_threshold_admits_only_the_best_row(self):
        self.assertEqual(T.threshold_rows["1%"], 1)
        self.assertEqual(T.threshold_rows["5% of range"], 5)

    def test_train_from_scratch_charges_every_epoch(self):
        epochs, secs, reached, value = T.train(1, 0, 50)
        self.assertEqual((epochs, reached), (50, 50))
        self.assertAlmostEqual(secs, sum(T.secs[1]))
        self.assertEqual(value, T.val[1][49])

    def test_resume_charges_only_the_new_epochs(self):
        e1, s1, r1, _ = T.train(7, 0, 5)
        e2, s2, r2, v2 = T.train(7, r1, 16)
        e3, s3, _, _ = T.train(7, 0, 16)
        self.assertEqual((e1, e2), (5, 11))
        self.assertAlmostEqual(s1 + s2, s3)
        self.assertEqual(e1 + e2, e3)
        self.assertEqual(v2, T.val[7][15])

    def test_diverged_row_stops_at_its_last_epoch_with_null(self):
        # row 186 lasted 19 epochs, the 19th with a null loss
        self.assertEqual(T.length(186), 19)
        epochs, secs, reached, value = T.train(186, 0, 50)
        self.assertEqual((epochs, reached, value), (19, 19, None))
        self.assertAlmostEqual(secs, sum(T.secs[186]))
        self.assertEqual(T.train(186, 0, 16)[3], T.val[186][15])
        self.assertEqual(T.train(235, 0, 1)[3], None)

    def test_epochs_done_by_counts_whole_epochs(self):
        c = 3
        self.assertEqual(T.epochs_done_by(c, 0, 100.0, 100.0), 0)
        self.assertEqual(T.epochs_done_by(c, 0, 100.0, 100.0 + T.secs[c][0]), 1)
        self.assertEqual(T.epochs_done_by(c, 0, 100.0, 100.0 + T.secs[c][0] - 1e-3), 0)
        # resumed at epoch 5: the first epoch done is epoch 6
        self.assertEqual(T.epochs_done_by(c, 5, 0.0, T.secs[c][5] + T.secs[c][6]), 2)


class TraceTest(unittest.TestCase):
    def test_only_trials_at_fifty_epochs_count(self):
        tr = Trace(T, 1, 1000)
        tr.finish_trial(10.0, 16, 1, 16, 16, 10.0, 4.0)
        self.assertEqual(tr.best, math.inf)
        tr.finish_trial(20.0, 66, 2, 50, 50, 10.0, 4.9)
        tr.finish_trial(30.0, 116, 1, 50, 34, 10.0, T.best)
        self.assertEqual(tr.points, [[20.0, 66, 4.9], [30.0, 116, T.best]])
        self.assertEqual(tr.hits["1%"], {"epochs": 116, "time": 30.0})
        self.assertTrue(tr.found_table_best())

    def test_diverged_final_is_ignored(self):
        tr = Trace(T, 1, 1000)
        tr.finish_trial(5.0, 19, 186, 50, 19, 5.0, None)
        self.assertEqual((tr.best, tr.diverged), (math.inf, 1))


if __name__ == "__main__":
    unittest.main()
