#!/usr/bin/env bash
# slurm_test.sh: a real Slurm (22.05, Debian's slurmctld + slurmd + munge)
# runs a cluster from conf/slurm/ (../shared/reference/real-parts-recipes.md
# §1). Everything lives in a temp dir: an own munged socket and key, a
# slurm.conf with non-default ports (16817, 16821-16823), slurmctld and
# three slurmd as fake nodes n009 n010 n011. The test runs inside its own
# mount namespace (unshare -m) with a temp /etc/hosts bind-mounted so the
# nodes resolve to 127.0.0.9-11: tasks on different nodes with the same
# local id get the same port on different addresses. Then:
#   1. sbatch -N 3 conf/slurm/tf-cluster.sbatch starts master, ps and two
#      workers with one srun (SLURM_STEP_NODELIST=n[009-011],
#      SLURM_STEP_TASKS_PER_NODE=2,1(x2)); each takes its role from Slurm;
#   2. the script submits a small job, which trains steps;
#   3. scancel --signal=TERM: every daemon logs "received SIGTERM:
#      draining" and "stopped", exits 0, and the Slurm job ends COMPLETED;
#   4. a second job, stopped by a plain scancel: every daemon gets SIGTERM
#      and the job ends CANCELLED;
#   5. scontrol shutdown and munged stopped: nothing is left running.
# Skipped (exit 0, saying why) where slurmctld, slurmd or munged are not
# installed, or not root (unshare -m). Prints a Check-style summary line.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${TF_BUILD:-build}
bin="$root/$build/bin"
checks=0
failures=0
failed=()

check() { # check NAME COMMAND...
  checks=$((checks + 1))
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else failures=$((failures + 1)); failed+=("$name"); echo "FAIL $name"; fi
}

summary() {
  local pct=100
  [ "$checks" -gt 0 ] && pct=$(( (checks - failures) * 100 / checks ))
  echo "${pct}%: Checks: $checks, Failures: $failures, Errors: 0"
}

skip() {
  echo "slurm_test: SKIP: $*"
  summary
  exit 0
}

export PATH="$PATH:/usr/sbin:/sbin"
for p in slurmctld slurmd munged sbatch scontrol; do
  command -v "$p" >/dev/null || skip "no $p (apt-get install slurmctld slurmd slurm-client munge)"
done
[ "$(id -u)" = 0 ] || skip "needs root (unshare -m for a private /etc/hosts, slurmd)"
command -v unshare >/dev/null || skip "no unshare(1) (util-linux)"
if [ -z "${TF_SLURM_TEST_NS:-}" ]; then
  TF_SLURM_TEST_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi

D=$(mktemp -d /tmp/tfslurm.XXXXXX)
chmod 755 "$D"
pids=()
cleanup() {
  SLURM_CONF=$D/slurm.conf timeout 5 scontrol shutdown >/dev/null 2>&1
  for p in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  [ -f "$D/munge/munged.pid" ] && kill "$(cat "$D/munge/munged.pid")" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT

for port in 16817 16821 16822 16823; do
  if ss -Htln "sport = :$port" 2>/dev/null | grep -q .; then
    skip "port $port is in use (another Slurm?)"
  fi
done

# Fake nodes on their own loopback addresses, seen only in this namespace.
{ cat /etc/hosts; printf '127.0.0.9 n009\n127.0.0.10 n010\n127.0.0.11 n011\n'; } >"$D/hosts"
mount --bind "$D/hosts" /etc/hosts || skip "cannot bind-mount /etc/hosts in a mount namespace"

mkdir -p "$D"/{munge,state,log,out} "$D"/spool/n009 "$D"/spool/n010 "$D"/spool/n011
dd if=/dev/urandom of="$D/munge/munge.key" bs=1 count=128 2>/dev/null
chmod 755 "$D/munge"; chmod 600 "$D/munge/munge.key"
munged --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/munge/munged.log" \
  --seed-file="$D/munge/munged.seed" || skip "munged would not start (see $D/munge/munged.log)"

cat >"$D/slurm.conf" <<CONF
ClusterName=tftest
SlurmctldHost=localhost
SlurmctldPort=16817
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.sock
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=30
NodeName=n009 NodeHostname=localhost NodeAddr=127.0.0.9 Port=16821 CPUs=1 RealMemory=500
NodeName=n010 NodeHostname=localhost NodeAddr=127.0.0.10 Port=16822 CPUs=1 RealMemory=500
NodeName=n011 NodeHostname=localhost NodeAddr=127.0.0.11 Port=16823 CPUs=1 RealMemory=500
PartitionName=debug Nodes=n[009-011] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$D/slurm.conf
slurmctld -D -i >"$D/log/slurmctld.out" 2>&1 &
pids+=($!)
for n in n009 n010 n011; do
  slurmd -D -N "$n" >"$D/log/slurmd-$n.out" 2>&1 &
  pids+=($!)
done
idle=0
for _ in $(seq 1 100); do
  [ "$(sinfo -h -o '%D %t' 2>/dev/null)" = "3 idle" ] && { idle=1; break; }
  sleep 0.1
done
check "slurmctld and three slurmd (n[009-011]) come up idle" [ "$idle" = 1 ]
[ "$idle" = 1 ] || { tail -n 5 "$D"/log/*; summary; exit 1; }

# A small job: synthetic data, sync replication over the two workers, more
# steps than the test waits for (it is cancelled while training).
/usr/bin/python3 - "$D" <<'PY'
import struct, sys, numpy as np
d = sys.argv[1]; rng = np.random.default_rng(7)
for stem, n in (("train", 2000), ("test", 500)):
    y = rng.integers(0, 3, n).astype(np.uint8)
    x = (rng.normal(0, 40, (n, 16)) + y[:, None] * 40 + 60).clip(0, 255).astype(np.uint8)
    with open(f"{d}/{stem}-images.idx", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 4, 4)); f.write(x.tobytes())
    with open(f"{d}/{stem}-labels.idx", "wb") as f:
        f.write(struct.pack(">II", 0x801, n)); f.write(y.tobytes())
PY
cat >"$D/job.yaml" <<JOB
name: slurm-small
model:
  input: {shape: [16]}
  layers: [{type: dense, units: 16, activation: tanh}, {type: dense, units: 3}]
  loss: sparse_softmax_cross_entropy
  seed: 3
input:
  format: idx
  train: {images: $D/train-images.idx, labels: $D/train-labels.idx}
  test: {images: $D/test-images.idx, labels: $D/test-labels.idx}
  scale: 0.00392156862745098
  batch_size: 20
  seed: 1
  shard: shuffle
optimizer: {name: adam, learning_rate: 0.01}
replication: {mode: sync, workers: 2}
train: {steps: 1000000, log_every_steps: 10}
eval: {every_steps: 0}
JOB

# conf/slurm/cluster.yaml, with the job's data directory as data_dirs (the
# daemons read files only there), beside its key: tf-cluster.sbatch
# generates $D/cluster.key.
sed "s|^data_dirs: .*|data_dirs: [$D]|" "$root/conf/slurm/cluster.yaml" >"$D/cluster.yaml"
export TF_KEY_FILE=$D/cluster.key
t0=$(date +%s)
jid=$(cd "$D" && TF_BIN="$bin" TF_SLURM_LOGS="$D/out" sbatch --parsable -N 3 \
  -o "$D/out/batch.out" "$root/conf/slurm/tf-cluster.sbatch" "$D/job.yaml" \
  "$D/cluster.yaml")
check "sbatch accepts conf/slurm/tf-cluster.sbatch" [ -n "$jid" ]

# Steps run: the master (n009:7070, 127.0.0.9) reports the job's step.
step=0
for _ in $(seq 1 300); do
  s=$("$bin/tfctl" -m n009:7070 --timeout-ms 2000 jobs 2>/dev/null |
      awk '$2 == "slurm-small" {print $4}' | cut -d/ -f1 | head -n 1)
  [ "${s:-0}" -ge 20 ] 2>/dev/null && { step=$s; break; }
  sleep 0.1
done
echo "slurm_test: the job reached step $step $(( $(date +%s) - t0 )) s after sbatch"
check "the job trains steps on the Slurm-launched cluster" [ "$step" -ge 20 ]
"$bin/tfctl" -m n009:7070 health >"$D/health.out" 2>&1
cat "$D/health.out"
check "tasks are on the three nodes' addresses" \
  bash -c "grep -q 'master .*n009:7070' $D/health.out && grep -q 'ps .*n009:7071' $D/health.out &&
           grep -q 'worker .*0 .*n010:7070' $D/health.out && grep -q 'worker .*1 .*n011:7070' $D/health.out"

# The drained stop: scancel --signal=TERM signals the daemons, not srun
# (which would SIGKILL them, as a plain scancel makes it do).
# The final JobState of job $1, polled for up to 60 s: the master may take
# drain_ms plus rpc_ms (a call of the running job to a task that stopped
# first) to stop, more under a sanitizer.
job_end_state() {
  local s=""
  for _ in $(seq 1 600); do
    s=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$s" in CANCELLED|COMPLETED|FAILED|TIMEOUT) break ;; esac
    sleep 0.1
  done
  echo "$s"
}
scancel --signal=TERM "$jid"
state=$(job_end_state "$jid")
echo "slurm_test: job $jid ended $state"
check "scancel --signal=TERM: the job ends COMPLETED" [ "$state" = COMPLETED ]
check "srun exited 0 after the drain" grep -q "srun exited 0" "$D/out/batch.out"
for t in 0 1 2 3; do
  f="$D/out/tf-$jid-task$t.log"
  check "task $t got SIGTERM, drained and stopped" \
    bash -c "grep -q 'received SIGTERM: draining' '$f' && grep -q 'drained in' '$f' && grep -q ': stopped' '$f'"
done
check "task 0 ran tfmaster for the master's rank" grep -q "this task is the master: exec .*tfmaster" "$D/out/tf-$jid-task0.log"
check "no task exited non-zero" bash -c "! grep -q 'exit code [1-9]' '$D/out/batch.out' $D/log/slurmd-*.log"
echo "--- batch output"; cat "$D/out/batch.out"

# A plain scancel once the cluster is up: SIGTERM to every daemon (srun
# may SIGKILL them before their drain ends), the job ends CANCELLED.
jid2=$(cd "$D" && TF_BIN="$bin" TF_SLURM_LOGS="$D/out" TF_SLURM_KEEP=1 sbatch --parsable -N 3 \
  -o "$D/out/batch2.out" "$root/conf/slurm/tf-cluster.sbatch" "$D/job.yaml" "$D/cluster.yaml")
for _ in $(seq 1 300); do
  grep -q "submitted" "$D/out/batch2.out" 2>/dev/null && break
  sleep 0.1
done
scancel "$jid2"
state=$(job_end_state "$jid2")
echo "slurm_test: job $jid2 (plain scancel) ended $state"
check "plain scancel: the job ends CANCELLED" [ "$state" = CANCELLED ]
check "plain scancel: every daemon got SIGTERM" \
  bash -c "[ \$(grep -l 'received SIGTERM' $D/out/tf-$jid2-task*.log | wc -l) = 4 ]"
echo "--- batch output of job $jid2"; cat "$D/out/batch2.out"
if [ "$failures" -gt 0 ]; then
  for f in "$D"/out/tf-*.log; do echo "--- $f"; tail -n 15 "$f"; done
  tail -n 20 "$D/log/slurmctld.log"
fi
# When each daemon got SIGTERM, drained and stopped (printed at the end).
stops=$(for f in "$D"/out/tf-"$jid"-*.log; do
  t() { grep -m1 "$1" "$f" 2>/dev/null | grep -o 'T[0-9:.]*' | head -n 1 | tr -d T; }
  echo "slurm_test: ${f##*/}: SIGTERM $(t 'received SIGTERM'), drained $(t 'drained in'), stopped $(t ': stopped')"
  # One that did not stop: its last lines (without the step lines).
  grep -q ': stopped' "$f" 2>/dev/null || grep -v ' loss ' "$f" | tail -n 12 | sed 's/^/  | /'
done)

scontrol shutdown >/dev/null 2>&1
gone=0
for _ in $(seq 1 100); do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ "$alive" = 0 ] && { gone=1; break; }
  sleep 0.1
done
kill "$(cat "$D/munge/munged.pid")" 2>/dev/null
check "scontrol shutdown stops slurmctld and every slurmd" [ "$gone" = 1 ]
sleep 0.3
left=$(for p in $(pgrep -f "$D|tfworker|tfmaster" 2>/dev/null); do
         grep -qs "$D" "/proc/$p/cmdline" && [ "$p" != $$ ] && echo "$p"; done | wc -l)
check "nothing of the test is left running" [ "$left" = 0 ]
echo "slurm_test: $(( $(date +%s) - t0 )) s from sbatch to teardown"
echo "$stops"
for n in "${failed[@]}"; do echo "slurm_test: failed: $n"; done
summary
[ "$failures" = 0 ]
