#!/usr/bin/env bash
# The Slurm recipes of docs/SWEEPS.md (issue 23), run on a real single-node Slurm cluster that this
# script starts and stops itself.
#
#   experiments/slurm-selftest.sh [LOG]     # as root; LOG defaults to results/slurm-selftest.txt
#
# It installs slurm-wlm and munge from Debian when they are missing, builds the release
# binary, writes munge's key and slurm.conf into a temporary folder, and starts munged,
# slurmctld and slurmd there (in the foreground, each by its PID; the EXIT trap stops them
# by PID, even on failure). Then, in a work folder with docs/SWEEPS.md's job script as it
# stands (only its exp= and out= lines changed), it:
#
#   1. runs the sweep unsharded, for reference;
#   2. submits a stepped array (--array=0-6:2): every task must be refused, writing nothing;
#   3. submits the sweep as a 4-task array (--array=0-3), a merge job under
#      --dependency=afterany and one under afterok;
#   4. cancels task 1 and task 3 while they run;
#   5. checks that the afterany merge ran, exited 2 naming the shards and wrote nothing, and
#      that the afterok merge is stuck (DependencyNeverSatisfied);
#   6. requeues task 1 (scontrol requeue): it resumes its journal and appends to its log;
#   7. reruns task 3 as a job of its own (sbatch --array=3 a2a-chaos.sbatch): it is taken
#      as a rerun of shard 3/4 and resumes its journal;
#   8. merges under afterany and compares every file byte for byte with step 1.
#
# Not part of `cargo test`: it needs root, apt and a few minutes. Its output is committed
# as results/slurm-selftest.txt.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
log=${1:-$repo/results/slurm-selftest.txt}

# The sweep: small, but each of its 4 shards runs for several seconds, long enough to be
# cancelled in the middle.
EXPERIMENT='name = "slurm-selftest"
models = ["a2a-python-1.3-memory", "reference"]
routing = ["round-robin", "context-affinity"]
replicas = 3
seeds = { start = 0, count = 60 }

[workload]
conversations = 6
turns = 3
retries = 2

[faults]
swarm = true
window-ms = 3000
liveness-ms = 2000
kill = 0.7
partition = 0.3
lost-reply = 0.05
buggify = 0.5
kill-at-point = 0.3'

checks=0
say() { printf '%s\n' "$*"; }
pass() {
    checks=$((checks + 1))
    say "PASS  $*"
}
fail() {
    say "FAIL  $*"
    exit 1
}

tmp=""
munged_pid=""
slurmctld_pid=""
slurmd_pid=""

# Stops what this script started, by PID: first the jobs, then slurmd, slurmctld, munged.
stop_all() {
    local rc=$?
    set +e
    if [[ -n $slurmctld_pid ]] && kill -0 "$slurmctld_pid" 2>/dev/null; then
        scancel --quiet --user="$(id -un)" 2>/dev/null
        for _ in $(seq 60); do
            [[ -z $(squeue -h 2>/dev/null) ]] && break
            sleep 0.5
        done
    fi
    for pid in "$slurmd_pid" "$slurmctld_pid" "$munged_pid"; do
        [[ -n $pid ]] || continue
        kill "$pid" 2>/dev/null
        for _ in $(seq 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    if [[ -n $slurmd_pid ]]; then
        say "stopped slurmd ($slurmd_pid), slurmctld ($slurmctld_pid), munged ($munged_pid)"
    fi
    if [[ -n $tmp ]]; then
        if [[ $rc -eq 0 ]]; then
            rm -rf "$tmp"
        else
            say "kept $tmp for a look (slurm/log/, work/*.log)"
        fi
    fi
    exit "$rc"
}

# `scontrol show job -o ID` as one line; field NAME of it.
job_field() {
    local line
    line=$(scontrol show job -o "$1" 2>/dev/null || true)
    tr ' ' '\n' <<<"$line" | sed -n "s/^$2=//p" | sed -n 1p
}

# Waits until job (or array task) $1 is in one of the states $2 (a regex), at most $3 s.
wait_state() {
    local id=$1 want=$2 limit=${3:-300} state=""
    for _ in $(seq $((limit * 4))); do
        state=$(job_field "$id" JobState)
        [[ $state =~ ^($want)$ ]] && return 0
        sleep 0.25
    done
    fail "job $id is $state after ${limit} s, not $want"
}

# Waits until every task of array job $1 has ended.
wait_array() {
    local id=$1 limit=${2:-600}
    for _ in $(seq $((limit * 4))); do
        local all
        all=$(scontrol show job -o "$id" 2>/dev/null || true)
        if [[ -n $all ]] && ! grep -qE 'JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|REQUEUE_HOLD|SUSPENDED)' <<<"$all"; then
            return 0
        fi
        sleep 0.25
    done
    fail "array $id has not ended after ${limit} s"
}

# Waits until the journal in folder $1 holds at least $2 runs.
wait_journal() {
    local journal=$1/journal.jsonl want=$2
    for _ in $(seq 1200); do
        if [[ -f $journal ]] && (($(wc -l <"$journal") > want)); then
            return 0
        fi
        sleep 0.1
    done
    fail "$journal never reached $want runs"
}

main() {
    [[ $(id -u) -eq 0 ]] || fail "run as root: it installs packages and starts slurmd"
    say "# experiments/slurm-selftest.sh, $(date -u +%Y-%m-%dT%H:%MZ)"
    say "commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"

    say
    say "## install"
    if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
    fi
    say "$(slurmctld -V), $(munged -V 2>&1 | sed -n 1p), $(grep PRETTY_NAME /etc/os-release | cut -d'"' -f2)"
    (cd "$repo" && nice -n 19 cargo build --release --quiet)
    local bin=$repo/target/release/a2a-chaos
    say "$("$bin" --version)"

    tmp=$(mktemp -d /tmp/a2a-chaos-slurm.XXXXXX)
    trap stop_all EXIT
    mkdir -p "$tmp"/munge "$tmp"/slurm/{state,spool,log} "$tmp"/work/experiments
    chmod 0700 "$tmp"/munge

    say
    say "## cluster (config and state in a temporary folder)"
    dd if=/dev/urandom of="$tmp"/munge/munge.key bs=1024 count=1 status=none
    chmod 0400 "$tmp"/munge/munge.key
    local sock=$tmp/munge/munge.socket
    munged --foreground --force --key-file="$tmp"/munge/munge.key --socket="$sock" \
        --pid-file="$tmp"/munge/munged.pid --log-file="$tmp"/munge/munged.log \
        --seed-file="$tmp"/munge/munged.seed 2>>"$tmp"/munge/munged.stderr &
    munged_pid=$!
    for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
    munge -S "$sock" -n | unmunge -S "$sock" >/dev/null || fail "munge does not round-trip"
    pass "munged runs (pid $munged_pid) and a credential round-trips"

    local host node
    host=$(hostname -s)
    node=$(slurmd -C | sed -n 1p | sed "s/^NodeName=[^ ]*/NodeName=$host NodeAddr=127.0.0.1/")
    export SLURM_CONF=$tmp/slurm/slurm.conf
    : >"$tmp"/slurm/plugstack.conf
    cat >"$SLURM_CONF" <<EOF
ClusterName=selftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=26817
SlurmdPort=26818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$tmp/slurm/state
SlurmdSpoolDir=$tmp/slurm/spool
SlurmctldPidFile=$tmp/slurm/slurmctld.pid
SlurmdPidFile=$tmp/slurm/slurmd.pid
SlurmctldLogFile=$tmp/slurm/log/slurmctld.log
SlurmdLogFile=$tmp/slurm/log/slurmd.log
PlugStackConfig=$tmp/slurm/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobRequeue=1
MinJobAge=3600
MailProg=/bin/true
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    say "slurm.conf node: $node"
    slurmctld -D -i -f "$SLURM_CONF" >>"$tmp"/slurm/log/slurmctld.stderr 2>&1 &
    slurmctld_pid=$!
    slurmd -D -f "$SLURM_CONF" >>"$tmp"/slurm/log/slurmd.stderr 2>&1 &
    slurmd_pid=$!
    local state=""
    for _ in $(seq 240); do
        state=$(sinfo -h -o %T 2>/dev/null || true)
        [[ $state == idle ]] && break
        sleep 0.25
    done
    [[ $state == idle ]] || fail "the node is '$state', not idle (see $tmp/slurm/log)"
    pass "slurmctld (pid $slurmctld_pid) and slurmd (pid $slurmd_pid) run; $host is idle"

    # The job script of docs/SWEEPS.md, as it stands but for its exp= and out= lines.
    cd "$tmp"/work
    ln -s "$repo"/target target
    printf '%s\n' "$EXPERIMENT" >experiments/slurm-selftest.toml
    awk '/<!-- slurm-job-script/ {found = 1; next}
         found && /^  ```sh/ {inside = 1; next}
         inside && /^  ```/ {exit}
         inside {sub(/^  /, ""); print}' "$repo"/docs/SWEEPS.md >readme.sbatch
    [[ -s readme.sbatch ]] || fail "no job script after the slurm-job-script marker in docs/SWEEPS.md"
    local out=$tmp/sweep
    sed -e "s|^exp=.*|exp=experiments/slurm-selftest.toml|" -e "s|^out=.*|out=$out|" \
        readme.sbatch >a2a-chaos.sbatch
    local changed
    changed=$(diff readme.sbatch a2a-chaos.sbatch | grep -c '^>' || true)
    [[ $changed -eq 2 ]] || fail "the job script differs from docs/SWEEPS.md's in $changed lines, not 2"
    pass "a2a-chaos.sbatch is docs/SWEEPS.md's job script with exp= and out= changed:"
    sed 's/^/    /' a2a-chaos.sbatch

    say
    say "## 1. the unsharded run, for reference"
    local t0=$SECONDS
    "$bin" run experiments/slurm-selftest.toml --out "$tmp"/straight --quiet >straight.log 2>&1
    grep -E '^experiment|violated|runs in' straight.log | sed 's/^/    /'
    pass "unsharded: $(($(wc -l <"$tmp"/straight/runs.csv) - 1)) runs in $((SECONDS - t0)) s"

    say
    say "## 2. a stepped array is refused"
    local stepped
    stepped=$(sbatch --parsable --array=0-6:2 a2a-chaos.sbatch)
    wait_array "$stepped" 120
    local k
    for k in 0 2 4 6; do
        state=$(job_field "${stepped}_$k" JobState)
        [[ $state == FAILED && $(job_field "${stepped}_$k" ExitCode) == 2:0 ]] ||
            fail "stepped task $k is $state, exit $(job_field "${stepped}_$k" ExitCode)"
        grep -q 'stepped' "a2a-chaos-${stepped}_$k.log" || fail "task $k's log does not say why"
    done
    [[ ! -e $out ]] || fail "a stepped task wrote into $out"
    say "    sbatch --array=0-6:2 a2a-chaos.sbatch; a2a-chaos-${stepped}_2.log:"
    sed 's/^/    /' "a2a-chaos-${stepped}_2.log"
    pass "tasks 0, 2, 4, 6 FAILED with exit 2, saying why, and nothing was written"

    say
    say "## 3-4. the array, its merges, and two tasks cancelled mid-run"
    local array okmerge merge1
    array=$(sbatch --parsable --array=0-3 a2a-chaos.sbatch)
    okmerge=$(sbatch --parsable --dependency=afterok:"$array" --job-name=merge-afterok \
        --wrap "./target/release/a2a-chaos merge $out")
    merge1=$(sbatch --parsable --dependency=afterany:"$array" --job-name=merge \
        --wrap "./target/release/a2a-chaos merge $out")
    say "    array $array; merges $merge1 (afterany) and $okmerge (afterok)"
    for k in 1 3; do
        wait_journal "$out/shard-$k-of-4" 3
        scancel "${array}_$k"
        wait_state "${array}_$k" CANCELLED 60
        say "    cancelled ${array}_$k with $(($(wc -l <"$out/shard-$k-of-4/journal.jsonl") - 1)) runs in its journal"
    done
    wait_array "$array"
    for k in 0 2; do
        [[ $(job_field "${array}_$k" JobState) == COMPLETED ]] || fail "task $k did not complete"
        grep -q "threads" "a2a-chaos-${array}_$k.log" || fail "task $k's log has no configuration"
    done
    say "    task 0's log (--quiet):"
    sed 's/^/    | /' "a2a-chaos-${array}_0.log"
    pass "tasks 0 and 2 COMPLETED, 1 and 3 CANCELLED"

    say
    say "## 5. the merges while two shards are not done"
    wait_state "$merge1" FAILED 120
    [[ $(job_field "$merge1" ExitCode) == 2:0 ]] || fail "merge $merge1 exit $(job_field "$merge1" ExitCode)"
    grep -q 'shards 1, 3 of 4 have not finished' "slurm-$merge1.out" || fail "merge does not name the shards"
    [[ ! -e $out/runs.csv && ! -e $out/summary.csv ]] || fail "the failed merge wrote files"
    sed 's/^/    | /' "slurm-$merge1.out"
    pass "the afterany merge ran, exited 2 naming shards 1 and 3, and wrote nothing"
    sleep 2
    local reason
    reason=$(job_field "$okmerge" Reason)
    [[ $(job_field "$okmerge" JobState) == PENDING && $reason == DependencyNeverSatisfied ]] ||
        fail "the afterok merge is $(job_field "$okmerge" JobState) ($reason)"
    scancel "$okmerge"
    pass "the afterok merge is PENDING ($reason), as docs/SWEEPS.md warns; cancelled it"

    say
    say "## 6. scontrol requeue ${array}_1"
    scontrol requeue "${array}_1"
    wait_state "${array}_1" COMPLETED 300
    grep -q 'resumed: [0-9]* runs from the journal' "a2a-chaos-${array}_1.log" || fail "task 1 did not resume"
    local starts
    starts=$(grep -c '^experiment slurm-selftest' "a2a-chaos-${array}_1.log")
    [[ $starts -eq 2 ]] || fail "task 1's log holds $starts starts, not 2: was it overwritten?"
    sed 's/^/    | /' "a2a-chaos-${array}_1.log"
    pass "the requeued task resumed its journal, completed, and appended to its log"

    say
    say "## 7. sbatch --array=3 a2a-chaos.sbatch"
    local rerun
    rerun=$(sbatch --parsable --array=3 a2a-chaos.sbatch)
    wait_array "$rerun" 300
    [[ $(job_field "${rerun}_3" JobState) == COMPLETED ]] || fail "the rerun did not complete"
    grep -q 'rerun of shard 3/4' "a2a-chaos-${rerun}_3.log" || fail "the rerun was not placed as shard 3/4"
    grep -q 'resumed: [0-9]* runs from the journal' "a2a-chaos-${rerun}_3.log" || fail "the rerun did not resume"
    [[ ! -e $out/shard-0-of-1 ]] || fail "the rerun left a stray shard-0-of-1"
    sed 's/^/    | /' "a2a-chaos-${rerun}_3.log"
    pass "the one-task rerun ran shard 3/4 from its journal, and no shard-0-of-1"

    say
    say "## 8. merge, and compare with the unsharded run"
    local merge2
    merge2=$(sbatch --parsable --dependency=afterany:"$array":"$rerun" --job-name=merge \
        --wrap "./target/release/a2a-chaos merge $out")
    wait_state "$merge2" COMPLETED 300
    sed 's/^/    | /' "slurm-$merge2.out"
    local f n=0
    for f in "$tmp"/straight/*; do
        cmp "$f" "$out/$(basename "$f")" || fail "$(basename "$f") differs from the unsharded run's"
        n=$((n + 1))
    done
    local extra
    extra=$(cd "$out" && ls -p | grep -v '^shard-.*/$' | grep -vxFf <(cd "$tmp"/straight && ls) || true)
    [[ -z $extra ]] || fail "the merge wrote files the unsharded run did not: $extra"
    pass "the merge wrote the unsharded run's $n files, byte for byte: $(cd "$tmp"/straight && ls | tr '\n' ' ')"

    say
    say "## --jobs: the CPUs Slurm gives the task"
    local one
    one=$(srun --cpus-per-task=1 "$bin" run experiments/slurm-selftest.toml --seeds 1 \
        --out "$tmp"/one --quiet 2>/dev/null | grep -o '[0-9]* threads' || true)
    say "    srun --cpus-per-task=1: $one; the array tasks (--cpus-per-task=2): $(grep -ho '[0-9]* threads' "a2a-chaos-${array}_0.log")"
    [[ $one == "1 threads" ]] || fail "with one CPU bound, --jobs defaulted to $one"
    pass "--jobs defaults to the CPUs the task is bound to"

    say
    say "ALL PASSED: $checks checks"
}

mkdir -p "$(dirname "$log")"
main 2>&1 | tee "$log.partial"
rc=${PIPESTATUS[0]}
mv "$log.partial" "$log"
exit "$rc"
