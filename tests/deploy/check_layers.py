#!/usr/bin/env python3
"""The tracker's and the agent's folders stay small and layered.

Reads every #include "..." in tracker/ and draws an arrow from the
including file's folder to the included header's folder. Fails, naming
the arrows, if the folders form a cycle or if a folder holds more than 15
files. In agent/, fails if its folders (client, p2p, fetch, read, daemon,
cli) include each other in a cycle, or if any folder but daemon/ includes
daemon/ (nothing builds on the daemon) or any but cli/ includes cli/.

Also fails on a bare #include "name.h" in agent/, core/, include/, proto/,
tests/, tools/ and tracker/: every quoted include there names a path from
its tree's root ("store/chunk_store_impl.h" from core/, "daemon/..." from
agent/, "registry/..." from tracker/, "p2p/p2p_test_support.h" from
tests/, "sim/..." from tools/), from include/ ("shoal/status.h"), or
"proto/kj_status.h".

Fails as well when a planted back arrow or bare include goes unnoticed,
so the check itself is checked.

  check_layers.py SOURCE_DIR
"""
import os
import re
import sys

INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)
MAX_FILES = 15


def source_files(root):
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            if n.endswith((".h", ".cpp")):
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                out[rel] = open(os.path.join(dirpath, n)).read()
    return out


def folder(rel):
    d = os.path.dirname(rel)
    return d if d else "."


def arrows(files):
    """(from folder, to folder) -> [file -> header], and problems."""
    edges, problems = {}, []
    headers = {rel for rel in files if rel.endswith(".h")}
    for rel, text in files.items():
        for inc in INCLUDE.findall(text):
            if inc not in headers:
                continue  # not a tracker header (a bare name is bare_check's)
            a, b = folder(rel), folder(inc)
            if a != b:
                edges.setdefault((a, b), []).append(f"{rel} -> {inc}")
    return edges, problems


def cycle(edges):
    """One cycle of folders, or None."""
    adj = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set())
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(adj[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        state[n] = 2
        stack.pop()
        return None

    for n in sorted(adj):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def check(files):
    problems = []
    counts = {}
    for rel in files:
        counts[folder(rel)] = counts.get(folder(rel), 0) + 1
    for f, n in sorted(counts.items()):
        if n > MAX_FILES:
            problems.append(f"tracker/{f} holds {n} files, more than {MAX_FILES}")
    edges, bad_includes = arrows(files)
    problems += bad_includes
    c = cycle(edges)
    if c:
        steps = []
        for a, b in zip(c, c[1:]):
            steps.append(f"{a} -> {b} ({edges[(a, b)][0]})")
        problems.append("folders include each other in a cycle: " + "; ".join(steps))
    return problems, edges


# The trees whose quoted includes all name a path. agent/ joins once it
# writes proto/'s headers as "proto/..." too.
PATH_TREES = ("agent", "core", "include", "proto", "tests", "tools", "tracker")


def bare_check(trees):
    """Quoted includes of a bare file name, in {tree: {file: text}}."""
    problems = []
    for tree, files in sorted(trees.items()):
        for rel, text in sorted(files.items()):
            for inc in INCLUDE.findall(text):
                if "/" not in inc:
                    problems.append(f"{tree}/{rel}: bare include \"{inc}\"; write its path "
                                    f"(from {tree}/, from include/, or proto/...)")
    return problems, None


AGENT_TOPS = ("daemon", "cli")


def agent_check(files):
    """Problems in agent/: cycles among its folders, and includes of the tops."""
    problems, edges = [], {}
    for rel, text in files.items():
        a = rel.split("/")[0] if "/" in rel else "."
        for inc in INCLUDE.findall(text):
            if "/" not in inc:
                continue
            b = inc.split("/")[0]
            if b not in {f.split("/")[0] for f in files} or b == a:
                continue
            edges.setdefault((a, b), []).append(f"{rel} -> {inc}")
            if b in AGENT_TOPS:
                problems.append(f"agent/{rel} includes {inc}: nothing but {b}/ builds on {b}/")
    c = cycle(edges)
    if c:
        steps = [f"{x} -> {y} ({edges[(x, y)][0]})" for x, y in zip(c, c[1:])]
        problems.append("agent folders include each other in a cycle: " + "; ".join(steps))
    return problems, edges


def planted_is_caught(files, prefix, include, check_fn, sign):
    """Whether `check_fn` reports `sign` once `include` is added to the first
    header under `prefix`: the check must see the arrow it exists to refuse."""
    targets = sorted(f for f in files if f.startswith(prefix) and f.endswith(".h"))
    if not targets:
        return False
    planted = dict(files)
    planted[targets[0]] = f'#include "{include}"\n' + planted[targets[0]]
    caught, _ = check_fn(planted)
    return any(sign in p for p in caught)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    files = source_files(os.path.join(src, "tracker"))
    problems, edges = check(files)
    # The lowest folder, which includes nothing of the tracker, including
    # the composition root: a cycle.
    if not planted_is_caught(files, "common/", "serve/tracker_context.h", check, "cycle"):
        problems.append("a planted include from tracker/common up to the root went unnoticed")
    folders = {folder(f) for f in files}
    print(f"check_layers: tracker: {len(folders)} folders, {len(edges)} arrows between them")

    agent = source_files(os.path.join(src, "agent"))
    found, agent_edges = agent_check(agent)
    problems += found
    if not planted_is_caught(agent, "p2p/", "daemon/agent.h", agent_check, "daemon/"):
        problems.append("a planted include of daemon/ from p2p/ went unnoticed")
    trees = {t: source_files(os.path.join(src, t)) for t in PATH_TREES}
    problems += bare_check(trees)[0]
    if not planted_is_caught(trees["tracker"], "registry/", "kj_status.h",
                             lambda f: bare_check({"tracker": f}), 'bare include "kj_status.h"'):
        problems.append("a planted bare include in tracker/registry went unnoticed")
    print(f"check_layers: {sum(len(f) for f in trees.values())} files of "
          f"{', '.join(t + '/' for t in PATH_TREES)} include by path")
    for p in problems:
        print("check_layers: " + p)
    print(f"check_layers: agent: {len(agent_edges)} arrows between its folders"
          + ("" if problems else "; no cycle anywhere"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
