"""Commands and long-lived processes inside the harness's network namespaces.

Every process the harness starts runs in one of its own namespaces
(`ip netns exec NS ...`, which execs, so the pid is the program's own), so
teardown can find them all with `ip netns pids`, whatever happened before.
"""
import os
import signal
import subprocess
import threading
import time


def in_ns(ns, argv):
    return ["ip", "netns", "exec", ns] + [str(a) for a in argv]


def run(argv, ns=None, env=None, timeout=120, check=True):
    """Runs a short command to completion; returns its stdout as text."""
    cmd = in_ns(ns, argv) if ns else [str(a) for a in argv]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), p.returncode, (p.stderr or p.stdout).strip()[-2000:]))
    return p.stdout


def alive(pid):
    """True while `pid` runs; a zombie does not count."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


class Process:
    """A process started in namespace `ns`, its output in `log_path`. `started`
    and `ended` are monotonic times; a thread waits for the exit, so `ended` is
    when the process exited, not when someone asked."""

    def __init__(self, name, ns, argv, log_path, env=None):
        self.name = name
        self.ns = ns
        self.log_path = log_path
        self.started = time.monotonic()
        self.ended = None
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(in_ns(ns, argv), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.pid = self.popen.pid
        self._exited = threading.Event()
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self):
        self.popen.wait()
        self.ended = time.monotonic()
        self._exited.set()

    def poll(self):
        """The exit code, or None while running."""
        return self.popen.returncode if self._exited.is_set() else None

    def wait(self, timeout=None):
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(self.popen.args, timeout)
        return self.popen.returncode

    def signal(self, sig):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout=15):
        """SIGTERM, then SIGKILL after `timeout` seconds."""
        if self.poll() is not None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.wait(10)

    def log_tail(self, n=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""
