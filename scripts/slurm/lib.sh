# shellcheck shell=bash
# Helpers shared by the nccl-culprit Slurm scripts. Sourced, never run.
#
# The calling script sets nc_prog (its name, for messages) and NC_DRY_RUN (1 under --dry-run)
# and calls nc_load_site with the directory of these scripts.

nc_prog=${nc_prog:-nccl-culprit}
NC_DRY_RUN=${NC_DRY_RUN:-0}

# One line on stderr, then exit (1 unless a code is given first: nc_die -c 3 "text").
nc_die() {
  local code=1
  if [ "$1" = "-c" ]; then code=$2; shift 2; fi
  echo "$nc_prog: $*" >&2
  exit "$code"
}

nc_usage_error() {
  echo "$nc_prog: $*" >&2
  echo "$nc_prog: run '$nc_prog --help' for usage" >&2
  exit 2
}

# Prints a command as one shell-quoted line that can be pasted back into a shell.
nc_print_cmd() {
  local line="" w
  for w in "$@"; do
    if [[ "$w" =~ ^[A-Za-z0-9_./:=,+%@-]+$ ]]; then
      line+="$w "
    else
      line+="${w@Q} "
    fi
  done
  echo "${line% }"
}

# Runs a command, or under --dry-run prints it and returns 0.
nc_run() {
  if [ "$NC_DRY_RUN" = 1 ]; then
    nc_print_cmd "$@"
    return 0
  fi
  "$@"
}

# True when an analyze option (e.g. --output) is among the arguments, as "--output X" or
# "--output=X".
nc_has_opt() {
  local name=$1 a
  shift
  for a in "$@"; do
    case "$a" in
      "$name" | "$name"=*) return 0 ;;
    esac
  done
  return 1
}

# Number of host directories (the first level) under a shared data directory, as the
# analyzer's --shared counts them.
nc_count_hosts() {
  find -L "$1" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l
}

nc_min() {
  if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi
}

nc_abspath() {
  case "$1" in
    /*) echo "$1" ;;
    *) echo "$PWD/$1" ;;
  esac
}

# Sources site.conf (or $NCCL_CULPRIT_SITE_CONF), loads the modules it names, finds the
# binary (NCCL_CULPRIT_BIN, made absolute) and lets Open MPI run as root.
nc_load_site() {
  local dir=$1
  local conf=${NCCL_CULPRIT_SITE_CONF:-$dir/site.conf}
  [ -r "$conf" ] || nc_die "cannot read the site settings $conf"
  # shellcheck source=site.conf
  . "$conf"
  export NCCL_CULPRIT_SLURM_DIR=$dir

  if [ -n "$NCCL_CULPRIT_MODULES" ] && [ "$NC_DRY_RUN" != 1 ]; then
    if ! type module >/dev/null 2>&1 && [ -r /etc/profile.d/modules.sh ]; then
      # shellcheck disable=SC1091
      . /etc/profile.d/modules.sh
    fi
    type module >/dev/null 2>&1 ||
      nc_die "NCCL_CULPRIT_MODULES is set ($NCCL_CULPRIT_MODULES) but there is no 'module' command"
    local m
    for m in $NCCL_CULPRIT_MODULES; do
      module load "$m" || nc_die "module load $m failed (NCCL_CULPRIT_MODULES in $conf)"
    done
  fi

  local bin=$NCCL_CULPRIT_BIN
  if [ -z "$bin" ]; then
    if command -v nccl-culprit >/dev/null 2>&1; then
      bin=$(command -v nccl-culprit)
    elif [ -x "$dir/../../build/nccl-culprit" ]; then
      bin=$(cd "$dir/../../build" && pwd)/nccl-culprit
    else
      bin=nccl-culprit
    fi
  elif [ "${bin#*/}" = "$bin" ] && command -v "$bin" >/dev/null 2>&1; then
    bin=$(command -v "$bin")
  fi
  case "$bin" in
    */*) bin=$(nc_abspath "$bin") ;;
  esac
  if [ "$NC_DRY_RUN" != 1 ] && [ ! -x "$bin" ]; then
    nc_die "nccl-culprit binary not found ('$bin'): set NCCL_CULPRIT_BIN (site.conf or environment)"
  fi
  export NCCL_CULPRIT_BIN=$bin

  # Open MPI refuses to start as root unless told that it is meant (containers, CI).
  if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  # The analyzer's own traffic off the training fabric (NCCL_CULPRIT_MPI_TRANSPORT, site.conf).
  if [ -r "$dir/../mpi_transport.sh" ]; then
    # shellcheck source=../mpi_transport.sh
    . "$dir/../mpi_transport.sh"
  fi
}

# The options every srun of the analyzer gets from the site settings, into array nc_srun_site.
nc_srun_site_opts() {
  nc_srun_site=()
  local w
  # shellcheck disable=SC2086  # word splitting of the option strings is intended
  for w in $NCCL_CULPRIT_SRUN_MPI $NCCL_CULPRIT_SRUN_OPTS; do nc_srun_site+=("$w"); done
}

# The options every sbatch gets from the site settings, into array nc_sbatch_site.
nc_sbatch_site_opts() {
  nc_sbatch_site=()
  [ -n "$NCCL_CULPRIT_PARTITION" ] && nc_sbatch_site+=("--partition=$NCCL_CULPRIT_PARTITION")
  [ -n "$NCCL_CULPRIT_ACCOUNT" ] && nc_sbatch_site+=("--account=$NCCL_CULPRIT_ACCOUNT")
  [ -n "$NCCL_CULPRIT_TIME" ] && nc_sbatch_site+=("--time=$NCCL_CULPRIT_TIME")
  local w
  # shellcheck disable=SC2086  # word splitting of the option string is intended
  for w in $NCCL_CULPRIT_SBATCH_OPTS; do nc_sbatch_site+=("$w"); done
}
