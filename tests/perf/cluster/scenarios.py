"""The five scenarios. Each starts from nothing cached (a restarted tracker,
fresh agents with empty caches), measures, and leaves nothing running.

Completion time of a node is how long its client ran: `shoal pull` for
Shoal, `aws s3 cp --recursive` for direct S3. Origin egress is the change,
over the scenario, of radosgw's usage log (bytes sent) and of the kernel's
tx byte counter on the origin's eth0, beside the agents' own counters.
"""
import os
import random
import shutil
import signal
import subprocess
import threading
import time

from . import nsnet, probes, procs
from .timeline import Timeline
from . import shoal as shoalctl

TITLES = {
    "cold": "Cold start: all N pull at once",
    "staggered": "Staggered arrivals",
    "kills": "Kills: agents SIGKILLed mid-pull",
    "warm": "Warm, then all N pull",
    "direct": "Direct S3: aws s3 cp on every node",
}


class Context:
    """What every scenario needs; built by cluster_bench.py."""

    def __init__(self, args, topo, origin, shoal, tracker, nodes, checkpoint, files, ref, log_dir):
        self.args = args
        self.topo = topo
        self.origin = origin
        self.shoal = shoal
        self.tracker = tracker
        self.nodes = nodes            # node hosts, in order
        self.checkpoint = checkpoint  # the published folder
        self.files = files            # {relative path: size}
        self.size = sum(files.values())
        self.ref = ref
        self.log_dir = log_dir
        self.t_lb = self.size * 8 / args.node_bit               # S / B
        self.t_origin = len(nodes) * self.size * 8 / args.origin_bit  # N S / B_o

    def log(self, msg):
        print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def _origin_counts(ctx):
    """(radosgw bytes sent, origin eth0 tx bytes, origin TCP segments retransmitted)."""
    rgw = ctx.origin.settled_usage_bytes_sent()
    host = ctx.topo.hosts["origin"]
    tx, _ = ctx.topo.link_bytes(host)
    return rgw, tx, nsnet.tcp_retransmitted_segments(host.ns)


def _fresh_cluster(ctx, scenario, hosts, start=True):
    """Restarts the tracker (empty swarms and ring, same registry) and, if
    `start`, starts an agent on every host and waits until all are in the ring."""
    ctx.tracker.stop()
    ctx.tracker.start(os.path.join(ctx.log_dir, "tracker-%s.log" % scenario))
    ctx.tracker.wait_agents(0)
    sdir = os.path.join(ctx.args.work, scenario)
    cache_bytes = 2 * ctx.size + (1 << 30)
    agents = [shoalctl.Agent(ctx.shoal, ctx.tracker, h, "%s-%s" % (scenario, h.name), sdir, cache_bytes) for h in hosts]
    if start:
        for a in agents:
            a.start()
        for a in agents:
            a.wait_registered()
        ctx.tracker.wait_agents(len(agents))
    return agents


def _wait_clients(procs_by_node, deadline):
    """Waits for every client process; kills those still running at `deadline`."""
    for p in procs_by_node.values():
        remaining = deadline - time.monotonic()
        try:
            p.wait(max(0.1, remaining))
        except subprocess.TimeoutExpired:
            p.signal(signal.SIGKILL)
            p.wait(10)


def _same_files(ctx, folder):
    for rel, size in ctx.files.items():
        path = os.path.join(folder, rel)
        try:
            if os.path.getsize(path) != size:
                return False
        except OSError:
            return False
        if subprocess.run(["cmp", "-s", os.path.join(ctx.checkpoint, rel), path]).returncode != 0:
            return False
    return True


class _Run:
    """Bookkeeping of one scenario: its window, samples and per-node records."""

    def __init__(self, ctx, name):
        self.ctx = ctx
        self.name = name
        self.sampler = probes.Sampler()
        self.nodes = {}        # host name -> record
        self.extra = {}
        self.load_before = os.getloadavg()[0]
        self.busy_before = probes.machine_busy(3.0)
        self.rgw0, self.tx0, self.retrans0 = _origin_counts(ctx)
        for i, pid in enumerate(ctx.origin.pids()):
            self.sampler.watch("ceph-%d" % i, pid)
        if ctx.tracker.process:
            self.sampler.watch("tracker", ctx.tracker.process.pid)
        self.sampler.start()
        self.t0 = time.monotonic()
        self.timeline = Timeline(ctx.topo.hosts["origin"].ns, [h.ns for h in ctx.nodes], self.t0)
        self.timeline.start()
        self.pressure0 = probes.cpu_pressure_us()

    def finish(self, agents=()):
        """Ends the window; collects agent counters (agents still running)."""
        ends = [r["end"] for r in self.nodes.values() if r.get("end") is not None]
        self.t1 = max(ends) if ends else time.monotonic()
        self.sampler.stop()
        self.timeline.stop()
        self.pressure1 = probes.cpu_pressure_us()
        for i, h in enumerate(self.ctx.nodes):
            rec = self.nodes.get(h.name)
            if rec is None or rec.get("start") is None or rec.get("end") is None:
                continue
            t = self.timeline.last_byte(i, rec["end"] - self.t0)
            if t is not None:
                rec["last_byte_s"] = max(0.0, t - rec["start"])
        for a in agents:
            rec = self.nodes[a.host.name]
            if a.process.poll() is None:
                m = a.metrics()
                rec["agent_origin_bytes"] = m.get("shoal_agent_origin_bytes_total", 0)
                rec["agent_peer_bytes_in"] = m.get('shoal_agent_peer_bytes_total{direction="in"}', 0)
                rec["agent_peer_bytes_out"] = m.get('shoal_agent_peer_bytes_total{direction="out"}', 0)
                rec["owner_fetches"] = m.get('shoal_agent_origin_fetches_total{reason="owner"}', 0)
                rec["takeover_fetches"] = m.get('shoal_agent_origin_fetches_total{reason="takeover"}', 0)
                # Replica orders (the tracker's --replicas): chunks copied, and
                # the connections they asked for to the chunks' owners above.
                rec["replica_chunks"] = m.get("shoal_agent_replica_chunks_total", 0)
                rec["replica_owner_connects"] = m.get("shoal_agent_replica_owner_connects_total", 0)
                rec["hand_on_holds"] = m.get("shoal_agent_hand_on_holds_total", 0)
                rec["hand_on_handed"] = m.get("shoal_agent_hand_on_handed_total", 0)
                rec["hand_on_requests_kept"] = m.get("shoal_agent_hand_on_requests_kept_total", 0)
                # The S3 client's own view: requests and body bytes, retries included.
                rec["origin_get_requests"] = m.get('shoal_origin_requests_total{op="get"}', 0)
                rec["origin_get_bytes"] = m.get('shoal_origin_bytes_total{op="get"}', 0)
            cpu, rss = self.sampler.used(a.name)
            rec["cpu_s"] = cpu
            rec["peak_rss"] = rss
        # The tracker is started afresh for each scenario, so its counters are this run's.
        if self.ctx.tracker.process and self.ctx.tracker.process.poll() is None:
            m = self.ctx.tracker.metrics()
            self.extra["tracker"] = {
                "owner_fetches": m.get('shoal_tracker_origin_fetches_total{reason="owner"}', 0),
                "takeover_fetches": m.get('shoal_tracker_origin_fetches_total{reason="takeover"}', 0),
                "takeovers": m.get("shoal_tracker_takeovers_total", 0),
                "order_failures": m.get("shoal_tracker_fetch_order_failures_total", 0),
                "takeover_timeout_s": m.get("shoal_tracker_takeover_timeout_seconds", 0),
                "replica_orders": m.get("shoal_tracker_replica_orders_total", 0),
            }

    def result(self):
        ctx = self.ctx
        rgw1, tx1, retrans1 = _origin_counts(ctx)
        busy = self.sampler.busy_between(self.t0, self.t1)
        ceph = sum(self.sampler.used(n)[0] for n in self.sampler.procs if n.startswith("ceph-"))
        tracker = self.sampler.used("tracker")[0] if "tracker" in self.sampler.procs else 0.0
        clients = sum(r.get("cpu_s", 0.0) for r in self.nodes.values())
        return {
            "name": self.name,
            "title": TITLES[self.name],
            "nodes": self.nodes,
            "window_s": self.t1 - self.t0,
            "origin_rgw_bytes": rgw1 - self.rgw0,
            "origin_wire_bytes": tx1 - self.tx0,
            "origin_tcp_retransmits": retrans1 - self.retrans0,
            "machine_busy_mean": sum(b for b, _ in busy) / len(busy) if busy else None,
            "machine_busy_max": max(b for b, _ in busy) if busy else None,
            # Interrupt-context work, here mostly the emulated network (veth, bridge, tbf).
            "machine_softirq_mean": sum(s for _, s in busy) / len(busy) if busy else None,
            "machine_busy_before": self.busy_before,
            "load_before": self.load_before,
            "ceph_cpu_s": ceph,
            "tracker_cpu_s": tracker,
            # Agents (or aws), Ceph and the tracker, as a share of all cores over
            # the window; the kernel's network work is not charged to them.
            "bench_busy": (clients + ceph + tracker) / ((self.t1 - self.t0) * os.cpu_count()),
            # Share of the window in which some runnable task waited for a core.
            "cpu_pressure": (self.pressure1 - self.pressure0) / 1e6 / (self.t1 - self.t0)
            if self.pressure0 is not None else None,
            "timeline": self.timeline.rows,
            "extra": self.extra,
        }


def _record_pull(run, agent):
    p = agent.pull
    rec = run.nodes[agent.host.name]
    rc = p.poll()
    rec["exit"] = rc
    rec["start"] = p.started - run.t0
    rec["end"] = p.ended
    rec["seconds"] = p.ended - p.started if rc == 0 else None
    if agent.killed_at is not None:
        rec["killed_at_s"] = agent.killed_at - run.t0
    elif rc != 0:
        rec["error"] = p.log_tail(3).strip()


def _finish_shoal(run, agents):
    ctx = run.ctx
    for a in agents:
        _record_pull(run, a)
    run.finish(agents)
    res_nodes = run.nodes
    for a in agents:
        a.stop()
    for a in agents:
        rec = res_nodes[a.host.name]
        if rec["exit"] == 0:
            rec["identical"] = _same_files(ctx, a.dest)
    for r in res_nodes.values():
        r.pop("end", None)
    result = run.result()
    for a in agents:  # the bytes go; the logs stay (with --keep)
        for d in ("cache", "model"):
            shutil.rmtree(os.path.join(a.dir, d), ignore_errors=True)
    return result


def _pull_all(run, agents):
    for a in agents:
        run.nodes.setdefault(a.host.name, {})
        a.start_pull(run.ctx.ref)


def cold(ctx):
    agents = _fresh_cluster(ctx, "cold", ctx.nodes)
    run = _Run(ctx, "cold")
    for a in agents:
        run.sampler.watch(a.name, a.process.pid)
    _pull_all(run, agents)
    _wait_clients({a.host.name: a.pull for a in agents}, run.t0 + 6 * ctx.t_lb + 120)
    return _finish_shoal(run, agents)


def kills(ctx):
    agents = _fresh_cluster(ctx, "kills", ctx.nodes)
    run = _Run(ctx, "kills")
    for a in agents:
        run.sampler.watch(a.name, a.process.pid)
    count = max(1, round(ctx.args.kill_fraction * len(agents)))
    victims = random.Random(ctx.args.seed).sample(agents, count)
    kill_at = run.t0 + ctx.args.kill_at * ctx.t_lb
    run.extra.update(killed=[v.host.name for v in victims], kill_at_s=ctx.args.kill_at * ctx.t_lb)
    _pull_all(run, agents)
    time.sleep(max(0.0, kill_at - time.monotonic()))
    for v in victims:
        run.sampler.sample_now()
        v.killed_at = time.monotonic()
        v.process.signal(signal.SIGKILL)
    ctx.log("killed %s at %.1f s" % (", ".join(v.host.name for v in victims), kill_at - run.t0))
    _wait_clients({a.host.name: a.pull for a in agents}, run.t0 + 6 * ctx.t_lb + 120)
    return _finish_shoal(run, agents)


def staggered(ctx):
    agents = _fresh_cluster(ctx, "staggered", ctx.nodes, start=False)
    run = _Run(ctx, "staggered")
    spread = ctx.args.stagger_s if ctx.args.stagger_s is not None else ctx.t_lb / 2
    gap = spread / max(1, len(agents) - 1)
    run.extra.update(arrival_gap_s=gap, arrival_spread_s=spread)
    errors = []

    def arrive(i, a):
        try:
            time.sleep(max(0.0, run.t0 + i * gap - time.monotonic()))
            run.nodes[a.host.name] = {"arrival_s": time.monotonic() - run.t0}
            a.start()
            run.sampler.watch(a.name, a.process.pid)
            a.wait_registered()
            run.nodes[a.host.name]["registered_s"] = time.monotonic() - run.t0
            a.start_pull(ctx.ref)
        except Exception as e:  # reported below; the other arrivals go on
            errors.append("%s: %s" % (a.name, e))

    threads = [threading.Thread(target=arrive, args=(i, a), daemon=True) for i, a in enumerate(agents)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(spread + 120)
    if errors:
        raise RuntimeError("staggered arrivals failed: " + "; ".join(errors))
    _wait_clients({a.host.name: a.pull for a in agents}, run.t0 + spread + 6 * ctx.t_lb + 120)
    return _finish_shoal(run, agents)


def warm(ctx):
    agents = _fresh_cluster(ctx, "warm", ctx.nodes)
    run = _Run(ctx, "warm")
    for a in agents:
        run.sampler.watch(a.name, a.process.pid)
    rc = shoalctl.warm(ctx.shoal, ctx.tracker, ctx.ref, os.path.join(ctx.log_dir, "warm.log"))
    warm_s = time.monotonic() - run.t0
    rgw, tx, _ = _origin_counts(ctx)
    run.extra.update(warm_exit=rc, warm_s=warm_s, warm_rgw_bytes=rgw - run.rgw0, warm_wire_bytes=tx - run.tx0)
    ctx.log("warm took %.1f s (exit %d)" % (warm_s, rc))
    for a in agents:  # what each node already holds when its pod pulls: the chunks it owns
        run.nodes[a.host.name] = {"cached_at_pull_bytes": a.metrics().get("shoal_agent_cache_bytes", 0)}
    _pull_all(run, agents)
    _wait_clients({a.host.name: a.pull for a in agents}, time.monotonic() + 6 * ctx.t_lb + 120)
    return _finish_shoal(run, agents)


def direct(ctx):
    """Every node downloads the checkpoint from radosgw with Debian's awscli."""
    ctx.tracker.stop()  # no Shoal process runs while the baseline does
    sdir = os.path.join(ctx.args.work, "direct")
    run = _Run(ctx, "direct")
    clients = {}
    for h in ctx.nodes:
        d = os.path.join(sdir, h.name)
        os.makedirs(d, exist_ok=True)
        run.nodes[h.name] = {}
        argv = ["/usr/bin/time", "-o", os.path.join(d, "time"), "-f", "%e %U %S %M",
                "/usr/bin/aws", "--endpoint-url", ctx.origin.endpoint, "s3", "cp", "--recursive",
                "--only-show-errors", "s3://%s/direct/" % ctx.origin.bucket, os.path.join(d, "model")]
        clients[h.name] = procs.Process("aws-" + h.name, h.ns, argv, os.path.join(d, "aws.log"),
                                        env=ctx.shoal.env())
    _wait_clients(clients, run.t0 + 3 * max(ctx.t_origin, ctx.t_lb) + 120)
    for name, p in clients.items():
        rec = run.nodes[name]
        rc = p.poll()
        rec.update(exit=rc, start=p.started - run.t0, end=p.ended, seconds=p.ended - p.started if rc == 0 else None)
        try:
            with open(os.path.join(sdir, name, "time")) as f:
                _, user, system, rss_kib = f.read().split()[-4:]
            rec["cpu_s"] = float(user) + float(system)
            rec["peak_rss"] = int(rss_kib) * 1024
        except (OSError, ValueError):
            pass
        if rc != 0:
            rec["error"] = p.log_tail(3).strip()
    run.finish()
    for name, rec in run.nodes.items():
        if rec["exit"] == 0:
            rec["identical"] = _same_files(ctx, os.path.join(sdir, name, "model"))
        rec.pop("end", None)
    result = run.result()
    for name in run.nodes:
        shutil.rmtree(os.path.join(sdir, name, "model"), ignore_errors=True)
    return result


RUNNERS = {"cold": cold, "staggered": staggered, "kills": kills, "warm": warm, "direct": direct}
