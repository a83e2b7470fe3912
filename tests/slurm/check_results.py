#!/usr/bin/python3
"""Checks an nccl-culprit results file for the Slurm tests.

  check_results.py RESULT.h5 [--truth ground_truth.json] [--ranks N] [--input DIR]
                   [--files N]

Reads the HDF5 file with h5py; without h5py, the JSON verdict next to it (RESULT.json).
--truth: the top culprit must be a root of the simulator's ground truth (same class and
process, either end for network_link). Prints one line; exit 0 when every check holds.
"""
import argparse
import json
import os
import sys


def text(v):
    if isinstance(v, bytes):
        return v.split(b"\0", 1)[0].decode()
    if hasattr(v, "tobytes") and getattr(v, "dtype", None) is not None and v.dtype.kind == "S":
        return v.tobytes().split(b"\0", 1)[0].decode()
    return str(v)


def attr(v):
    if isinstance(v, bytes) or getattr(getattr(v, "dtype", None), "kind", "") == "S":
        return text(v)
    return v.item() if hasattr(v, "item") else v


def load(path):
    """The results as the JSON verdict's shape: attributes, culprits, processes, inputs."""
    try:
        import h5py  # noqa: F401
    except ImportError:
        h5py = None
    if h5py is None:
        stem = path[:-3] if path.endswith(".h5") else path
        with open(stem + ".json") as f:
            d = json.load(f)
        d["_via"] = "json"
        return d
    with h5py.File(path, "r") as f:
        d = {k: attr(v) for k, v in f.attrs.items()}

        def rows(name, fields):
            if name not in f:
                return []
            out = []
            for r in f[name][()]:
                out.append({k: (text(r[k]) if f[name].dtype[k].kind == "S" else r[k].item())
                            for k in fields if k in f[name].dtype.names})
            return out

        d["culprits"] = rows("culprits", ["process_id", "host", "pid", "culprit_class",
                                          "peer_process_id", "blame_share"])
        d["processes"] = rows("processes", ["process_id", "host", "pid", "role"])
        d["inputs"] = rows("inputs", ["host", "path", "format", "records"])
    d["_via"] = "h5py"
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--truth")
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--input")
    ap.add_argument("--files", type=int)
    a = ap.parse_args()
    if not os.path.exists(a.result):
        print("no results file %s" % a.result)
        return 1
    d = load(a.result)
    problems = []
    if a.ranks is not None and int(d.get("analyzer_ranks", -1)) != a.ranks:
        problems.append("analyzer_ranks %s, expected %d" % (d.get("analyzer_ranks"), a.ranks))
    if a.input is not None and d.get("input") != a.input:
        problems.append("input %r, expected %r" % (d.get("input"), a.input))
    if a.files is not None and len(d.get("inputs", [])) != a.files:
        problems.append("%d input files, expected %d" % (len(d.get("inputs", [])), a.files))
    top = None
    if a.truth:
        with open(a.truth) as f:
            roots = json.load(f).get("roots", [])
        culprits = d.get("culprits", [])
        if not culprits:
            problems.append("no culprit; ground truth %s" % roots)
        else:
            top = culprits[0]
            procs = {p["process_id"]: p for p in d.get("processes", [])}
            ends = {(top["host"], top["pid"])}
            peer = procs.get(top.get("peer_process_id", -1))
            if peer:
                ends.add((peer["host"], peer["pid"]))
            match = False
            for r in roots:
                want = {(r["host"], r["pid"])}
                if r.get("peer_host"):
                    want.add((r["peer_host"], r["peer_pid"]))
                match = match or (r["class"] == top["culprit_class"] and bool(ends & want))
            if not match:
                problems.append("top culprit %s:pid %s %s is not in the ground truth %s"
                                % (top["host"], top["pid"], top["culprit_class"], roots))
    if problems:
        print("%s: %s" % (a.result, "; ".join(problems)))
        return 1
    what = ("culprit %s:pid %s %s" % (top["host"], top["pid"], top["culprit_class"])) if top else "ok"
    print("%s: %s (%s ranks, %d files, read with %s)"
          % (os.path.basename(a.result), what, d.get("analyzer_ranks"), len(d.get("inputs", [])), d["_via"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
