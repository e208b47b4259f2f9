#!/usr/bin/python3
"""The cluster benchmark: N Shoal agents and a radosgw origin on one machine,
in network namespaces shaped with tc, against every node downloading from S3
directly. Run it through cluster_bench.sh, which bounds it in time and sweeps
the namespaces whatever happens; `--help` lists the knobs.
"""
import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cluster import checkpoint, procs, report, scenarios, topology  # noqa: E402
from cluster import origin as originmod  # noqa: E402
from cluster import shoal as shoalctl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ALL = ["cold", "staggered", "kills", "warm", "direct"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", help="the CMake build folder (its bin/ holds shoal, shoald, shoal-tracker)")
    p.add_argument("--from-json", help="only write the table and plots again from this run's JSON (no root needed)")
    p.add_argument("--nodes", type=int, default=8, help="N, the number of nodes (at most 16 here)")
    p.add_argument("--size-mib", type=int, default=1024, help="S, the checkpoint size in MiB")
    p.add_argument("--shards", type=int, default=4, help="safetensors shards in the checkpoint")
    p.add_argument("--node-mbit", type=float, default=100, help="B, each node's bandwidth each way, Mbit/s")
    p.add_argument("--origin-mbit", type=float, default=400, help="B_o, the origin's outgoing bandwidth, Mbit/s")
    p.add_argument("--rtt-ms", type=float, default=0, help="round-trip latency between hosts (needs netem)")
    p.add_argument("--mtu", type=int, default=9000, help="MTU of every veth and the bridge (jumbo frames, as on "
                   "most GPU clusters; 1500 doubles the kernel's per-packet work here)")
    p.add_argument("--piece-size", type=int, default=None, help="bytes per chunk for publish (default: shoal's)")
    p.add_argument("--replicas", type=int, default=1, help="the tracker's owners per chunk (--replicas)")
    p.add_argument("--tracker-flags", default="",
                   help="more flags for shoal-tracker serve, e.g. '--no-pace-fetches-per-agent'")
    p.add_argument("--hand-on-owners", type=int, default=0, help="the agents' --hand-on-owners (0: off)")
    p.add_argument("--hand-on-hold-ms", type=int, default=None, help="the agents' --hand-on-hold-ms (default: theirs)")
    p.add_argument("--scenarios", default=",".join(ALL), help="comma-separated subset of " + ",".join(ALL))
    p.add_argument("--kill-fraction", type=float, default=0.2, help="share of agents SIGKILLed in 'kills'")
    p.add_argument("--kill-at", type=float, default=0.4, help="when to kill them, as a multiple of T_LB")
    p.add_argument("--stagger-s", type=float, default=None, help="arrivals spread over this many seconds "
                   "(default T_LB / 2)")
    p.add_argument("--seed", type=int, default=9, help="chooses the agents to kill")
    p.add_argument("--out", default="cluster-bench-out", help="where the JSON, markdown and PNG go")
    p.add_argument("--work", default=None, help="working folder (default: a new one under /var/tmp)")
    p.add_argument("--prefix", default="shoalbench%d" % os.getpid(), help="name prefix of the namespaces")
    p.add_argument("--keep", action="store_true", help="keep the working folder")
    p.add_argument("--note", default="", help="free text stored in the JSON (e.g. what else ran on the machine)")
    a = p.parse_args(argv)
    if not a.build_dir and not a.from_json:
        p.error("--build-dir is required")
    a.scenarios = [s.strip() for s in a.scenarios.split(",") if s.strip()]
    for s in a.scenarios:
        if s not in ALL:
            p.error("unknown scenario %r" % s)
    if not 1 <= a.nodes <= 16:
        p.error("--nodes must be 1 to 16 (16 agents is what two cores can carry)")
    if not 0 < a.kill_fraction < 1:
        p.error("--kill-fraction must be between 0 and 1")
    a.node_bit = a.node_mbit * 1e6
    a.origin_bit = a.origin_mbit * 1e6
    return a


def _interrupt(signum, _frame):
    raise SystemExit("cluster_bench: stopped by signal %d" % signum)


def machine_facts():
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) * 1024
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"cpu": model, "cores": os.cpu_count(), "memory_bytes": mem, "kernel": platform.release(),
            "loadavg_at_start": os.getloadavg(), "commit": commit,
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def setup(args, topo, cleanups, log):
    """Network, origin, tracker, checkpoint, publish, direct-S3 copy; returns the
    scenario context. Appends to `cleanups` what must be stopped at the end."""
    work = args.work
    ckpt = os.path.join(work, "ckpt")
    log("generating a %d MiB checkpoint in %d shards" % (args.size_mib, args.shards))
    files = checkpoint.generate(ckpt, args.size_mib << 20, args.shards)
    size = sum(files.values())

    log("building the network (%d nodes, B = %g Mbit/s, B_o = %g Mbit/s)" % (args.nodes, args.node_mbit, args.origin_mbit))
    topo.create()
    origin_host = topo.add_host("origin", "10.77.0.2", up_bit=args.origin_bit)
    tracker_host = topo.add_host("tracker", "10.77.0.3")
    nodes = [topo.add_host("node%d" % i, "10.77.1.%d" % i, up_bit=args.node_bit, down_bit=args.node_bit)
             for i in range(1, args.nodes + 1)]

    log("starting radosgw in %s" % origin_host.ns)
    origin = originmod.RadosgwOrigin(origin_host, os.path.join(HERE, "..", "s3", "radosgw.sh"),
                                     os.path.join(work, "rgw"), 2 * size + (1 << 30))
    cleanups.append(origin.stop)
    origin.start()

    shoal = shoalctl.Shoal(os.path.join(args.build_dir, "bin"), origin, "shoal", work)
    if args.hand_on_owners:
        shoal.agent_flags = ["--hand-on-owners", str(args.hand_on_owners)]
        if args.hand_on_hold_ms is not None:
            shoal.agent_flags += ["--hand-on-hold-ms", str(args.hand_on_hold_ms)]
    tracker = shoalctl.Tracker(shoal, tracker_host,
                               ["--replicas", str(args.replicas)] + shlex.split(args.tracker_flags))
    cleanups.append(tracker.stop)
    shoal.tokens["writer"] = tracker.token("bench", "write", "publisher")
    shoal.tokens["reader"] = tracker.token("bench", "read", "pods")
    shoal.tokens["agent"] = tracker.token("*", "read", "agents")
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    tracker.start(os.path.join(logs, "tracker-publish.log"))

    log("shoal publish (from the tracker's namespace, no agent seeding)")
    t = time.monotonic()
    shoalctl.publish(shoal, tracker, ckpt, "bench/ckpt", "latest", os.path.join(logs, "publish.log"),
                     piece_size=args.piece_size)
    log("published in %.1f s" % (time.monotonic() - t))
    if "direct" in args.scenarios:
        log("aws s3 cp --recursive of the same folder, for the direct-S3 baseline")
        procs.run(["/usr/bin/aws", "--endpoint-url", origin.endpoint, "s3", "cp", "--recursive", "--only-show-errors",
                   ckpt, "s3://%s/direct/" % origin.bucket], ns=tracker_host.ns, env=shoal.env(), timeout=900)
    return scenarios.Context(args, topo, origin, shoal, tracker, nodes, ckpt, files, "bench/ckpt:latest", logs)


def reproduce_command(argv):
    """The wrapper's command line for this run, without the flags the wrapper adds."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--build-dir", "--prefix"):
            skip = True
        elif not a.startswith(("--build-dir=", "--prefix=")):
            out.append(a)
    return shlex.join(["tests/perf/cluster_bench.sh", "build"] + out)


def main(argv):
    args = parse_args(argv)
    if args.from_json:
        with open(args.from_json) as f:
            print(report.write(json.load(f), os.path.abspath(args.out)))
        return
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _interrupt)
    args.build_dir = os.path.abspath(args.build_dir)
    for b in ("shoal", "shoald", "shoal-tracker"):
        if not os.access(os.path.join(args.build_dir, "bin", b), os.X_OK):
            sys.exit("cluster_bench: %s/bin/%s missing; build first" % (args.build_dir, b))
    args.work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="shoal-cluster-bench.", dir="/var/tmp"))
    os.makedirs(args.work, exist_ok=True)
    out = os.path.abspath(args.out)
    facts = machine_facts()
    topo = topology.Topology(args.prefix, mtu=args.mtu, rtt_ms=args.rtt_ms)
    cleanups = []

    def log(msg):
        print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)

    results = []
    started = time.monotonic()
    try:
        ctx = setup(args, topo, cleanups, log)
        log("T_LB = S/B = %.1f s; N S / B_o = %.1f s" % (ctx.t_lb, ctx.t_origin))
        for name in args.scenarios:
            log("scenario %s" % name)
            r = scenarios.RUNNERS[name](ctx)
            s = report.summarize(r, ctx.size, ctx.t_lb, ctx.t_origin)
            results.append(r)
            log("  %s: %d/%d done, p50 %s s, p99 %s s, max %s s; origin egress %.3f x S (radosgw), %.3f x (wire); "
                "CPU %.0f %% mean" % (name, s["completed"], s["nodes"], report._f(s["p50_s"], "%.1f"),
                                      report._f(s["p99_s"], "%.1f"), report._f(s["max_s"], "%.1f"), s["egress_rgw"],
                                      s["egress_wire"], 100 * (r["machine_busy_mean"] or 0)))
        config = {
            "nodes": args.nodes, "size_bytes": ctx.size, "size_mib": args.size_mib, "files": len(ctx.files),
            "shards": args.shards, "file_sizes": ctx.files, "node_mbit": args.node_mbit,
            "origin_mbit": args.origin_mbit, "rtt_ms": args.rtt_ms, "mtu": args.mtu,
            "piece_size": args.piece_size or "shoal's default (16 MiB)", "t_lb_s": ctx.t_lb,
            "t_origin_s": ctx.t_origin, "kill_fraction": args.kill_fraction, "kill_at_t_lb": args.kill_at,
            "seed": args.seed, "note": args.note, "replicas": args.replicas,
            "tracker_flags": args.tracker_flags, "hand_on_owners": args.hand_on_owners,
            "hand_on_hold_ms": args.hand_on_hold_ms,
            "command": reproduce_command(argv),
        }
        rep = {"config": config, "machine": facts, "scenarios": results,
               "goals": report.goals(results, args.nodes, ctx.t_lb, ctx.t_origin),
               "run_minutes": (time.monotonic() - started) / 60}
        md = report.write(rep, out)
        print()
        print(md)
        log("wrote %s/cluster-bench.{json,png} and cluster-bench-table.md" % out)
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # cleanup runs to the end; the wrapper bounds it
        log("cleaning up")
        for stop in reversed(cleanups):
            try:
                stop()
            except Exception as e:  # the namespace sweep below still stops it
                log("cleanup: %s" % e)
        topo.teardown()
        if args.keep:
            log("kept %s" % args.work)
        else:
            shutil.rmtree(args.work, ignore_errors=True)
        log("done in %.1f min" % ((time.monotonic() - started) / 60))


if __name__ == "__main__":
    main(sys.argv[1:])
