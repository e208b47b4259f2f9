"""The benchmark's network: one namespace per host, all joined to a bridge.

    [origin]  [tracker]  [node1] ... [nodeN]      each: eth0, 10.77.x.y/16
        \\         |         |           /
         +-------- br0 in [switch] -----+         one veth per host

Every host's upload is shaped by a tbf qdisc on its own eth0, and its
download by a tbf on the switch's end of its veth. Latency, when asked for,
is a netem qdisc on each host's eth0, so any round trip crosses two of them.
Only addresses inside these namespaces are used; nothing touches the
machine's own interfaces.
"""
import os
import signal
import subprocess
import time

from . import nsnet, procs


class Host:
    def __init__(self, name, ns, ip, port):
        self.name = name
        self.ns = ns
        self.ip = ip
        self.port = port  # the switch's end of this host's veth


def _tbf(rate_bit):
    # A burst of 2 ms at the rate (at least 64 KiB) keeps tbf accurate with
    # segmentation offload; 50 ms of queue is what a switch port would hold.
    burst = max(64 * 1024, int(rate_bit / 8 * 0.002))
    return ["tbf", "rate", "%dbit" % rate_bit, "burst", str(burst), "latency", "50ms"]


class Topology:
    """Namespaces named PREFIX-*, created here and deleted by teardown()."""

    def __init__(self, prefix, mtu=1500, rtt_ms=0.0):
        self.prefix = prefix
        self.mtu = mtu
        self.rtt_ms = rtt_ms
        self.switch = prefix + "-sw"
        self.hosts = {}
        self._namespaces = []

    def _add_ns(self, ns):
        procs.run(["ip", "netns", "add", ns])
        self._namespaces.append(ns)
        procs.run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def create(self):
        self._add_ns(self.switch)
        procs.run(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge", "stp_state", "0",
                   "forward_delay", "0"])
        procs.run(["ip", "-n", self.switch, "link", "set", "br0", "mtu", str(self.mtu), "up"])
        if self.rtt_ms > 0:
            self._check_netem()

    def _check_netem(self):
        probe = self.prefix + "-probe"
        procs.run(["ip", "-n", self.switch, "link", "add", probe, "type", "dummy"])
        try:
            procs.run(["tc", "qdisc", "add", "dev", probe, "root", "netem", "delay", "1ms"], ns=self.switch)
        except RuntimeError as e:
            raise RuntimeError("--rtt-ms needs the netem qdisc, which this kernel lacks "
                               "(CONFIG_NET_SCH_NETEM); run with --rtt-ms 0: %s" % e)
        finally:
            procs.run(["ip", "-n", self.switch, "link", "del", probe], check=False)

    def add_host(self, name, ip, up_bit=None, down_bit=None):
        """A host at `ip` whose upload and download are capped (bit/s; None = unshaped)."""
        ns = "%s-%s" % (self.prefix, name)
        port = "p-" + name
        self._add_ns(ns)
        procs.run(["ip", "link", "add", "eth0", "netns", ns, "mtu", self.mtu, "type", "veth",
                   "peer", "name", port, "netns", self.switch, "mtu", self.mtu])
        procs.run(["ip", "-n", self.switch, "link", "set", port, "master", "br0", "up"])
        procs.run(["ip", "-n", ns, "addr", "add", ip + "/16", "dev", "eth0"])
        procs.run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        if self.rtt_ms > 0:
            delay = "%.3fms" % (self.rtt_ms / 2)
            procs.run(["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "netem", "delay", delay,
                       "limit", "100000"], ns=ns)
            if up_bit:
                procs.run(["tc", "qdisc", "add", "dev", "eth0", "parent", "1:1", "handle", "10:"] + _tbf(up_bit), ns=ns)
        elif up_bit:
            procs.run(["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "10:"] + _tbf(up_bit), ns=ns)
        if down_bit:
            procs.run(["tc", "qdisc", "add", "dev", port, "root", "handle", "10:"] + _tbf(down_bit), ns=self.switch)
        host = Host(name, ns, ip, port)
        self.hosts[name] = host
        return host

    def link_bytes(self, host):
        """(tx, rx) byte counters of the host's eth0, as the kernel counts them."""
        return nsnet.link_bytes(host.ns)

    def describe_qdiscs(self, host):
        return procs.run(["tc", "qdisc", "show", "dev", "eth0"], ns=host.ns).strip()

    def teardown(self, grace=10):
        """Stops every process left in the namespaces (TERM, then KILL after
        `grace` seconds) and deletes the namespaces. Safe to call twice."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = []
            for ns in self._namespaces:
                out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
                pids += [int(p) for p in out.split()]
            for p in pids:
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
            if not pids or procs.wait_gone(pids, grace if sig == signal.SIGTERM else 5):
                break
        for ns in reversed(self._namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._namespaces = []
        time.sleep(0.2)
