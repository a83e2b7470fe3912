"""End to end: simulate a faulty cluster, analyse it under mpirun, check the results file.

For each scenario on a 4-node x 8-GPU ring: `nccl-culprit mock --out DIR`, then
`mpirun -np 4 nccl-culprit analyze --shared DIR --output X.h5 --json X.json --quiet`, then the
HDF5 file is read back with h5py and checked against docs/CONTRACT.md and the simulator's
ground_truth.json. Also: `analyze --mock SPEC` (no files) and a single-process run (no launcher)
must find the same culprit.
"""

import datetime
import json
import math
import os
import re
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

import e2e_util  # noqa: E402
from e2e_util import RING_SPEC, run, s, scratch  # noqa: E402

# ---- the contract's schema (docs/CONTRACT.md, "Results file (HDF5)") -------------------------

U32, I32, I64, U64, F64 = ("u", 4), ("i", 4), ("i", 8), ("u", 8), ("f", 8)


def STR(n):
    return ("S", n)


SCHEMA = {
    "processes": [("process_id", U32), ("host", STR(64)), ("pid", I64), ("role", STR(16)),
                  ("culprit_class", STR(24)), ("attributed_root", I64), ("chain_depth", I32),
                  ("wait_ns", U64), ("blame_ns", U64), ("score", F64)],
    "comm_ranks": [("comm_hash", U64), ("comm_rank", I32), ("n_ranks", I32),
                   ("process_id", U32)],
    "edges": [("comm_hash", U64), ("channel", I32), ("src_process", U32), ("dst_process", U32),
              ("src_rank", I32), ("dst_rank", I32), ("send_gpu_wait_ns", U64),
              ("send_peer_wait_ns", U64), ("send_wait_ns", U64), ("recv_wait_ns", U64),
              ("recv_flush_wait_ns", U64), ("recv_gpu_wait_ns", U64), ("send_steps", U64),
              ("recv_steps", U64), ("bytes", U64), ("verdict", STR(16))],
    "culprits": [("process_id", U32), ("host", STR(64)), ("pid", I64),
                 ("culprit_class", STR(24)), ("peer_process_id", I64), ("blame_ns", U64),
                 ("blame_share", F64), ("victims", U32), ("score", F64)],
    "chains": [("victim", U32), ("hop", U32), ("process_id", U32)],
    "inputs": [("host", STR(64)), ("path", STR(256)), ("format", STR(16)), ("records", U64),
               ("rejected", U64)],
}

ROLES = {"culprit", "victim", "healthy"}
CLASSES = {"gpu_producer", "gpu_consumer", "network_link", "flush", "hang", "none"}
VERDICTS = {"normal", "late_data", "no_credit", "slow_link", "slow_flush"}
ISO8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$")

ANALYZER_RANKS = 4
N_PROCESSES = 32  # 4 nodes x 8 GPUs


def is_str_attr(v):
    return isinstance(v, (str, bytes, np.bytes_, np.str_))


def is_int_attr(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


class ScenarioBase:
    """Mixin: one scenario, simulated and analysed once per class; many checks."""

    FAULT = None          # the fault= value
    np_ranks = ANALYZER_RANKS

    @classmethod
    def setUpClass(cls):
        cls.work = scratch(cls.__name__)
        cls.data = os.path.join(cls.work, "data")
        cls.spec = "%s,fault=%s" % (RING_SPEC, cls.FAULT)
        cls.h5_path = os.path.join(cls.work, "X.h5")
        cls.json_path = os.path.join(cls.work, "X.json")
        cls.mock_result = run(["mock", "--out", cls.data, "--scenario", cls.spec])
        cls.analyze_result = None
        cls.truth = None
        if cls.mock_result.rc == 0 and not cls.mock_result.timed_out:
            with open(os.path.join(cls.data, "ground_truth.json")) as f:
                cls.truth = json.load(f)
            cls.analyze_result = run(["analyze", "--shared", cls.data, "--output", cls.h5_path,
                                      "--json", cls.json_path, "--quiet"],
                                     np=cls.np_ranks, cwd=cls.work)
        cls.h5 = None
        if os.path.exists(cls.h5_path):
            cls.h5 = h5py.File(cls.h5_path, "r")

    @classmethod
    def tearDownClass(cls):
        if cls.h5 is not None:
            cls.h5.close()

    # ---- helpers ---------------------------------------------------------------------------

    def need_results(self):
        self.assertEqual(self.mock_result.rc, 0, self.mock_result.describe())
        self.assertIsNotNone(self.analyze_result)
        self.assertFalse(self.analyze_result.timed_out, self.analyze_result.describe())
        self.assertEqual(self.analyze_result.rc, 0, self.analyze_result.describe())
        self.assertIsNotNone(self.h5, "no results file %s" % self.h5_path)
        return self.h5

    def table(self, name):
        h5 = self.need_results()
        self.assertIn(name, h5, "dataset /%s missing" % name)
        return h5[name][...]

    def truth_roots(self):
        return self.truth["roots"]

    def truth_process_of_rank(self, rank):
        for p in self.truth["processes"]:
            if p["rank"] == rank:
                return (p["host"], p["pid"])
        self.fail("rank %d not in ground truth" % rank)

    def pid_of(self, host, pid):
        """process_id of (host, pid) in /processes."""
        procs = self.table("processes")
        hits = [i for i, p in enumerate(procs) if s(p["host"]) == host and int(p["pid"]) == pid]
        self.assertEqual(len(hits), 1, "(%s, %d) appears %d times in /processes"
                         % (host, pid, len(hits)))
        return hits[0]

    def ident(self, process_id):
        p = self.table("processes")[process_id]
        return (s(p["host"]), int(p["pid"]))

    # ---- exit status and files -------------------------------------------------------------

    def test_mock_and_analyze_exit_0(self):
        self.need_results()
        self.assertTrue(os.path.isfile(self.json_path), "no JSON file written")
        self.assertEqual(self.analyze_result.stdout.strip(), "",
                         "--quiet must print no text report:\n" + self.analyze_result.stdout)
        leftovers = [f for f in os.listdir(self.work) if f not in ("data", "X.h5", "X.json")]
        self.assertEqual(leftovers, [], "unexpected files next to the results")

    # ---- root attributes -------------------------------------------------------------------

    def test_root_attributes(self):
        a = self.need_results().attrs
        for name in ("tool_version", "format_version", "seq_window", "analyzer_ranks",
                     "processes", "created_utc", "input", "status"):
            self.assertIn(name, a, "root attribute %s missing" % name)
        for name in ("tool_version", "created_utc", "input", "status"):
            self.assertTrue(is_str_attr(a[name]), "%s: not a string: %r" % (name, a[name]))
        for name in ("format_version", "seq_window", "analyzer_ranks", "processes"):
            self.assertTrue(is_int_attr(a[name]), "%s: not an int: %r" % (name, a[name]))
        self.assertNotEqual(s(a["tool_version"]), "")
        self.assertEqual(int(a["format_version"]), 1)
        self.assertEqual(int(a["seq_window"]), 20)
        self.assertEqual(int(a["analyzer_ranks"]), self.np_ranks)
        self.assertEqual(int(a["processes"]), N_PROCESSES)
        created = s(a["created_utc"])
        self.assertRegex(created, ISO8601)
        datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
        self.assertIn(os.path.basename(self.data), s(a["input"]))
        self.assertEqual(s(a["status"]), "ok")

    # ---- datasets: presence, shape, field names and types ----------------------------------

    def test_dataset_schema(self):
        h5 = self.need_results()
        for name, fields in SCHEMA.items():
            with self.subTest(dataset=name):
                self.assertIn(name, h5, "dataset /%s missing" % name)
                ds = h5[name]
                self.assertIsInstance(ds, h5py.Dataset)
                self.assertEqual(len(ds.shape), 1, "/%s is not 1-D" % name)
                self.assertIsNotNone(ds.dtype.fields, "/%s is not compound" % name)
                for field, (kind, size) in fields:
                    self.assertIn(field, ds.dtype.fields, "/%s.%s missing" % (name, field))
                    dt = ds.dtype.fields[field][0]
                    self.assertEqual((dt.kind, dt.itemsize), (kind, size),
                                     "/%s.%s has dtype %s, contract says %s%d"
                                     % (name, field, dt, kind, size))

    # ---- /processes and /comm_ranks ----------------------------------------------------------

    def test_processes_table(self):
        procs = self.table("processes")
        self.assertEqual(len(procs), N_PROCESSES)
        for i, p in enumerate(procs):
            self.assertEqual(int(p["process_id"]), i, "process_id must equal the row index")
            self.assertIn(s(p["role"]), ROLES)
            self.assertIn(s(p["culprit_class"]), CLASSES)
            self.assertTrue(0.0 <= float(p["score"]) <= 1.0, "score %r" % p["score"])
            self.assertFalse(math.isnan(float(p["score"])))
            root = int(p["attributed_root"])
            self.assertTrue(root == -1 or 0 <= root < len(procs), "attributed_root %d" % root)
            if s(p["role"]) == "victim":
                self.assertNotEqual(root, -1, "victim %d without attributed_root" % i)
                self.assertEqual(s(procs[root]["role"]), "culprit",
                                 "victim %d attributed to non-culprit %d" % (i, root))
            if s(p["role"]) == "healthy":
                self.assertEqual(root, -1, "healthy %d has attributed_root %d" % (i, root))
        idents = {(s(p["host"]), int(p["pid"])) for p in procs}
        self.assertEqual(len(idents), len(procs), "(host, pid) not unique in /processes")
        truth = {(p["host"], p["pid"]) for p in self.truth["processes"]}
        self.assertEqual(idents, truth, "/processes != ground truth processes")

    def test_comm_ranks_match_truth(self):
        cr = self.table("comm_ranks")
        self.assertEqual(len(cr), N_PROCESSES)
        self.assertEqual({int(r["comm_hash"]) for r in cr}, {int(self.truth["comm_hash"])})
        self.assertEqual(sorted(int(r["comm_rank"]) for r in cr), list(range(N_PROCESSES)))
        for r in cr:
            self.assertEqual(int(r["n_ranks"]), N_PROCESSES)
            self.assertEqual(self.ident(int(r["process_id"])),
                             self.truth_process_of_rank(int(r["comm_rank"])),
                             "comm rank %d mapped to the wrong process" % r["comm_rank"])

    def test_edges_consistent(self):
        edges = self.table("edges")
        self.assertGreater(len(edges), 0)
        cr = self.table("comm_ranks")
        proc_of_rank = {int(r["comm_rank"]): int(r["process_id"]) for r in cr}
        for e in edges:
            self.assertIn(s(e["verdict"]), VERDICTS)
            self.assertEqual(proc_of_rank[int(e["src_rank"])], int(e["src_process"]))
            self.assertEqual(proc_of_rank[int(e["dst_rank"])], int(e["dst_process"]))
            self.assertGreater(int(e["send_steps"]) + int(e["recv_steps"]), 0)

    # A hang dump holds stale, never-finished steps: the reader may reject those lines.
    CLEAN_INPUTS = True

    def test_inputs_table(self):
        inputs = self.table("inputs")
        self.assertEqual(len(inputs), N_PROCESSES, "one input row per trace file")
        for r in inputs:
            path = s(r["path"])
            host = s(r["host"])
            self.assertEqual(s(r["format"]), "nccl-json")
            if self.CLEAN_INPUTS:
                self.assertEqual(int(r["rejected"]), 0, "clean mock file %s had rejects" % path)
            self.assertEqual(os.path.basename(os.path.dirname(path)), host)
        self.assertGreater(sum(int(r["records"]) for r in inputs), 0)

    # ---- the verdict -------------------------------------------------------------------------

    def test_verdict_matches_ground_truth(self):
        culprits = self.table("culprits")
        roots = self.truth_roots()
        self.assertEqual(len(roots), 1)
        root = roots[0]
        self.assertGreaterEqual(len(culprits), 1, "no culprit found; truth %r" % root)
        top = culprits[0]
        self.assertEqual((s(top["host"]), int(top["pid"]), s(top["culprit_class"])),
                         (root["host"], root["pid"], root["class"]),
                         "culprit #1 is not the ground-truth root")
        pid = int(top["process_id"])
        self.assertEqual(self.ident(pid), (root["host"], root["pid"]),
                         "/culprits.process_id does not point at the culprit's /processes row")
        procs = self.table("processes")
        self.assertEqual(s(procs[pid]["role"]), "culprit")
        self.assertEqual(s(procs[pid]["culprit_class"]), root["class"])
        if root["class"] == "network_link":
            peer = int(top["peer_process_id"])
            self.assertTrue(0 <= peer < len(procs), "peer_process_id %d" % peer)
            self.assertEqual(self.ident(peer), (root["peer_host"], root["peer_pid"]),
                             "peer_process_id is not the ground-truth peer")
        else:
            self.assertEqual(int(top["peer_process_id"]), -1)

    def test_culprits_table(self):
        culprits = self.table("culprits")
        procs = self.table("processes")
        shares = [float(c["blame_share"]) for c in culprits]
        blames = [int(c["blame_ns"]) for c in culprits]
        self.assertAlmostEqual(sum(shares), 1.0, delta=1e-3)
        self.assertEqual(blames, sorted(blames, reverse=True), "culprits not most-blame first")
        for c in culprits:
            self.assertTrue(0.0 <= float(c["score"]) <= 1.0, "score %r" % c["score"])
            self.assertTrue(0.0 <= float(c["blame_share"]) <= 1.0)
            self.assertIn(s(c["culprit_class"]), CLASSES - {"none"})
            pid = int(c["process_id"])
            self.assertEqual(self.ident(pid), (s(c["host"]), int(c["pid"])))
            n_victims = sum(1 for p in procs if s(p["role"]) == "victim"
                            and int(p["attributed_root"]) == pid)
            self.assertEqual(int(c["victims"]), n_victims,
                             "victims count of culprit %d != /processes" % pid)
        self.assertGreater(blames[0], 0)

    def test_chains(self):
        chains = self.table("chains")
        procs = self.table("processes")
        by_victim = {}
        for r in chains:
            by_victim.setdefault(int(r["victim"]), []).append((int(r["hop"]), int(r["process_id"])))
        self.assertGreater(len(by_victim), 0, "no /chains rows")
        for victim, hops in by_victim.items():
            hops.sort()
            self.assertEqual([h for h, _ in hops], list(range(len(hops))),
                             "victim %d: hops not 0..n-1" % victim)
            path = [p for _, p in hops]
            self.assertEqual(path[0], victim, "victim %d: chain does not start at it" % victim)
            self.assertEqual(s(procs[victim]["role"]), "victim")
            self.assertEqual(path[-1], int(procs[victim]["attributed_root"]),
                             "victim %d: chain does not end at its attributed_root" % victim)
            self.assertEqual(len(set(path)), len(path), "victim %d: chain loops" % victim)
            for p in path:
                self.assertLess(p, len(procs))
        # Ring physics: the whole ring waits on the root; somebody 3+ hops downstream must be
        # traced all the way back to the true root.
        root = self.truth_roots()[0]
        root_id = self.pid_of(root["host"], root["pid"])
        deep = [v for v, hops in by_victim.items()
                if int(procs[v]["attributed_root"]) == root_id
                and int(procs[v]["chain_depth"]) >= 3 and len(hops) >= 4]
        self.assertTrue(deep, "no victim 3+ hops downstream attributed to the true root")

    def test_json_agrees_with_h5(self):
        self.need_results()
        with open(self.json_path) as f:
            doc = json.load(f)
        culprits = self.table("culprits")
        jc = doc.get("culprits")
        self.assertIsInstance(jc, list, "JSON has no culprits list")
        self.assertEqual(len(jc), len(culprits))
        for j, h in zip(jc, culprits):
            self.assertEqual(j["process_id"], int(h["process_id"]))
            self.assertEqual(j["host"], s(h["host"]))
            self.assertEqual(j["pid"], int(h["pid"]))
            self.assertEqual(j["culprit_class"], s(h["culprit_class"]))
            self.assertEqual(j["peer_process_id"], int(h["peer_process_id"]))
            self.assertEqual(j["blame_ns"], int(h["blame_ns"]))
            self.assertAlmostEqual(j["blame_share"], float(h["blame_share"]), places=9)
            self.assertAlmostEqual(j["score"], float(h["score"]), places=9)
            # The margin over its test's guard: positive for a finding (kernel clocks here: a
            # gap test's, at least 1), null (infinite) for a hang.
            if j["culprit_class"] == "hang":
                self.assertIsNone(j["margin"])
            else:
                self.assertGreater(j["margin"], 0.0, "culprit %d" % j["process_id"])
        if "status" in doc:
            self.assertEqual(doc["status"], s(self.h5.attrs["status"]))

    def test_report(self):
        self.need_results()
        r = run(["report", self.h5_path])
        self.assertEqual(r.rc, 0, r.describe())
        self.assertFalse(r.timed_out)
        for root in self.truth_roots():
            self.assertIn(root["host"], r.stdout, "report does not name the culprit's host")
            self.assertIn(str(root["pid"]), r.stdout, "report does not name the culprit's pid")


class SlowGpu(ScenarioBase, unittest.TestCase):
    FAULT = "slow_gpu:13"           # a GPU with no network connection (local 5 of node001)


class SlowConsumer(ScenarioBase, unittest.TestCase):
    FAULT = "slow_consumer:16"      # a network receiver (node002 local 0)


class SlowLink(ScenarioBase, unittest.TestCase):
    FAULT = "slow_link:15-16"       # node001 local 7 -> node002 local 0, channel 0's wire

    def test_slow_link_edge(self):
        edges = self.table("edges")
        src = self.pid_of(*self.truth_process_of_rank(15))
        dst = self.pid_of(*self.truth_process_of_rank(16))
        hits = [e for e in edges if int(e["src_process"]) == src and int(e["dst_process"]) == dst]
        self.assertTrue(hits, "no edge 15 -> 16")
        for e in hits:
            self.assertEqual(s(e["verdict"]), "slow_link")


class SlowFlush(ScenarioBase, unittest.TestCase):
    FAULT = "slow_flush:8"          # network receiver node001 local 0

    def test_flush_wait_largest_into_root(self):
        edges = self.table("edges")
        root = self.pid_of(*self.truth_process_of_rank(8))
        worst = max(edges, key=lambda e: int(e["recv_flush_wait_ns"]))
        self.assertEqual(int(worst["dst_process"]), root,
                         "largest recv_flush_wait_ns is not on an edge into the flush culprit")


class Hang(ScenarioBase, unittest.TestCase):
    FAULT = "hang:13"               # never launches collective 10; the dump shows peers stuck
    CLEAN_INPUTS = False


class Healthy(ScenarioBase, unittest.TestCase):
    FAULT = "none"

    # A healthy ring: nothing to blame, nobody waits on a root.
    def test_verdict_matches_ground_truth(self):
        self.assertEqual(self.truth_roots(), [])
        self.assertEqual(len(self.table("culprits")), 0, "culprit reported for a healthy run")
        for p in self.table("processes"):
            self.assertEqual(s(p["role"]), "healthy")
            self.assertEqual(int(p["attributed_root"]), -1)
        for e in self.table("edges"):
            self.assertEqual(s(e["verdict"]), "normal")

    def test_culprits_table(self):
        self.assertEqual(len(self.table("culprits")), 0)

    def test_chains(self):
        self.assertEqual(len(self.table("chains")), 0, "chains in a healthy run")

    def test_report(self):
        self.need_results()
        r = run(["report", self.h5_path])
        self.assertEqual(r.rc, 0, r.describe())


class OtherModes(unittest.TestCase):
    """The same scenario through other paths must give the same verdict."""

    SPEC = RING_SPEC + ",fault=slow_link:15-16"

    def verdict(self, h5_path):
        with h5py.File(h5_path, "r") as f:
            procs = f["processes"][...]
            culprits = f["culprits"][...]
            self.assertGreaterEqual(len(culprits), 1, "no culprit in %s" % h5_path)
            top = culprits[0]
            peer = int(top["peer_process_id"])
            peer_ident = (s(procs[peer]["host"]), int(procs[peer]["pid"])) if peer >= 0 else None
            return {"root": (s(top["host"]), int(top["pid"]), s(top["culprit_class"])),
                    "peer": peer_ident,
                    "analyzer_ranks": int(f.attrs["analyzer_ranks"]),
                    "status": s(f.attrs["status"])}

    @classmethod
    def setUpClass(cls):
        cls.work = scratch("OtherModes")
        cls.data = os.path.join(cls.work, "data")
        cls.mock_result = run(["mock", "--out", cls.data, "--scenario", cls.SPEC])

    def expected(self):
        self.assertEqual(self.mock_result.rc, 0, self.mock_result.describe())
        with open(os.path.join(self.data, "ground_truth.json")) as f:
            root = json.load(f)["roots"][0]
        return (root["host"], root["pid"], root["class"]), (root["peer_host"], root["peer_pid"])

    def test_mock_in_memory_np2_matches_files(self):
        root, peer = self.expected()
        out = os.path.join(self.work, "mock.h5")
        r = run(["analyze", "--mock", self.SPEC, "--output", out, "--quiet"], np=2, cwd=self.work)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.rc, 0, r.describe())
        v = self.verdict(out)
        self.assertEqual(v["root"], root)
        self.assertEqual(v["peer"], peer)
        self.assertEqual(v["analyzer_ranks"], 2)
        self.assertEqual(v["status"], "ok")

    def test_single_process_without_launcher(self):
        root, peer = self.expected()
        out = os.path.join(self.work, "single.h5")
        r = run(["analyze", "--shared", self.data, "--output", out, "--quiet"], cwd=self.work)
        self.assertFalse(r.timed_out, r.describe())
        self.assertEqual(r.rc, 0, r.describe())
        v = self.verdict(out)
        self.assertEqual(v["root"], root)
        self.assertEqual(v["peer"], peer)
        self.assertEqual(v["analyzer_ranks"], 1)


if __name__ == "__main__":
    sys.exit(e2e_util.main())
