#!/usr/bin/env python3
"""Byte-identity check of the simulator's output (docs/simulator.md, "Checking that output
does not change").

The simulator's files are the test data of every other check: a change to how the simulator
runs (streaming, memory, code layout) must not change one byte of what it writes. This
script renders a broad list of scenarios with one binary into a tree, and compares two such
trees file by file.

  # once, with the binary built before the change:
  sim_identity.py render --bin OLD/nccl-culprit --out /tmp/sim-ref
  # after every step:
  sim_identity.py check --bin build/nccl-culprit --ref /tmp/sim-ref

The scenarios (`list` prints them): run_accuracy.py's full matrix; a sample of sweep.py's
sensitivity and randomized families (every --stride-th); the specs of tests/e2e/*.py and of
tests/unit/test_simulator.cpp; and every `mock --format` variant of `nccl-culprit mock --help`
(probing-csv/json with each option, Flight Recorder dumps of every schema, encoding and
option) over ring, tree, pipeline and several communicators, healthy and hung; and a few
larger rings (up to 512 GPUs). Each case is
`nccl-culprit mock --out DIR/<case> --format F --scenario SPEC`; its exit code, stdout and
stderr are kept beside the files (`_command.txt`, the output path replaced by OUT), so errors
must stay identical too. Cases marked `analyze` also run `analyze --mock SPEC --json` in one
process and keep the verdict without its timings (the in-memory source, mock_source.cpp).

Exit 0 when the trees are identical, 1 when anything differs (the first differences are
printed), 2 on a usage error. Python 3 standard library only.
"""
import argparse
import concurrent.futures
import filecmp
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_accuracy as ra  # noqa: E402
import sweep  # noqa: E402

# ---- the cases ----------------------------------------------------------------------------------

E2E_SPECS = [
    # tests/e2e/test_e2e_culprits.py (RING_SPEC with each FAULT), e2e_util.RING_SPEC
    "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_gpu:13",
    "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_consumer:16",
    "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_link:15-16",
    "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_flush:8",
    "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=hang:13",
    "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=none",
    # test_e2e_deadline.py, test_e2e_probing.py, test_e2e_flight_recorder.py
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=slow_gpu:6",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=slow_gpu:6",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=hang:6",
    "topology=ring,comms=world+dp,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=slow_gpu:6",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=12,bytes=16M,fault=slow_gpu:3:2,fault=hang:9@8",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16K,fault=hang:6",
    # errors: the message must not change either
    "topology=ring,nodes=2,gpus=2,fault=slow_gpu:999",
    "topology=tree,nodes=4,gpus=4,fault=slow_link:3-4",
    "topology=ring,nodes=2,gpus=2,fault=slow_link:0-1",
]

# tests/unit/test_simulator.cpp and the other unit tests' scenarios
UNIT_BASES = {
    "small": "nodes=4,gpus=4,channels=2,seqs=10,seed=7",
    "tree": "topology=tree,nodes=4,gpus=4,channels=2,seqs=6,seed=7",
    "pipe": "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=2,seed=7,bytes=2M",
    "multi": "topology=ring,comms=world+dp,nodes=4,gpus=4,channels=2,seqs=5,seed=7,bytes=16M",
}
UNIT_SPECS = [
    "nodes=3,gpus=4,seqs=2", "nodes=2,gpus=4,channels=2,seqs=1", "nodes=5,gpus=8,channels=4,seqs=1",
    "nodes=2,gpus=2,seqs=3,seed=5,fault=slow_gpu:1", "nodes=2,gpus=2,seqs=3,seed=6,fault=slow_gpu:1",
    "nodes=3,gpus=8,channels=2,seqs=3,seed=3", "nodes=2,gpus=2,channels=1,seqs=2,seed=1",
    "nodes=2,gpus=2,channels=1,seqs=2,seed=1,layout=flat", "nodes=3,gpus=2,channels=2,seqs=20,seed=11,bytes=3M",
    "nodes=2,gpus=2,channels=2,seqs=4,seed=2", "nodes=2,gpus=2,seqs=2,seed=1,fault=slow_link:1",
    "nodes=2,gpus=1,seqs=1,seed=1", "nodes=2,gpus=1,seqs=1,seed=2",
    "topology=tree,gpus=1,channels=2,seqs=1,nodes=5", "topology=tree,gpus=1,channels=2,seqs=1,nodes=8",
    "topology=pipeline,nodes=2,gpus=1,channels=1,seqs=1,microbatches=1,backward=0,bytes=1M,layout=flat",
    "topology=pipeline,nodes=2,gpus=4,stages=4,channels=2,seqs=1,bytes=1M",
    "topology=tree,comms=world+dp,nodes=3,gpus=2,seqs=3,jitter=0.3,hetero=0.1",
    "nodes=2,gpus=2,seqs=3,hetero=0.2", "topology=ring,nodes=2,gpus=2,channels=2,seqs=3",
    "topology=ring,nodes=2,gpus=4,channels=1,seqs=17,bytes=1M,fault=hang:5@16",
    "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=3,bytes=2M,microbatches=3,fault=hang:3@1",
    "topology=pipeline,nodes=3,gpus=2,channels=1,seqs=20,bytes=256K,microbatches=2,fault=hang:2@19",
    "topology=tree,comms=world+dp,nodes=4,gpus=2,channels=4,seqs=20,bytes=1M,fault=hang:5@18",
    # the collectives' protocols (p2p stays SIMPLE), with a flush fault LL cannot feel
    "topology=ring,nodes=2,gpus=2,channels=2,seqs=3,bytes=2M,proto=ll,fault=slow_gpu:1",
    "topology=tree,comms=world+dp,nodes=3,gpus=2,seqs=3,bytes=4M,proto=ll128,fault=slow_flush:2",
    "topology=pipeline,comms=pp+world,nodes=2,gpus=2,channels=2,seqs=2,bytes=1M,proto=ll,fault=slow_consumer:1",
]
UNIT_FAULTS = {
    "small": ["slow_link:11-12", "slow_link:7", "slow_consumer:8", "slow_gpu:13", "slow_flush:12", "hang:5@6",
              "slow_gpu:2,fault=slow_link:11-12", None],
    "tree": ["slow_link:11-12", "slow_link:8", "slow_flush:12", "slow_consumer:8", "slow_gpu:13",
             "slow_gpu:6,fault=slow_link:7-8", "slow_gpu:5,fault=slow_link:11-12", "hang:6@3", None],
    "pipe": ["slow_gpu:4", "slow_link:2-4,fault=slow_flush:7", "hang:3", None],
    "multi": ["slow_gpu:5", "slow_flush:4", "slow_consumer:3", "hang:9@2", None],
}

# Every --format of `nccl-culprit mock --help`, and the specs they are rendered for.
PROBING_FORMATS = ["probing-csv", "probing-json", "probing-csv+untagged", "probing-csv+blank", "probing-json+blank",
                   "probing-csv+cast", "probing-json+cast", "probing-csv+coll_perf", "probing-json+coll_perf",
                   "probing-csv+no_proxy_ops", "probing-csv+no_inflight", "probing-json+untagged+blank+coll_perf",
                   "probing-csv+untagged+cast+coll_perf+no_inflight", "probing-csv+net_qp", "probing-json+net_qp",
                   "probing-csv+coll_perf_proxy"]
FR_FORMATS = ["flight-recorder", "flight-recorder+json", "flight-recorder+v1.0", "flight-recorder+v2.2",
              "flight-recorder+json+v2.10", "flight-recorder+json+v1.0", "flight-recorder+all",
              "flight-recorder+all+buffer=3", "flight-recorder+json+all+buffer=5", "flight-recorder+missing=6",
              "flight-recorder+empty=6", "flight-recorder+mismatch=3", "flight-recorder+traces",
              "flight-recorder+json+traces+all"]
FORMAT_SPECS = [
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=slow_gpu:6",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=hang:6",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=hang:13@2",
    "topology=tree,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=hang:9",
    "topology=tree,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=slow_link:11-12",
    "topology=pipeline,nodes=4,gpus=4,channels=2,seqs=4,bytes=2M,fault=hang:5",
    "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=4,bytes=2M,comms=pp+world,fault=hang:3",
    "topology=pipeline,nodes=4,gpus=4,channels=2,seqs=3,bytes=2M,fault=slow_consumer:9",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,comms=world+dp,fault=hang:11",
    "topology=tree,nodes=2,gpus=8,channels=2,seqs=8,bytes=16M,comms=world+dp,fault=hang:2@3",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=12,bytes=16M,fault=slow_gpu:3:2,fault=hang:9@8",
    "topology=ring,nodes=8,gpus=2,channels=1,seqs=6,fault=hang:0",
]

# Larger rings: the ring engine's step window across many ranks, several loops per step
# sequence, stale pool slots of a hang past seq 16, several faults under high noise.
LARGE_SPECS = [
    "topology=ring,nodes=64,gpus=8,seqs=20,fault=hang:100@17",
    "topology=ring,nodes=32,gpus=8,channels=4,bytes=1G,seqs=3,fault=slow_consumer:17",
    "topology=ring,nodes=24,gpus=8,channels=3,seqs=5,jitter=0.3,hetero=0.1,fault=slow_link:7,fault=slow_flush:30",
]

# analyze --mock (the in-memory source): a few scenarios, one process
ANALYZE_SPECS = [
    "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_gpu:13",
    "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=hang:6",
    "topology=tree,nodes=4,gpus=4,channels=2,seqs=6,seed=7,fault=slow_link:11-12",
    "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=2,seed=7,bytes=2M,fault=slow_gpu:4",
    "topology=ring,comms=world+dp,nodes=4,gpus=4,channels=2,seqs=5,seed=7,bytes=16M,fault=hang:9@2",
]


def cases(stride):
    """(case id, format, spec, analyze) for every case, in a fixed order."""
    out = []

    def add(tag, spec, fmt="nccl-json", analyze=False):
        out.append(("%04d-%s" % (len(out), tag), fmt, spec, analyze))

    for sc in ra.build_matrix(quick=False):
        add("acc", sc["spec"])
    sens = sweep.sensitivity()
    for sc in sens[::stride]:
        add("sens", sweep.build_spec(sc["params"]))
    for sc in sweep.randomized(12, 200)[::stride]:
        add("rand", sweep.build_spec(sc["params"]))
    for spec in E2E_SPECS:
        add("e2e", spec)
    for name, base in UNIT_BASES.items():
        for fault in UNIT_FAULTS[name]:
            add("unit-" + name, base + (",fault=" + fault if fault else ""))
        add("unit-" + name + "-flat", base + ",layout=flat")
    add("unit-flow", UNIT_BASES["small"] + ",engine=flow")
    add("unit-flow", UNIT_BASES["small"] + ",engine=flow,fault=hang:5@6")
    for spec in UNIT_SPECS:
        add("unit", spec)
    for fmt in PROBING_FORMATS + FR_FORMATS:
        for spec in FORMAT_SPECS:
            add("fmt", spec, fmt)
    for spec in ANALYZE_SPECS:
        add("analyze", spec, analyze=True)
    for spec in LARGE_SPECS:  # last: earlier cases keep their ids
        add("large", spec)
    return out


# ---- rendering ----------------------------------------------------------------------------------

# Keys of the analyze JSON that change from run to run (timings, paths, host).
VOLATILE = re.compile(r"(_s|_seconds|_ms|_utc|time|elapsed|duration|started|host_name|output|version)$")


def strip_volatile(value):
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if not VOLATILE.search(k)}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def render_case(binary, root, case, timeout):
    cid, fmt, spec, analyze = case
    out = os.path.join(root, cid)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    p = subprocess.run([binary, "mock", "--out", out, "--format", fmt, "--scenario", spec],
                       capture_output=True, text=True, timeout=timeout)
    with open(os.path.join(out, "_command.txt"), "w") as f:
        f.write("format: %s\nspec: %s\nrc: %d\n--- stdout\n%s--- stderr\n%s" %
                (fmt, spec, p.returncode, p.stdout.replace(out, "OUT"), p.stderr.replace(out, "OUT")))
    if analyze:
        verdict = os.path.join(out, "_verdict.raw.json")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        q = subprocess.run([binary, "analyze", "--mock", spec, "--json", verdict, "--quiet"],
                           capture_output=True, text=True, timeout=timeout, env=env)
        kept = {"rc": q.returncode}
        if os.path.exists(verdict):
            with open(verdict) as f:
                kept["verdict"] = strip_volatile(json.load(f))
            os.remove(verdict)
        with open(os.path.join(out, "_verdict.json"), "w") as f:
            json.dump(kept, f, indent=1, sort_keys=True)
    return cid


def render(binary, root, stride, jobs, timeout, only):
    os.makedirs(root, exist_ok=True)
    every = cases(stride)
    todo = [c for c in every if not only or re.search(only, c[0] + " " + c[2] + " " + c[1])]
    with open(os.path.join(root, "_cases.txt"), "w") as f:  # a changed list shows in the comparison
        for cid, fmt, spec, analyze in every:
            f.write("%s %s %s%s\n" % (cid, fmt, spec, " analyze" if analyze else ""))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for i, cid in enumerate(pool.map(lambda c: render_case(binary, root, c, timeout), todo), 1):
            if i % 50 == 0 or i == len(todo):
                print("rendered %d/%d (%s)" % (i, len(todo), cid), flush=True)
    return todo


# ---- comparing ------------------------------------------------------------------------------------

def tree_files(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            full = os.path.join(d, n)
            files[os.path.relpath(full, root)] = full
    return files


def first_difference(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        da, db = fa.read(), fb.read()
    i = next((k for k in range(min(len(da), len(db))) if da[k] != db[k]), min(len(da), len(db)))
    line = da.count(b"\n", 0, i) + 1
    return "sizes %d/%d, first difference at byte %d (line %d)" % (len(da), len(db), i, line)


def compare(ref, new, limit=20):
    """Lists the differences between two trees; returns how many files differ."""
    a, b = tree_files(ref), tree_files(new)
    problems = []
    for rel in sorted(set(a) | set(b)):
        if rel not in b:
            problems.append("missing in new: " + rel)
        elif rel not in a:
            problems.append("only in new: " + rel)
        elif not filecmp.cmp(a[rel], b[rel], shallow=False):
            problems.append("differs: %s (%s)" % (rel, first_difference(a[rel], b[rel])))
    for p in problems[:limit]:
        print(p)
    if len(problems) > limit:
        print("... and %d more" % (len(problems) - limit))
    digest = hashlib.sha256()
    for rel in sorted(a):
        with open(a[rel], "rb") as f:
            digest.update(rel.encode() + b"\0" + f.read())
    print("compared %d files (%d in new), reference digest %s: %s" %
          (len(a), len(b), digest.hexdigest()[:16], "IDENTICAL" if not problems else "%d DIFFER" % len(problems)))
    return len(problems)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["list", "render", "check", "compare"],
                    help="list the cases; render them into --out; check: render into a temporary "
                         "tree and compare it with --ref; compare two trees (--ref, --out)")
    ap.add_argument("--bin", help="the nccl-culprit executable (render, check)")
    ap.add_argument("--out", help="render: the tree to write; compare: the new tree")
    ap.add_argument("--ref", help="the reference tree (check, compare)")
    ap.add_argument("--stride", type=int, default=6, help="every N-th scenario of sweep.py's families (default 6)")
    ap.add_argument("--jobs", type=int, default=2, help="cases rendered in parallel (default 2)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command (default 600)")
    ap.add_argument("--only", help="only cases whose id, spec or format match this regular expression")
    ap.add_argument("--keep", action="store_true", help="check: keep the new tree (printed)")
    args = ap.parse_args()

    if args.mode == "list":
        for cid, fmt, spec, analyze in cases(args.stride):
            print(cid, fmt, spec, "analyze" if analyze else "")
        return 0
    if args.mode == "compare":
        if not args.ref or not args.out:
            ap.error("compare needs --ref and --out")
        return 1 if compare(args.ref, args.out) else 0
    if not args.bin or not os.access(args.bin, os.X_OK):
        ap.error("--bin must be an executable")
    if args.mode == "render":
        if not args.out:
            ap.error("render needs --out")
        render(args.bin, args.out, args.stride, args.jobs, args.timeout, args.only)
        return 0
    if not args.ref or not os.path.isdir(args.ref):
        ap.error("check needs --ref, a tree made by `render` with the reference binary")
    new = tempfile.mkdtemp(prefix="sim-identity-")
    try:
        render(args.bin, new, args.stride, args.jobs, args.timeout, args.only)
        if args.only:  # compare only what was rendered
            ref = tempfile.mkdtemp(prefix="sim-identity-ref-")
            for cid in os.listdir(new):
                if os.path.isdir(os.path.join(args.ref, cid)):
                    shutil.copytree(os.path.join(args.ref, cid), os.path.join(ref, cid))
            shutil.copy(os.path.join(args.ref, "_cases.txt"), ref)
            differ = compare(ref, new)
            shutil.rmtree(ref)
        else:
            differ = compare(args.ref, new)
    finally:
        if args.keep:
            print("new tree kept in", new)
        else:
            shutil.rmtree(new, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
