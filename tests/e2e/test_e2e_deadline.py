#!/usr/bin/env python3
"""One analyzer process stopped (issue 14: "No hang when a node hangs").

A node stuck in a hung file system read stops its analyzer process. Without a deadline the
other processes wait for it in the next collective until killed from outside. With
`--deadline S`, every phase waits at most S seconds for each process; past it rank 0 writes
the results of the nodes that answered with `status partial`, prints one line naming the
silent process, and the job ends with exit code 4 (the stopped process too).

The process is stopped with a real SIGSTOP: NCCL_CULPRIT_TEST_STOP_RANK=R makes analyzer
rank R send it to itself where phase 1 (reading) begins, so the moment is deterministic.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

import unittest  # noqa: E402

import h5py  # noqa: E402

SPEC = "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=slow_gpu:6"
DEADLINE_S = 4


class StoppedAnalyzerProcess(unittest.TestCase):
    def run_with_stopped_rank(self, rank):
        data = u.scratch("deadline-data")
        r = u.run(["mock", "--out", data, "--scenario", SPEC])
        self.assertEqual(r.rc, 0, r.describe())
        out = u.scratch("deadline-results")
        h5 = os.path.join(out, "r.h5")
        os.environ["NCCL_CULPRIT_TEST_STOP_RANK"] = str(rank)
        try:
            started = time.time()
            r = u.run(["analyze", "--shared", data, "--deadline", str(DEADLINE_S), "--output", h5], np=4,
                      timeout=60)
            took = time.time() - started
        finally:
            os.environ.pop("NCCL_CULPRIT_TEST_STOP_RANK", None)
        return r, took, h5

    def test_other_three_write_partial_results_within_the_deadline(self):
        r, took, h5 = self.run_with_stopped_rank(3)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.rc, 4, r.describe())
        self.assertLess(took, DEADLINE_S + 15, r.describe())
        lines = [l for l in u.product_stderr_lines(r.stderr) if "silent past --deadline" in l]
        self.assertEqual(len(lines), 1, r.describe())
        self.assertIn("rank 3", lines[0])
        with h5py.File(h5, "r") as f:
            self.assertEqual(u.s(f.attrs["status"]), "partial")
            self.assertEqual(len(f["inputs"]), 12)  # the three nodes that answered, 4 files each
            self.assertGreater(len(f["culprits"]), 0)
        self.assertIn("silent past the %d s deadline" % DEADLINE_S, r.stdout)

    def test_rank_zero_stopped_ends_the_job(self):
        # Nobody can write results then; the others give up after 3 x the deadline.
        r, took, h5 = self.run_with_stopped_rank(0)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.rc, 4, r.describe())
        self.assertIn("analyzer rank 0 silent", r.stderr)
        self.assertFalse(os.path.exists(h5))


if __name__ == "__main__":
    sys.exit(u.main())
