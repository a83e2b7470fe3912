#!/usr/bin/env bash
# CTest wrapper of shellcheck: `tests/run_shellcheck.sh FILE...`.
# The shellcheck program is looked up when the test runs. Without it the test is skipped (77, the
# tests' SKIP_RETURN_CODE, with a "SKIP: ..." line that scripts/test.sh lists), except under
# CI=true, where it fails: scripts/setup.sh installs shellcheck, so CI must have it.
set -uo pipefail
sc=$(command -v shellcheck) || {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: shellcheck not installed and CI=true (scripts/setup.sh installs it)"
    exit 1
  fi
  echo "SKIP: shellcheck not installed (apt-get install shellcheck; scripts/setup.sh)"
  exit 77
}
exec "$sc" "$@"
