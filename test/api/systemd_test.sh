#!/usr/bin/env bash
# systemd_test.sh: the systemd units (systemd/*.service) and the daemons'
# sd_notify protocol, without a running systemd.
#
# 1. make install PREFIX=<tmp>/prefix (the built tree, no rebuild): the
#    installed units, whose ExecStart names the installed programs, pass
#    `systemd-analyze verify --man=no` with rc 0 AND an empty stderr (verify
#    only warns about typos: a copy with a misspelt key must give a
#    warning, or the check could not fail), the template also as the
#    instance tfworker@ps-0.service;
# 2. `systemd-analyze security --offline=yes`: each unit's "Overall
#    exposure level" is at most 2.0;
# 3. test/api/sd_notify_listen.py runs tfworker (ps 0) and tfmaster from the
#    build on the example config (systemd/cluster.yaml with free ports and a
#    scratch checkpoint_dir) with NOTIFY_SOCKET and WATCHDOG_USEC=2 s: it
#    sees READY=1 only once the daemon's port accepts connections,
#    WATCHDOG=1 at least twice within the watchdog interval, on SIGHUP
#    RELOADING=1 then READY=1 (systemctl reload), STOPPING=1 after SIGTERM,
#    and exit 0; every datagram comes from the daemon's pid;
# 4. a tfworker whose port is taken exits 1 and never sends READY=1.
# Skipped (exit 0, saying why) without systemd-analyze. Prints a
# Check-style summary line.
#
# Environment (set by `make test-run`): TF_BUILD (build/ or build/san-...).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
build=${TF_BUILD:-build}
bin="$root/$build/bin"
tmp=$(mktemp -d)
holder=
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
checks=0
failures=0

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

command -v systemd-analyze >/dev/null ||
  { echo "systemd_test: SKIP: no systemd-analyze (apt-get install systemd)"; summary; exit 0; }

# MAKEFLAGS without the jobserver, and mk (nested_make.sh).
. "$root/test/api/nested_make.sh"

prefix=$tmp/prefix
units=$prefix/lib/systemd/system

# verify FILE: rc 0 and nothing on stdout or stderr.
verify() {
  local out rc
  out=$(systemd-analyze verify --man=no "$1" 2>&1); rc=$?
  [ "$rc" -eq 0 ] && [ -z "$out" ] || { echo "verify $1: rc $rc: $out"; return 1; }
}

# A misspelt key gives rc 0 but a warning, which verify() must catch.
verify_catches_typos() {
  sed 's/^ProtectSystem=strict$/ProtectSystm=strict/' "$units/tfmaster.service" >"$tmp/typo.service"
  grep -q '^ProtectSystm=' "$tmp/typo.service" && ! verify "$tmp/typo.service" >/dev/null
}

# exposure UNIT: the "Overall exposure level" of the unit file, at most 2.0.
exposure() {
  local out level
  out=$(systemd-analyze security --offline=yes "$1" 2>&1)
  level=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
  [ -n "$level" ] || { printf '%s\n' "$out" | tail -n 5; return 1; }
  echo "     ${1##*/}: exposure $level"
  awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }' ||
    { printf '%s\n' "$out" | grep '✗'; return 1; }
}

check "make install PREFIX=<tmp>" mk install PREFIX="$prefix"
check "verify tfmaster.service" verify "$units/tfmaster.service"
check "verify tfworker@.service" verify "$units/tfworker@.service"
check "verify tfworker@ps-0.service (an instance)" verify "$units/tfworker@ps-0.service"
check "verify warns on a misspelt key" verify_catches_typos
check "tfmaster.service exposure <= 2.0" exposure "$units/tfmaster.service"
check "tfworker@.service exposure <= 2.0" exposure "$units/tfworker@.service"

# Four free TCP ports on loopback for the example config's tasks.
read -r p_master p_ps p_w0 p_w1 < <(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')
conf=$tmp/cluster.yaml
sed -e "s/127.0.0.1:7070/127.0.0.1:$p_master/; s/127.0.0.1:7071/127.0.0.1:$p_ps/" \
    -e "s/127.0.0.1:7072/127.0.0.1:$p_w0/; s/127.0.0.1:7073/127.0.0.1:$p_w1/" \
    -e "s|^checkpoint_dir: .*|checkpoint_dir: $tmp/checkpoints|; s|^run_dir: .*|run_dir: $tmp/run|" \
    systemd/cluster.yaml >"$conf"

listen() { # listen serve|fail PORT [--reload] CMD...
  local expect=$1 port=$2; shift 2
  /usr/bin/python3 test/api/sd_notify_listen.py --expect "$expect" --port "$port" \
    --timeout 60 "$@" >"$tmp/listen.log" 2>&1 || { cat "$tmp/listen.log"; return 1; }
  grep '^sd_notify_listen: ok' "$tmp/listen.log" | sed 's/^/     /'
}

check "tfworker --instance ps-0: READY=1 when serving, WATCHDOG=1, RELOADING=1 + READY=1 on SIGHUP, STOPPING=1, exit 0" \
  listen serve "$p_ps" --reload -- "$bin/tfworker" --config "$conf" --instance ps-0
check "tfmaster: READY=1 when serving, WATCHDOG=1, RELOADING=1 + READY=1 on SIGHUP, STOPPING=1, exit 0" \
  listen serve "$p_master" --reload -- "$bin/tfmaster" --config "$conf"

# A port another process listens on: tfworker cannot bind it.
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
print("bound", flush=True); time.sleep(120)' "$p_w0" >"$tmp/holder.log" 2>&1 &
holder=$!
for _ in $(seq 100); do grep -qs bound "$tmp/holder.log" && break; sleep 0.05; done
cannot_bind() {
  listen fail "$p_w0" -- "$bin/tfworker" --config "$conf" --instance worker-0 &&
    grep -q "cannot start: .*$p_w0" "$tmp/listen.log" || { cat "$tmp/listen.log"; return 1; }
}
check "tfworker that cannot bind: no READY=1, exit non-zero" cannot_bind

check "make uninstall PREFIX=<tmp>" mk uninstall PREFIX="$prefix"
summary
[ "$failures" -eq 0 ]
