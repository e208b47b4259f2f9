#!/usr/bin/python3
"""Checks that the operator documentation covers what the code exposes.

    check_docs.py SOURCE_DIR

- every Prometheus metric the daemons register is in docs/metrics.md, and
  every metric docs/metrics.md names exists;
- every metric the example Grafana dashboard queries exists;
- every RPC method in proto/*.capnp is in docs/api.md;
- every HTTP route the daemons register is in docs/api.md;
- every shoal and shoal-tracker subcommand, and every flag of the shoal CLI,
  is in docs/api.md;
- every relative link in docs/*.md and README.md points at a file that
  exists.

Then it plants an undocumented metric, route, method and flag in a copy of
the sources, and fails unless each is reported.
"""

import glob
import json
import os
import re
import shutil
import sys
import tempfile

METRIC_CALL = re.compile(r'(?:AddCounter|AddGauge|AddHistogram|\.counter|\.gauge|\.histogram|->counter|->gauge|->histogram)\(\s*"(shoal_[a-z0-9_:]+)"')
ROUTE = re.compile(r'Handle\(\s*"(GET|HEAD|PUT|POST|DELETE)",\s*"([^"]+)"')
CAPNP_INTERFACE = re.compile(r"^interface\s+(\w+)\s*\{(.*?)^\}", re.M | re.S)
CAPNP_METHOD = re.compile(r"^\s*(\w+)\s+@\d+\s*\(", re.M)
SUBCOMMAND = re.compile(r'add_subcommand\(\s*"([a-z-]+)"')
LONG_FLAG = re.compile(r'add_(?:option|flag)\(\s*"(--[a-z0-9-]+)"')
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def sources(src, *folders):
    out = []
    for folder in folders:
        for ext in ("cpp", "h"):
            out += glob.glob(os.path.join(src, folder, "**", f"*.{ext}"), recursive=True)
    return sorted(out)


def check(src):
    problems = []
    api = read(os.path.join(src, "docs/api.md"))
    metrics_doc = read(os.path.join(src, "docs/metrics.md"))

    # Metrics.
    code_metrics = set()
    for path in sources(src, "agent", "tracker", "core"):
        code_metrics |= set(METRIC_CALL.findall(read(path)))
    if not code_metrics:
        problems.append("found no metrics in the code; has the registration style changed?")
    for m in sorted(code_metrics):
        if f"`{m}`" not in metrics_doc:
            problems.append(f"metric {m} is not in docs/metrics.md")
    for m in sorted(set(re.findall(r"`(shoal_[a-z0-9_]+)`", metrics_doc)) - code_metrics):
        problems.append(f"docs/metrics.md names {m}, which no daemon exports")
    dash = json.loads(read(os.path.join(src, "deploy/grafana/shoal-dashboard.json")))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for e in exprs:
        for m in re.findall(r"\b(shoal_[a-z0-9_]+)", e):
            base = re.sub(r"_(bucket|sum|count)$", "", m)
            if m not in code_metrics and base not in code_metrics:
                problems.append(f"the Grafana dashboard queries {m}, which no daemon exports")

    # RPC methods.
    for path in sorted(glob.glob(os.path.join(src, "proto", "*.capnp"))):
        for iface, body in CAPNP_INTERFACE.findall(read(path)):
            for method in CAPNP_METHOD.findall(body):
                if f"`{method}(" not in api and f"`{iface}.{method}(" not in api:
                    problems.append(f"RPC {iface}.{method} ({os.path.basename(path)}) is not in docs/api.md")

    # HTTP routes.
    for path in sources(src, "agent", "tracker", "core"):
        for method, route in ROUTE.findall(read(path)):
            prefix = route.rstrip("*")
            if route.endswith("*") and prefix == "/":
                continue  # a catch-all: the S3-compatible endpoint, documented as such
            if prefix not in api:
                problems.append(f"HTTP route {method} {route} ({os.path.relpath(path, src)}) is not in docs/api.md")

    # CLI.
    for path, prog in [(p, "shoal") for p in sources(src, "agent/cli")] + \
                      [(os.path.join(src, f), "shoal-tracker")
                       for f in ("tracker/tracker_main.cpp", "tracker/admin/token_commands.cpp")]:
        text = read(path)
        for sub in SUBCOMMAND.findall(text):
            if not re.search(rf"`{re.escape(prog)}(?: [a-z-]+)? {re.escape(sub)}\b", api):
                problems.append(f"command {prog} {sub} is not in docs/api.md")
        if prog == "shoal":
            for flag in LONG_FLAG.findall(text):
                if flag not in api:
                    problems.append(f"shoal flag {flag} ({os.path.basename(path)}) is not in docs/api.md")

    # Links.
    for doc in sorted(glob.glob(os.path.join(src, "docs", "*.md"))) + [os.path.join(src, "README.md")]:
        for target in LINK.findall(read(doc)):
            if re.match(r"^[a-z]+:", target):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(doc), target))):
                problems.append(f"{os.path.relpath(doc, src)} links to {target}, which does not exist")
    return problems


PLANTS = {
    "an undocumented metric": ("agent/daemon/agent_metrics.cpp",
                               'w.AddGauge("shoal_agent_planted_gauge", "planted", 1);\n'),
    "an undocumented route": ("tracker/http/http_api.cpp",
                              'void Planted(HttpServer& s) { s.Handle("GET", "/v1/planted-route", nullptr); }\n'),
    "an undocumented RPC method": ("proto/agent.capnp", "interface Planted {\n  plantedMethod @0 () -> ();\n}\n"),
    "an undocumented CLI flag": ("agent/cli/pull_command.cpp",
                                 'void Planted(CLI::App* c) { c->add_flag("--planted-flag", x, "planted"); }\n'),
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_docs.py SOURCE_DIR")
    src = sys.argv[1]
    problems = check(src)
    for p in problems:
        print(p)
    missed = []
    with tempfile.TemporaryDirectory(prefix="shoal-docs-") as tmp:
        for part in ("agent", "tracker", "core", "proto", "docs", "deploy/grafana"):
            shutil.copytree(os.path.join(src, part), os.path.join(tmp, part))
        shutil.copy(os.path.join(src, "README.md"), tmp)
        for name, (path, text) in PLANTS.items():
            target = os.path.join(tmp, path)
            original = read(target)
            with open(target, "a", encoding="utf-8") as f:
                f.write(text)
            if len(check(tmp)) <= len(problems):
                missed.append(name)
            with open(target, "w", encoding="utf-8") as f:
                f.write(original)
    for name in missed:
        print(f"self-check: the checks did not catch {name}")
    print(f"docs: {len(problems)} gaps; {len(PLANTS) - len(missed)} of {len(PLANTS)} planted gaps caught")
    return 1 if problems or missed else 0


if __name__ == "__main__":
    sys.exit(main())
