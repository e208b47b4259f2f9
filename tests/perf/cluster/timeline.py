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
        self.rows = []  # [seconds since t0, origin tx, sum of node rx]
        self._stop = threading.Event()
        self._thread = None
        self._base = None

    def _read(self):
        tx, _ = nsnet.link_bytes(self.origin_ns)
        rx = sum(nsnet.link_bytes(ns)[1] for ns in self.nodes)
        return tx, rx

    def start(self):
        self._base = self._read()
        self.rows.append([time.monotonic() - self.t0, 0, 0])
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self):
        tx, rx = self._read()
        self.rows.append([round(time.monotonic() - self.t0, 2), tx - self._base[0], rx - self._base[1]])

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
            self._sample()
