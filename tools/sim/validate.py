#!/usr/bin/env python3
"""Runs shoal-sim with the settings of measured cluster benchmark runs and
prints measured against simulated figures as a markdown table.

For every scenario in each JSON file written by tests/perf/cluster_bench.py
(direct S3 is skipped: no Shoal runs in it), the simulator gets the run's
nodes, size, piece size, node and origin bandwidth, kill fraction and time,
arrival spread, and tracker replicas, and runs with several seeds. The
table gives p50 and p99 completion ÷ T_LB and origin egress ÷ model size
(radosgw's count), measured against the simulated mean and range, and
whether the mean is within the tolerance of issue 19: egress within 0.03,
p50 and p99 within 10 %. Runs of the same settings and scenario also get
one row of their measured mean. A measured p99 is followed, in brackets,
by its network part (p99 of each node's last byte received); the rest is
writing the files, which the simulator does not model.

    tools/sim/validate.py tests/perf/results/cluster-bench/run-n8-relay.json
    tools/sim/validate.py --seeds 30 --shape tests/perf/results/cluster-bench/handon-r1*.json
    tools/sim/validate.py --sim-arg=--link-efficiency=1 tests/perf/results/cluster-bench/run-n8-relay.json

--shape adds a second table: when the median node had received 10, 50 and
90 % of what it lacked at its start, and when the origin had sent half and
90 % of what it sent, all from the benchmark's 1 s counters (bytes on the
wire, as they arrive) and the simulation's samples of the same; and the
median node's mean receive rate ÷ B between its 10 and 90 % (below about
0.9 the run was short of CPU rather than of network).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

EGRESS_TOLERANCE = 0.03  # absolute, in model sizes
TIME_TOLERANCE = 0.10    # relative, of p50 and p99 ÷ T_LB
DEFAULT_PIECE = 16 << 20


def sim_flags(config, scenario):
    """shoal-sim flags for one scenario of a benchmark run."""
    piece = config.get("piece_size")
    piece = piece if isinstance(piece, int) else DEFAULT_PIECE
    flags = ["--nodes", config["nodes"],
             "--size-mib", config["size_bytes"] / 2 ** 20,
             "--piece-mib", piece / 2 ** 20,
             "--node-gbit", config["node_mbit"] / 1000,
             "--origin-gbit", config["origin_mbit"] / 1000,
             "--scenario", scenario["name"]]
    if scenario["name"] == "kills":
        flags += ["--kill-fraction", config.get("kill_fraction", 0.2),
                  "--kill-at-tlb", config.get("kill_at_t_lb", 0.4)]
    spread = scenario.get("extra", {}).get("arrival_spread_s")
    if scenario["name"] == "staggered" and spread:
        flags += ["--stagger-window-s", spread]
    # The tracker's --replicas R orders R - 1 next owners to copy each
    # delivered chunk; the agents connect to the owner (always, since
    # replica orders connect) and hold the piece for them with
    # --hand-on-owners.
    replicas = config.get("replicas") or 1
    if replicas > 1:
        flags += ["--hand-on", replicas - 1,
                  "--hand-on-owner", "only" if config.get("hand_on_owners") else "none"]
    return [str(f) for f in flags]


def simulate(sim, flags, seeds):
    """One shoal-sim run per seed; their JSON reports."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, seeds + 1):
            out = os.path.join(tmp, "run.json")
            argv = [sim] + flags + ["--seed", str(seed), "--out", out]
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode not in (0, 1):
                sys.exit("shoal-sim failed: %s\n%s" % (" ".join(argv), done.stderr))
            with open(out) as f:
                runs.append(json.load(f))
    return runs


def spread(values, fmt):
    """Mean (lowest–highest)."""
    mean = statistics.mean(values)
    if min(values) == max(values):
        return fmt % mean
    return (fmt + " (" + fmt + "–" + fmt + ")") % (mean, min(values), max(values))


def within(measured, simulated, absolute=None, relative=None):
    if absolute is not None:
        ok = abs(simulated - measured) <= absolute
    else:
        ok = abs(simulated / measured - 1) <= relative
    return "yes" if ok else "**no**"


def nodes_received(scenario):
    """For each node that completed and was not killed: its column in the
    timeline, its record, the bytes it had received before its pull started
    (a warm's chunks, which do not count) and what it received after."""
    rows = scenario["timeline"]
    names = sorted(scenario["nodes"], key=lambda n: int(n.replace("node", "")))
    for i, name in enumerate(names):
        rec = scenario["nodes"][name]
        if rec.get("killed_at_s") is not None or rec.get("seconds") is None:
            continue
        base = max([r[3][i] for r in rows if r[0] <= rec["start"]] or [0])
        yield i, rec, base, rows[-1][3][i] - base


def link_use(scenario, node_bytes_per_s):
    """The median node's mean receive rate ÷ B while it received 10 to 90 %
    of its bytes (on the wire, headers included)."""
    rows = scenario["timeline"]
    rates = []
    for i, rec, base, final in nodes_received(scenario):
        t10 = next(r[0] for r in rows if r[3][i] - base >= 0.1 * final)
        t90 = next(r[0] for r in rows if r[3][i] - base >= 0.9 * final)
        if t90 > t10:
            rates.append(0.8 * final / (t90 - t10) / node_bytes_per_s)
    return statistics.median(rates) if rates else None


def median_node_times(per_node, fractions):
    """For each fraction, the median over nodes of the time it was reached."""
    out = []
    for fr in fractions:
        times = [t[fr] for t in per_node if t.get(fr) is not None]
        out.append(statistics.median(times) if times else None)
    return out


def measured_shape(scenario, fractions):
    """From the 1 s timeline: per node (not killed) the time since its start
    at which it had received each fraction of its final bytes; the origin's
    time since t0 for half and 90 % of its final bytes on the wire."""
    rows = scenario["timeline"]
    per_node = []
    for i, rec, base, final in nodes_received(scenario):
        got = {}
        for fr in fractions:
            t = next((r[0] for r in rows if r[3][i] - base >= fr * final), None)
            got[fr] = None if t is None else t - rec["start"]
        per_node.append(got)
    if scenario["name"] == "warm":  # the origin sent the warm, not the pulls
        return median_node_times(per_node, fractions), [None, None]
    final = rows[-1][1]
    origin = [next(r[0] for r in rows if r[1] >= fr * final) for fr in (0.5, 0.9)]
    return median_node_times(per_node, fractions), origin


def simulated_shape(runs, fractions):
    """Mean over seeds of the same figures, from the simulated deciles."""
    nodes, origin = [], []
    for r in runs:
        per_node = [{fr: (n["deciles_s"][round(fr * 10) - 1] if len(n["deciles_s"]) >= round(fr * 10)
                          else None) for fr in fractions}
                    for n in r["nodes"] if not n["killed"] and n["done_s"] is not None]
        nodes.append(median_node_times(per_node, fractions))
        d = r["origin_deciles_s"]
        origin.append([d[4] if len(d) > 4 else None, d[8] if len(d) > 8 else None])
    mean = lambda xs: statistics.mean([x for x in xs if x is not None]) if any(
        x is not None for x in xs) else None
    return [mean(col) for col in zip(*nodes)], [mean(col) for col in zip(*origin)]


def group_row(scenario, config, measured, runs):
    """Runs of the same settings: the measured mean (lowest–highest)
    against the simulated mean."""
    cols = []
    for key, sim_key, tol in (("p50_over_tlb", "p50_tlb", None), ("p99_over_tlb", "p99_tlb", None),
                              ("egress_rgw", "origin_egress_ratio", EGRESS_TOLERANCE)):
        m = [r[key] for r in measured]
        s = [r["summary"][sim_key] + (r["summary"]["warm_origin_egress_ratio"]
                                      if scenario == "warm" and sim_key == "origin_egress_ratio" else 0)
             for r in runs]
        fmt = "%.3f" if tol else "%.2f"
        ok = within(statistics.mean(m), statistics.mean(s), absolute=tol,
                    relative=None if tol else TIME_TOLERANCE)
        cols.append("%s, %s | %s" % (spread(m, fmt), spread(s, fmt), ok))
    return "| mean of %d runs | B = %g Mbit/s | %s | %d | | %s |" % (
        len(measured), config["node_mbit"], scenario, config["nodes"], " | ".join(cols))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="cluster benchmark JSON files (tests/perf/results/cluster-bench/*.json)")
    p.add_argument("--sim", default="build/bin/shoal-sim", help="the shoal-sim binary")
    p.add_argument("--seeds", type=int, default=20, help="simulated runs per scenario, seeds 1 to this")
    p.add_argument("--sim-arg", action="append", default=[], help="an extra shoal-sim flag (repeatable)")
    p.add_argument("--shape", action="store_true", help="also compare progress over time")
    args = p.parse_args()

    table = ["| run | build | scenario | N | machine CPU | p50 ÷ T_LB: measured, simulated | within 10 % "
             "| p99 ÷ T_LB: measured (network part), simulated | within 10 % "
             "| origin ÷ model: measured, simulated | within 0.03 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    fractions = (0.1, 0.5, 0.9)
    shape = ["| run | scenario | node at 10 %: measured, simulated | 50 % | 90 % "
             "| origin sent half | 90 % | node link use, 10 to 90 % |", "|---|---|---|---|---|---|---|---|"]
    groups = {}  # identical settings and scenario: the measured runs, one simulation
    for path in args.runs:
        with open(path) as f:
            report = json.load(f)
        config, machine = report["config"], report.get("machine", {})
        build = "%s, %s" % (machine.get("commit", "?"), machine.get("date_utc", "?")[:10])
        name = os.path.splitext(os.path.basename(path))[0]
        for sc in report["scenarios"]:
            if sc["name"] == "direct":
                continue
            flags = sim_flags(config, sc) + args.sim_arg
            key = " ".join(flags + [str(config.get("hand_on_owners") or 0)])
            if key not in groups:
                groups[key] = (sc["name"], config, [],
                               simulate(args.sim, flags, args.seeds))
            runs = groups[key][3]
            m = sc["summary"]
            groups[key][2].append(m)
            p50 = [r["summary"]["p50_tlb"] for r in runs]
            p99 = [r["summary"]["p99_tlb"] for r in runs]
            # A warm's radosgw count covers the warm and the pulls.
            egress = [r["summary"]["origin_egress_ratio"] + (r["summary"]["warm_origin_egress_ratio"]
                                                              if sc["name"] == "warm" else 0)
                      for r in runs]
            net = m.get("p99_last_byte_over_tlb")
            cpu = sc.get("machine_busy_mean")
            table.append("| %s | %s | %s | %d | %s | %.2f, %s | %s | %.2f (%s), %s | %s | %.3f, %s | %s |" % (
                name, build, sc["name"], config["nodes"], "%.0f %%" % (100 * cpu) if cpu else "-",
                m["p50_over_tlb"], spread(p50, "%.2f"),
                within(m["p50_over_tlb"], statistics.mean(p50), relative=TIME_TOLERANCE),
                m["p99_over_tlb"], "%.2f" % net if net else "-", spread(p99, "%.2f"),
                within(m["p99_over_tlb"], statistics.mean(p99), relative=TIME_TOLERANCE),
                m["egress_rgw"], spread(egress, "%.3f"),
                within(m["egress_rgw"], statistics.mean(egress), absolute=EGRESS_TOLERANCE)))
            if args.shape and sc.get("timeline"):
                mn, mo = measured_shape(sc, fractions)
                sn, so = simulated_shape(runs, fractions)
                cell = lambda a, b: "%s, %s" % ("%.0f s" % a if a is not None else "-",
                                                "%.0f s" % b if b is not None else "-")
                use = link_use(sc, config["node_mbit"] * 1e6 / 8)
                shape.append("| %s | %s | %s | %s |" % (name, sc["name"], " | ".join(
                    cell(a, b) for a, b in list(zip(mn, sn)) + list(zip(mo, so))),
                    "%.2f B" % use if use else "-"))
    for scenario, config, measured, runs in groups.values():
        if len(measured) < 2:
            continue
        table.append(group_row(scenario, config, measured, runs))
    print("\n".join(table))
    if args.shape:
        print("\n" + "\n".join(shape))
    print("\nSimulated: mean (lowest–highest) of seeds 1 to %d%s." % (
        args.seeds, (", with " + " ".join(args.sim_arg)) if args.sim_arg else ""))


if __name__ == "__main__":
    main()
