#!/usr/bin/env bash
# partition_test.sh: a network partition between real daemons, each in
# its own network namespace (../shared/reference/real-parts-recipes.md §3:
# veth pairs on a bridge that lives in a "switch" namespace; nothing in
# the root namespace). The master (10.200.x.1), the ps (.2) and two
# workers (.3, .4) run a small sync job (synthetic data, checkpoints every
# 20 steps). Worker 1's link is cut for 5 s:
#   1. the master sees worker 1 down within down_after_ms (+ a heartbeat
#      and the polling slack) of the cut;
#   2. the job stops stepping (recovering: waiting for the task);
#   3. after the link returns, the job steps again and ends done, with a
#      test accuracy within 0.01 of an undisturbed run of the same spec.
# Skipped (exit 0, saying why) where network namespaces cannot be made
# (not root, no `ip netns`, no nsenter, a kernel without veth or bridge).
# Prints a Check-style summary line.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${TF_BUILD:-build}
bin="$root/$build/bin"
checks=0
failures=0
P="tfpt$$"
NET="10.200.$(( ($$ % 200) + 20 ))"
tmp=$(mktemp -d)
pids=()

check() { # check NAME COMMAND...
  checks=$((checks + 1))
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else failures=$((failures + 1)); echo "FAIL $name"; fi
}

summary() {
  local pct=100
  [ "$checks" -gt 0 ] && pct=$(( (checks - failures) * 100 / checks ))
  echo "${pct}%: Checks: $checks, Failures: $failures, Errors: 0"
}

cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${P}-"); do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$n" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

skip() {
  echo "partition_test: SKIP: $*"
  summary
  exit 0
}

[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces"
command -v ip >/dev/null || skip "no ip(8) (apt-get install iproute2)"
command -v nsenter >/dev/null || skip "no nsenter(1) (util-linux)"
ip netns add "${P}-sw" 2>/dev/null || skip "ip netns add failed: network namespaces are not available here"
ip -n "${P}-sw" link set lo up
ip -n "${P}-sw" link add br0 type bridge 2>/dev/null || skip "no bridge support in this kernel"
ip -n "${P}-sw" link set br0 up
for i in 1 2 3 4; do
  ip netns add "${P}-h$i"
  ip -n "${P}-h$i" link add eth0 type veth peer name p$i netns "${P}-sw" 2>/dev/null ||
    skip "no veth support in this kernel"
  ip -n "${P}-h$i" addr add "$NET.$i/24" dev eth0
  ip -n "${P}-h$i" link set lo up
  ip -n "${P}-h$i" link set eth0 up
  ip -n "${P}-sw" link set p$i master br0
  ip -n "${P}-sw" link set p$i up
done

in_ns() { local i=$1; shift; nsenter --net="/run/netns/${P}-h$i" "$@"; }

cat >"$tmp/cluster.yaml" <<EOF
cluster: part
jobs:
  master: [$NET.1:7070]
  ps: [$NET.2:7071]
  worker: [$NET.3:7072, $NET.4:7073]
timeouts: {rpc_ms: 3000, registration_ms: 5000, heartbeat_ms: 200,
           down_after_ms: 1000, step_ttl_ms: 10000, drain_ms: 1000}
checkpoint_dir: $tmp/ckpt
data_dirs: [$tmp]
run_dir: $tmp/run
log_level: info
auth: none   # a private network of namespaces: unauthenticated, said explicitly
EOF

# Synthetic data: 4x4 images of 3 classes, a class's pixels around its
# own mean (python3 from Debian: numpy).
/usr/bin/python3 - "$tmp" <<'EOF' || skip "cannot write the data (no numpy)"
import gzip, struct, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
def write(stem, n):
    y = rng.integers(0, 3, n).astype(np.uint8)
    x = np.clip(rng.normal(60 + 40 * y[:, None], 70, (n, 16)), 0, 255).astype(np.uint8)
    with open(f"{d}/{stem}-images.idx", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 4, 4)); f.write(x.tobytes())
    with open(f"{d}/{stem}-labels.idx", "wb") as f:
        f.write(struct.pack(">II", 0x801, n)); f.write(y.tobytes())
write("train", 4000)
write("test", 1000)
EOF

spec() { # spec NAME
  cat >"$tmp/$1.yaml" <<EOF
name: $1
model:
  input: {shape: [16]}
  layers: [{type: dense, units: 16, activation: tanh}, {type: dense, units: 3}]
  loss: sparse_softmax_cross_entropy
  metrics: [accuracy]
  seed: 3
input:
  format: idx
  train: {images: $tmp/train-images.idx, labels: $tmp/train-labels.idx}
  test: {images: $tmp/test-images.idx, labels: $tmp/test-labels.idx}
  scale: 0.00392156862745098
  batch_size: 20
  seed: 1
  shard: shuffle
optimizer:
  {name: adam, learning_rate: 0.02,
   schedule: {type: exponential_decay, decay_steps: 100, decay_rate: 0.5}}
replication: {mode: sync, workers: 2}
train: {steps: 600, log_every_steps: 20}
eval: {every_steps: 0}
checkpoint: {dir: $tmp/ckpt/$1, every_steps: 20, keep: 3}
recovery: {max_attempts: 5, wait_seconds: 30}
EOF
}

start() { # start NS JOB TASK
  if [ "$2" = master ]; then
    in_ns "$1" "$bin/tfmaster" --config "$tmp/cluster.yaml" >"$tmp/$2-$3.log" 2>&1 &
  else
    in_ns "$1" "$bin/tfworker" --config "$tmp/cluster.yaml" --job "$2" --task "$3" \
      >"$tmp/$2-$3.log" 2>&1 &
  fi
  pids+=($!)
  disown $!
}
start 1 master 0; start 2 ps 0; start 3 worker 0; start 4 worker 1

ctl() { in_ns 1 timeout 20 "$bin/tfctl" -c "$tmp/cluster.yaml" "$@"; }
field() { sed -n "s/^$1: //p" | head -n 1; }

up=0
for _ in $(seq 1 100); do
  if [ "$(ctl health 2>/dev/null | grep -c -E '^[a-z]+ +[0-9]+ +[^ ]+ +up ')" -ge 4 ]; then up=1; break; fi
  sleep 0.1
done
check "the four daemons start in their namespaces" [ "$up" = 1 ]

# The undisturbed run.
spec ref
ref_id=$(ctl submit "$tmp/ref.yaml" | tail -n 1)
ctl status "$ref_id" --follow >"$tmp/ref.out" 2>&1
ref_acc=$(field test_accuracy <"$tmp/ref.out")
check "the undisturbed job ends done" grep -q "^state: done" "$tmp/ref.out"

# The cut.
spec cut
id=$(ctl submit "$tmp/cut.yaml" | tail -n 1)
for _ in $(seq 1 200); do
  s=$(ctl status "$id" 2>/dev/null | field step | cut -d/ -f1)
  [ "${s:-0}" -ge 60 ] 2>/dev/null && break
  sleep 0.1
done
t0=$(date +%s%N)
ip -n "${P}-sw" link set p4 down
detected=-1
for _ in $(seq 1 60); do
  if ctl health 2>/dev/null | grep -q -E '^worker +1 +[^ ]+ +down '; then
    detected=$(( ($(date +%s%N) - t0) / 1000000 )); break
  fi
  sleep 0.05
done
echo "partition_test: worker 1 seen down ${detected} ms after the cut (down_after_ms 1000)"
check "the cut is detected within down_after_ms + 1 s" [ "$detected" -ge 0 ] && [ "$detected" -le 2000 ]
sleep 1.5
a=$(ctl status "$id" | field step | cut -d/ -f1)
sleep 1.5
b=$(ctl status "$id" | field step | cut -d/ -f1)
state=$(ctl status "$id" | field state)
echo "partition_test: during the cut: step $a then $b, state $state"
check "the job stops stepping while the link is cut" [ "$a" = "$b" ]
sleep 2
ip -n "${P}-sw" link set p4 up
t1=$(date +%s%N)
ctl status "$id" --follow >"$tmp/cut.out" 2>&1
acc=$(field test_accuracy <"$tmp/cut.out")
echo "partition_test: accuracy $acc with the cut, $ref_acc undisturbed; job took $(( ($(date +%s%N) - t1) / 1000000 )) ms after the link returned"
check "the job ends done after the link returns" grep -q "^state: done" "$tmp/cut.out"
check "the accuracy is within 0.01 of the undisturbed run" \
  /usr/bin/python3 -c "import sys; sys.exit(0 if abs(float('$acc') - float('$ref_acc')) <= 0.01 else 1)"
ctl logs "$id" >"$tmp/cut.logs" 2>&1
check "the job logs its recovery" grep -q "recovered: stepping again" "$tmp/cut.logs"
if [ "$failures" -gt 0 ]; then
  tail -n 30 "$tmp"/*.log "$tmp/cut.logs"
fi
summary
[ "$failures" -eq 0 ]
