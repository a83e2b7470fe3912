#!/usr/bin/env python3
"""Lists everything a test run skipped, with the reason, and judges the skips (scripts/test.sh).

    skip_report.py --junit BUILD/junit.xml [--extra BUILD/skips.tsv] [--ci]

Sources of skips:
  - CTest's JUnit file (`ctest --output-junit`): tests CTest counts as skipped (a gtest
    GTEST_SKIP, a SKIP_RETURN_CODE exit) with the reason from their output (gtest's
    "Skipped" message, else a "SKIP: reason" line), and, in any test's output, lines
    "SKIP <check>: <reason>" (optionally after a "[tag] " prefix), which tests that run
    several checks print per skipped check (tests/slurm/run_slurm_tests.sh);
  - the extra file: one "<what>\t<reason>" line per step skipped outside CTest (the reader
    fuzzers and the sanitizer build of scripts/ci_extra.sh, SKIP_EXTRA=1 of scripts/test.sh).
Prints one "skipped: <name>: <reason>" line per skip, "disabled: <name>" per disabled test
(the KnownGaps), and one final line. With --ci (CI=true) every skip but one for want of a GPU
(its reason names CUDA, a GPU or a device) or for want of the shared data folder beside the
checkout (`../shared/data`, which the project must not need: its reason says "shared data,
not part of the repo") is a failure: CI has everything scripts/setup.sh installs, so such a
skip means a part of the suite did not run. Exit 0 when no skip fails,
1 when one does, 2 when the JUnit file is missing or unreadable.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET

SKIP_LINE = re.compile(r"^(?:\[[^\]]*\]\s*)?SKIP(?::\s*|\s+)(.+?)\s*$")
GPU_REASON = re.compile(r"\b(cuda|gpus?|device|devices|nvidia)\b", re.IGNORECASE)
SHARED_DATA_REASON = re.compile(r"shared data, not part of the repo")
GTEST_SKIP_AT = re.compile(r":\d+: Skipped\s*$")


def gtest_reasons(out):
    """Reasons of gtest's skips: the lines after "FILE:LINE: Skipped" up to a blank line."""
    reasons, lines = [], out.splitlines()
    for i, line in enumerate(lines):
        if GTEST_SKIP_AT.search(line):
            msg = []
            for nxt in lines[i + 1:]:
                if not nxt.strip() or nxt.startswith("["):
                    break
                msg.append(nxt.strip())
            reasons.append(" ".join(msg) or "GTEST_SKIP without a message")
    return reasons


def skip_lines(out):
    return [m.group(1) for m in map(SKIP_LINE.match, out.splitlines()) if m]


def from_junit(path):
    """(skips [(name, reason)], disabled [name]) of a CTest JUnit file."""
    root = ET.parse(path).getroot()
    skips, disabled = [], []
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        out = case.findtext("system-out") or ""
        status = case.get("status", "")
        skipped = case.find("skipped")
        if status == "disabled":
            disabled.append(name)
            continue
        if skipped is not None:
            reasons = gtest_reasons(out) or skip_lines(out) or [skipped.get("message") or "no reason printed"]
            skips.append((name, "; ".join(reasons)))
            continue
        # A test that ran (passed or failed) may have skipped some of its checks (several
        # gtest cases in one CTest test, as mpi_np*, or a script's checks, as slurm).
        skips.extend((name, r) for r in gtest_reasons(out) + skip_lines(out))
    return list(dict.fromkeys(skips)), disabled


def from_extra(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.strip():
                    what, _, why = line.rstrip("\n").partition("\t")
                    out.append((what, why or "no reason given"))
    except FileNotFoundError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--junit", required=True, help="ctest --output-junit file")
    ap.add_argument("--extra", help="skips outside CTest, one 'what<TAB>reason' per line")
    ap.add_argument("--ci", action="store_true", help="CI: any skip but a GPU's is a failure")
    args = ap.parse_args()
    try:
        skips, disabled = from_junit(args.junit)
    except (OSError, ET.ParseError) as e:
        print("skip report: cannot read %s: %s" % (args.junit, e))
        return 2
    if args.extra:
        skips = from_extra(args.extra) + skips
    bad = 0
    for name, reason in skips:
        allowed = bool(GPU_REASON.search(reason) or SHARED_DATA_REASON.search(reason))
        failing = args.ci and not allowed
        bad += failing
        print("skipped: %s: %s%s" % (name, reason, "  [FAIL under CI=true]" if failing else ""))
    for name in disabled:
        print("disabled: %s" % name)
    gpu_skips = sum(1 for _, r in skips if GPU_REASON.search(r))
    data_skips = sum(1 for _, r in skips if SHARED_DATA_REASON.search(r) and not GPU_REASON.search(r))
    line = "skip report: %d skipped (%d for want of a GPU, %d of the shared data), %d disabled" % (
        len(skips), gpu_skips, data_skips, len(disabled))
    if bad:
        print(line + "; FAIL: CI=true and %d skip(s) of what scripts/setup.sh installs or the suite "
              "needs (only a GPU or the shared data may be missing)" % bad)
        return 1
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
