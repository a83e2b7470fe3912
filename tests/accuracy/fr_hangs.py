#!/usr/bin/env python3
"""Randomized hangs seen only through PyTorch Flight Recorder dumps (issue: "Flight Recorder
dumps"; docs/accuracy.md, "Hangs from Flight Recorder dumps").

Each scenario is drawn from a fixed seed: ring, tree or pipeline topology; the default groups,
world+dp or pp+world; 2 to 32 nodes with 1 to 8 GPUs; the rank that stops and the collective
it never starts; the dump's encoding (pickle or JSON), schema (2.2, 2.9, 2.10; 1.0 for
ring and tree, whose single world group it can describe), ring-buffer size, and whether only
unfinished entries are kept. The simulator writes the dumps (`mock --format
flight-recorder+...`); the analyzer reads nothing else. A scenario passes when the stopped rank
is named first, class `hang`, and nobody else is named. Healthy draws (no hang) must name
nobody.

    tests/accuracy/fr_hangs.py --bin build/nccl-culprit [--seed 13] [--count 200] [--jobs 2]

Prints one line per scenario that fails and a scorecard per topology; exits 1 when any fails.
Fresh seeds explore: pass --seed with any number.
"""
import argparse
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

LAYOUTS = [("ring", ""), ("ring", "world+dp"), ("tree", ""), ("tree", "world+dp"),
           ("pipeline", ""), ("pipeline", "pp+world")]


def draw(rng):
    topo, comms = rng.choice(LAYOUTS)
    pipeline = topo == "pipeline"
    nodes = int(round(2 ** rng.uniform(1, 5)))  # 2..32
    gpus = rng.randint(1, 4 if pipeline else 8)
    if comms == "world+dp" and gpus < 2:
        gpus = 2
    seqs = rng.randint(2, 4) if pipeline else rng.randint(3, 10)
    spec = "topology=%s,nodes=%d,gpus=%d,channels=%d,seqs=%d,bytes=%dM,seed=%d" % (
        topo, nodes, gpus, rng.choice([2, 4]) if topo == "tree" else rng.randint(1, 4), seqs, rng.choice([1, 2, 4]), rng.randint(1, 99999))
    if comms:
        spec += ",comms=" + comms
    hang = None
    if rng.random() < 0.9:
        hang = rng.randrange(nodes * gpus)
        spec += ",fault=hang:%d@%d" % (hang, rng.randrange(seqs))
    versions = ["2.2", "2.9", "2.10"] + (["1.0"] if not comms and not pipeline else [])
    fmt = "flight-recorder"
    if rng.random() < 0.5:
        fmt += "+json"
    fmt += "+v" + rng.choice(versions)
    if rng.random() < 0.3:
        fmt += "+all+buffer=%d" % rng.randint(2, 12)
    return {"spec": spec, "format": fmt, "hang": hang, "topo": topo if not comms else topo + "+" + comms.split("+")[-1]}


def run_one(args, sc, work):
    data = tempfile.mkdtemp(dir=work)
    try:
        r = subprocess.run([args.bin, "mock", "--out", data, "--format", sc["format"], "--scenario", sc["spec"]],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return sc, None, "mock failed: " + r.stderr.strip()
        js = os.path.join(data, "verdict.json")
        r = subprocess.run([args.bin, "analyze", "--shared", data, "--output", os.path.join(data, "r.h5"),
                            "--json", js, "--quiet"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return sc, None, "analyze exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
        with open(js) as f:
            v = json.load(f)
        procs = {p["process_id"]: p for p in v["processes"]}
        return sc, [(procs[c["process_id"]]["rank"], c["culprit_class"]) for c in v["culprits"]], ""
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    master = random.Random(args.seed)
    scenarios = [draw(random.Random(master.getrandbits(48))) for _ in range(args.count)]
    work = tempfile.mkdtemp(prefix="fr-hangs-")
    per_topo, failures = {}, 0
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for sc, named, error in pool.map(lambda s: run_one(args, s, work), scenarios):
                want = [] if sc["hang"] is None else [(sc["hang"], "hang")]
                ok = not error and named == want
                cell = per_topo.setdefault(sc["topo"], [0, 0])
                cell[0] += ok
                cell[1] += 1
                if not ok:
                    failures += 1
                    print("FAIL %s %s: want %s, named %s %s" % (sc["spec"], sc["format"], want, named, error))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("Flight Recorder hangs, seed %d: %d scenarios" % (args.seed, len(scenarios)))
    for topo in sorted(per_topo):
        ok, n = per_topo[topo]
        print("  %-16s %3d/%-3d stopped rank named first and alone (healthy: nobody)" % (topo, ok, n))
    total = sum(c[0] for c in per_topo.values())
    print("  %-16s %3d/%-3d" % ("all", total, len(scenarios)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
