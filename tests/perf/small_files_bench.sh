#!/usr/bin/env bash
# Many-small-files benchmark: a version of N tiny files (plus two files of
# several pieces) published unseeded and pulled by three agents at once on
# 127.0.0.1, then the idle cluster's cost: announces per second at the
# tracker, and the agents' CPU and memory over an idle interval. Baselines
# measured in the same run: `cp -r` of the folder, and `shoal publish`.
#
#   tests/perf/small_files_bench.sh BUILD_DIR [counts="10 1000 10000"]
#
# Environment: BIN_DIR (default BUILD_DIR/bin) picks the binaries;
# PULL_TIMEOUT (s, default 600) ends a pull that takes longer; IDLE_S
# (default 20) is the idle interval. The tracker asks for an announce every
# 5 s (its default). Starts everything in a temporary folder and always
# stops it. Prints a markdown table.
set -euo pipefail
trap 'echo "small_files_bench: line $LINENO: $BASH_COMMAND failed" >&2' ERR

build=$(cd "${1:?usage: small_files_bench.sh BUILD_DIR [counts]}" && pwd)
counts=${2:-"10 1000 10000"}
bin=${BIN_DIR:-$build/bin}
pull_timeout=${PULL_TIMEOUT:-600}
idle_s=${IDLE_S:-20}
piece=1048576
pids=()
work=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  [[ -n $work && -z ${KEEP:-} ]] && rm -rf "$work"
  work=
}
trap cleanup EXIT

now() { date +%s.%N; }
metric() {  # metric PORT NAME
  curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n && !done { print $2; done = 1 }'
}
cpu_ticks() {  # utime + stime of a process, in clock ticks
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}
rss_mib() { awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

echo "| files | cp -r s | publish s | pull s (3 agents, slowest) | pull again from cache s | origin reads / distinct bytes | from peers MB (per agent) | torrents per agent | idle announces/s | idle agent CPU % (sum of 3) | agent RSS MiB (max) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in $counts; do
  work=$(mktemp -d "${WORK_ROOT:-/var/tmp}/shoal-small-bench.XXXXXX")
  src=$work/src
  python3 - "$src" "$n" <<'PY'
import os, random, sys
src, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(src, "shard-%d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file-%d.json" % i), "w") as f:
        f.write('{"file": %d, "pad": "%s"}\n' % (i, "x" * (i % 23)))
rng = random.Random(1)
for name, size in (("weights-1.bin", 3 * 1048576 + 12345), ("weights-2.bin", 2 * 1048576)):
    with open(os.path.join(src, name), "wb") as f:
        f.write(rng.randbytes(size))
PY
  sync
  t0=$(now); cp -r "$src" "$work/copy"; sync; t1=$(now)
  cp_s=$(echo "$t1 - $t0" | bc -l)

  mkdir -p "$work/origin"
  "$bin/shoal-tracker" serve --data-dir "$work/tracker" --rpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
    --port-file "$work/tracker.ports" --origin "file://$work/origin" >"$work/tracker.log" 2>&1 &
  tracker_pid=$!
  pids+=("$tracker_pid")
  for _ in $(seq 100); do [[ -s $work/tracker.ports ]] && break; sleep 0.1; done
  read -r rpc_port thttp_port <"$work/tracker.ports" || true
  token() { "$bin/shoal-tracker" token create --data-dir "$work/tracker" --ns "$1" --role "$2" --subject "$3"; }
  agent_token=$(token '*' read agents)
  writer=$(token bench write trainer)
  reader=$(token bench read pod)
  agent_pids=(); agent_http=()
  for i in 0 1 2; do
    "$bin/shoald" --name "agent$i" --cache-dir "$work/agent$i-cache" --peer-listen 127.0.0.1:0 \
      --http-listen 127.0.0.1:0 --control-socket "$work/agent$i.sock" --port-file "$work/agent$i.ports" \
      --tracker "127.0.0.1:$rpc_port" --token "$agent_token" --origin "file://$work/origin" \
      --cache-size 4GiB >"$work/agent$i.log" 2>&1 &
    agent_pids+=($!)
    pids+=($!)
  done
  for i in 0 1 2; do
    for _ in $(seq 150); do
      if [[ -s $work/agent$i.ports ]]; then
        read -r _ hp _ <"$work/agent$i.ports" || true
        [[ $(metric "$hp" shoal_agent_tracker_registered) == 1 ]] && break
      fi
      sleep 0.1
    done
    read -r _ hp _ <"$work/agent$i.ports" || true
    agent_http+=("$hp")
  done

  export SHOAL_TRACKER=127.0.0.1:$rpc_port SHOAL_ORIGIN=file://$work/origin SHOAL_PROGRESS=0
  t0=$(now)
  SHOAL_TOKEN=$writer "$bin/shoal" publish "$src" --name bench/many --tag latest --piece-size $piece --no-seed \
    >"$work/publish.log" 2>&1
  t1=$(now)
  publish_s=$(echo "$t1 - $t0" | bc -l)
  sleep 2.5  # every agent sees the whole ring

  t0=$(now)
  pull_pids=()
  for i in 0 1 2; do
    SHOAL_TOKEN=$reader timeout "$pull_timeout" "$bin/shoal" pull bench/many:latest --to "$work/out$i" \
      --agent "$work/agent$i.sock" >"$work/pull$i.log" 2>&1 &
    pull_pids+=($!)
  done
  failed=0
  for p in "${pull_pids[@]}"; do wait "$p" || failed=1; done
  t1=$(now)
  pull_s=$(echo "$t1 - $t0" | bc -l)
  if [[ $failed == 0 ]]; then
    for i in 0 1 2; do diff -r "$src" "$work/out$i" >/dev/null || { echo "small_files_bench: out$i differs" >&2; exit 1; }; done
    pull_col=$(printf "%.1f" "$pull_s")
  else
    pull_col="> $pull_timeout (gave up)"
  fi
  # The floor for the pull: the same pull again on one agent, every chunk
  # already in its cache, so only the files are written.
  t0=$(now)
  SHOAL_TOKEN=$reader timeout "$pull_timeout" "$bin/shoal" pull bench/many:latest --to "$work/again" \
    --agent "$work/agent0.sock" >"$work/again.log" 2>&1 || true
  t1=$(now)
  cached_s=$(echo "$t1 - $t0" | bc -l)
  peers_mb=""; torrents=""; origin_b=0
  for i in 0 1 2; do
    o=$(metric "${agent_http[$i]}" shoal_agent_origin_bytes_total)
    origin_b=$(echo "$origin_b + ${o:-0}" | bc -l)
    b=$(metric "${agent_http[$i]}" 'shoal_agent_peer_bytes_total{direction="in"}')
    peers_mb+="$(printf "%.1f" "$(echo "${b:-0} / 1000000" | bc -l)") "
    torrents+="$(metric "${agent_http[$i]}" shoal_agent_torrents) "
  done

  sleep 5  # a pull that gave up may still run in the agent; the rest settle
  a0=$(metric "$thttp_port" shoal_tracker_announces_total)
  c0=0; for p in "${agent_pids[@]}"; do c0=$((c0 + $(cpu_ticks "$p"))); done
  t0=$(now)
  sleep "$idle_s"
  t1=$(now)
  a1=$(metric "$thttp_port" shoal_tracker_announces_total)
  c1=0; for p in "${agent_pids[@]}"; do c1=$((c1 + $(cpu_ticks "$p"))); done
  rss=0; for p in "${agent_pids[@]}"; do r=$(rss_mib "$p"); if ((r > rss)); then rss=$r; fi; done
  hz=$(getconf CLK_TCK)
  rate=$(echo "($a1 - $a0) / ($t1 - $t0)" | bc -l)
  cpu=$(echo "100 * ($c1 - $c0) / $hz / ($t1 - $t0)" | bc -l)
  distinct=$(python3 - "$src" <<'PY'
import hashlib, os, sys
seen = {}
for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        with open(os.path.join(root, name), "rb") as f:
            data = f.read()
        seen[hashlib.sha256(data).digest()] = len(data)
print(sum(seen.values()))
PY
)
  printf "| %d | %.2f | %.1f | %s | %.1f | %.3f | %s| %s| %.1f | %.1f | %d |\n" "$n" "$cp_s" "$publish_s" "$pull_col" "$cached_s" \
    "$(echo "$origin_b / $distinct" | bc -l)" "$peers_mb" \
    "$torrents" "$rate" "$cpu" "$rss"
  cleanup
done
