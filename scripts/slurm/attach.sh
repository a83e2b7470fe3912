#!/usr/bin/env bash
# Runs the nccl-culprit analyzer beside a running (possibly hung) Slurm job: one analyzer
# task on every node of the job, started as an overlapping step of that job, reading each
# node's live profiler data. See docs/slurm.md.
set -euo pipefail

nc_prog=attach.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

usage() {
  cat <<'EOF'
Usage: attach.sh [--dry-run] JOBID [analyze options]

Runs `nccl-culprit analyze` beside the running (possibly hung) Slurm job JOBID:
  srun --overlap --jobid=JOBID --nodes=N --ntasks=N --ntasks-per-node=1 ... nccl-culprit analyze
with N the job's node count. Every task reads its node's live data directory
($NCCL_CULPRIT_LIVE_DIR, default $NCCL_CULPRIT_DIR, else /dev/shm/nccl-culprit/{job}; {job} is
replaced by the job id of JOBID). The results go to ./nccl-culprit-JOBID.h5 (the current
directory, given as an absolute path: it must be reachable from the job's first node, as a
home or project directory is) and the report to stdout.

Analyze options (`nccl-culprit analyze --help`) are passed on; --input, --shared or --mock
replace the live data directory, --output replaces the results file.

Options:
  --dry-run   check the job, print the srun command and exit 0
  -h, --help  this text

Site settings: scripts/slurm/site.conf (environment variables win), e.g. NCCL_CULPRIT_BIN,
NCCL_CULPRIT_SRUN_MPI, NCCL_CULPRIT_ATTACH_TIME, NCCL_CULPRIT_SRUN_OPTS, NCCL_CULPRIT_LIVE_DIR.

Exit status: the analyzer's (0 finished, 1 failure, 2 usage, 3 no profiler data); 1 when the
job does not exist, is not running or belongs to someone else; 2 for a usage error.
EOF
}

jobid=""
analyze_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) NC_DRY_RUN=1 ;;
    -h | --help)
      if [ -z "$jobid" ]; then usage; exit 0; fi
      analyze_args+=("$1")
      ;;
    *)
      if [ -z "$jobid" ]; then
        case "$1" in
          -*) nc_usage_error "expected JOBID before analyze options, got '$1'" ;;
        esac
        jobid=$1
      else
        analyze_args+=("$1")
      fi
      ;;
  esac
  shift
done
[ -n "$jobid" ] || nc_usage_error "missing JOBID"
[[ "$jobid" =~ ^[0-9]+(_[0-9]+)?(\+[0-9]+)?$ ]] ||
  nc_usage_error "'$jobid' is not a job id (123, 123_4 for an array task)"

nc_load_site "$here"
command -v scontrol >/dev/null 2>&1 || nc_die "scontrol not found: is Slurm installed here?"
command -v srun >/dev/null 2>&1 || nc_die "srun not found: is Slurm installed here?"

# The job: it must exist, be one job, be running and be the caller's (root may attach to
# any job).
if ! info=$(scontrol show job -o "$jobid" 2>&1); then
  case "$info" in
    *"Invalid job id"*) nc_die "job $jobid does not exist" ;;
    *) nc_die "cannot query job $jobid: $(echo "$info" | head -n 1)" ;;
  esac
fi
[ -n "$info" ] || nc_die "job $jobid does not exist"
lines=$(printf '%s\n' "$info" | grep -c '^JobId=' || true)
if [ "$lines" -gt 1 ]; then
  nc_die "job $jobid is $lines jobs (an array or heterogeneous job): give one, e.g. ${jobid}_0"
fi

field() { printf '%s\n' "$info" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
job_num=$(field JobId)
state=$(field JobState)
user=$(field UserId)          # name(uid)
nodelist=$(field NodeList)
job_uid=${user##*(}
job_uid=${job_uid%)}

if [ "$state" != RUNNING ]; then
  nc_die "job $jobid is ${state:-in an unknown state}, not RUNNING: attach needs a running job (for saved data use postmortem.sh)"
fi
my_uid=$(id -u)
if [ "$my_uid" -ne 0 ] && [ "$job_uid" != "$my_uid" ]; then
  nc_die "job $jobid belongs to ${user%%(*} (uid $job_uid), not to $(id -un) (uid $my_uid)"
fi
if [ -z "$nodelist" ] || [ "$nodelist" = "(null)" ]; then nc_die "job $jobid has no nodes"; fi
nodes=$(scontrol show hostnames "$nodelist" | wc -l)
[ "$nodes" -gt 0 ] || nc_die "cannot expand the node list '$nodelist' of job $jobid"

# Defaults the user did not override: the job's live data directory and ./nccl-culprit-JOBID.h5.
defaults=()
if ! nc_has_opt --input "${analyze_args[@]}" && ! nc_has_opt --shared "${analyze_args[@]}" &&
  ! nc_has_opt --mock "${analyze_args[@]}"; then
  defaults+=(--input "${NCCL_CULPRIT_LIVE_DIR//\{job\}/$job_num}")
fi
output=""
if ! nc_has_opt --output "${analyze_args[@]}"; then
  output=$PWD/nccl-culprit-$jobid.h5
  defaults+=(--output "$output")
fi

# Called from inside another allocation (an salloc shell, a batch job), srun would take that
# allocation's sizes from the environment: the step is sized here alone.
unset SLURM_NTASKS SLURM_NPROCS SLURM_NNODES SLURM_NTASKS_PER_NODE SLURM_CPUS_PER_TASK \
  SLURM_MEM_PER_CPU SLURM_MEM_PER_NODE SLURM_MEM_PER_GPU SLURM_DISTRIBUTION SLURM_OVERCOMMIT \
  SLURM_EXCLUSIVE SLURM_NODELIST SLURM_JOB_NODELIST SLURM_GPUS SLURM_GPUS_PER_NODE SLURM_GPUS_PER_TASK

nc_srun_site_opts
cmd=(srun --overlap "--jobid=$jobid" "--nodes=$nodes" "--ntasks=$nodes" --ntasks-per-node=1
  --job-name=nccl-culprit)
[ -n "$NCCL_CULPRIT_ATTACH_TIME" ] && cmd+=("--time=$NCCL_CULPRIT_ATTACH_TIME")
cmd+=("${nc_srun_site[@]}" "$NCCL_CULPRIT_BIN" analyze "${defaults[@]}" "${analyze_args[@]}")

if [ "$NC_DRY_RUN" = 1 ]; then
  nc_print_cmd "${cmd[@]}"
  exit 0
fi

rc=0
"${cmd[@]}" || rc=$?
if [ -n "$output" ]; then
  if [ -e "$output" ]; then
    echo "$nc_prog: results in $output" >&2
  elif [ "$rc" -eq 0 ]; then
    first=$(scontrol show hostnames "$nodelist" | head -n 1)
    echo "$nc_prog: results written to $output on $first (not visible here: not a shared directory?)" >&2
  fi
fi
exit "$rc"
