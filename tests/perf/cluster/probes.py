"""CPU and memory, read from /proc while a scenario runs.

Machine: the busy share of all cores from /proc/stat (everything on the
machine, the benchmark's own processes and anyone else's). Processes: user +
system CPU seconds and peak RSS (VmHWM) of each watched pid, last seen values
kept so a process killed mid-run still reports what it used.
"""
import os
import threading
import time

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_times():
    """(total, idle + iowait, softirq) jiffies of all cores."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]), v[3] + v[4], v[6]


def proc_cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def proc_peak_rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class Sampler:
    """Samples every `interval` seconds on a thread between start() and stop()."""

    def __init__(self, interval=0.5):
        self.interval = interval
        self.busy = []      # per interval: (monotonic time, busy share of all cores, softirq share)
        self.procs = {}     # name -> {"pid", "cpu_s", "peak_rss"}
        self._mu = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def watch(self, name, pid):
        with self._mu:
            self.procs[name] = {"pid": pid, "cpu_s": 0.0, "cpu_s_at_watch": None, "peak_rss": 0}
        self.sample_now()

    def sample_now(self):
        with self._mu:
            for p in self.procs.values():
                try:
                    cpu = proc_cpu_seconds(p["pid"])
                    rss = proc_peak_rss_bytes(p["pid"])
                except (OSError, ValueError, IndexError):
                    continue  # gone: keep the last values
                if p["cpu_s_at_watch"] is None:
                    p["cpu_s_at_watch"] = cpu
                p["cpu_s"] = cpu
                p["peak_rss"] = max(p["peak_rss"], rss)

    def start(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        last = _cpu_times()
        while not self._stop.wait(self.interval):
            now = _cpu_times()
            dt = now[0] - last[0]
            if dt > 0:
                with self._mu:
                    self.busy.append((time.monotonic(), 1.0 - (now[1] - last[1]) / dt, (now[2] - last[2]) / dt))
            last = now
            self.sample_now()

    def stop(self):
        self.sample_now()
        self._stop.set()
        if self._thread:
            self._thread.join()

    def busy_between(self, t0, t1):
        """[(busy share, softirq share)] of the intervals between t0 and t1."""
        with self._mu:
            return [(b, s) for t, b, s in self.busy if t0 <= t <= t1 + self.interval]

    def used(self, name):
        """(CPU seconds since watch(), peak RSS bytes) of a watched process."""
        with self._mu:
            p = self.procs[name]
            return p["cpu_s"] - (p["cpu_s_at_watch"] or 0.0), p["peak_rss"]


def cpu_pressure_us():
    """Microseconds some runnable task waited for a CPU (/proc/pressure/cpu), or None."""
    try:
        with open("/proc/pressure/cpu") as f:
            return int(f.readline().rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


def machine_busy(seconds=3.0):
    """Busy share of all cores over the next `seconds` (for the load before a run)."""
    t0, i0, _ = _cpu_times()
    time.sleep(seconds)
    t1, i1, _ = _cpu_times()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)
