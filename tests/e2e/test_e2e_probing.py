#!/usr/bin/env python3
"""probing's exports as users produce them, analysed end to end (issue: "Real exports").

The simulator writes probing's tables (`nccl-culprit mock --format probing-csv|probing-json`,
mock/render_probing.hpp) in every form FORMATS.md §3 describes: tagged global exports,
per-node exports without tags, unsigned cells left blank by probing's converter or cast to
BIGINT, the JSON export, the inflight_ops hang table alone, and coll_perf beside proxy_ops.
Each is analysed under mpirun; the results must name the injected culprit, say status `ok`
(nothing was missing) and carry a note saying what was assumed about the file.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

import unittest  # noqa: E402

import h5py  # noqa: E402

SPEC = "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M"
CULPRIT_RANK = 6


class ProbingExports(unittest.TestCase):
    def simulate(self, fmt, fault="slow_gpu:%d" % CULPRIT_RANK, spec=SPEC):
        data = u.scratch("probing")
        r = u.run(["mock", "--out", data, "--format", fmt, "--scenario", spec + ",fault=" + fault])
        self.assertEqual(r.rc, 0, r.describe())
        return data

    def analyze(self, data, np=2, extra=(), env=None):
        out = u.scratch("results")
        h5, js = os.path.join(out, "r.h5"), os.path.join(out, "r.json")
        r = u.run(["analyze", "--shared", data, "--output", h5, "--json", js] + list(extra), np=np)
        self.assertEqual(r.rc, 0, r.describe())
        with open(js) as f:
            verdict = json.load(f)
        return r, verdict, h5

    def assert_named(self, verdict, rank, culprit_class):
        self.assertTrue(verdict["culprits"], "no culprit: %s" % verdict["notes"])
        top = verdict["culprits"][0]
        procs = {p["process_id"]: p for p in verdict["processes"]}
        self.assertEqual(procs[top["process_id"]]["rank"], rank, verdict["culprits"][:3])
        self.assertEqual(top["culprit_class"], culprit_class)

    def assert_note(self, verdict, text):
        self.assertTrue(any(text in n for n in verdict["notes"]),
                        "no note containing %r in %s" % (text, verdict["notes"]))

    def test_tagged_csv_is_complete_and_names_the_rank(self):
        _, v, h5 = self.analyze(self.simulate("probing-csv"))
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assert_named(v, CULPRIT_RANK, "gpu_producer")
        self.assertFalse(any("one end" in n for n in v["notes"]), v["notes"])
        with h5py.File(h5, "r") as f:
            self.assertEqual(u.s(f.attrs["status"]), "ok")
            procs = f["processes"][:]
            self.assertTrue(all(p["pid"] == -1 for p in procs), "a pid was invented")
            self.assertEqual(sorted(int(p["rank"]) for p in procs), list(range(16)))

    def test_report_shows_the_rank_not_a_negative_pid(self):
        r, _, _ = self.analyze(self.simulate("probing-csv"), np=1)
        self.assertIn("rank %d" % CULPRIT_RANK, r.stdout)
        self.assertNotIn("pid -", r.stdout)

    def global_export(self, data, name):
        """All hosts' rows in one file, as a `SELECT * FROM global.nccl.proxy_ops` returns them."""
        merged = u.scratch("global")
        os.makedirs(os.path.join(merged, "login01"))
        hosts = sorted(h for h in os.listdir(data) if os.path.isdir(os.path.join(data, h)))
        paths = [os.path.join(data, h, name) for h in hosts]
        with open(os.path.join(merged, "login01", name), "w") as out:
            if name.endswith(".json"):
                rows = []
                for path in paths:
                    with open(path) as f:
                        rows += json.load(f)
                json.dump(rows, out)
            else:
                for i, path in enumerate(paths):
                    with open(path) as f:
                        lines = f.readlines()
                    out.writelines(lines if i == 0 else lines[1:])
        return merged

    def test_blank_unsigned_cells(self):
        # probing's converter leaves comm_hash blank: one unnamed communicator per file, so
        # the connections join only within one (global) export.
        _, v, _ = self.analyze(self.global_export(self.simulate("probing-csv+blank"), "proxy_ops.csv"))
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assert_named(v, CULPRIT_RANK, "gpu_producer")
        self.assert_note(v, "comm_hash")
        self.assert_note(v, "seq")

    def test_negative_cast_hash_reads_back_as_the_same_bits(self):
        data = self.simulate("probing-csv+cast")
        with open(os.path.join(data, "node000", "proxy_ops.csv")) as f:
            f.readline()
            self.assertTrue(f.readline().split(",")[5].startswith("-"), "the seed's hash is below 2^63")
        _, v, _ = self.analyze(data)
        with open(os.path.join(data, "ground_truth.json")) as f:
            truth = json.load(f)
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assertEqual({c["comm_hash"] for c in v["comm_ranks"]}, {truth["comm_hash"]})
        self.assert_named(v, CULPRIT_RANK, "gpu_producer")

    def test_json_export(self):
        _, v, _ = self.analyze(self.simulate("probing-json"), np=4)
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assert_named(v, CULPRIT_RANK, "gpu_producer")
        self.assertTrue(all(i["format"] == "probing-json" for i in v["inputs"]), v["inputs"])

    def test_json_export_with_nulls(self):
        _, v, _ = self.analyze(self.global_export(self.simulate("probing-json+blank"), "proxy_ops.json"))
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assert_named(v, CULPRIT_RANK, "gpu_producer")
        self.assert_note(v, "comm_hash")

    def test_untagged_per_node_export_of_one_communicator(self):
        _, v, _ = self.analyze(self.simulate("probing-csv+untagged"))
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assert_named(v, CULPRIT_RANK, "gpu_producer")

    def test_untagged_export_of_several_communicators_invents_no_process(self):
        data = self.simulate("probing-csv+untagged", spec=SPEC.replace("topology=ring", "topology=ring,comms=world+dp"))
        _, v, _ = self.analyze(data)
        self.assertEqual(len(v["processes"]), 16, [p["label"] for p in v["processes"]])
        self.assertEqual(v["status"], "ok", v["notes"])

    def test_inflight_ops_alone_names_the_stuck_rank(self):
        data = self.simulate("probing-csv+no_proxy_ops", fault="hang:%d" % CULPRIT_RANK)
        self.assertFalse(os.path.exists(os.path.join(data, "node000", "proxy_ops.csv")))
        _, v, _ = self.analyze(data)
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assertEqual(len(v["culprits"]), 1, v["culprits"])
        top = v["culprits"][0]
        self.assertEqual(top["culprit_class"], "hang")
        ranks = {(c["comm_rank"], c["process_id"]) for c in v["comm_ranks"]}
        self.assertIn((CULPRIT_RANK, top["process_id"]), ranks)
        self.assertEqual(top["victims"], 15)
        self.assert_note(v, "in-flight snapshot")

    def test_inflight_ops_beside_proxy_ops(self):
        _, v, _ = self.analyze(self.simulate("probing-json", fault="hang:%d" % CULPRIT_RANK))
        self.assertEqual(v["culprits"][0]["culprit_class"], "hang")
        procs = {p["process_id"]: p for p in v["processes"]}
        self.assertEqual(procs[v["culprits"][0]["process_id"]]["rank"], CULPRIT_RANK)

    def test_coll_perf_gives_the_own_work_clock(self):
        _, v, _ = self.analyze(self.simulate("probing-csv+coll_perf"))
        self.assertEqual(v["status"], "ok", v["notes"])
        self.assert_named(v, CULPRIT_RANK, "gpu_producer")
        self.assert_note(v, "coll_perf")


class ToolTransport(unittest.TestCase):
    """The analyzer's own MPI traffic stays off the training fabric unless told otherwise."""

    def run_with(self, env_value):
        data = u.scratch("transport")
        r = u.run(["mock", "--out", data, "--format", "probing-csv", "--scenario", SPEC + ",fault=slow_gpu:6"])
        self.assertEqual(r.rc, 0, r.describe())
        js = os.path.join(u.scratch("out"), "r.json")
        saved = os.environ.get("NCCL_CULPRIT_MPI_TRANSPORT")
        for var in ("OMPI_MCA_pml", "OMPI_MCA_btl"):
            os.environ.pop(var, None)
        if env_value is None:
            os.environ.pop("NCCL_CULPRIT_MPI_TRANSPORT", None)
        else:
            os.environ["NCCL_CULPRIT_MPI_TRANSPORT"] = env_value
        try:
            r = u.run(["analyze", "--shared", data, "--output", js + ".h5", "--json", js, "--quiet"], np=2)
        finally:
            if saved is None:
                os.environ.pop("NCCL_CULPRIT_MPI_TRANSPORT", None)
            else:
                os.environ["NCCL_CULPRIT_MPI_TRANSPORT"] = saved
        self.assertEqual(r.rc, 0, r.describe())
        with open(js) as f:
            return json.load(f)["mpi_transport"]

    def test_default_is_ob1_over_tcp_without_rdma(self):
        line = self.run_with(None)
        self.assertIn("requested pml=ob1,btl=self,vader,tcp", line)
        self.assertIn("loaded pml ob1,", line)  # what Open MPI kept loaded: the check it is in force
        self.assertIn("RDMA libraries loaded: none", line)

    def test_site_setting_restores_open_mpi_defaults(self):
        line = self.run_with("site")
        self.assertIn("site default", line)
        self.assertNotIn("requested", line)


if __name__ == "__main__":
    sys.exit(u.main())
