"""End to end: failures must be clean (docs/CONTRACT.md, "Exit codes").

0 analysis finished; 1 runtime failure; 2 usage error; 3 no usable profiler data anywhere.
Every failure prints one line on stderr that names the file, node or option at fault, and no
failure leaves a partly written results file under the final name. Every command runs under a
timeout, so a hang (e.g. ranks waiting forever for one that exited) fails the test.
"""

import os
import random
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h5py  # noqa: E402

import e2e_util  # noqa: E402
from e2e_util import RING_SPEC, product_stderr_lines, run, s, scratch  # noqa: E402

MOCK_SPEC = RING_SPEC + ",fault=slow_gpu:13"


class FailureChecks:
    def assert_finished(self, r, rc):
        self.assertFalse(r.timed_out, "command hung:\n" + r.describe())
        self.assertEqual(r.rc, rc, r.describe())

    def assert_one_line(self, r, *needles):
        """Exactly one non-empty stderr line (launcher notices aside), naming every needle."""
        lines = product_stderr_lines(r.stderr)
        self.assertEqual(len(lines), 1, "expected one stderr line:\n" + r.describe())
        for n in needles:
            self.assertIn(n, lines[0], "stderr line does not name %r:\n%s" % (n, r.describe()))

    def assert_some_line(self, r, *needles):
        """Under a launcher, each rank may report; some line must name every needle."""
        lines = product_stderr_lines(r.stderr)
        self.assertTrue(lines, "nothing on stderr:\n" + r.describe())
        self.assertTrue(any(all(n in line for n in needles) for line in lines),
                        "no stderr line names %r:\n%s" % (needles, r.describe()))

    def assert_no_results(self, directory, final_names=()):
        for name in final_names:
            self.assertFalse(os.path.exists(os.path.join(directory, name)),
                             "results file %s left after a failure" % name)
        left = sorted(os.listdir(directory))
        self.assertEqual(left, [], "files left in %s after a failure: %r" % (directory, left))


class NoData(FailureChecks, unittest.TestCase):
    def check_missing(self, np):
        work = scratch("missing")
        out_dir = os.path.join(work, "out")
        os.mkdir(out_dir)
        missing = os.path.join(work, "nonexistent", "dir")
        r = run(["analyze", "--input", missing, "--output", os.path.join(out_dir, "r.h5"),
                 "--json", os.path.join(out_dir, "r.json"), "--quiet"], np=np, cwd=out_dir)
        self.assert_finished(r, 3)
        if np is None:
            self.assert_one_line(r, missing)
        else:
            self.assert_some_line(r, missing)
        self.assert_no_results(out_dir, ["r.h5", "r.json"])

    def test_missing_input_dir(self):
        self.check_missing(None)

    def test_missing_input_dir_np4(self):
        self.check_missing(4)

    def check_empty(self, np):
        work = scratch("empty")
        empty = os.path.join(work, "empty")
        os.mkdir(empty)
        out_dir = os.path.join(work, "out")
        os.mkdir(out_dir)
        r = run(["analyze", "--input", empty, "--output", os.path.join(out_dir, "r.h5"),
                 "--quiet"], np=np, cwd=out_dir)
        self.assert_finished(r, 3)
        if np is None:
            self.assert_one_line(r, empty)
        else:
            self.assert_some_line(r, empty)
        self.assert_no_results(out_dir, ["r.h5"])

    def test_empty_input_dir(self):
        self.check_empty(None)

    def test_empty_input_dir_np4(self):
        self.check_empty(4)

    def test_empty_shared_dir_np4(self):
        work = scratch("empty-shared")
        empty = os.path.join(work, "shared")
        os.mkdir(empty)
        out_dir = os.path.join(work, "out")
        os.mkdir(out_dir)
        r = run(["analyze", "--shared", empty, "--output", os.path.join(out_dir, "r.h5"),
                 "--quiet"], np=4, cwd=out_dir)
        self.assert_finished(r, 3)
        self.assert_some_line(r, empty)
        self.assert_no_results(out_dir, ["r.h5"])


class BadFiles(FailureChecks, unittest.TestCase):
    """A truncated trace and a garbage file among a healthy host's files (not the culprit's)."""

    HOST = "node003"
    TRUNCATED_RANK = 24   # node003 local 0: a network-facing rank, its file has proxy events

    def make_data(self, garbage):
        work = scratch("bad")
        data = os.path.join(work, "data")
        r = run(["mock", "--out", data, "--scenario", MOCK_SPEC])
        self.assert_finished(r, 0)
        host_dir = os.path.join(data, self.HOST)
        [trunc] = [f for f in os.listdir(host_dir)
                   if f.endswith("_%d.json" % self.TRUNCATED_RANK)]
        trunc = os.path.join(host_dir, trunc)
        with open(trunc, "rb") as f:
            content = f.read()
        cut = len(content) // 2
        self.assertNotEqual(content[cut - 1:cut], b"\n")   # cut in the middle of an event
        with open(trunc, "wb") as f:
            f.write(content[:cut])
        garbage_path = None
        if garbage:
            garbage_path = os.path.join(host_dir, "garbage.json")
            with open(garbage_path, "wb") as f:
                f.write(random.Random(42).randbytes(8192))
        return work, data, trunc, garbage_path

    def analyze(self, work, data):
        out = os.path.join(work, "r.h5")
        r = run(["analyze", "--shared", data, "--output", out, "--quiet"], np=4, cwd=work)
        self.assert_finished(r, 0)
        self.assertTrue(os.path.isfile(out))
        return r, h5py.File(out, "r")

    def check_culprit(self, h5):
        culprits = h5["culprits"][...]
        self.assertGreaterEqual(len(culprits), 1, "culprit lost because of a bad file")
        listing = [(s(c["host"]), int(c["pid"]), s(c["culprit_class"]), float(c["blame_share"]))
                   for c in culprits]
        self.assertEqual((s(culprits[0]["host"]), s(culprits[0]["culprit_class"])),
                         ("node001", "gpu_producer"),
                         "culprit #1 is not the slow GPU (truth: node001 rank 13 gpu_producer); "
                         "culprits: %r" % listing)
        procs = h5["processes"][...]
        # slow_gpu:13 is node001 local 5: the pid the simulator gives local 5 on every host.
        local5 = sorted({int(p["pid"]) for p in procs if s(p["host"]) == "node001"})[5]
        self.assertEqual(int(culprits[0]["pid"]), local5)

    def input_row(self, h5, path):
        # The analyzer was given an absolute --shared DIR; accept any spelling of the same
        # file (host folder + name) in case it records paths relative to DIR.
        want = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
        rows = [r for r in h5["inputs"][...]
                if os.path.normpath(s(r["path"])) == os.path.normpath(path)
                or os.path.normpath(s(r["path"])).endswith(os.sep + want)
                or os.path.normpath(s(r["path"])) == want]
        self.assertEqual(len(rows), 1, "/inputs has %d rows for %s" % (len(rows), path))
        return rows[0]

    def test_truncated_file(self):
        work, data, trunc, _ = self.make_data(garbage=False)
        r, h5 = self.analyze(work, data)
        with h5:
            row = self.input_row(h5, trunc)
            self.assertEqual(s(row["host"]), self.HOST)
            self.assertGreater(int(row["rejected"]), 0, "truncated file: no rejected line")
            self.assertGreater(int(row["records"]), 0, "truncated file: its first half is good")
            self.assertIn(s(h5.attrs["status"]), ("ok", "partial"))
            self.check_culprit(h5)

    def test_truncated_and_garbage_files(self):
        work, data, trunc, garbage = self.make_data(garbage=True)
        r, h5 = self.analyze(work, data)
        with h5:
            row = self.input_row(h5, trunc)
            self.assertGreater(int(row["rejected"]), 0, "truncated file: no rejected line")
            g = self.input_row(h5, garbage)
            self.assertEqual(s(g["host"]), self.HOST)
            self.assertGreater(int(g["rejected"]), 0, "garbage file: nothing rejected")
            self.assertEqual(int(g["records"]), 0, "garbage file yielded records")
            self.assertEqual(s(h5.attrs["status"]), "partial",
                             "a wholly unreadable file must make the status partial")
            named = [line for line in product_stderr_lines(r.stderr) if "garbage.json" in line]
            self.assertEqual(len(named), 1, "expected one stderr line naming the garbage file:\n"
                             + r.describe())
            self.check_culprit(h5)


class UsageErrors(FailureChecks, unittest.TestCase):
    def check(self, args, *needles, np=None):
        work = scratch("usage")
        r = run(args, np=np, cwd=work)
        self.assert_finished(r, 2)
        if np is None:
            self.assert_one_line(r, *needles)
        else:
            self.assert_some_line(r, *needles)
        self.assert_no_results(work)

    def test_unknown_option(self):
        self.check(["analyze", "--no-such-option", "--mock", MOCK_SPEC], "--no-such-option")

    def test_bad_reduce(self):
        self.check(["analyze", "--reduce", "gpu", "--mock", MOCK_SPEC], "--reduce", "gpu")

    def test_bad_mock_topology(self):
        self.check(["analyze", "--mock", "topology=banana"], "topology", "banana")

    def test_bad_mock_topology_np2(self):
        self.check(["analyze", "--mock", "topology=banana"], "topology", "banana", np=2)

    def test_mock_fault_rank_out_of_range(self):
        self.check(["mock", "--out", "d", "--scenario", "fault=slow_gpu:999"], "999")


class RuntimeErrors(FailureChecks, unittest.TestCase):
    def test_report_not_hdf5(self):
        work = scratch("report")
        path = os.path.join(work, "not-results.h5")
        with open(path, "w") as f:
            f.write("this is not an HDF5 file\n")
        r = run(["report", path], cwd=work)
        self.assert_finished(r, 1)
        self.assert_one_line(r, path)

    def test_report_missing_file(self):
        work = scratch("report")
        path = os.path.join(work, "missing.h5")
        r = run(["report", path], cwd=work)
        self.assert_finished(r, 1)
        self.assert_one_line(r, path)

    def check_output_dir_missing(self, np):
        work = scratch("outdir")
        target = os.path.join(work, "no", "such", "dir", "r.h5")
        r = run(["analyze", "--mock", MOCK_SPEC, "--output", target, "--quiet"], np=np, cwd=work)
        self.assert_finished(r, 1)
        if np is None:
            self.assert_one_line(r, target)
        else:
            self.assert_some_line(r, target)
        self.assertFalse(os.path.exists(os.path.join(work, "no")), "output directory created")
        self.assert_no_results(work)

    def test_output_dir_missing(self):
        self.check_output_dir_missing(None)

    def test_output_dir_missing_np2(self):
        self.check_output_dir_missing(2)


if __name__ == "__main__":
    sys.exit(e2e_util.main())
