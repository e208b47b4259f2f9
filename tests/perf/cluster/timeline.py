"""Bytes over time, once a second: what left the origin (its eth0 tx) and
what each node received (its eth0 rx, from peers and origin alike). The same
kernel counters for Shoal and for direct S3, so the curves compare."""
import threading
import time

from . import nsnet


class Timeline:
    def __init__(self, origin_ns, node_namespaces, t0, interval=1.0):
        self.origin_ns = origin_ns
        self.nodes = list(node_namespaces)
        self.t0 = t0
        self.interval = interval
        self.rows = []  # [seconds since t0, origin tx, sum of node rx, [rx of each node]]
        self._stop = threading.Event()
        self._thread = None
        self._base = None

    def _read(self):
        tx, _ = nsnet.link_bytes(self.origin_ns)
        return tx, [nsnet.link_bytes(ns)[1] for ns in self.nodes]

    def start(self):
        self._base = self._read()
        self.rows.append([round(time.monotonic() - self.t0, 2), 0, 0, [0] * len(self.nodes)])
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.wait(self.interval):
            try:
                self._sample()
            except (OSError, RuntimeError):
                return  # the namespaces are gone: the run is being torn down

    def _sample(self):
        tx, rx = self._read()
        per_node = [a - b for a, b in zip(rx, self._base[1])]
        self.rows.append([round(time.monotonic() - self.t0, 2), tx - self._base[0], sum(per_node), per_node])

    def last_byte(self, index, until, share=0.995):
        """Seconds since t0 at which node `index` had received `share` of what it
        had received by `until` (seconds since t0), to the sampling interval; or
        None. (A node that is done still receives its uploads' ACKs.)"""
        seen = [row for row in self.rows if row[0] <= until + self.interval / 2]
        if not seen or seen[-1][3][index] <= 0:
            return None
        target = share * seen[-1][3][index]
        return next(row[0] for row in seen if row[3][index] >= target)

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
            try:
                self._sample()
            except (OSError, RuntimeError):
                pass
