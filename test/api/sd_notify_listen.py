#!/usr/bin/python3
"""sd_notify_listen.py: plays the service manager's side of sd_notify(3)
for systemd_test.sh. Binds an AF_UNIX datagram socket with SO_PASSCRED,
starts the daemon given after "--" with NOTIFY_SOCKET and WATCHDOG_USEC set,
and checks what it says, each datagram's sender being the daemon's pid:

  --expect serve  READY=1 arrives, and at that moment --port accepts TCP
                  connections; then at least two WATCHDOG=1, each within
                  WATCHDOG_USEC of the previous (or of READY=1); with
                  --reload, then SIGHUP: RELOADING=1 and a second READY=1
                  (and two more WATCHDOG=1); then SIGTERM: STOPPING=1
                  arrives and the daemon exits 0.
  --expect fail   the daemon exits non-zero within the deadline without
                  ever sending READY=1 (e.g. its port is taken).

Prints one line per datagram and the verdict; exit 0 when every check held,
1 otherwise. Every wait has a deadline (--timeout seconds).
"""
import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


def port_accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def receive(sock, deadline):
    """One datagram as (sender pid, text), or None at the deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    sock.settimeout(min(left, 0.2))
    try:
        data, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(12))
    except socket.timeout:
        return "again"
    pid = None
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack("iII", payload[:12])[0]
    return pid, data.decode(errors="replace")


class Run:
    def __init__(self, args, sock, proc):
        self.args, self.sock, self.proc = args, sock, proc
        self.errors = []
        self.ready_at = None
        self.readies = 0
        self.reloading = 0
        self.hup_sent = False
        self.pings_at_hup = 0
        self.watchdogs = []
        self.stopping = False
        self.term_sent = False

    def fail(self, msg):
        self.errors.append(msg)
        print("sd_notify_listen: FAIL " + msg)

    def on_message(self, pid, text):
        print("sd_notify_listen: pid %s: %s" % (pid, text.replace("\n", " | ")))
        if pid != self.proc.pid:
            self.fail("datagram from pid %s, not the daemon's %d" % (pid, self.proc.pid))
        fields = text.split("\n")
        now = time.monotonic()
        if "RELOADING=1" in fields:
            if not self.hup_sent:
                self.fail("RELOADING=1 before SIGHUP")
            self.reloading += 1
        if "READY=1" in fields:
            self.readies += 1
            if self.readies > 1 and self.reloading != self.readies - 1:
                self.fail("READY=1 number %d after %d RELOADING=1" % (self.readies, self.reloading))
            if self.args.expect == "fail":
                self.fail("READY=1 from a daemon that should not serve")
            elif not port_accepts(self.args.port):
                self.fail("READY=1 while port %d does not accept connections" % self.args.port)
            self.ready_at = now
            if self.readies == 1 and "MAINPID=%d" % self.proc.pid not in fields:
                self.fail("READY=1 without MAINPID=%d" % self.proc.pid)
        if "WATCHDOG=1" in fields:
            if self.ready_at is None:
                self.fail("WATCHDOG=1 before READY=1")
            last = self.watchdogs[-1] if self.watchdogs else self.ready_at or now
            if now - last > self.args.watchdog_usec / 1e6:
                self.fail("WATCHDOG=1 %.2f s after the previous ping (limit %.2f s)"
                          % (now - last, self.args.watchdog_usec / 1e6))
            self.watchdogs.append(now)
        if "STOPPING=1" in fields:
            if not self.term_sent:
                self.fail("STOPPING=1 before SIGTERM")
            self.stopping = True

    def loop(self):
        deadline = time.monotonic() + self.args.timeout
        while self.proc.poll() is None or self.pending():
            got = receive(self.sock, deadline)
            if got is None:
                self.fail("no exit within %.0f s" % self.args.timeout)
                return
            if got != "again":
                self.on_message(*got)
            self.steer()

    def steer(self):
        """SIGHUP after two pings (--reload), SIGTERM after two more."""
        if self.args.expect != "serve" or self.term_sent:
            return
        pings = len(self.watchdogs)
        if self.args.reload and not self.hup_sent and pings >= 2:
            self.proc.send_signal(signal.SIGHUP)
            self.hup_sent = True
            self.pings_at_hup = pings
        elif pings >= 2 and (not self.args.reload or
                             (self.readies >= 2 and pings >= self.pings_at_hup + 2)):
            self.proc.send_signal(signal.SIGTERM)
            self.term_sent = True

    def pending(self):
        """Datagrams the daemon sent before it exited are still read."""
        self.sock.setblocking(False)
        try:
            self.sock.recv(1, socket.MSG_PEEK)
            return True
        except (BlockingIOError, InterruptedError):
            return False
        finally:
            self.sock.setblocking(True)

    def verdict(self):
        rc = self.proc.returncode
        if self.args.expect == "serve":
            if self.ready_at is None:
                self.fail("no READY=1")
            if len(self.watchdogs) < 2:
                self.fail("%d WATCHDOG=1, expected at least 2" % len(self.watchdogs))
            if not self.stopping:
                self.fail("no STOPPING=1 after SIGTERM")
            if self.args.reload and (self.reloading != 1 or self.readies != 2):
                self.fail("after SIGHUP: %d RELOADING=1 and %d READY=1 in all, expected 1 and 2"
                          % (self.reloading, self.readies))
            if rc != 0:
                self.fail("exit status %s after SIGTERM, expected 0" % rc)
        elif rc in (0, None):
            self.fail("exit status %s, expected a failure" % rc)
        print("sd_notify_listen: %s: exit %s, READY=1 x%d, RELOADING=1 x%d, WATCHDOG=1 x%d, "
              "STOPPING=%s" % ("ok" if not self.errors else "FAIL", rc, self.readies,
                               self.reloading, len(self.watchdogs), self.stopping))
        return not self.errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect", choices=["serve", "fail"], required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--watchdog-usec", type=int, default=2000000)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--reload", action="store_true", help="SIGHUP while serving")
    ap.add_argument("cmd", nargs="+")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sdnotify.")
    path = os.path.join(tmp, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC=str(args.watchdog_usec))
    env.pop("WATCHDOG_PID", None)
    proc = subprocess.Popen(args.cmd, env=env)
    run = Run(args, sock, proc)
    try:
        run.loop()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        sock.close()
        os.unlink(path)
        os.rmdir(tmp)
    return 0 if run.verdict() else 1


if __name__ == "__main__":
    sys.exit(main())
