#!/usr/bin/env bash
# Submits postmortem.sbatch over saved profiler data on a shared file system, sized from the
# number of host directories. See docs/slurm.md.
set -euo pipefail

nc_prog=postmortem.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

usage() {
  cat <<'EOF'
Usage: postmortem.sh [--dry-run] [--wait] DIR [analyze options]
       postmortem.sh [--dry-run] [--wait] --array LIST_FILE [analyze options]

Submits a batch job that analyses saved NCCL profiler data laid out as DIR/<host>/<files>
(`nccl-culprit analyze --shared DIR`) with --ntasks=min(host directories, NCCL_CULPRIT_MAX_TASKS).

--array LIST_FILE: one incident directory a line (blank lines and # comments skipped; relative
paths are taken from the current directory); one array task per incident, each sized for the
largest incident.

Results (in $NCCL_CULPRIT_RESULTS, default the current directory):
  nccl-culprit-<incident>-<jobid>.h5 / .json   (array: nccl-culprit-<incident>-<jobid>_<task>.*)
  nccl-culprit-pm-<jobid>.out                  (array: nccl-culprit-pm-<jobid>_<task>.out):
                                               the job's log with the text report

Options:
  --dry-run   print the sbatch command and exit 0
  --wait      wait for the job to end; exit with its status (sbatch --wait)
  -h, --help  this text

Site settings: scripts/slurm/site.conf (NCCL_CULPRIT_PARTITION, NCCL_CULPRIT_TIME,
NCCL_CULPRIT_MAX_TASKS, NCCL_CULPRIT_SBATCH_OPTS, NCCL_CULPRIT_RESULTS, ...).
EOF
}

wait_opt=()
incident=""
list=""
analyze_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) NC_DRY_RUN=1 ;;
    --wait) wait_opt=(--wait) ;;
    --array)
      [ $# -ge 2 ] || nc_usage_error "--array needs a list file"
      list=$2
      shift
      ;;
    --array=*) list=${1#--array=} ;;
    -h | --help)
      if [ -z "$incident" ] && [ -z "$list" ]; then usage; exit 0; fi
      analyze_args+=("$1")
      ;;
    *)
      if [ -z "$incident" ] && [ -z "$list" ]; then
        case "$1" in
          -*) nc_usage_error "expected DIR or --array LIST_FILE before analyze options, got '$1'" ;;
        esac
        incident=$1
      else
        analyze_args+=("$1")
      fi
      ;;
  esac
  shift
done
[ -n "$incident" ] || [ -n "$list" ] || nc_usage_error "missing DIR or --array LIST_FILE"
[ -z "$incident" ] || [ -z "$list" ] || nc_usage_error "give DIR or --array LIST_FILE, not both"
if nc_has_opt --input "${analyze_args[@]}" || nc_has_opt --mock "${analyze_args[@]}" ||
  nc_has_opt --shared "${analyze_args[@]}"; then
  nc_usage_error "the data directory is DIR (or the list): no --input, --shared or --mock"
fi

nc_load_site "$here"
command -v sbatch >/dev/null 2>&1 || nc_die "sbatch not found: is Slurm installed here?"
results=$(nc_abspath "${NCCL_CULPRIT_RESULTS:-$PWD}")
export NCCL_CULPRIT_RESULTS=$results
[ "$NC_DRY_RUN" = 1 ] || mkdir -p "$results"

script_args=()
if [ -n "$list" ]; then
  [ -r "$list" ] || nc_die "cannot read the incident list $list"
  list=$(nc_abspath "$list")
  count=0
  hosts=0
  while IFS= read -r line; do
    count=$((count + 1))
    [ -d "$line" ] || nc_die -c 3 "$list: incident $count: directory $line does not exist"
    h=$(nc_count_hosts "$line")
    [ "$h" -gt 0 ] || nc_die -c 3 "$list: incident $count: no host directories under $line"
    [ "$h" -le "$hosts" ] || hosts=$h
  done < <(grep -v -e '^[[:space:]]*$' -e '^[[:space:]]*#' "$list")
  [ "$count" -gt 0 ] || nc_die -c 3 "$list lists no incident directory"
  array_opts=("--array=1-$count" "--output=$results/nccl-culprit-pm-%A_%a.out")
  script_args=(--list "$list")
  what="$count incident(s) from $list"
else
  [ -d "$incident" ] || nc_die -c 3 "incident directory $incident does not exist"
  incident=$(nc_abspath "${incident%/}")
  hosts=$(nc_count_hosts "$incident")
  [ "$hosts" -gt 0 ] || nc_die -c 3 "no host directories under $incident (expected DIR/<host>/<files>)"
  array_opts=("--output=$results/nccl-culprit-pm-%j.out")
  script_args=("$incident")
  what=$incident
fi
tasks=$(nc_min "$hosts" "$NCCL_CULPRIT_MAX_TASKS")

nc_sbatch_site_opts
cmd=(sbatch "${wait_opt[@]}" --job-name=nccl-culprit-pm "--ntasks=$tasks" "${array_opts[@]}"
  "${nc_sbatch_site[@]}" "$here/postmortem.sbatch" "${script_args[@]}" "${analyze_args[@]}")
if [ "$NC_DRY_RUN" = 1 ]; then
  nc_print_cmd "${cmd[@]}"
  exit 0
fi
echo "$nc_prog: $what: $hosts host(s), $tasks task(s); results in $results" >&2
exec "${cmd[@]}"
