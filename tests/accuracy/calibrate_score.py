#!/usr/bin/env python3
"""Fit the score's calibration (src/analysis/score.hpp) to culprit rows of sweeps.

Every culprit row of a sweep (tests/accuracy/sweep.py --json-out FILE) carries the margin of
its evidence (how many times its test's tightest guard it clears; null for a hang) and whether
it names a true root (process and class). The score is

    score = ceiling / (1 + exp(-(at_guard + per_log_margin * ln(margin))))

the chance that a row at that margin names a true root: at the guard a finding may be a
healthy GPU's chance departure; far beyond it what is left is the share of rows that name the
wrong process or class whatever their evidence (the ceiling). This script fits the three
constants by maximum likelihood to the rows of the sweeps given (use fresh seeds, not the CI
seed, and check the result on the CI seed: the accuracy_sweep prints its reliability table),
and prints the reliability of the fit on them.

Usage: calibrate_score.py SWEEP.json [SWEEP.json ...]
"""
import json
import math
import sys


def rows_of(paths):
    rows = []
    for path in paths:
        for r in json.load(open(path))["rows"]:
            for c in r.get("culprits") or []:
                m = c.get("margin")
                rows.append((math.inf if m is None else max(1.0, float(m)), bool(c["true"])))
    return rows


def score(m, ceiling, at_guard, per_log):
    if math.isinf(m):
        return ceiling
    return ceiling / (1 + math.exp(-(at_guard + per_log * math.log(m))))


def log_likelihood(rows, params):
    total = 0.0
    for m, ok in rows:
        p = min(max(score(m, *params), 1e-12), 1 - 1e-12)
        total += math.log(p if ok else 1 - p)
    return total


def fit(rows):
    best = (0.99, 1.0, 10.0)
    best_ll = log_likelihood(rows, best)
    steps = (0.01, 1.0, 8.0)
    for _ in range(60):  # coordinate search, halving the steps when nothing improves
        improved = False
        for i in range(3):
            for sign in (-1, 1):
                trial = list(best)
                trial[i] += sign * steps[i]
                trial[0] = min(trial[0], 0.9999)
                trial[2] = max(trial[2], 0.0)
                ll = log_likelihood(rows, trial)
                if ll > best_ll:
                    best, best_ll, improved = tuple(trial), ll, True
        if not improved:
            steps = tuple(s / 2 for s in steps)
    return best, best_ll


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    rows = rows_of(sys.argv[1:])
    false = sum(1 for _, ok in rows if not ok)
    print("%d culprit rows, %d naming no true root" % (len(rows), false))
    (ceiling, at_guard, per_log), ll = fit(rows)
    print("ceiling %.4f  at_guard %.3f  per_log_margin %.3f  (log-likelihood %.2f)" % (ceiling, at_guard, per_log, ll))
    bins = [0.0, 0.5, 0.8, 0.9, 0.95, 0.98, 1.01]
    for lo, hi in zip(bins, bins[1:]):
        sel = [(m, ok) for m, ok in rows if lo <= score(m, ceiling, at_guard, per_log) < hi]
        if sel:
            mean = sum(score(m, ceiling, at_guard, per_log) for m, _ in sel) / len(sel)
            print("  score %.2f-%.2f  %4d rows  mean score %.3f  true %.3f" % (
                lo, min(hi, 1.0), len(sel), mean, sum(ok for _, ok in sel) / len(sel)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
