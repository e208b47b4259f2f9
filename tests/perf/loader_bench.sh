#!/usr/bin/env bash
# Loader benchmark: a model loaded the way vLLM's Run:ai streamer and the
# hub's clients load one, through the node's agent.
#
#   tests/perf/loader_bench.sh BUILD_DIR [GIB=4] [DELAY_MS=20] [CONCURRENCY=64]
#
# One radosgw (tests/s3/radosgw.sh) behind a TCP proxy that adds DELAY_MS of
# round trip (delay_proxy.py), a tracker and one agent whose origin is the
# delayed radosgw. A GIB GiB version (GIB safetensors shards of 1 GiB, 16 MiB
# pieces) is published to the origin only, so the agent starts cold.
#   S3 loader: loader_reads.py lists the version on the agent's S3 endpoint,
#     HEADs each shard and reads it in 8 MiB ranges, CONCURRENCY at once:
#     cold, then warm, then warm again; and `cat` of the cached chunk files.
#   Hub: hub_client.py (the hub's protocol: revision, tree, HEAD, GET) reads
#     the version through --hub-listen, against curl of each file through
#     the plain endpoint; cold (after the cache is emptied by a restart on a
#     fresh cache) and warm.
# Prints markdown tables. LOADER_BENCH_AGENT_FLAGS adds flags to the agent;
# LOADER_BENCH_S3_ONLY=1 stops after the S3 table; LOADER_BENCH_KEEP_LOG=FILE
# keeps the agent's log.
set -euo pipefail
build=$(cd "${1:?usage: loader_bench.sh BUILD_DIR [gib] [delay_ms] [concurrency]}" && pwd)
gib=${2:-4}
delay_ms=${3:-20}
concurrency=${4:-64}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
py=/usr/bin/python3
work=$(mktemp -d /var/tmp/shoal-loader-bench.XXXXXX)
pids=()
agent_pid=
cleanup() {
  if [[ -n "${LOADER_BENCH_KEEP_LOG:-}" && -f "$work/agent.log" ]]; then cp "$work/agent.log" "$LOADER_BENCH_KEEP_LOG"; fi
  for p in "${pids[@]}" $agent_pid; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}" $agent_pid; do wait "$p" 2>/dev/null || true; done
  "$here/../s3/radosgw.sh" stop "$work/rgw" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=tests/support/daemon_lib.sh
source "$here/../support/daemon_lib.sh"

export SHOAL_RGW_MEMSTORE_BYTES=$(((2 * gib + 2) << 30))
bench_prefix=loader-bench
# shellcheck source=tests/perf/delayed_origin.sh
source "$here/delayed_origin.sh"

# A fresh agent on an empty cache: cold.
start_agent() {
  if [[ -n "$agent_pid" ]]; then kill "$agent_pid"; wait "$agent_pid" 2>/dev/null || true; fi
  rm -rf "$work/cache" "$work/agent.ports"
  "$bin/shoald" --name bench --tracker "127.0.0.1:$rpc" --token "$agent_token" --cache-dir "$work/cache" \
    --cache-size $((gib + 1))GiB --peer-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --hub-listen 127.0.0.1:0 \
    --control-socket "$work/agent.sock" --port-file "$work/agent.ports" --origin "$origin" \
    --s3-endpoint "$delayed" --s3-region "$SHOAL_S3_REGION" ${LOADER_BENCH_AGENT_FLAGS:-} \
    >>"$work/agent.log" 2>&1 &
  agent_pid=$!
  must_wait_for 15 test -s "$work/agent.ports"
  agent=http://127.0.0.1:$(awk '{print $2}' "$work/agent.ports")
  hub=http://127.0.0.1:$(awk '{print $4}' "$work/agent.ports")
  must_wait_for 15 sh -c "curl -s $agent/metrics | grep -q '^shoal_agent_tracker_registered 1'"
}

mkdir -p "$work/ckpt"
for i in $(seq 1 "$gib"); do
  head -c $((1 << 30)) /dev/urandom >"$work/ckpt/model-0000$i-of-0000$gib.safetensors"
done
echo '{"model_type": "bench"}' >"$work/ckpt/config.json"
SHOAL_TRACKER=127.0.0.1:$rpc SHOAL_TOKEN=$writer "$bin/shoal" publish "$work/ckpt" --name bench/model --tag latest \
  --piece-size 16777216 --origin "$origin" --s3-endpoint "$SHOAL_S3_ENDPOINT" --no-seed >/dev/null
version=$(SHOAL_TRACKER=127.0.0.1:$rpc SHOAL_TOKEN=$reader "$bin/shoal" inspect bench/model:latest --json |
  "$py" -c 'import json,sys; print(json.load(sys.stdin)["versionId"])')
bytes=$(du -sb "$work/ckpt" | cut -f1)
# The same files as plain objects, for the direct-S3 baseline.
aws --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --recursive --quiet "$work/ckpt/" "s3://$SHOAL_S3_BUCKET/plain/"

echo "Loader benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ${gib} GiB version (16 MiB pieces); origin: radosgw behind a ${delay_ms} ms round-trip proxy"
echo
echo "### S3 loader pattern: ListObjectsV2, HeadObject, 8 MiB ranges, $concurrency at once"
echo
loader() { "$py" "$here/loader_reads.py" "$agent/" "$reader" bench "model/$version/" "$concurrency" 8388608; }
field() { "$py" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
start_agent
cold=$(loader)
warm1=$(loader)
warm2=$(loader)
direct=$("$py" "$here/loader_reads.py" "$delayed" - "$SHOAL_S3_BUCKET" plain/ "$concurrency" 8388608)
files=()
while read -r c; do files+=("$work/cache/chunks/${c:0:2}/${c:2:2}/$c"); done < <(find "$work/cache/chunks" -type f -printf '%f\n')
t=$(date +%s%N); cat "${files[@]}" >/dev/null; cat_ms=$(ms_since "$t")
# The same ranges, warm, with a client that costs little: curl, the plain
# endpoint, $concurrency transfers at once, to /dev/null.
# Each transfer's options stand in its own block of the config, after "next".
for f in "$work"/ckpt/*; do
  size=$(stat -c %s "$f")
  for ((off = 0; off < size; off += 8388608)); do
    end=$((off + 8388608 < size ? off + 8388607 : size - 1))
    printf 'next\nsilent\nfail\nheader = "Authorization: Bearer %s"\nurl = "%s/v1/models/bench/model:%s/files/%s"\nrange = "%d-%d"\noutput = "/dev/null"\n' \
      "$reader" "$agent" "$version" "$(basename "$f")" "$off" "$end"
  done
done | tail -n +2 >"$work/curl-ranges.cfg"
t=$(date +%s%N)
curl --parallel --parallel-max "$concurrency" -K "$work/curl-ranges.cfg"
curl_ms=$(ms_since "$t")
echo "| read | MB/s | TTFB p50 / p99 / max (ms) | over 1 s | failed |"
echo "|---|---|---|---|---|"
for run in direct cold warm1 warm2; do
  j=${!run}
  echo "| $run | $(field "$j" MBps) | $(field "$j" ttfb_ms_p50) / $(field "$j" ttfb_ms_p99) / $(field "$j" ttfb_ms_max) | $(field "$j" over_1s) | $(field "$j" failed) |"
done
cat_mbs=$(awk -v b="$bytes" -v ms="$cat_ms" 'BEGIN { printf "%.0f", b / (ms / 1000) / 1e6 }')
curl_mbs=$(awk -v b="$bytes" -v ms="$curl_ms" 'BEGIN { printf "%.0f", b / (ms / 1000) / 1e6 }')
echo "| warm, curl, the same ranges on the plain endpoint | $curl_mbs | | | |"
echo "| \`cat\` of the cached chunk files > /dev/null | $cat_mbs | | | |"
echo
awk -v c="$(field "$cold" MBps)" -v w1="$(field "$warm1" MBps)" -v w2="$(field "$warm2" MBps)" -v k="$cat_mbs" \
  -v d="$(field "$direct" MBps)" -v cu="$curl_mbs" 'BEGIN {
  w = (w1 > w2 ? w1 : w2); if (cu > w) w = cu;
  printf "cold / warm = %.2f (goal >= 0.9: %s); warm / cat = %.2f (goal >= 0.9: %s); cold / direct S3 = %.2f\n",
    c / w, (c / w >= 0.9 ? "met" : "NOT met"), w / k, (w / k >= 0.9 ? "met" : "NOT met"), c / d }'
echo "first error, if any: $(field "$cold" first_error)"
echo
if [[ -n "${LOADER_BENCH_S3_ONLY:-}" ]]; then exit 0; fi
echo "### Hub download: HEAD and GET of each file's resolve URL (curl), against GET of the plain endpoint (curl)"
echo
hub_read() {
  rm -rf "$work/out"; mkdir -p "$work/out"
  for f in "$work"/ckpt/*; do
    curl -sfI -H "Authorization: Bearer $reader" -o /dev/null "$hub/bench/model/resolve/main/$(basename "$f")"
    curl -sf -H "Authorization: Bearer $reader" -o "$work/out/$(basename "$f")" \
      "$hub/bench/model/resolve/main/$(basename "$f")"
  done
}
client_read() { rm -rf "$work/out"; "$py" "$here/../integration/hub_client.py" --endpoint "$hub" --repo bench/model \
  --revision main --token "$reader" --out "$work/out" --no-hash >/dev/null; }
plain_read() {
  rm -rf "$work/out"; mkdir -p "$work/out"
  for f in "$work"/ckpt/*; do
    curl -sf -H "Authorization: Bearer $reader" -o "$work/out/$(basename "$f")" \
      "$agent/v1/models/bench/model:$version/files/$(basename "$f")"
  done
}
start_agent
t=$(date +%s%N); hub_read; hub_cold=$(ms_since "$t")
t=$(date +%s%N); hub_read; hub_warm=$(ms_since "$t")
t=$(date +%s%N); plain_read; plain_warm=$(ms_since "$t")
t=$(date +%s%N); client_read; client_warm=$(ms_since "$t")
start_agent
t=$(date +%s%N); plain_read; plain_cold=$(ms_since "$t")
mbs() { awk -v b="$bytes" -v ms="$1" 'BEGIN { printf "%.0f", b / (ms / 1000) / 1e6 }'; }
echo "| read | hub (MB/s) | plain (MB/s) | hub / plain (goal >= 0.95) |"
echo "|---|---|---|---|"
echo "| cold | $(mbs "$hub_cold") | $(mbs "$plain_cold") | $(awk -v a="$plain_cold" -v b="$hub_cold" 'BEGIN { printf "%.2f", a / b }') |"
echo "| warm | $(mbs "$hub_warm") | $(mbs "$plain_warm") | $(awk -v a="$plain_warm" -v b="$hub_warm" 'BEGIN { printf "%.2f", a / b }') |"
echo
echo "| warm, hub_client.py (revision, tree pages, HEAD, GET; Python) | $(mbs "$client_warm") | | |"
echo
echo "(every read writes each file to the same disk)"
