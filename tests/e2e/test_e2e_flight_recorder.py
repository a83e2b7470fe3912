#!/usr/bin/env python3
"""PyTorch Flight Recorder dumps analysed end to end (issue: "Flight Recorder dumps").

Real dumps of four fault-injected 16-rank training runs (NVIDIA's resiliency project,
`../shared/data/flight-recorder/nvrx/`, see its SOURCE.md): in each, two ranks were made to
fail (a GPU fault, or a host thread that stops issuing work). Copied into one flat folder as
users collect them, analysed by one process and by `mpirun -np 4` (the dumps then dealt over
the ranks), and laid out per host under `mpirun -np 4`: the culprits must be exactly the
injected ranks, class `hang`, each with a one-line reason, and no other rank.

A missing dump and a truncated dump of an injected rank are named as such.

The simulator writes Flight Recorder dumps too (`mock --format flight-recorder[+options]`):
hangs across ring, tree and pipeline topologies and several communicators, in both
encodings and several schema versions, with wrapped ring buffers, missing, empty and
mismatched dumps. The stopped rank must be named first and alone.

The tests skip, saying so, when the shared data folder is absent: the project does not need it.
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

import unittest  # noqa: E402

import h5py  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NVRX = os.environ.get("CULPRIT_FR_DATA_DIR",
                      os.path.join(REPO, "..", "shared", "data", "flight-recorder", "nvrx"))


def truth():
    with open(os.path.join(NVRX, "ground_truth.json")) as f:
        return {name: sorted(s["injected"]["ranks"]) for name, s in json.load(f)["scenarios"].items()}


@unittest.skipUnless(os.path.isfile(os.path.join(NVRX, "ground_truth.json")),
                     "real Flight Recorder dumps not found at %s (shared data, not part of the repo)" % NVRX)
class NvrxDumps(unittest.TestCase):
    def flat_copy(self, scenario):
        folder = u.scratch("fr-" + scenario)
        for name in os.listdir(os.path.join(NVRX, scenario)):
            if name.startswith("_dump_"):
                shutil.copy(os.path.join(NVRX, scenario, name), folder)
                os.chmod(os.path.join(folder, name), 0o644)
        return folder

    def per_host_copy(self, scenario, hosts=4):
        folder = u.scratch("fr-hosts-" + scenario)
        for name in os.listdir(os.path.join(NVRX, scenario)):
            if name.startswith("_dump_"):
                host = os.path.join(folder, "node%02d" % (int(name[len("_dump_"):]) // hosts))
                os.makedirs(host, exist_ok=True)
                shutil.copy(os.path.join(NVRX, scenario, name), host)
        return folder

    def analyze(self, folder, np=None):
        out = u.scratch("fr-results")
        h5, js = os.path.join(out, "r.h5"), os.path.join(out, "r.json")
        r = u.run(["analyze", "--shared", folder, "--output", h5, "--json", js], np=np)
        self.assertEqual(r.rc, 0, r.describe())
        with open(js) as f:
            return r, json.load(f), h5

    def culprit_ranks(self, verdict):
        procs = {p["process_id"]: p for p in verdict["processes"]}
        return sorted(procs[c["process_id"]]["rank"] for c in verdict["culprits"])

    def assert_injected_named(self, verdict, scenario, expected):
        self.assertEqual(self.culprit_ranks(verdict), expected, (scenario, verdict["notes"]))
        for c in verdict["culprits"]:
            self.assertEqual(c["culprit_class"], "hang")
        for rank in expected:
            self.assertTrue(any(n.startswith("flight recorder: rank %d " % rank) or
                                n.startswith("flight recorder: rank %d'" % rank) for n in verdict["notes"]),
                            "no reason for rank %d in %s" % (rank, verdict["notes"]))

    def test_flat_folder_one_process(self):
        for scenario, expected in truth().items():
            with self.subTest(scenario=scenario):
                r, v, h5 = self.analyze(self.flat_copy(scenario))
                self.assert_injected_named(v, scenario, expected)
                self.assertEqual(v["status"], "ok")
                with h5py.File(h5, "r") as f:
                    procs = f["processes"][:]
                    ranks = sorted(int(p["rank"]) for p in procs)
                    self.assertEqual(ranks, list(range(16)))
                    self.assertTrue(all(int(p["pid"]) == -1 for p in procs))  # no invented pid
                    roots = sorted(int(procs[int(c["process_id"])]["rank"]) for c in f["culprits"][:])
                    self.assertEqual(roots, expected)
                # The text report names the rank, never a pid.
                for rank in expected:
                    self.assertIn("rank %d " % rank, r.stdout)

    def test_flat_folder_dealt_over_four_ranks(self):
        for scenario, expected in truth().items():
            with self.subTest(scenario=scenario):
                _, v, _ = self.analyze(self.flat_copy(scenario), np=4)
                self.assert_injected_named(v, scenario, expected)

    def test_per_host_folders_under_mpirun(self):
        for scenario, expected in truth().items():
            with self.subTest(scenario=scenario):
                _, v, _ = self.analyze(self.per_host_copy(scenario), np=4)
                self.assert_injected_named(v, scenario, expected)

    def test_missing_dump_of_a_stopped_rank(self):
        folder = self.flat_copy("lock_gil_1st")
        os.remove(os.path.join(folder, "_dump_9"))
        _, v, _ = self.analyze(folder, np=2)
        self.assertEqual(self.culprit_ranks(v), [9, 14], v["notes"])
        self.assertTrue(any("rank 9 wrote no dump" in n for n in v["notes"]), v["notes"])

    def test_truncated_dump_of_a_faulty_rank(self):
        folder = self.flat_copy("gpu_error_1st")
        path = os.path.join(folder, "_dump_12")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        _, v, _ = self.analyze(folder)
        self.assertEqual(self.culprit_ranks(v), [12, 14], v["notes"])
        self.assertEqual(v["status"], "partial")
        self.assertTrue(any("rank 12's dump could not be used" in n for n in v["notes"]), v["notes"])


# (scenario, format): every topology and communicator layout, both encodings, several schemas.
SIM_CASES = [
    ("topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=hang:6", "flight-recorder"),
    ("topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=hang:13@2", "flight-recorder+json+v2.10"),
    ("topology=ring,nodes=8,gpus=2,channels=1,seqs=6,fault=hang:0", "flight-recorder+v2.2"),
    ("topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=hang:6", "flight-recorder+v1.0"),
    ("topology=tree,nodes=4,gpus=4,channels=2,seqs=8,fault=hang:9", "flight-recorder+json"),
    ("topology=tree,nodes=8,gpus=2,channels=2,seqs=8,fault=hang:15@1", "flight-recorder+json+v1.0"),
    ("topology=pipeline,nodes=4,gpus=4,channels=2,seqs=4,fault=hang:5", "flight-recorder"),
    ("topology=pipeline,nodes=4,gpus=4,channels=2,seqs=4,fault=hang:12", "flight-recorder+json+v2.10"),
    ("topology=ring,nodes=4,gpus=4,channels=2,seqs=8,comms=world+dp,fault=hang:11", "flight-recorder"),
    ("topology=tree,nodes=2,gpus=8,channels=2,seqs=8,comms=world+dp,fault=hang:2@3", "flight-recorder+json"),
    ("topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,comms=pp+world,fault=hang:3", "flight-recorder+v2.10"),
    # Wrapped ring buffers: every entry kept, only the newest three, so ranks start at
    # different points of history.
    ("topology=ring,nodes=4,gpus=4,channels=2,seqs=8,comms=world+dp,fault=hang:7", "flight-recorder+all+buffer=3"),
    ("topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,comms=pp+world,fault=hang:4", "flight-recorder+json+all+buffer=5"),
]


class SimulatedDumps(unittest.TestCase):
    def simulate(self, spec, fmt):
        data = u.scratch("fr-sim")
        r = u.run(["mock", "--out", data, "--format", fmt, "--scenario", spec])
        self.assertEqual(r.rc, 0, r.describe())
        return data

    def verdict(self, spec, fmt, np=None):
        data = self.simulate(spec, fmt)
        out = u.scratch("fr-sim-results")
        js = os.path.join(out, "r.json")
        r = u.run(["analyze", "--shared", data, "--output", os.path.join(out, "r.h5"), "--json", js], np=np)
        self.assertEqual(r.rc, 0, r.describe())
        with open(js) as f:
            v = json.load(f)
        procs = {p["process_id"]: p for p in v["processes"]}
        return r, v, [(procs[c["process_id"]]["rank"], c["culprit_class"]) for c in v["culprits"]]

    @staticmethod
    def hang_rank(spec):
        return int(spec.split("fault=hang:")[1].split("@")[0])

    def test_stopped_rank_is_named_first_and_alone(self):
        for spec, fmt in SIM_CASES:
            with self.subTest(spec=spec, format=fmt):
                _, v, named = self.verdict(spec, fmt)
                self.assertEqual(named, [(self.hang_rank(spec), "hang")], v["notes"])

    def test_under_mpirun_with_hosts_dealt_over_ranks(self):
        spec, fmt = SIM_CASES[8]
        _, v, named = self.verdict(spec, fmt, np=4)
        self.assertEqual(named, [(self.hang_rank(spec), "hang")], v["notes"])

    def test_missing_dump_of_the_stopped_rank(self):
        _, v, named = self.verdict(SIM_CASES[0][0], "flight-recorder+missing=6")
        self.assertEqual(named, [(6, "hang")], v["notes"])
        self.assertTrue(any("rank 6 wrote no dump" in n for n in v["notes"]), v["notes"])

    def test_empty_dump_of_the_stopped_rank(self):
        r, v, named = self.verdict(SIM_CASES[0][0], "flight-recorder+empty=6")
        self.assertEqual(named, [(6, "hang")], v["notes"])
        self.assertEqual(v["status"], "partial")
        self.assertTrue(any("empty dump" in n for n in v["notes"]), v["notes"])
        self.assertIn("rank 6's dump could not be used", r.stdout)

    def test_mismatch_is_reported_with_both_sides(self):
        _, v, named = self.verdict("topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16K,fault=hang:6",
                                   "flight-recorder+mismatch=3")
        self.assertEqual(named, [(6, "hang")], v["notes"])
        lines = [n for n in v["notes"] if "mismatch in group 0" in n]
        self.assertTrue(lines, v["notes"])
        self.assertIn("[[8192]]", lines[0])
        self.assertIn("[[4096]]", lines[0])

    def test_dumps_beside_traces_feed_one_verdict(self):
        # A GPU 2x slow before another rank's host stopped: the traces name the slow GPU,
        # the dumps (and the traces) the stopped rank; one process per GPU, not two.
        spec = "topology=ring,nodes=4,gpus=4,channels=2,seqs=12,bytes=16M,fault=slow_gpu:3:2,fault=hang:9@8"
        for np in (None, 2):
            with self.subTest(np=np):
                r, v, named = self.verdict(spec, "flight-recorder+traces", np=np)
                self.assertEqual(sorted(named), [(3, "gpu_producer"), (9, "hang")], v["notes"])
                self.assertEqual(len(v["processes"]), 16)
                by_rank = {v["processes"][c["process_id"]]["rank"]: c for c in v["culprits"]}
                self.assertEqual(by_rank[9]["evidence"], "flight recorder + profiler")
                self.assertEqual(by_rank[3]["evidence"], "profiler")
                self.assertGreaterEqual(by_rank[3]["pid"], 0)  # the traced identity is kept
                self.assertIn("named by: flight recorder + profiler", r.stdout)
                self.assertTrue(any("16 dump(s) joined" in n for n in v["notes"]), v["notes"])

    def test_healthy_run_names_nobody(self):
        r, v, named = self.verdict("topology=ring,nodes=4,gpus=4,channels=2,seqs=8", "flight-recorder+all")
        self.assertEqual(named, [], v["notes"])
        self.assertIn("no rank holds back", r.stdout)


if __name__ == "__main__":
    sys.exit(u.main())
