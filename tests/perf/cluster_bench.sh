#!/usr/bin/env bash
# The cluster benchmark: N agents, a tracker and a radosgw origin, each in its
# own network namespace on one bridge, shaped with tc tbf (B per node each way,
# B_o out of the origin); five scenarios (cold, staggered, kills, warm, and
# every node downloading straight from S3 with awscli) in one run. Writes
# cluster-bench.json, cluster-bench-table.md and cluster-bench.png to --out.
#
#   tests/perf/cluster_bench.sh BUILD_DIR [--nodes 8] [--size-mib 1024] [--node-mbit 100]
#       [--origin-mbit 400] [--scenarios cold,staggered,kills,warm,direct] [--out DIR]
#       [--max-minutes 40] ...        (tests/perf/cluster_bench.py --help lists them all)
#
# Needs root, and deploy/install-deps.sh --bench. Not run by CI. Whatever
# happens (an error, Ctrl-C, the time limit), every process in the run's
# namespaces is stopped and the namespaces are deleted.
set -euo pipefail

build=$(cd "${1:?usage: cluster_bench.sh BUILD_DIR [options]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
max_minutes=40
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --max-minutes) max_minutes=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

[[ $(id -u) -eq 0 ]] || { echo "cluster_bench: needs root (network namespaces, tc)" >&2; exit 1; }
missing=()
for c in ip tc curl cmp timeout radosgw radosgw-admin ceph-mon ceph-osd /usr/bin/aws /usr/bin/python3 \
  /usr/bin/time gnuplot; do
  command -v "$c" >/dev/null || missing+=("$c")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "cluster_bench: missing ${missing[*]}; run deploy/install-deps.sh --bench" >&2
  exit 1
fi

prefix=shoalbench$$
# Stops everything left in this run's namespaces, then deletes them.
sweep() {
  local spaces ns pids
  spaces=$(ip netns list | awk -v p="$prefix-" 'index($1, p) == 1 {print $1}')
  [[ -n "$spaces" ]] || return 0
  echo "cluster_bench: sweeping leftover namespaces: $(echo $spaces)" >&2
  for sig in TERM KILL; do
    pids=$(for ns in $spaces; do ip netns pids "$ns"; done)
    [[ -n "$pids" ]] || break
    kill -"$sig" $pids 2>/dev/null || true
    for _ in $(seq 50); do
      pids=$(for ns in $spaces; do ip netns pids "$ns"; done)
      [[ -z "$pids" ]] && break
      sleep 0.2
    done
  done
  for ns in $spaces; do ip netns del "$ns" 2>/dev/null || true; done
}
trap sweep EXIT

# timeout sends TERM at the limit (the harness then cleans up) and KILL a
# minute later; the sweep above catches whatever that leaves.
timeout --kill-after=60 "$((max_minutes * 60))" \
  /usr/bin/python3 -B "$here/cluster_bench.py" --build-dir "$build" --prefix "$prefix" "${args[@]}" &
child=$!
trap 'kill -TERM $child 2>/dev/null || true' INT TERM HUP
rc=0
while kill -0 "$child" 2>/dev/null; do
  wait "$child" || rc=$?
done
exit "$rc"
