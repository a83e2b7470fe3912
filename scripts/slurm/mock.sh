#!/usr/bin/env bash
# Submits mock.sbatch, the installation smoke test, with the site settings. See docs/slurm.md.
set -euo pipefail

nc_prog=mock.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

usage() {
  cat <<'EOF'
Usage: mock.sh [--dry-run] [--wait] [SCENARIO] [analyze options]

Submits scripts/slurm/mock.sbatch: simulate a cluster with a known culprit, analyse it under
srun with --ntasks=min(simulated nodes, NCCL_CULPRIT_MAX_TASKS), print the report and compare
the culprit with the simulator's ground truth. SCENARIO defaults to NCCL_CULPRIT_MOCK_SCENARIO
(site.conf). The job's log is nccl-culprit-mock-<jobid>.out in $NCCL_CULPRIT_RESULTS (default:
the current directory); its last line says PASS or FAIL.

Options:
  --dry-run   print the sbatch command and exit 0
  --wait      wait for the job to end; exit with its status (sbatch --wait)
  -h, --help  this text
EOF
}

wait_opt=()
job_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) NC_DRY_RUN=1 ;;
    --wait) wait_opt=(--wait) ;;
    -h | --help) usage; exit 0 ;;
    *) job_args+=("$1") ;;
  esac
  shift
done

nc_load_site "$here"
command -v sbatch >/dev/null 2>&1 || nc_die "sbatch not found: is Slurm installed here?"
results=$(nc_abspath "${NCCL_CULPRIT_RESULTS:-$PWD}")
[ "$NC_DRY_RUN" = 1 ] || mkdir -p "$results"

scenario=$NCCL_CULPRIT_MOCK_SCENARIO
if [ ${#job_args[@]} -gt 0 ] && [ "${job_args[0]#-}" = "${job_args[0]}" ]; then
  scenario=${job_args[0]}
fi
nodes=4
if [[ ",$scenario," =~ ,nodes=([0-9]+), ]]; then nodes=${BASH_REMATCH[1]}; fi
tasks=$(nc_min "$nodes" "$NCCL_CULPRIT_MAX_TASKS")

nc_sbatch_site_opts
cmd=(sbatch "${wait_opt[@]}" --job-name=nccl-culprit-mock "--ntasks=$tasks"
  "--output=$results/nccl-culprit-mock-%j.out" "${nc_sbatch_site[@]}" "$here/mock.sbatch"
  "${job_args[@]}")
nc_run "${cmd[@]}"
