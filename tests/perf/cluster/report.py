"""Figures from the scenarios' records: statistics, goals, JSON, a markdown
fragment, and a PNG of completion-time CDFs (gnuplot)."""
import json
import os
import subprocess

GIB = 1 << 30
MIB = 1 << 20

# The goals; each is checked against the measured figure, never tuned.
EGRESS_COLD_MAX = 1.02
EGRESS_KILLS_MAX = 1.10
P99_OVER_TLB_MAX = 1.3


def percentile(values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    v = sorted(values)
    if not v:
        return None
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(result, size, t_lb, t_origin):
    """Adds the derived figures to one scenario's result, in place."""
    nodes = result["nodes"].values()
    done = [n["seconds"] for n in nodes if n.get("seconds") is not None]
    last = [n["last_byte_s"] for n in nodes if n.get("seconds") is not None and n.get("last_byte_s") is not None]
    s = {
        "completed": len(done),
        "nodes": len(result["nodes"]),
        "killed": sum(1 for n in nodes if "killed_at_s" in n),
        "failed": sum(1 for n in nodes if n.get("seconds") is None and "killed_at_s" not in n),
        "identical": sum(1 for n in nodes if n.get("identical")),
        "p50_s": percentile(done, 0.5),
        "p99_s": percentile(done, 0.99),
        "max_s": max(done) if done else None,
        # When the network part ended: the node's eth0 stopped receiving (1 s samples).
        "p99_last_byte_s": percentile(last, 0.99),
        "egress_rgw": result["origin_rgw_bytes"] / size,
        "egress_wire": result["origin_wire_bytes"] / size,
    }
    s["p99_last_byte_over_tlb"] = s["p99_last_byte_s"] / t_lb if s["p99_last_byte_s"] is not None else None
    for k in ("p50", "p99", "max"):
        v = s[k + "_s"]
        s[k + "_over_tlb"] = v / t_lb if v is not None else None
        s[k + "_over_origin_bound"] = v / t_origin if v is not None else None
    # The agents' S3 clients' own count of GET body bytes (shoal_origin_bytes_total{op="get"}).
    # shoal_agent_origin_bytes_total is kept in the JSON but not used: it also counts
    # queued fetches that found the chunk already delivered by a peer.
    agent_origin = [n["origin_get_bytes"] for n in nodes if "origin_get_bytes" in n]
    s["egress_agents"] = sum(agent_origin) / size if agent_origin else None
    s["egress_agents_note"] = ("killed agents not counted" if s["killed"] else None) if agent_origin else None
    cpu = [n["cpu_s"] for n in nodes if "cpu_s" in n]
    rss = [n["peak_rss"] for n in nodes if n.get("peak_rss")]
    s["client_cpu_s_mean"] = sum(cpu) / len(cpu) if cpu else None
    s["client_cpu_s_total"] = sum(cpu) if cpu else None
    delivered = len(done) * size / GIB
    s["client_cpu_s_per_gib"] = sum(cpu) / delivered if cpu and delivered else None
    s["client_peak_rss_max"] = max(rss) if rss else None
    s["client_peak_rss_mean"] = sum(rss) / len(rss) if rss else None
    result["summary"] = s
    return s


def goals(results, n, t_lb, t_origin):
    """[(goal, measured, met)] for the goals the scenarios that ran can answer."""
    by = {r["name"]: r["summary"] for r in results}
    out = []
    if "cold" in by:
        c = by["cold"]
        out.append(("origin egress, cold, at most %.2f x S (radosgw)" % EGRESS_COLD_MAX,
                    "%.3f" % c["egress_rgw"], c["egress_rgw"] <= EGRESS_COLD_MAX))
        if c["p99_over_tlb"] is not None:
            out.append(("p99 completion, cold, N = %d, at most %.1f x T_LB" % (n, P99_OVER_TLB_MAX),
                        "%.2f x (%.1f s)" % (c["p99_over_tlb"], c["p99_s"]), c["p99_over_tlb"] <= P99_OVER_TLB_MAX))
    if "kills" in by:
        k = by["kills"]
        out.append(("origin egress with kills, at most %.2f x S (radosgw)" % EGRESS_KILLS_MAX,
                    "%.3f" % k["egress_rgw"], k["egress_rgw"] <= EGRESS_KILLS_MAX))
    if "direct" in by and by["direct"]["max_s"] is not None:
        d = by["direct"]
        out.append(("direct S3 grows as N S / B_o (max / (N S / B_o) near 1)",
                    "%.2f (%.1f s against %.1f s)" % (d["max_over_origin_bound"], d["max_s"], t_origin), None))
    return out


def _f(v, fmt):
    return "-" if v is None else fmt % v


def markdown(report):
    c = report["config"]
    lines = [
        "N = %d nodes, S = %.2f GiB in %d files (%d shards), B = %d Mbit/s per node each way, "
        "B_o = %d Mbit/s out of the origin, RTT %s, MTU %d, piece size %s, %d owner(s) per chunk."
        % (c["nodes"], c["size_bytes"] / GIB, c["files"], c["shards"], c["node_mbit"], c["origin_mbit"],
           "%.1f ms" % c["rtt_ms"] if c["rtt_ms"] else "under 0.1 ms (no netem)", c["mtu"], c["piece_size"],
           c.get("replicas", 1)),
        "T_LB = S/B = %.1f s; origin-only bound N S / B_o = %.1f s." % (c["t_lb_s"], c["t_origin_s"]),
        "",
        "| scenario | done | p50 | p99 | max | p99 / T_LB | max / T_LB | p99 / (N S / B_o) | "
        "p99 to last byte received |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["scenarios"]:
        s = r["summary"]
        done = "%d/%d" % (s["completed"], s["nodes"])
        if s["killed"]:
            done += " (%d killed)" % s["killed"]
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["title"], done, _f(s["p50_s"], "%.1f s"), _f(s["p99_s"], "%.1f s"), _f(s["max_s"], "%.1f s"),
            _f(s["p99_over_tlb"], "%.2f"), _f(s["max_over_tlb"], "%.2f"), _f(s["p99_over_origin_bound"], "%.2f"),
            "-" if s["p99_last_byte_s"] is None else "%.0f s (%.2f T_LB)" % (s["p99_last_byte_s"],
                                                                          s["p99_last_byte_over_tlb"])))
    lines += [
        "",
        "| scenario | origin egress / S: radosgw log | origin eth0 tx | agents' S3 clients | "
        "origin TCP retransmits | tracker: owner fetches, takeovers (failed orders), timeout at the end |",
        "|---|---|---|---|---|---|",
    ]
    for r in report["scenarios"]:
        s = r["summary"]
        agents = _f(s["egress_agents"], "%.3f")
        if s["egress_agents_note"]:
            agents += " (%s)" % s["egress_agents_note"]
        t = r["extra"].get("tracker")
        tracker = "-" if t is None else "%d, %d (%d), %.1f s" % (t["owner_fetches"], t["takeovers"], t["order_failures"],
                                                                 t["takeover_timeout_s"])
        lines.append("| %s | %.3f | %.3f | %s | %d | %s |" % (r["title"], s["egress_rgw"], s["egress_wire"], agents,
                                                            r["origin_tcp_retransmits"], tracker))
    lines += [
        "",
        "| scenario | machine CPU, mean (max) | benchmark's processes | softirq | before the run | "
        "CPU pressure | client CPU per node | per GiB delivered | client peak RSS, max | Ceph CPU |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["scenarios"]:
        s = r["summary"]
        busy = "%.0f %% (%.0f %%)" % (100 * r["machine_busy_mean"], 100 * r["machine_busy_max"]) \
            if r["machine_busy_mean"] is not None else "-"
        lines.append("| %s | %s | %.0f %% | %s | %.0f %% | %s | %s | %s | %s | %.1f core-s |" % (
            r["title"], busy, 100 * r["bench_busy"], _f(r.get("machine_softirq_mean") and
                                                         100 * r["machine_softirq_mean"], "%.0f %%"),
            100 * r["machine_busy_before"],
            _f(r["cpu_pressure"] and 100 * r["cpu_pressure"], "%.0f %%"),
            _f(s["client_cpu_s_mean"], "%.1f core-s"),
            _f(s["client_cpu_s_per_gib"], "%.2f core-s"),
            _f(s["client_peak_rss_max"] and s["client_peak_rss_max"] / MIB, "%.0f MiB"), r["ceph_cpu_s"]))
    extra = [r for r in report["scenarios"] if r["name"] == "warm" and "warm_s" in r["extra"]]
    if extra:
        e = extra[0]["extra"]
        lines += ["", "`shoal warm` took %.1f s and read %.3f x S from the origin (radosgw; %.3f x on the wire); "
                  "the pulls' times above start after it." % (e["warm_s"], e["warm_rgw_bytes"] / c["size_bytes"],
                                                               e["warm_wire_bytes"] / c["size_bytes"])]
    lines += ["", "| goal | measured | met |", "|---|---|---|"]
    for goal, measured, met in report["goals"]:
        lines.append("| %s | %s | %s |" % (goal, measured, "-" if met is None else ("yes" if met else "**no**")))
    return "\n".join(lines) + "\n"


def plot(report, png_path, data_dir):
    """Completion-time CDFs, one line per scenario, with T_LB and N S / B_o marked."""
    c = report["config"]
    series = []
    for r in report["scenarios"]:
        times = sorted(n["seconds"] for n in r["nodes"].values() if n.get("seconds") is not None)
        if not times:
            continue
        path = os.path.join(data_dir, "cdf-%s.dat" % r["name"])
        with open(path, "w") as f:
            f.write("0 0\n")
            for i, t in enumerate(times, 1):
                f.write("%.3f %.4f\n" % (t, i / len(r["nodes"])))
        label = ("direct S3 (aws s3 cp)" if r["name"] == "direct" else "Shoal: " + r["name"])
        series.append("'%s' using 1:2 with steps lw 2 title '%s'" % (path, label))
    xmax = 1.1 * max([c["t_origin_s"], c["t_lb_s"]] + [r["summary"]["max_s"] or 0 for r in report["scenarios"]])
    script = "\n".join([
        "set terminal pngcairo size 960,560 font 'DejaVu Sans,11'",
        "set output '%s'" % png_path,
        "set title 'Completion time per node: N = %d, S = %.2f GiB, B = %d Mbit/s, B_o = %d Mbit/s'"
        % (c["nodes"], c["size_bytes"] / GIB, c["node_mbit"], c["origin_mbit"]),
        "set xlabel 'seconds from the start of the node''s client'",
        "set ylabel 'fraction of the N nodes done'",
        "set key below horizontal",
        "set grid",
        "set xrange [0:%f]" % xmax,
        "set yrange [0:1.12]",
        "set arrow from %f,0 to %f,1.05 nohead dt 2 lc rgb 'gray30'" % (c["t_lb_s"], c["t_lb_s"]),
        "set label 'T_{LB} = S/B' at %f,1.08 center" % c["t_lb_s"],
        "set arrow from %f,0 to %f,1.05 nohead dt 2 lc rgb 'gray30'" % (c["t_origin_s"], c["t_origin_s"]),
        "set label 'N S / B_o' at %f,1.08 center" % c["t_origin_s"],
        "plot " + ", \\\n  ".join(series),
    ])
    script_path = os.path.join(data_dir, "cdf.gp")
    with open(script_path, "w") as f:
        f.write(script + "\n")
    subprocess.run(["gnuplot", script_path], check=True, capture_output=True)


def plot_timeline(report, png_path, data_dir):
    """Bytes over time per scenario: received by all nodes (share of N S) and
    sent by the origin (multiples of S), from the kernel's interface counters."""
    c = report["config"]
    total = c["nodes"] * c["size_bytes"]
    top, bottom = [], []
    for r in report["scenarios"]:
        if not r.get("timeline"):
            continue
        path = os.path.join(data_dir, "timeline-%s.dat" % r["name"])
        with open(path, "w") as f:
            for t, tx, rx, _ in r["timeline"]:
                f.write("%.2f %.4f %.4f\n" % (t, rx / total, tx / c["size_bytes"]))
        label = "direct S3" if r["name"] == "direct" else "Shoal: " + r["name"]
        top.append("'%s' using 1:2 with lines lw 2 title '%s'" % (path, label))
        bottom.append("'%s' using 1:3 with lines lw 2 title '%s'" % (path, label))
    script = "\n".join([
        "set terminal pngcairo size 960,720 font 'DejaVu Sans,11'",
        "set output '%s'" % png_path,
        "set multiplot layout 2,1 title 'Bytes on the wire over time (eth0 counters), N = %d, S = %.2f GiB'"
        % (c["nodes"], c["size_bytes"] / GIB),
        "set grid",
        "set key top left",
        "set ylabel 'received by the nodes / (N S)'",
        "set arrow 1 from %f, graph 0 to %f, graph 1 nohead dt 2 lc rgb 'gray30'" % (c["t_lb_s"], c["t_lb_s"]),
        "plot " + ", \\\n  ".join(top),
        "set xlabel 'seconds from the start of the scenario'",
        "set ylabel 'sent by the origin / S'",
        "plot " + ", \\\n  ".join(bottom),
        "unset multiplot",
    ])
    script_path = os.path.join(data_dir, "timeline.gp")
    with open(script_path, "w") as f:
        f.write(script + "\n")
    subprocess.run(["gnuplot", script_path], check=True, capture_output=True)


def to_json(report):
    """Indented JSON, with each timeline sample on one line."""
    rows = {}
    copy = dict(report, scenarios=[])
    for r in report["scenarios"]:
        r = dict(r, timeline=list(r.get("timeline", [])))
        for i, row in enumerate(r["timeline"]):
            token = "@row%d@" % len(rows)
            rows[token] = json.dumps(row, separators=(",", ":"))
            r["timeline"][i] = token
        copy["scenarios"].append(r)
    text = json.dumps(copy, indent=2, sort_keys=True)
    for token, row in rows.items():
        text = text.replace('"%s"' % token, row, 1)
    return text + "\n"


def write(report, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "cluster-bench.json"), "w") as f:
        f.write(to_json(report))
    md = markdown(report)
    with open(os.path.join(out_dir, "cluster-bench-table.md"), "w") as f:
        f.write(md)
    data_dir = os.path.join(out_dir, "plot-data")
    os.makedirs(data_dir, exist_ok=True)
    plot(report, os.path.join(out_dir, "cluster-bench.png"), data_dir)
    plot_timeline(report, os.path.join(out_dir, "cluster-bench-timeline.png"), data_dir)
    return md
