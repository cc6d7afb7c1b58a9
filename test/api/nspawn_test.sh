#!/usr/bin/env bash
# nspawn_test.sh: the systemd units booted for real. A Debian minbase root
# file system with systemd (debootstrap, built once and cached under
# $TF_TEST_CACHE, default /var/cache/tf-test, as rootfs-<codename>-<recipe>,
# so the plain and the sanitizer runs of make check share it) is the lower
# layer of an overlay (a copy where overlayfs is missing); `make install DESTDIR=<copy> PREFIX=/usr/local` puts the built
# tree, the units and /etc/tf/cluster.yaml in it (no rebuild), with the
# shared libraries the installed programs need (ldd) that it lacks. Then
# `systemd-nspawn -b` boots it on a private network and, inside:
#   1. systemd loads both units without a warning; tfmaster, tfworker@ps-0,
#      tfworker@worker-0 and tfworker@worker-1 start (Type=notify: start
#      returns once each sent READY=1) and are active, all as the one
#      dynamic user "tf" (not root, no capabilities, no_new_privs), which
#      owns /var/lib/tf;
#   2. the installed tfctl submits a small Fashion-MNIST sync job (the
#      dataset bound read-only into the container) checkpointing under
#      /var/lib/tf; once it has made some steps worker 0 is SIGKILLed with
#      `systemctl kill`: systemd restarts it (NRestarts=1, active again),
#      the job recovers and completes all its steps, its checkpoints were
#      written by the ps task as the dynamic user;
#   3. the journal holds the daemons' lines at their priorities (READY at
#      notice, the rest at info, no "<N>" prefix left in a message);
#   4. after an edit of /etc/tf/cluster.yaml (timeouts.rpc_ms), `systemctl
#      reload` makes each daemon apply it (SIGHUP: RELOADING=1, READY=1)
#      with the same main pid;
#   5. with WatchdogSec=3s, a SIGSTOPped tfworker@worker-1 stops pinging:
#      systemd kills it (Watchdog timeout) and restarts it;
#   6. `systemctl stop` drains every daemon to exit 0, the master first
#      (the tasks are ordered Before= it), and the container
#      powers off on SIGTERM within a deadline.
# Skipped (exit 0, saying why) when not root, without systemd-nspawn, or
# where debootstrap cannot build the root file system (no network to the
# Debian archive). Under a sanitizer build the units get
# ASAN_OPTIONS=detect_leaks=0 (LeakSanitizer needs ptrace, which their
# system call filter refuses). Prints a Check-style summary line.
#
# Environment (set by `make test-run`): TF_BUILD, TF_SANFLAGS; optional
# TF_TEST_CACHE, TF_DEBIAN_MIRROR.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
build=${TF_BUILD:-build}
cache_base=${TF_TEST_CACHE:-/var/cache/tf-test}
mirror=${TF_DEBIAN_MIRROR:-http://deb.debian.org/debian}
recipe=1   # bump when the rootfs' package list changes
data=/usr/share/datasets/fashion-mnist
machine="tfsd$$"
tmp=$(mktemp -d)
rootfs=$tmp/root
nsp=
checks=0
failures=0
t0=$(date +%s)

check() { # check NAME COMMAND...
  checks=$((checks + 1))
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else failures=$((failures + 1)); echo "FAIL $name"; return 1; fi
}
# need NAME COMMAND...: a check the rest depends on; its failure ends the test.
need() { check "$@" || { summary; exit 1; }; }

summary() {
  local pct=100
  [ "$checks" -gt 0 ] && pct=$(( (checks - failures) * 100 / checks ))
  echo "${pct}%: Checks: $checks, Failures: $failures, Errors: 0"
}

# Powers the container off (SIGTERM, then SIGKILL after 30 s); cleanup
# also unmounts the overlay and removes the run's files and nspawn's
# propagation directory.
poweroff() {
  [ -n "$nsp" ] || return 0
  kill -TERM "$nsp" 2>/dev/null
  for _ in $(seq 300); do kill -0 "$nsp" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$nsp" 2>/dev/null; then
    echo "nspawn_test: the container did not power off in 30 s; killing it"
    kill -KILL "$nsp" 2>/dev/null
    wait "$nsp" 2>/dev/null
    nsp=
    return 1
  fi
  wait "$nsp" 2>/dev/null
  nsp=
}
cleanup() {
  poweroff
  mountpoint -q "$rootfs" && { umount "$rootfs" || umount -l "$rootfs"; }
  rm -rf "/run/systemd/nspawn/propagate/$machine" "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

skip() {
  echo "nspawn_test: SKIP: $*"
  summary
  exit 0
}

[ "$(id -u)" = 0 ] || skip "needs root for systemd-nspawn"
command -v systemd-nspawn >/dev/null || skip "no systemd-nspawn (apt-get install systemd-container)"
command -v nsenter >/dev/null || skip "no nsenter(1) (util-linux)"
[ -r "$data/train-images-idx3-ubyte.gz" ] || skip "no $data (apt-get install dataset-fashion-mnist)"
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
codename=${codename:-bookworm}
cache=$cache_base/rootfs-$codename-$recipe

# The cached root file system, built (under a lock: another run may be
# building it) when missing.
rootfs_cached() {
  [ -x "$cache/lib/systemd/systemd" ] && return 0
  command -v debootstrap >/dev/null || { why="no debootstrap (apt-get install debootstrap)"; return 1; }
  mkdir -p "$cache_base" || { why="cannot create $cache_base"; return 1; }
  (
    flock -w 900 9 || exit 1
    [ -x "$cache/lib/systemd/systemd" ] && exit 0
    rm -rf "$cache.new"
    echo "nspawn_test: building $cache with debootstrap (about a minute)"
    timeout 900 debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,procps \
      "$codename" "$cache.new" "$mirror" >"$tmp/debootstrap.log" 2>&1 &&
      mv "$cache.new" "$cache"
  ) 9>"$cache_base/rootfs.lock"
  [ -x "$cache/lib/systemd/systemd" ] && return 0
  why="debootstrap could not build the root file system from $mirror: $(tail -n 1 "$tmp/debootstrap.log" 2>/dev/null)"
  rm -rf "$cache.new"
  return 1
}
why=
rootfs_cached || skip "$why"
# The run's root: an overlay on the cache (the run's writes go to
# $tmp/upper), or a copy where overlayfs cannot be mounted.
mkdir -p "$rootfs" "$tmp/upper" "$tmp/work"
mount -t overlay overlay -o "lowerdir=$cache,upperdir=$tmp/upper,workdir=$tmp/work" "$rootfs" 2>/dev/null ||
  { rmdir "$rootfs" && cp -a "$cache" "$rootfs"; } || { echo "nspawn_test: cannot copy $cache"; exit 1; }
echo "     rootfs ready after $(( $(date +%s) - t0 )) s"

# MAKEFLAGS without the jobserver, and mk (nested_make.sh).
. "$root/test/api/nested_make.sh"

# The libraries the installed programs load that the rootfs lacks (libuv,
# OpenBLAS, oneDNN, ...; libasan and libubsan for a sanitizer build),
# copied to the same paths.
copy_libs() {
  local lib
  for lib in $(ldd "$rootfs"/usr/local/bin/tf* | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u); do
    [ -e "$rootfs$lib" ] || cp -L "$lib" "$rootfs$lib" || return 1
  done
  local missing
  missing=$(for b in tfmaster tfworker tfctl; do chroot "$rootfs" ldd "/usr/local/bin/$b"; done 2>&1 |
    grep -E 'not found|^ldd: |cannot')
  [ -z "$missing" ] || { echo "in the rootfs: $missing"; return 1; }
}

# A sanitizer build's drop-ins (see the header).
dropins() {
  local d=$rootfs/etc/systemd/system i
  if [ -n "${TF_SANFLAGS:-}" ]; then
    for i in tfmaster.service tfworker@.service; do
      mkdir -p "$d/$i.d" &&
        printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' >"$d/$i.d/10-sanitizer.conf" || return 1
    done
  fi
}

# The job: conf/jobs/fmnist-mlp-sync.yaml cut to 600 steps, checkpoints
# every 100 under the units' state directory.
STEPS=600
job_spec() {
  sed -e 's/^name: .*/name: fmnist-systemd/' -e "s/^  epochs: .*/  steps: $STEPS/" \
      -e 's/log_every_steps: .*/log_every_steps: 50/' -e '/^eval:/,/^[a-z]/s/every_steps: .*/every_steps: 300/' \
      -e '/^checkpoint:/,$s/every_steps: .*/every_steps: 100/' \
      -e 's|^  dir: .*|  dir: /var/lib/tf/checkpoints/fmnist-systemd|' conf/jobs/fmnist-mlp-sync.yaml &&
    printf 'recovery: {max_attempts: 3, wait_seconds: 60}\n'
}

need "make install DESTDIR=<rootfs> PREFIX=/usr/local" mk install DESTDIR="$rootfs" PREFIX=/usr/local
need "runtime libraries in the rootfs" copy_libs
need "drop-ins for a sanitizer build" dropins
job_spec >"$rootfs/root/job.yaml"

# Boot; C runs a command inside (all the container's namespaces).
systemd-nspawn -D "$rootfs" -M "$machine" --private-network --register=no --keep-unit \
  --bind-ro="$data" -b </dev/null >"$tmp/nspawn.log" 2>&1 &
nsp=$!
boot() {
  local p
  for _ in $(seq 100); do
    for p in $(pgrep -P "$nsp"); do
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ] && { pid1=$p; break 2; }
    done
    sleep 0.1
  done
  [ -n "${pid1:-}" ] || { echo "no systemd in the container after 10 s:"; tail -n 20 "$tmp/nspawn.log"; return 1; }
  local state=
  for _ in $(seq 300); do  # until its manager answers on the bus
    C test -S /run/systemd/private && break
    sleep 0.1
  done
  state=$(C timeout 60 systemctl is-system-running --wait)
  [ "$state" = running ] ||
    { echo "system state '$state'"; C systemctl --failed --no-pager; return 1; }
}
C() { nsenter -t "$pid1" -m -u -i -n -p "$@"; }
T() { C /usr/local/bin/tfctl -c /etc/tf/cluster.yaml "$@"; }
UNITS="tfmaster tfworker@ps-0 tfworker@worker-0 tfworker@worker-1"
pid1=
need "the container boots (systemctl is-system-running: running)" boot
echo "     booted after $(( $(date +%s) - t0 )) s"
# 1. The units start; systemd loaded them without a warning, and
# systemd-analyze verify in the container passes the installed ones with
# nothing on stderr.
units_load() {
  local warn u out
  warn=$(C journalctl -b --no-pager -o cat | grep -E '/tf(master|worker@)\.service(\.d/[^:]*)?:[0-9]+:')
  [ -z "$warn" ] || { echo "$warn"; return 1; }
  for u in tfmaster.service tfworker@.service; do
    out=$(C systemd-analyze verify --man=no "/usr/local/lib/systemd/system/$u" 2>&1) && [ -z "$out" ] ||
      { echo "verify $u: $out"; return 1; }
  done
}
units_start() {
  # shellcheck disable=SC2086 # the unit list
  C timeout 90 systemctl start $UNITS || { C systemctl status --no-pager $UNITS | tail -n 40; return 1; }
  local u
  for u in $UNITS; do
    [ "$(C systemctl is-active "$u")" = active ] || { C systemctl status --no-pager "$u"; return 1; }
  done
}
# The services' main processes: one uid, not root, no capabilities,
# no_new_privs; /var/lib/tf a link to private/tf owned by that uid.
one_dynamic_user() {
  local u pid uid uids=
  for u in $UNITS; do
    pid=$(C systemctl show -p MainPID --value "$u")
    uid=$(C awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
    C grep -qx $'CapEff:\t0000000000000000' "/proc/$pid/status" &&
      C grep -qx $'NoNewPrivs:\t1' "/proc/$pid/status" ||
      { echo "$u (pid $pid):"; C grep -E 'Cap|NoNewPrivs' "/proc/$pid/status"; return 1; }
    uids="$uids $uid"
  done
  # shellcheck disable=SC2086 # one uid per word
  uids=$(printf '%s\n' $uids | sort -u)
  echo "     main processes' uid: $uids"
  [ "$(printf '%s\n' "$uids" | wc -l)" = 1 ] && [ "$uids" != 0 ] &&
    [ "$(C readlink /var/lib/tf)" = private/tf ] && [ "$(C stat -c %u /var/lib/private/tf)" = "$uids" ] ||
    { C ls -la /var/lib /var/lib/private; return 1; }
  tf_uid=$uids
}

# 2. A job; worker 0 SIGKILLed; systemd restarts it; the job completes.
field() { sed -n "s/^$1: //p" "$tmp/status.txt" | head -n 1; }
job_status() { T status "$job" >"$tmp/status.txt" 2>&1; }
job_step() { field step | cut -d/ -f1; }
submit() {
  job=$(T submit /root/job.yaml | tail -n 1)
  [ -n "$job" ] || return 1
  echo "     job $job submitted"
}
wait_steps() { # wait_steps N: until the job has made N steps (90 s)
  for _ in $(seq 900); do
    job_status && [ "$(job_step)" -ge "$1" ] 2>/dev/null && return 0
    case $(field state) in failed|cancelled|done) break ;; esac
    sleep 0.1
  done
  echo "job $job: not at step $1:"; cat "$tmp/status.txt"; return 1
}
kill_worker() {
  job_status
  killed_at=$(job_step)
  C systemctl kill -s KILL tfworker@worker-0.service &&
    echo "     SIGKILLed tfworker@worker-0 at step $killed_at"
}
restarted() {
  local show
  for _ in $(seq 300); do
    show=$(C systemctl show -p NRestarts,ActiveState,SubState tfworker@worker-0.service | sort | tr '\n' ' ')
    [ "$show" = "ActiveState=active NRestarts=1 SubState=running " ] && return 0
    sleep 0.1
  done
  echo "tfworker@worker-0 after 30 s: $show"; return 1
}
completes() {
  for _ in $(seq 1800); do
    job_status
    case $(field state) in done|failed|cancelled) break ;; esac
    sleep 0.1
  done
  sed 's/^/     /' "$tmp/status.txt" | grep -E 'state|step:|recoveries|test_accuracy'
  [ "$(field state)" = "done" ] && [ "$(field step)" = "$STEPS/$STEPS" ] &&
    [ "$(field recoveries)" -ge 1 ] && [ "$(job_step)" -gt "$killed_at" ] ||
    { cat "$tmp/status.txt"; return 1; }
}
# The ps task wrote the checkpoint shards, as the dynamic user.
checkpoints() {
  local files
  files=$(C find /var/lib/private/tf/checkpoints/fmnist-systemd -type f -printf '%u %p\n')
  [ -n "$files" ] && ! printf '%s\n' "$files" | grep -qv "^$tf_uid " ||
    { echo "checkpoint files:"; printf '%s\n' "$files" | head; return 1; }
}

# 3. The journal: priorities from the "<N>" prefixes; no timestamps.
journal() {
  local notice info
  notice=$(C journalctl -u tfmaster -u 'tfworker@*' -p notice..notice --no-pager -o cat)
  info=$(C journalctl -u tfmaster -u 'tfworker@*' -p info..info --no-pager -o cat)
  printf '%s\n' "$notice" | grep -q 'tfworker /job:worker/task:0: ready (pid' &&
    printf '%s\n' "$info" | grep -q 'tfmaster /job:master/task:0: master serving on' &&
    printf '%s\n' "$info" | grep -q "job $job: training: steps" &&
    ! printf '%s\n%s\n' "$notice" "$info" | grep -qE '^<[0-9]>|^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T]' ||
    { echo "notice:"; printf '%s\n' "$notice" | tail -n 5; echo "info:"; printf '%s\n' "$info" | tail -n 5; return 1; }
}

# 4. systemctl reload: SIGHUP applies the edited config in place.
reload_units() {
  local u before after want_restarts
  C sed -i 's/^  rpc_ms: 10000/  rpc_ms: 9000/' /etc/tf/cluster.yaml &&
    C grep -q '^  rpc_ms: 9000' /etc/tf/cluster.yaml || { echo "cannot edit /etc/tf/cluster.yaml"; return 1; }
  for u in $UNITS; do
    before=$(C systemctl show -p MainPID --value "$u")
    C timeout 30 systemctl reload "$u" || { C systemctl status --no-pager "$u" | tail; return 1; }
    after=$(C systemctl show -p MainPID,ActiveState,NRestarts "$u" | sort | tr '\n' ' ')
    case $u in tfworker@worker-0) want_restarts=1 ;; *) want_restarts=0 ;; esac
    [ "$after" = "ActiveState=active MainPID=$before NRestarts=$want_restarts " ] &&
      C journalctl -u "$u" -p notice --no-pager -o cat |
      grep -q 'received SIGHUP: reloaded /etc/tf/cluster.yaml: timeouts.rpc_ms 10000 -> 9000' ||
      { echo "$u after reload: $after (MainPID was $before)"; C journalctl -u "$u" --no-pager -o cat | tail -n 3; return 1; }
  done
}

# 5. The watchdog: tfworker@worker-1 with WatchdogSec=3s (a runtime
# drop-in) is stopped (SIGSTOP): its pings stop, systemd kills it
# ("Watchdog timeout") and restarts it.
watchdog() {
  local d=/run/systemd/system/tfworker@worker-1.service.d show pid
  C mkdir -p "$d" && C sh -c "printf '[Service]\nWatchdogSec=3s\n' >$d/50-test-watchdog.conf" &&
    C systemctl daemon-reload && C timeout 60 systemctl restart tfworker@worker-1 || return 1
  pid=$(C systemctl show -p MainPID --value tfworker@worker-1)
  C systemctl kill -s STOP --kill-who=main tfworker@worker-1 || return 1
  for _ in $(seq 200); do
    show=$(C systemctl show -p NRestarts,ActiveState tfworker@worker-1 | sort | tr '\n' ' ')
    [ "$show" = "ActiveState=active NRestarts=1 " ] && break
    sleep 0.1
  done
  C journalctl -u tfworker@worker-1 --no-pager -o cat | grep -q 'Watchdog timeout (limit 3s)' &&
    [ "$show" = "ActiveState=active NRestarts=1 " ] &&
    [ "$(C systemctl show -p MainPID --value tfworker@worker-1)" != "$pid" ] ||
    { echo "tfworker@worker-1 after 20 s: $show"; C journalctl -u tfworker@worker-1 --no-pager -o cat | tail -n 5; return 1; }
  echo "     tfworker@worker-1 (pid $pid stopped): $(C journalctl -u tfworker@worker-1 --no-pager -o cat |
    grep -o 'Watchdog timeout.*\|Main process exited.*' | tr '\n' ' ')"
}

# 6. systemctl stop: each daemon drains and exits 0.
stop_units() {
  local u show
  # shellcheck disable=SC2086
  C timeout 90 systemctl stop $UNITS || return 1
  for u in $UNITS; do
    show=$(C systemctl show -p ActiveState,Result,ExecMainStatus "$u" | sort | tr '\n' ' ')
    [ "$show" = "ActiveState=inactive ExecMainStatus=0 Result=success " ] || { echo "$u: $show"; return 1; }
  done
  # Before=tfmaster.service: the master had stopped before ps 0 was told to.
  C journalctl -u tfmaster -u tfworker@ps-0 --no-pager -o cat |
    grep -E '^tfmaster .*: stopped$|^tfworker /job:ps/task:0: received SIGTERM' | tail -n 2 >"$tmp/order.txt"
  grep -q '^tfmaster' <(head -n 1 "$tmp/order.txt") && grep -q '^tfworker' <(tail -n 1 "$tmp/order.txt") ||
    { echo "stop order:"; cat "$tmp/order.txt"; return 1; }
}

job=
killed_at=0
tf_uid=
need "systemctl start $UNITS: all active" units_start
check "the units load without a warning; verify inside: empty stderr" units_load
check "one dynamic user, no capabilities, owns /var/lib/tf" one_dynamic_user
need "tfctl submit (installed tfctl)" submit
need "the job makes 150 steps" wait_steps 150
need "systemctl kill -s KILL tfworker@worker-0" kill_worker
check "systemd restarts it (NRestarts=1, active)" restarted
check "the job recovers and completes $STEPS steps" completes
check "checkpoint files written as the dynamic user" checkpoints
check "journal: the daemons' lines at their priorities" journal
check "systemctl reload: the edited config applied in place" reload_units
check "watchdog: a stopped tfworker is killed and restarted" watchdog
check "systemctl stop: every daemon exits 0, the master first" stop_units
check "the container powers off on SIGTERM within 30 s" poweroff
echo "     nspawn_test: $(( $(date +%s) - t0 )) s"
summary
[ "$failures" -eq 0 ]
