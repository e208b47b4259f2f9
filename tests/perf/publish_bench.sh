#!/usr/bin/env bash
# Publish benchmark: `shoal publish` of a generated checkpoint folder into a
# real radosgw through a real tracker, against Debian's
# `aws s3 cp --recursive` of the same folder to the same radosgw in the same
# run; then an unchanged republish.
#
#   tests/perf/publish_bench.sh BUILD_DIR [size_gib=4]
#
# PUBLISH_BENCH_BEFORE=DIR (a folder holding an earlier build's `shoal` and
# `shoal-tracker`) also measures that build, in the same run, on a bucket
# prefix of its own. PUBLISH_BENCH_NO_EARLY=1 skips the seeded publish.
#
# Starts its own radosgw and tracker in a temporary folder and always stops
# them. Prints a markdown table.
set -euo pipefail

build=$(cd "${1:?usage: publish_bench.sh BUILD_DIR [size_gib]}" && pwd)
size_gib=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/shoal-publish-bench.XXXXXX)
tracker_pid= agent_pid=
cleanup() {
  [[ -n $agent_pid ]] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  [[ -n $tracker_pid ]] && kill "$tracker_pid" 2>/dev/null && wait "$tracker_pid" 2>/dev/null
  "$here/../s3/radosgw.sh" stop "$work/rgw" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Each measured upload gets a radosgw of its own, started afresh: its
# in-memory store slows as it fills, which would favour whatever ran first.
export SHOAL_RGW_MEMSTORE_BYTES=$(( (size_gib + 2) * 1073741824 ))
# fresh_rgw, seconds
source "$here/bench_lib.sh"
fresh_rgw rgw

# A safetensors-like folder: four shards of unequal size, a config, a tokenizer.
ckpt=$work/ckpt
mkdir -p "$ckpt/tokenizer"
total_mib=$((size_gib * 1024))
shard=$((total_mib * 3 / 10))
head -c $((shard << 20)) /dev/urandom >"$ckpt/model-00001-of-00004.safetensors"
head -c $((shard << 20)) /dev/urandom >"$ckpt/model-00002-of-00004.safetensors"
rest=$(( (total_mib - 2 * shard) / 2 ))
head -c $((rest << 20)) /dev/urandom >"$ckpt/model-00003-of-00004.safetensors"
head -c $(((rest << 20) - 4321)) /dev/urandom >"$ckpt/model-00004-of-00004.safetensors"
head -c 2300 /dev/urandom >"$ckpt/config.json"
head -c 1900000 /dev/urandom >"$ckpt/tokenizer/tokenizer.json"
bytes=$(du -sb "$ckpt" | cut -f1)
cat "$ckpt"/* >/dev/null 2>&1 || true

# The same, and the user + system CPU seconds the command took.
seconds_cpu() {
  if ! /usr/bin/time -f '%e %U %S' -o "$work/t" "$@" >"$work/out" 2>&1; then
    echo "publish_bench: '$*' failed:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/t"
}

aws_s=$(seconds_cpu /usr/bin/aws --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --recursive --only-show-errors \
  "$ckpt" "s3://$SHOAL_S3_BUCKET/awscopy/")
aws_cpu=${aws_s#* } aws_s=${aws_s% *}

# One publish setup per build: its own tracker and bucket prefix, so no
# build finds the chunks another uploaded.
start_tracker() {  # BIN_DIR PREFIX
  rm -rf "$work/tracker" "$work/ports"
  "$1/shoal-tracker" serve --data-dir "$work/tracker" --rpc-listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --port-file "$work/ports" --origin "s3://$SHOAL_S3_BUCKET/$2" \
    --s3-endpoint "$SHOAL_S3_ENDPOINT" >"$work/tracker-$2.log" 2>&1 &
  tracker_pid=$!
  for _ in $(seq 100); do [[ -s $work/ports ]] && break; sleep 0.1; done
  export SHOAL_TRACKER=127.0.0.1:$(cut -d' ' -f1 "$work/ports")
  SHOAL_TOKEN=$("$1/shoal-tracker" token create --data-dir "$work/tracker" --ns bench \
    --role write --subject bench)
  export SHOAL_TOKEN SHOAL_ORIGIN=s3://$SHOAL_S3_BUCKET/$2 SHOAL_S3_ENDPOINT SHOAL_PROGRESS=0
}
stop_tracker() {
  kill "$tracker_pid" && wait "$tracker_pid" 2>/dev/null || true
  tracker_pid=
}

# Runs a command and prints its seconds, the bytes it read through
# read(2)/pread(2) (rchar in /proc/PID/io: the folder, plus a little socket
# input) and its CPU seconds (utime + stime), both sampled every 20 ms
# until it exits.
timed_reads() {
  local t0 pid last=0 now cpu=0 ticks
  t0=$(date +%s.%N)
  "$@" >"$work/out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    now=$(awk '/^rchar/ {print $2}' "/proc/$pid/io" 2>/dev/null || true)
    [[ -n $now ]] && last=$now
    ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || true)
    [[ -n $ticks ]] && cpu=$ticks
    sleep 0.02
  done
  wait "$pid" || { echo "publish_bench: '$*' failed:" >&2; cat "$work/out" >&2; exit 1; }
  [[ -n ${PUBLISH_BENCH_KEEP:-} ]] && cp "$work/out" "$PUBLISH_BENCH_KEEP/publish-$label.out"
  awk -v t0="$t0" -v t1="$(date +%s.%N)" -v r="$last" -v c="$cpu" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f %.0f %.2f\n", t1 - t0, r, c / hz }'
}

# BIN_DIR LABEL: the first publish, then unchanged with the hash cache and
# without it.
bench_build() {
  local bin=$1 first
  label=$2
  fresh_rgw rgw
  start_tracker "$bin" "shoal-$label"
  export XDG_CACHE_HOME=$work/cache-$label  # a cold hash cache for the first publish
  first=$(timed_reads "$bin/shoal" publish "$ckpt" --name bench/model --tag latest --no-seed)
  read -r first_s read_b first_cpu <<<"$first"
  again_s=$(seconds "$bin/shoal" publish "$ckpt" --name bench/model --tag latest --no-seed)
  nocache_s=$(seconds "$bin/shoal" publish "$ckpt" --name bench/model --tag latest --no-seed \
    --no-hash-cache)
  stop_tracker
}

row() {  # LABEL
  awk -v l="$1" -v b="$bytes" -v a="$aws_s" -v f="$first_s" -v r="$again_s" -v n="$nocache_s" \
    -v rd="$read_b" -v c="$first_cpu" 'BEGIN {
    mb = b / 1048576; gib = b / 1073741824; if (r < 0.01) r = 0.01;  # time(1) resolution
    printf "| shoal publish (%s), first | %.1f | %.0f | %.2f | %.2f x awscli; read %.2f x the folder |\n", l, f, mb / f, c / gib, a / f, rd / b;
    printf "| shoal publish (%s), unchanged, hash cache | %.2f | - | - | %.0f x faster than its first |\n", l, r, f / r;
    printf "| shoal publish (%s), unchanged, --no-hash-cache | %.1f | %.0f | - | %.1f x faster than its first |\n", l, n, mb / n, f / n;
  }'
}

printf "| step | seconds | MiB/s | client CPU, core-s/GiB | ratio |\n|---|---|---|---|---|\n"
awk -v b="$bytes" -v a="$aws_s" -v c="$aws_cpu" 'BEGIN { printf "| aws s3 cp --recursive | %.1f | %.0f | %.2f | 1.00 (baseline) |\n", a, b / 1048576 / a, c / (b / 1073741824) }'
if [[ -n ${PUBLISH_BENCH_BEFORE:-} ]]; then
  bench_build "$PUBLISH_BENCH_BEFORE" before
  row before
fi
bench_build "$build/bin" this
row "this build"

# Pullable before durable (this build): an agent on the publishing node
# seeds the version; when is it committed, when has the agent taken every
# chunk (so any node can pull it all from here), and when is it durable,
# against hashing the folder alone (`shoal inspect DIR`).
if [[ -z ${PUBLISH_BENCH_NO_EARLY:-} ]]; then
  fresh_rgw rgw
  start_tracker "$build/bin" shoal-early
  agent_token=$("$build/bin/shoal-tracker" token create --data-dir "$work/tracker" --ns '*' \
    --role read --subject agents)
  "$build/bin/shoald" --name seeder --token "$agent_token" --cache-dir "$work/agent" \
    --cache-size "$((size_gib + 2))GiB" --peer-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
    --control-socket "$work/agent.sock" --port-file "$work/agent.ports" \
    --origin "$SHOAL_ORIGIN" --s3-endpoint "$SHOAL_S3_ENDPOINT" >"$work/agent.log" 2>&1 &
  agent_pid=$!
  for _ in $(seq 100); do [[ -s $work/agent.ports ]] && break; sleep 0.1; done
  sleep 1  # registration
  hash_s=$(seconds "$build/bin/shoal" inspect "$ckpt")
  export XDG_CACHE_HOME=$work/cache-early
  t0=$(date +%s.%N) commit_t= seeded_t=
  "$build/bin/shoal" publish "$ckpt" --name bench/model --tag latest --agent "$work/agent.sock" \
    >"$work/early.out" 2>&1 &
  pub=$!
  while kill -0 "$pub" 2>/dev/null; do
    now=$(date +%s.%N)
    [[ -z $commit_t ]] && grep -q '^committed ' "$work/early.out" && commit_t=$now
    [[ -z $seeded_t ]] && grep -q 'seed.done' "$work/agent.log" && seeded_t=$now
    sleep 0.05
  done
  wait "$pub" || { echo "publish_bench: the seeded publish failed:" >&2; cat "$work/early.out" >&2; exit 1; }
  durable_t=$(date +%s.%N)
  [[ -z $seeded_t ]] && seeded_t=$durable_t
  kill "$agent_pid" && wait "$agent_pid" 2>/dev/null || true
  stop_tracker
  awk -v t0="$t0" -v c="$commit_t" -v s="$seeded_t" -v d="$durable_t" -v h="$hash_s" 'BEGIN {
    printf "\n| seeded publish (this build) | seconds from the start | against hashing alone (%.1f s) |\n|---|---|---|\n", h;
    printf "| committed, pullable from this node | %.1f | +%.1f s |\n", c - t0, c - t0 - h;
    printf "| every chunk in the agent (pullable whole) | %.1f | +%.1f s |\n", s - t0, s - t0 - h;
    printf "| durable (every chunk in the origin) | %.1f | +%.1f s |\n", d - t0, d - t0 - h;
  }'
fi
awk -v b="$bytes" 'BEGIN { printf "\n%.2f GiB in 6 files, 16 MiB pieces.\n", b / 1073741824 }'
