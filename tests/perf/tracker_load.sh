#!/usr/bin/env bash
# Tracker load benchmark: one tracker, a published version of 200 files
# (so 200 real torrents), and tracker_load simulating a fleet of agents on
# the agents' own RPC, each on its own TCP connection.
#
#   tests/perf/tracker_load.sh [BUILD_DIR] [AGENTS=10000] [STEADY_S=60] [-- tracker_load flags...]
#
# Starts its own tracker (--peer-tls off, a file:// origin) in a temporary
# folder and always stops it. The generator and the tracker share this
# machine's cores: the report gives both CPU figures. Prints tracker_load's
# JSON, then a markdown table.
#
# TRACKERS=3 starts a fleet instead: one etcd member on loopback, shared
# keys, and three trackers on it; the version is published through the
# first, and agent i goes to tracker i % 3 (tracker_load --tracker a,b,c).
#
# TRACKER_FLAGS adds flags to each tracker's serve, e.g.
# TRACKER_FLAGS='--rpc-threads 1' to serve every connection on one loop.
#
# PIN=1 gives the tracker(s) core 0 and the generator core 1 (taskset), so
# the two do not take turns on the same core and the latencies measured are
# the tracker's, not the scheduler's.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
agents=${2:-10000}
steady=${3:-60}
shift 3 2>/dev/null || shift $#
[[ ${1:-} == -- ]] && shift
extra=("$@")
gen="$build/tests/perf/tracker_load"
[[ -x $gen ]] || { echo "tracker_load: build first ($gen missing)" >&2; exit 1; }
work=$(mktemp -d "${TRACKER_LOAD_DIR:-/var/tmp}/shoal-tracker-load.XXXXXX")
tracker_pid= etcd_pid=
cleanup() {
  local p
  for p in $tracker_pid $etcd_pid; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
# One descriptor per agent, in the tracker and in the generator.
ulimit -n "$(ulimit -Hn)"

# 200 files of 40 KiB at a 16 KiB piece: each its own torrent of 3 chunks.
model=$work/model
mkdir -p "$model"
for i in $(seq -w 1 200); do head -c $((40960 + 10#$i)) /dev/urandom >"$model/shard-$i.bin"; done

mkdir -p "$work/origin"
trackers=${TRACKERS:-1}
registry=() secrets=() etcd_pid=
if ((trackers > 1)); then
  command -v etcd >/dev/null || { echo "tracker_load: TRACKERS=$trackers needs etcd" >&2; exit 1; }
  source "$(dirname "$0")/../support/daemon_lib.sh"
  ec=$(free_port) ep=$(free_port)
  etcd --name load --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$ec" \
    --advertise-client-urls "http://127.0.0.1:$ec" --listen-peer-urls "http://127.0.0.1:$ep" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
    --initial-cluster "load=http://127.0.0.1:$ep" >"$work/etcd.log" 2>&1 &
  etcd_pid=$!
  wait_for 20 curl -sf "http://127.0.0.1:$ec/health" >/dev/null || { cat "$work/etcd.log" >&2; exit 1; }
  registry=(--registry "etcd://127.0.0.1:$ec/load/")
  secrets=(--secrets-dir "$work/secrets")
  "$build/bin/shoal-tracker" keys create "${secrets[@]}" >/dev/null
fi
read -r -a tracker_flags <<<"${TRACKER_FLAGS:-}"
pin_tracker=() pin_gen=()
if [[ ${PIN:-0} == 1 ]]; then
  pin_tracker=(taskset -c 0) pin_gen=(taskset -c 1)
fi
tracker_pids=() rpcs=() https=()
for t in $(seq 1 "$trackers"); do
  "${pin_tracker[@]}" "$build/bin/shoal-tracker" serve --data-dir "$work/tracker$t" --rpc-listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --port-file "$work/ports$t" --origin "file://$work/origin" \
    "${registry[@]}" "${secrets[@]}" \
    --peer-tls off --rpc-max-connections $((agents + 1000)) \
    --rpc-max-connections-per-client $((agents + 1000)) --rpc-max-unauthenticated-per-client 256 \
    --max-swarm-peers $((agents * 200 + 100000)) "${tracker_flags[@]}" >"$work/tracker$t.log" 2>&1 &
  tracker_pids+=($!)
  for _ in $(seq 100); do [[ -s $work/ports$t ]] && break; sleep 0.1; done
  [[ -s $work/ports$t ]] || { cat "$work/tracker$t.log" >&2; exit 1; }
  rpcs+=("127.0.0.1:$(cut -d' ' -f1 "$work/ports$t")")
  https+=("127.0.0.1:$(cut -d' ' -f2 "$work/ports$t")")
done
tracker_pid="${tracker_pids[*]}"
rpc=${rpcs[0]}
# Tokens are minted with the secret the trackers use: the fleet's shared one.
minter=$work/tracker1
((trackers > 1)) && minter=$work/secrets
writer=$("$build/bin/shoal-tracker" token create --data-dir "$minter" "${registry[@]}" \
  --ns load --role write --subject publisher)
reader=$("$build/bin/shoal-tracker" token create --data-dir "$minter" "${registry[@]}" \
  --ns '*' --role read --subject agents)
SHOAL_TRACKER=$rpc SHOAL_TOKEN=$writer SHOAL_ORIGIN=file://$work/origin SHOAL_PROGRESS=0 \
  XDG_CACHE_HOME=$work/cache "$build/bin/shoal" publish "$model" --name load/model --tag latest \
  --piece-size 16384 --no-seed >"$work/publish.log" 2>&1 || { cat "$work/publish.log" >&2; exit 1; }

echo "machine: $(nproc) cores${PIN:+ (PIN=$PIN)}, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); load $(cut -d' ' -f1-3 /proc/loadavg)"
# The other trackers learn of the version from the registry's feed (1 s).
((trackers > 1)) && sleep 3
all_rpc=$(IFS=,; echo "${rpcs[*]}")
all_pids=$(IFS=,; echo "${tracker_pids[*]}")
all_http=$(IFS=,; echo "${https[*]}")
${TRACKER_LOAD_WRAP:-} "${pin_gen[@]}" "$gen" --tracker "$all_rpc" --tracker-pid "$all_pids" --tracker-http "$all_http" --token "$reader" --model load/model \
  --agents "$agents" --steady-s "$steady" "${extra[@]}" >"$work/result.json" 2>"$work/gen.log" \
  || { cat "$work/gen.log" >&2; tail -20 "$work/tracker1.log" >&2; exit 1; }
cat "$work/gen.log" >&2
cat "$work/result.json"
python3 - "$work/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["steady"]
print()
print(f"{r['agents']} agents x {r['torrents']} torrents, {r['trackers']} tracker(s); "
      f"joined in {r['ramp_s']:.1f} s; steady window {r['steady_s']:.0f} s")
print()
print("| request | per s | p50 ms | p99 ms | max ms | errors |")
print("|---|---|---|---|---|---|")
for k in ("register", "heartbeat", "announceBatch", "leechAnnounce", "need", "authenticate", "ring"):
    t = s[k]
    print(f"| {k} | {t['per_s']:.1f} | {t['p50_ms']:.2f} | {t['p99_ms']:.2f} | {t['max_ms']:.1f} | {t['errors']} |")
ramp = r["ramp"]
print(f"| ramp: register | {ramp['register']['per_s']:.1f} | {ramp['register']['p50_ms']:.2f} | "
      f"{ramp['register']['p99_ms']:.2f} | {ramp['register']['max_ms']:.1f} | {ramp['register']['errors']} |")
print(f"| ramp: announceBatch (200 entries) | {ramp['announceBatch']['per_s']:.1f} | "
      f"{ramp['announceBatch']['p50_ms']:.2f} | {ramp['announceBatch']['p99_ms']:.2f} | "
      f"{ramp['announceBatch']['max_ms']:.1f} | {ramp['announceBatch']['errors']} |")
old = r["agents"] * r["torrents"] / 5.0
print()
print("| figure | value |")
print("|---|---|")
print(f"| requests handled, steady | {r['steady_requests_per_s']:.0f} /s ({s['entries_per_s']:.0f} swarm entries/s) |")
print(f"| tracker CPU | {r['tracker_cores']:.3f} of one core ({r['tracker_cpu_s']:.1f} core-s in {r['steady_s']:.0f} s) |")
print(f"| requests per tracker core-second | {r['requests_per_core_s']:.0f} |")
print(f"| every request, steady: p50 / p99 / p99.9 | {s['all']['p50_ms']:.2f} / {s['all']['p99_ms']:.2f} / {s['all']['p999_ms']:.2f} ms |")
print(f"| ring members and departures sent, steady | {s['ring_members_per_s']:.0f} /s "
      f"({100 * s.get('heartbeats_following_share', 1):.0f} % of heartbeats following the ring) |")
print(f"| generator CPU (same machine) | {r['generator_cores']:.3f} of one core |")
pr = r["probe"]
print(f"| probe: {pr['agents']} more agents on a thread of their own, every request p50 / p99 / p99.9 / max | {pr['p50_ms']:.2f} / {pr['p99_ms']:.2f} / {pr['p999_ms']:.2f} / {pr['max_ms']:.1f} ms ({pr['count']} requests; its loop's lag p99 {pr['loop_lag_p99_ms']:.2f} ms) |")
g, t = r["generator_loop_lag"], r["tracker_loop_lag"]
print(f"| generator's own event-loop lag p50 / p99 / p99.9 | {g['p50_ms']:.2f} / {g['p99_ms']:.2f} / {g['p999_ms']:.2f} ms |")
print(f"| tracker event-loop lag p50 / p99 / p99.9 (at most, by its histogram) | {t['p50_ms_at_most']:.2f} / {t['p99_ms_at_most']:.2f} / {t['p999_ms_at_most']:.2f} ms |")
print(f"| tracker RSS before / after joins | {r['tracker_rss_before_kib']/1024:.0f} / {r['tracker_rss_after_kib']/1024:.0f} MiB |")
print(f"| tracker memory per agent | {r['rss_per_agent_kib']:.1f} KiB ({r['rss_per_agent_kib']*1024/r['torrents']:.0f} B per swarm entry) |")
print(f"| heartbeat interval the tracker told (longest) | {r.get('heartbeat_told_ms', 0)/1000:.1f} s |")
print(f"| dead agent (silent, connection open): last heartbeat to dropped / off the ring | {r['dead_agent_dropped_ms']/1000:.1f} / {r['dead_agent_off_ring_ms']/1000:.1f} s |")
print(f"| churn: agents left and rejoined | {r['churned']} (unexpected drops {r['unexpected_drops']}) |")
print(f"| per-torrent model: agents x torrents / 5 s announce | {old:.0f} announces/s |")
if r.get("error_kinds"):
    print("\nerrors: " + "; ".join(f"{k.strip()} x{n}" for k, n in r["error_kinds"].items()))
if r["last_error"]:
    print(f"\nlast error: {r['last_error']}")
PY
