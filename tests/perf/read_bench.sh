#!/usr/bin/env bash
# Read benchmark: pods reading a 1 GiB file through their agent.
#
#   tests/perf/read_bench.sh BUILD_DIR [TRIALS=9] [DELAY_MS=20]
#
# One radosgw (tests/s3/radosgw.sh) behind a TCP proxy that adds DELAY_MS of
# round trip (delay_proxy.py), a tracker and one agent whose origin is the
# delayed radosgw. A 1 GiB file in 16 MiB pieces is published to the origin
# only, so the agent starts cold.
#   Cold: read_bench_cold.py reads 1 MiB ranges of pieces the agent lacks,
#     beside (a) the same range and (b) the whole chunk under it, straight
#     from the origin through the same proxy.
#   Sequential: the whole file through the agent, cold (from the origin) and
#     then warm (from the cache), against `cat` of the same chunk files.
# Prints markdown tables.
set -euo pipefail
build=$(cd "${1:?usage: read_bench.sh BUILD_DIR [trials] [delay_ms]}" && pwd)
trials=${2:-9}
delay_ms=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
py=/usr/bin/python3
work=$(mktemp -d /var/tmp/shoal-read-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$here/../s3/radosgw.sh" stop "$work/rgw" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=tests/support/daemon_lib.sh
source "$here/../support/daemon_lib.sh"

export SHOAL_RGW_MEMSTORE_BYTES=$((3 << 30))
bench_prefix=read-bench
# shellcheck source=tests/perf/delayed_origin.sh
source "$here/delayed_origin.sh"

"$bin/shoald" --name bench --tracker "127.0.0.1:$rpc" --token "$agent_token" --cache-dir "$work/cache" \
  --cache-size 4GiB --peer-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --control-socket "$work/agent.sock" \
  --port-file "$work/agent.ports" --origin "$origin" --s3-endpoint "$delayed" --s3-region "$SHOAL_S3_REGION" \
  --http-socket "$work/agent-http.sock" \
  ${READ_BENCH_AGENT_FLAGS:-} >"$work/agent.log" 2>&1 &
pids+=($!)
must_wait_for 15 test -s "$work/agent.ports"
http_port=$(awk '{print $2}' "$work/agent.ports")
agent=http://127.0.0.1:$http_port
must_wait_for 15 sh -c "curl -s $agent/metrics | grep -q '^shoal_agent_tracker_registered 1'"

mkdir -p "$work/ckpt"
head -c $((1 << 30)) /dev/urandom >"$work/ckpt/model.safetensors"
SHOAL_TRACKER=127.0.0.1:$rpc SHOAL_TOKEN=$writer "$bin/shoal" publish "$work/ckpt" --name bench/model --tag latest \
  --piece-size 16777216 --origin "$origin" --s3-endpoint "$SHOAL_S3_ENDPOINT" --no-seed >/dev/null
chunks=$(curl -sf -H "Authorization: Bearer $reader" "$agent/v1/models/bench/model:latest/manifest" |
  "$py" -c 'import json,sys; l=json.load(sys.stdin)["manifest"]["files"][0]["pieceLayer"]; print(" ".join(l[i:i+64] for i in range(0, len(l), 64)))')

echo "Read benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); origin: radosgw behind a ${delay_ms} ms round-trip proxy"
echo
echo "### Cold 1 MiB range of a 1 GiB file (16 MiB pieces), milliseconds"
echo
# shellcheck disable=SC2086
"$py" "$here/read_bench_cold.py" "$agent" "$reader" bench/model:latest model.safetensors "$delayed" \
  "$SHOAL_S3_BUCKET" read-bench 16777216 1048576 "$trials" $chunks

echo
echo "### Sequential read of the whole 1 GiB file"
echo
size=$((1 << 30))
mbs() { awk -v b="$size" -v ms="$1" 'BEGIN { printf "%.0f", b / (ms / 1000) / 1e6 }'; }
url="$agent/v1/models/bench/model:latest/files/model.safetensors"
t=$(date +%s%N)
curl -sf -H "Authorization: Bearer $reader" -o /dev/null "$url"
cold_ms=$(ms_since "$t")
files=()
for c in $chunks; do files+=("$work/cache/chunks/${c:0:2}/${c:2:2}/$c"); done
seq() { "$py" "$here/read_bench_seq.py" "$@" | awk '{print $2}'; }
agent_runs=() unix_runs=() curl_runs=() cat_runs=() cat_pipe_runs=()
for i in 1 2 3; do
  agent_runs+=("$(seq http "$url" "$reader")")
  unix_runs+=("$(seq http "$url" "$reader" "$work/agent-http.sock")")
  t=$(date +%s%N); curl -sf -H "Authorization: Bearer $reader" -o /dev/null "$url"; curl_runs+=("$(ms_since "$t")")
  t=$(date +%s%N); cat "${files[@]}" >/dev/null; cat_runs+=("$(ms_since "$t")")
  cat_pipe_runs+=("$(cat "${files[@]}" | seq stdin)")
done
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
agent_ms=$(median "${agent_runs[@]}")
cat_pipe_ms=$(median "${cat_pipe_runs[@]}")
echo "| read | MB/s (median of 3) | runs (ms) |"
echo "|---|---|---|"
echo "| agent, cold (origin through the proxy), curl | $(mbs "$cold_ms") | $cold_ms |"
echo "| agent, warm, HTTP client reading into a 4 MiB buffer | $(mbs "$agent_ms") | ${agent_runs[*]} |"
echo "| agent, warm, the same reader over the unix socket | $(mbs "$(median "${unix_runs[@]}")") | ${unix_runs[*]} |"
echo "| agent, warm, curl -o /dev/null | $(mbs "$(median "${curl_runs[@]}")") | ${curl_runs[*]} |"
echo "| \`cat\` of the same 64 chunk files into the same reader (a pipe) | $(mbs "$cat_pipe_ms") | ${cat_pipe_runs[*]} |"
echo "| \`cat\` of the same 64 chunk files > /dev/null | $(mbs "$(median "${cat_runs[@]}")") | ${cat_runs[*]} |"
echo
cat_ms=$(median "${cat_runs[@]}")
unix_ms=$(median "${unix_runs[@]}")
awk -v a="$agent_ms" -v u="$unix_ms" -v c="$cat_pipe_ms" -v d="$cat_ms" 'BEGIN {
  split("TCP unix", name, " "); t[1] = a; t[2] = u;
  for (i = 1; i <= 2; i++) {
    r = c / t[i]; q = d / t[i];
    printf "warm agent over %s / cat into the same reader = %.2f (goal >= 0.8: %s); / cat > /dev/null = %.2f (%s)\n",
      name[i], r, (r >= 0.8 ? "met" : "NOT met"), q, (q >= 0.8 ? "met" : "NOT met");
  } }'
echo "agent metrics: $(curl -s "$agent/metrics" | grep -E '^shoal_agent_read_origin_(chunks|bytes)_total' | tr '\n' ' ')"
if [[ -n "${READ_BENCH_KEEP_LOG:-}" ]]; then cp "$work/agent.log" "$READ_BENCH_KEEP_LOG"; fi
