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
# prefix of its own.
#
# Starts its own radosgw and tracker in a temporary folder and always stops
# them. Prints a markdown table.
set -euo pipefail

build=$(cd "${1:?usage: publish_bench.sh BUILD_DIR [size_gib]}" && pwd)
size_gib=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/shoal-publish-bench.XXXXXX)
tracker_pid=
cleanup() {
  [[ -n $tracker_pid ]] && kill "$tracker_pid" 2>/dev/null && wait "$tracker_pid" 2>/dev/null
  "$here/../s3/radosgw.sh" stop "$work/rgw" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Room for every copy (awscli and each build): radosgw frees deleted objects' data only later, in its GC.
export SHOAL_RGW_MEMSTORE_BYTES=$(( (3 * size_gib + 2) * 1073741824 ))
"$here/../s3/radosgw.sh" start "$work/rgw" >/dev/null 2>&1
# shellcheck disable=SC1090
source "$work/rgw/s3.env"
export AWS_ACCESS_KEY_ID=$SHOAL_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SHOAL_S3_SECRET_KEY
export AWS_DEFAULT_REGION=$SHOAL_S3_REGION AWS_REGION=$SHOAL_S3_REGION

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

seconds() {
  if ! /usr/bin/time -f '%e' -o "$work/t" "$@" >"$work/out" 2>&1; then
    echo "publish_bench: '$*' failed:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  cat "$work/t"
}

aws_s=$(seconds /usr/bin/aws --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --recursive --only-show-errors \
  "$ckpt" "s3://$SHOAL_S3_BUCKET/awscopy/")

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

# Runs a command and prints its seconds and the bytes it read through
# read(2)/pread(2) (rchar in /proc/PID/io, sampled every 20 ms until it
# exits): the folder, plus a little socket input.
timed_reads() {
  local t0 pid last=0 now
  t0=$(date +%s.%N)
  "$@" >"$work/out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    now=$(awk '/^rchar/ {print $2}' "/proc/$pid/io" 2>/dev/null || true)
    [[ -n $now ]] && last=$now
    sleep 0.02
  done
  wait "$pid" || { echo "publish_bench: '$*' failed:" >&2; cat "$work/out" >&2; exit 1; }
  awk -v t0="$t0" -v t1="$(date +%s.%N)" -v r="$last" 'BEGIN { printf "%.2f %d\n", t1 - t0, r }'
}

# BIN_DIR LABEL: the first publish, then unchanged with the hash cache and
# without it.
bench_build() {
  local bin=$1 label=$2 first
  start_tracker "$bin" "shoal-$label"
  export XDG_CACHE_HOME=$work/cache-$label  # a cold hash cache for the first publish
  first=$(timed_reads "$bin/shoal" publish "$ckpt" --name bench/model --tag latest --no-seed)
  first_s=${first% *} read_b=${first#* }
  again_s=$(seconds "$bin/shoal" publish "$ckpt" --name bench/model --tag latest --no-seed)
  nocache_s=$(seconds "$bin/shoal" publish "$ckpt" --name bench/model --tag latest --no-seed \
    --no-hash-cache)
  stop_tracker
}

row() {  # LABEL
  awk -v l="$1" -v b="$bytes" -v a="$aws_s" -v f="$first_s" -v r="$again_s" -v n="$nocache_s" \
    -v rd="$read_b" 'BEGIN {
    mb = b / 1048576; if (r < 0.01) r = 0.01;  # time(1) resolution
    printf "| shoal publish (%s), first | %.1f | %.0f | %.2f x awscli; read %.2f x the folder |\n", l, f, mb / f, a / f, rd / b;
    printf "| shoal publish (%s), unchanged, hash cache | %.2f | - | %.0f x faster than its first |\n", l, r, f / r;
    printf "| shoal publish (%s), unchanged, --no-hash-cache | %.1f | %.0f | %.1f x faster than its first |\n", l, n, mb / n, f / n;
  }'
}

printf "| step | seconds | MiB/s | ratio |\n|---|---|---|---|\n"
awk -v b="$bytes" -v a="$aws_s" 'BEGIN { printf "| aws s3 cp --recursive | %.1f | %.0f | 1.00 (baseline) |\n", a, b / 1048576 / a }'
if [[ -n ${PUBLISH_BENCH_BEFORE:-} ]]; then
  bench_build "$PUBLISH_BENCH_BEFORE" before
  row before
fi
bench_build "$build/bin" this
row "this build"
awk -v b="$bytes" 'BEGIN { printf "\n%.2f GiB in 6 files, 16 MiB pieces.\n", b / 1073741824 }'
