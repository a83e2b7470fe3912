#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions run from traps and through wait_for look unreachable
# Tests scripts/slurm/ on a real, private, one-node Slurm cluster started here:
#
#   tests/slurm/run_slurm_tests.sh /path/to/nccl-culprit
#
# Starts munged, slurmctld and slurmd as root with everything (config, state, spool, pid and
# log files, munge socket and key) under one temporary directory and on free ports, so it
# does not touch a Slurm or munge already running on the machine. Then:
#   (a) attach.sh beside a running "stuck" job that wrote simulated live profiler data to
#       /dev/shm/nccl-culprit/<its job id>: the default live input, and the culprit;
#   (b) postmortem.sh over a shared directory of saved data, and an array of two incidents;
#   (c) mock.sbatch (directly and through mock.sh);
#   (d) attach.sh errors: no such job, a finished job, someone else's job, no data, usage;
#   (e) --dry-run of every script.
# The daemons are stopped and the directory removed whatever happens (NCCL_CULPRIT_SLURM_KEEP=1
# keeps the directory). Prints "N passed, M failed, K skipped" and a "SKIP <check>: <reason>"
# line per skipped check (scripts/test.sh lists them); exit 0 when nothing failed, 1 otherwise,
# 77 (SKIP) when Slurm cannot run here. Under CI=true (scripts/setup.sh installs Slurm and
# munge) a prerequisite missing or a skipped check is a failure (exit 1).
set -uo pipefail

PY=/usr/bin/python3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
sdir=$repo/scripts/slurm
start_s=$SECONDS
passed=0
failed=0
skipped=0
failures=()
skips=()

say() { echo "[slurm-test +$((SECONDS - start_s))s] $*"; }
skip_all() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: CI=true and the Slurm test cannot run: $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

[ $# -eq 1 ] || { echo "usage: $0 /path/to/nccl-culprit" >&2; exit 2; }
BIN=$1
case "$BIN" in /*) ;; *) BIN=$PWD/$BIN ;; esac
[ -x "$BIN" ] || { echo "$0: $BIN is not an executable" >&2; exit 2; }

# ---------------------------------------------------------------- prerequisites (or SKIP)
for tool in munged munge unmunge slurmctld slurmd sbatch srun scontrol squeue sinfo scancel; do
  command -v "$tool" >/dev/null 2>&1 || skip_all "$tool not installed (apt-get install slurm-wlm munge; scripts/setup.sh)"
done
[ "$(id -u)" -eq 0 ] || skip_all "a private Slurm with SlurmUser=root needs root"
[ -x "$PY" ] || skip_all "$PY not found (the results are checked with it)"

TMP=$(mktemp -d /tmp/nccl-culprit-slurm.XXXXXX) || skip_all "cannot make a temporary directory"
chmod 755 "$TMP"   # munge wants its socket directory searchable by everyone
mkdir -p "$TMP"/{munge,state,spool,log,work,results,data}
chmod 700 "$TMP/munge"
export SLURM_CONF=$TMP/slurm.conf
live_dirs=()

# ---------------------------------------------------------------- teardown
# Processes of this cluster left behind (slurmstepd, job scripts): those working in or
# holding files under $TMP.
leftovers() {
  local p target fd
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    target=$(readlink "/proc/$p/cwd" 2>/dev/null) || continue
    case "$target" in
      "$TMP" | "$TMP"/*) echo "$p"; continue ;;
    esac
    for fd in "/proc/$p"/fd/*; do
      case "$(readlink "$fd" 2>/dev/null)" in
        "$TMP"/*) echo "$p"; break ;;
      esac
    done
  done
}

stop_pidfile() {  # stop_pidfile FILE: TERM, up to 10 s, then KILL
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 20); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  kill -9 "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  if [ -s "$TMP/slurmctld.pid" ] && kill -0 "$(cat "$TMP/slurmctld.pid")" 2>/dev/null; then
    timeout 10 scancel --quiet "--partition=$partition" >/dev/null 2>&1
    for _ in $(seq 1 20); do
      [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  stop_pidfile "$TMP/slurmd.pid"
  stop_pidfile "$TMP/slurmctld.pid"
  for _ in 1 2 3; do
    p=$(leftovers)
    [ -z "$p" ] && break
    # shellcheck disable=SC2086  # a list of pids
    kill -9 $p 2>/dev/null
    sleep 0.5
  done
  if [ -s "$TMP/munge/munged.pid" ]; then stop_pidfile "$TMP/munge/munged.pid"; fi
  for d in "${live_dirs[@]}"; do rm -rf "$d"; done
  if [ "${made_live_base:-0}" = 1 ]; then rmdir /dev/shm/nccl-culprit 2>/dev/null; fi
  if [ "$failed" -gt 0 ] || [ "$rc" -ne 0 ]; then
    for f in "$TMP"/log/*.log; do
      [ -f "$f" ] || continue
      echo "---- last lines of $(basename "$f")"
      tail -n 15 "$f"
    done
  fi
  if [ "${NCCL_CULPRIT_SLURM_KEEP:-0}" = 1 ]; then
    echo "kept $TMP"
  else
    rm -rf "$TMP"
  fi
  exit "$rc"
}
partition=culprit
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- start munge and Slurm
port_free() {  # nothing listens on TCP port $1
  local hex
  hex=$(printf ':%04X ' "$1")
  ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" {print $2 " "}' | grep -qi -- "$hex"
}
ctld_port=""
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 30000))
  if port_free "$p" && port_free $((p + 1)); then ctld_port=$p; break; fi
done
[ -n "$ctld_port" ] || skip_all "no free TCP port pair found for slurmctld/slurmd"
first_job=$((100000 + RANDOM * 20))

dd if=/dev/urandom of="$TMP/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$TMP/munge/munge.key"
sock=$TMP/munge/munge.socket
chmod 755 "$TMP/munge"
if ! munged --force "--socket=$sock" "--key-file=$TMP/munge/munge.key" \
  "--pid-file=$TMP/munge/munged.pid" "--log-file=$TMP/log/munged.log" \
  "--seed-file=$TMP/munge/munged.seed" 2>"$TMP/log/munged.err"; then
  skip_all "munged does not start here: $(tail -n 1 "$TMP/log/munged.err")"
fi
if ! munge -n "--socket=$sock" | unmunge "--socket=$sock" >/dev/null 2>&1; then
  skip_all "munge credentials do not work here ($(tail -n 1 "$TMP/log/munged.log"))"
fi

host=$(hostname)
cpus=$(nproc)
cat >"$SLURM_CONF" <<EOF
# Private one-node cluster of tests/slurm/run_slurm_tests.sh
ClusterName=culprittest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$((ctld_port + 1))
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/log/slurmctld.log
SlurmdLogFile=$TMP/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
FirstJobId=$first_job
MinJobAge=600
KillWait=3
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=$partition Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF

slurmctld -i >"$TMP/log/slurmctld.err" 2>&1 || skip_all "slurmctld does not start: $(tail -n 1 "$TMP/log/slurmctld.err")"
slurmd >"$TMP/log/slurmd.err" 2>&1 || skip_all "slurmd does not start: $(tail -n 1 "$TMP/log/slurmd.err")"

wait_for() {  # wait_for SECONDS COMMAND...: poll until COMMAND succeeds
  local limit=$1 t0=$SECONDS
  shift
  until "$@"; do
    [ $((SECONDS - t0)) -lt "$limit" ] || return 1
    sleep 0.5
  done
}
node_idle() { [ "$(timeout 5 sinfo -h -N -o %T 2>/dev/null | head -n 1)" = idle ]; }
if ! wait_for 40 node_idle; then
  skip_all "the one-node Slurm did not come up (node state '$(timeout 5 sinfo -h -N -o %T 2>&1 | head -n 1)'; see slurmctld.log/slurmd.log)"
fi
say "Slurm $(sinfo --version | awk '{print $2}') up on $host ($cpus CPUs, port $ctld_port, jobs from $first_job)"

# ---------------------------------------------------------------- settings for the scripts
unset NCCL_CULPRIT_DIR NCCL_CULPRIT_LIVE_DIR NCCL_CULPRIT_SITE_CONF NCCL_CULPRIT_SLURM_DIR \
  NCCL_CULPRIT_SRUN_OPTS NCCL_CULPRIT_SBATCH_OPTS NCCL_CULPRIT_MODULES NCCL_CULPRIT_ACCOUNT \
  NCCL_CULPRIT_MOCK_SCENARIO NCCL_CULPRIT_MOCK_TMP SLURM_JOB_ID
export NCCL_CULPRIT_BIN=$BIN NCCL_CULPRIT_PARTITION=$partition NCCL_CULPRIT_TIME=00:05:00
export NCCL_CULPRIT_ATTACH_TIME=00:02:00 NCCL_CULPRIT_RESULTS=$TMP/results
export NCCL_CULPRIT_MOCK_TMP=$TMP/work
max_tasks=$cpus
[ "$max_tasks" -le 4 ] || max_tasks=4
mpi_list=$(timeout 10 srun --mpi=list 2>&1)
if printf '%s\n' "$mpi_list" | grep -qw pmix; then
  export NCCL_CULPRIT_SRUN_MPI=--mpi=pmix
else
  say "srun has no pmix plugin here: analyzer steps run with one task"
  export NCCL_CULPRIT_SRUN_MPI=""
  max_tasks=1
fi
export NCCL_CULPRIT_MAX_TASKS=$max_tasks
pm_ranks=$((max_tasks < 3 ? max_tasks : 3))   # 3 simulated hosts in incident A

# ---------------------------------------------------------------- test helpers
ok() { passed=$((passed + 1)); say "PASS $1"; }
bad() {
  failed=$((failed + 1))
  failures+=("$1")
  say "FAIL $1"
  shift
  [ $# -eq 0 ] || printf '    %s\n' "$@"
}
skip() {
  skipped=$((skipped + 1))
  skips+=("$1: $2")
  say "SKIP $1: $2"
}

# Runs a command with a time limit, its stdout and stderr into $out and $err; sets $rc.
out=$TMP/work/last.out
err=$TMP/work/last.err
run() {
  local limit=$1
  shift
  rc=0
  timeout "$limit" "$@" >"$out" 2>"$err" || rc=$?
}
show() { echo "exit $rc; stdout: $(tail -c 600 "$out" | tr '\n' '|')"; echo "stderr: $(tail -c 600 "$err" | tr '\n' '|')"; }
job_state() { timeout 10 scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p'; }
submitted_id() { sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$out" | head -n 1; }
check() {  # check NAME RESULT.h5 [check_results.py options]
  local name=$1 res
  shift
  if res=$("$PY" "$here/check_results.py" "$@" 2>&1); then ok "$name ($res)"; else bad "$name" "$res"; fi
}

# ---------------------------------------------------------------- data
# Live data goes where the analyzer looks by default, /dev/shm/nccl-culprit/<job id>; without
# a writable /dev/shm, under $TMP through NCCL_CULPRIT_DIR (attach.sh's default follows it).
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  live_base=/dev/shm/nccl-culprit
  [ -d "$live_base" ] || made_live_base=1
else
  live_base=$TMP/shm
  export NCCL_CULPRIT_DIR="$live_base/{job}"
  say "/dev/shm is not writable: live data under $live_base"
fi
spec_live=topology=ring,nodes=2,gpus=4,channels=2,seqs=10,fault=slow_gpu:5
spec_a=topology=ring,nodes=3,gpus=2,channels=2,seqs=10,fault=slow_gpu:3
spec_b=topology=ring,nodes=2,gpus=4,channels=2,seqs=10,fault=slow_link:3
spec_mock=topology=ring,nodes=2,gpus=2,channels=2,seqs=10,fault=slow_gpu:2
if ! "$BIN" mock --out "$TMP/data/inc-a" --scenario "$spec_a" >/dev/null ||
  ! "$BIN" mock --out "$TMP/data/inc-b" --scenario "$spec_b" >/dev/null; then
  bad "simulated incidents" "nccl-culprit mock failed"
  exit 1
fi
# ground_truth.json is a file, not a host directory: the incident directories hold only hosts
# and that file, as a saved job's directory would.
printf '# incidents of the array test\n%s\n\n%s\n' "$TMP/data/inc-a" "$TMP/data/inc-b" >"$TMP/data/incidents.list"

# The stand-in for a stuck training job: writes simulated live data where the profiler would
# ($live_base/<job id>/<simulated host>/...) and sleeps. On one real node the
# analyzer sees every simulated host's files from that one node.
cat >"$TMP/work/stuck.sh" <<EOF
#!/bin/bash
set -e
live=$(printf '%q' "$live_base")/\$SLURM_JOB_ID
mkdir -p "\$(dirname "\$live")"
$(printf '%q' "$BIN") mock --out "sim-\$SLURM_JOB_ID" --scenario $(printf '%q' "$spec_live")
mkdir -p "\$live.tmp"
cp -r "sim-\$SLURM_JOB_ID"/node* "\$live.tmp/"
cp "sim-\$SLURM_JOB_ID/ground_truth.json" "truth-\$SLURM_JOB_ID.json"
mv "\$live.tmp" "\$live"
echo "live data in \$live"
exec sleep 600
EOF
chmod +x "$TMP/work/stuck.sh"

# ================================================================ (a) attach beside a stuck job
run 20 sbatch --parsable "--partition=$partition" --job-name=stuck-training "--chdir=$TMP/work" \
  "--output=$TMP/work/stuck-%j.out" "$TMP/work/stuck.sh"
stuck=$(head -n 1 "$out" | cut -d';' -f1)
live=$live_base/$stuck
live_dirs+=("$live" "$live.tmp")
stuck_running() { [ "$(job_state "$stuck")" = RUNNING ] && [ -d "$live" ]; }
if [ "$rc" -ne 0 ] || [ -z "$stuck" ] || ! wait_for 60 stuck_running; then
  bad "stuck job running with live data" "$(show)" "state $(job_state "$stuck"), $live $(test -d "$live" && echo exists || echo missing)"
  stuck=""
else
  ok "stuck job $stuck running with live data in $live"
fi

if [ -n "$stuck" ]; then
  truth_live=$TMP/work/truth-$stuck.json
  # Default input (the job's live directory) and default output (./nccl-culprit-JOBID.h5).
  rc=0
  (cd "$TMP/work" && timeout 90 "$sdir/attach.sh" "$stuck" --json "$TMP/work/attach-default.json" >"$out" 2>"$err") || rc=$?
  if [ "$rc" -eq 0 ] && grep -q '^nccl-culprit .*status' "$out" && [ -f "$TMP/work/nccl-culprit-$stuck.h5" ]; then
    ok "attach.sh $stuck: exit 0, report printed, ./nccl-culprit-$stuck.h5 written"
    check "attach.sh default input is the job's live directory" "$TMP/work/nccl-culprit-$stuck.h5" \
      --input "$live" --files 8 --ranks 1
  else
    bad "attach.sh $stuck (defaults)" "$(show)"
  fi
  if [ "$(job_state "$stuck")" = RUNNING ]; then
    ok "stuck job still running after attach"
  else
    bad "stuck job still running after attach" "state $(job_state "$stuck")"
  fi

  # The culprit, reading the same live data laid out per simulated host (--shared).
  run 90 "$sdir/attach.sh" "$stuck" --shared "$live" --output "$TMP/results/attach-shared.h5" --quiet
  if [ "$rc" -eq 0 ]; then
    check "attach.sh $stuck --shared: culprit is the ground truth's" "$TMP/results/attach-shared.h5" \
      --truth "$truth_live" --files 8
  else
    bad "attach.sh $stuck --shared" "$(show)"
  fi

  # The analyzer's "no data" exit status (3) comes back through srun and attach.sh.
  run 90 "$sdir/attach.sh" "$stuck" --input "$TMP/nowhere" --output "$TMP/results/none.h5" --quiet
  if [ "$rc" -eq 3 ] && [ ! -e "$TMP/results/none.h5" ]; then
    ok "attach.sh with no data exits 3"
  else
    bad "attach.sh with no data exits 3" "$(show)"
  fi

  # (e) dry run: the exact command, which then works when run.
  run 30 "$sdir/attach.sh" --dry-run "$stuck" --output "$TMP/results/from-dry-run.h5" --quiet
  line=$(head -n 1 "$out")
  if [ "$rc" -eq 0 ] && [ "$(wc -l <"$out")" -eq 1 ] &&
    [[ "$line" == "srun --overlap --jobid=$stuck --nodes=1 --ntasks=1 --ntasks-per-node=1 "* ]] &&
    [[ "$line" == *" analyze --input $live --output $TMP/results/from-dry-run.h5 --quiet" ]] &&
    [ ! -e "$TMP/results/from-dry-run.h5" ]; then
    ok "attach.sh --dry-run prints the srun command"
    rc=0
    timeout 90 bash -c "$line" >/dev/null 2>&1 || rc=$?
    if [ "$rc" -eq 0 ] && [ -f "$TMP/results/from-dry-run.h5" ]; then
      ok "the printed attach command runs"
    else
      bad "the printed attach command runs" "exit $rc: $line"
    fi
  else
    bad "attach.sh --dry-run prints the srun command" "$(show)"
  fi

  # (d) someone else's job (run as nobody). A checkout or build below a directory that other
  # users cannot enter (a CI clone, a home directory) is staged where nobody can read it.
  nobody_bin=$BIN nobody_sdir=$sdir
  if command -v runuser >/dev/null 2>&1 &&
    ! { runuser -u nobody -- test -x "$BIN" && runuser -u nobody -- test -r "$sdir/lib.sh"; } 2>/dev/null; then
    stage=$(mktemp -d /tmp/nccl-culprit-slurm-nobody.XXXXXX) && chmod 755 "$stage" &&
      mkdir -p "$stage/scripts" && cp -r "$sdir" "$stage/scripts/slurm" &&
      cp "$repo/scripts/mpi_transport.sh" "$stage/scripts/" && cp "$BIN" "$stage/nccl-culprit" &&
      chmod -R a+rX "$stage" && live_dirs+=("$stage") &&
      nobody_bin=$stage/nccl-culprit nobody_sdir=$stage/scripts/slurm
  fi
  if command -v runuser >/dev/null 2>&1 && runuser -u nobody -- test -x "$nobody_bin" 2>/dev/null &&
    runuser -u nobody -- test -r "$nobody_sdir/lib.sh" 2>/dev/null; then
    rc=0
    (cd / && timeout 30 runuser -u nobody -- env "SLURM_CONF=$SLURM_CONF" "NCCL_CULPRIT_BIN=$nobody_bin" \
      "$nobody_sdir/attach.sh" "$stuck" >"$out" 2>"$err") || rc=$?
    if [ "$rc" -eq 1 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q "belongs to root" "$err"; then
      ok "attach.sh refuses another user's job ($(cat "$err"))"
    else
      bad "attach.sh refuses another user's job" "$(show)"
    fi
  else
    skip "attach.sh refuses another user's job" "user nobody cannot run $BIN or read $sdir"
  fi
fi

# ================================================================ (b) post-mortem
hosts_a=3
run 120 "$sdir/postmortem.sh" --wait "$TMP/data/inc-a"
pm=$(submitted_id)
if [ "$rc" -eq 0 ] && [ -n "$pm" ]; then
  ok "postmortem.sh --wait $TMP/data/inc-a: job $pm exit 0"
  check "postmortem: culprit and $pm_ranks analyzer ranks (min($hosts_a hosts, cap $max_tasks))" \
    "$TMP/results/nccl-culprit-inc-a-$pm.h5" --truth "$TMP/data/inc-a/ground_truth.json" \
    --ranks "$pm_ranks" --input "$TMP/data/inc-a"
  if grep -q "Culprits" "$TMP/results/nccl-culprit-pm-$pm.out" 2>/dev/null; then
    ok "postmortem: report in nccl-culprit-pm-$pm.out"
  else
    bad "postmortem: report in nccl-culprit-pm-$pm.out" "$(tail -n 5 "$TMP/results/nccl-culprit-pm-$pm.out" 2>&1)"
  fi
else
  bad "postmortem.sh --wait $TMP/data/inc-a" "$(show)" "$(tail -n 5 "$TMP/results/nccl-culprit-pm-$pm.out" 2>&1)"
fi

run 150 "$sdir/postmortem.sh" --wait --array "$TMP/data/incidents.list"
arr=$(submitted_id)
if [ "$rc" -eq 0 ] && [ -n "$arr" ]; then
  ok "postmortem.sh --wait --array (2 incidents): job $arr exit 0"
  check "postmortem array task 1: incident A's culprit" "$TMP/results/nccl-culprit-inc-a-${arr}_1.h5" \
    --truth "$TMP/data/inc-a/ground_truth.json"
  check "postmortem array task 2: incident B's culprit" "$TMP/results/nccl-culprit-inc-b-${arr}_2.h5" \
    --truth "$TMP/data/inc-b/ground_truth.json"
else
  bad "postmortem.sh --wait --array" "$(show)" "$(tail -n 3 "$TMP"/results/nccl-culprit-pm-"${arr:-x}"_*.out 2>&1)"
fi

run 20 "$sdir/postmortem.sh" "$TMP/data/nowhere"
if [ "$rc" -eq 3 ] && [ "$(wc -l <"$err")" -eq 1 ]; then
  ok "postmortem.sh on a missing directory: exit 3 ($(cat "$err"))"
else
  bad "postmortem.sh on a missing directory: exit 3" "$(show)"
fi

# ================================================================ (c) installation smoke test
run 120 sbatch --wait "--partition=$partition" "--ntasks=$max_tasks" "--output=$TMP/results/mock-direct.out" \
  "--chdir=$TMP/work" "$sdir/mock.sbatch" "$spec_mock"
if [ "$rc" -eq 0 ] && grep -q "mock.sbatch: PASS" "$TMP/results/mock-direct.out"; then
  ok "sbatch mock.sbatch: $(grep 'mock.sbatch: PASS' "$TMP/results/mock-direct.out")"
else
  bad "sbatch mock.sbatch" "$(show)" "$(tail -n 8 "$TMP/results/mock-direct.out" 2>&1)"
fi
run 120 "$sdir/mock.sh" --wait "$spec_mock"
mj=$(submitted_id)
if [ "$rc" -eq 0 ] && grep -q "mock.sbatch: PASS" "$TMP/results/nccl-culprit-mock-$mj.out" 2>/dev/null; then
  ok "mock.sh --wait: job $mj PASS"
else
  bad "mock.sh --wait" "$(show)" "$(tail -n 8 "$TMP/results/nccl-culprit-mock-$mj.out" 2>&1)"
fi
if ! compgen -G "$TMP/work/nccl-culprit-mock.*" >/dev/null; then
  ok "mock.sbatch removed its scratch directory"
else
  bad "mock.sbatch removed its scratch directory" "$(ls -d "$TMP"/work/nccl-culprit-mock.*)"
fi

# ================================================================ (d) attach errors
run 20 "$sdir/attach.sh" 999999999
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q "does not exist" "$err"; then
  ok "attach.sh on a nonexistent job: exit 1 ($(cat "$err"))"
else
  bad "attach.sh on a nonexistent job" "$(show)"
fi
run 60 sbatch --wait --parsable "--partition=$partition" "--output=/dev/null" --wrap true
done_job=$(head -n 1 "$out" | cut -d';' -f1)
run 20 "$sdir/attach.sh" "$done_job"
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q "is COMPLETED, not RUNNING" "$err"; then
  ok "attach.sh on a finished job: exit 1 ($(cat "$err"))"
else
  bad "attach.sh on a finished job $done_job" "$(show)"
fi
run 20 "$sdir/attach.sh"
if [ "$rc" -eq 2 ]; then ok "attach.sh without JOBID: exit 2"; else bad "attach.sh without JOBID: exit 2" "$(show)"; fi
run 20 "$sdir/attach.sh" not-a-job
if [ "$rc" -eq 2 ]; then ok "attach.sh with a malformed JOBID: exit 2"; else bad "attach.sh with a malformed JOBID: exit 2" "$(show)"; fi

# ================================================================ (e) dry runs of the others
dry() {  # dry NAME EXPECTED_PREFIX EXPECTED_SUBSTRING COMMAND...
  local name=$1 prefix=$2 sub=$3
  shift 3
  local before after
  before=$(timeout 10 squeue -h | wc -l)
  run 30 "$@"
  after=$(timeout 10 squeue -h | wc -l)
  if [ "$rc" -eq 0 ] && [[ "$(head -n 1 "$out")" == "$prefix"* ]] && grep -qF -- "$sub" "$out" &&
    [ "$after" -le "$before" ]; then
    ok "$name --dry-run: $(head -c 150 "$out" | head -n 1)..."
  else
    bad "$name --dry-run" "$(show)" "jobs in queue before $before, after $after"
  fi
}
dry postmortem.sh "sbatch --job-name=nccl-culprit-pm --ntasks=$pm_ranks" "$sdir/postmortem.sbatch $TMP/data/inc-a" \
  "$sdir/postmortem.sh" --dry-run "$TMP/data/inc-a"
dry "postmortem.sh --array" "sbatch --job-name=nccl-culprit-pm" "--array=1-2" \
  "$sdir/postmortem.sh" --dry-run --array "$TMP/data/incidents.list"
dry mock.sh "sbatch --job-name=nccl-culprit-mock" "$sdir/mock.sbatch" "$sdir/mock.sh" --dry-run
dry postmortem.sbatch "srun --ntasks=1" "analyze --shared $TMP/data/inc-a --output" \
  bash "$sdir/postmortem.sbatch" --dry-run "$TMP/data/inc-a"
dry mock.sbatch "$BIN mock --out" "analyze --shared" bash "$sdir/mock.sbatch" --dry-run "$spec_mock"

# ================================================================ done
if [ -n "${stuck:-}" ]; then
  timeout 10 scancel "$stuck" >/dev/null 2>&1
  stuck_gone() { s=$(job_state "$stuck"); [ "$s" != RUNNING ] && [ "$s" != COMPLETING ]; }
  if wait_for 30 stuck_gone; then ok "stuck job $stuck cancelled ($(job_state "$stuck"))"; else bad "cancel the stuck job" "state $(job_state "$stuck")"; fi
fi

say "$passed passed, $failed failed, $skipped skipped ($((SECONDS - start_s)) s)"
status=0
[ "$skipped" -eq 0 ] || printf 'SKIP %s\n' "${skips[@]}"
if [ "$failed" -gt 0 ]; then
  printf 'failed: %s\n' "${failures[@]}"
  status=1
fi
if [ "$skipped" -gt 0 ] && [ "${CI:-}" = true ]; then
  echo "FAIL: CI=true and $skipped check(s) skipped: CI must run every check"
  status=1
fi
exit "$status"
