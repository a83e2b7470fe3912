"""Shared helpers for the end-to-end tests (not a test itself: CTest only runs test_*.py).

Every test script is run as

    python3 tests/e2e/test_X.py --bin build/nccl-culprit --mpiexec /usr/bin/mpiexec [unittest args]

Only the Python standard library, numpy and h5py are used.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

# Set by main(): the binary, the MPI launcher, and the per-run scratch directory.
BIN = None
MPIEXEC = None
SCRATCH = None

# Generous per-command limit: every command here takes about a second; a hang must fail the
# test instead of blocking CTest until its own (much longer) timeout.
DEFAULT_TIMEOUT_S = 60

MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}

RING_SPEC = "topology=ring,nodes=4,gpus=8,channels=2,seqs=20"


class Result:
    def __init__(self, cmd, rc, stdout, stderr, timed_out):
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out

    def describe(self):
        return ("command: %s\nexit code: %s%s\n--- stdout ---\n%s\n--- stderr ---\n%s"
                % (" ".join(self.cmd), self.rc, " (TIMED OUT)" if self.timed_out else "",
                   self.stdout[-4000:], self.stderr[-4000:]))


def _env():
    env = dict(os.environ)
    for k, v in MPI_ENV.items():
        env.setdefault(k, v)
    # The tests must not depend on the caller's job or data directory.
    env.pop("NCCL_CULPRIT_DIR", None)
    env.pop("SLURM_JOB_ID", None)
    return env


def run(args, np=None, cwd=None, timeout=DEFAULT_TIMEOUT_S):
    """Run nccl-culprit ARGS, under `mpiexec -np NP` when np is given.

    The command runs in its own process group; on timeout the whole group (launcher and
    every rank) is killed and the result says timed_out."""
    cmd = [BIN] + list(args)
    if np is not None:
        cmd = [MPIEXEC, "-np", str(np)] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=_env(), start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = proc.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            out, err = b"", b""
    return Result(cmd, proc.returncode, out.decode("utf-8", "replace"),
                  err.decode("utf-8", "replace"), timed_out)


_BANNER_RULE = re.compile(r"^-{20,}\s*$")


def product_stderr_lines(text):
    """Non-empty stderr lines, without the framed notices the MPI launcher adds
    ("------\\nPrimary job terminated normally ...\\n------")."""
    lines = []
    in_banner = False
    for line in text.splitlines():
        if _BANNER_RULE.match(line):
            in_banner = not in_banner
            continue
        if in_banner or not line.strip():
            continue
        lines.append(line)
    return lines


def scratch(name):
    """A fresh directory under this run's scratch directory."""
    path = tempfile.mkdtemp(prefix=name + "-", dir=SCRATCH)
    return path


def s(value):
    """Fixed-length HDF5 string (numpy bytes) -> str without NUL padding."""
    if isinstance(value, bytes):
        return value.rstrip(b"\0").decode("utf-8")
    if hasattr(value, "tobytes") and getattr(value, "dtype", None) is not None \
            and value.dtype.kind == "S":
        return value.tobytes().rstrip(b"\0").decode("utf-8")
    return str(value)


def main():
    global BIN, MPIEXEC, SCRATCH
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--bin", required=True, help="path to nccl-culprit")
    parser.add_argument("--mpiexec", default=shutil.which("mpiexec") or "mpiexec")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch directory (also: E2E_KEEP=1)")
    args, rest = parser.parse_known_args()
    BIN = os.path.abspath(args.bin)
    MPIEXEC = args.mpiexec
    if not os.access(BIN, os.X_OK):
        print("e2e: --bin %s is not an executable" % BIN, file=sys.stderr)
        return 2
    keep = args.keep or os.environ.get("E2E_KEEP") == "1"
    SCRATCH = tempfile.mkdtemp(prefix="nccl-culprit-e2e-")
    try:
        program = unittest.main(module="__main__", argv=[sys.argv[0]] + rest, exit=False,
                                verbosity=2)
        result = program.result
        # One line per skipped test for the skip report (tests/skip_report.py).
        for test, reason in result.skipped:
            print("SKIP %s: %s" % (test.id(), reason))
        print("\nsummary: %d run, %d failures, %d errors, %d skipped -> %s"
              % (result.testsRun, len(result.failures), len(result.errors),
                 len(result.skipped), "OK" if result.wasSuccessful() else "FAILED"))
        return 0 if result.wasSuccessful() else 1
    finally:
        if keep:
            print("scratch directory kept: %s" % SCRATCH)
        else:
            shutil.rmtree(SCRATCH, ignore_errors=True)
