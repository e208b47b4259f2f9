#!/usr/bin/env bash
# Import benchmark: `shoal import s3://…` of a generated checkpoint from a
# source radosgw into Shoal's origin on a second radosgw (two S3 servers,
# as a bucket elsewhere and the cluster's own store are), against the
# two-step way in the same run (`aws s3 cp --recursive` to a local disk,
# then `shoal publish` of that folder), against the download alone, and
# against the plain copy between the two servers through a disk (download,
# then `aws s3 cp --recursive` up).
#
#   tests/perf/import_bench.sh BUILD_DIR [size_gib=4] [runs=3]
#
# Both servers share this machine's cores. Each upload goes to a fresh
# origin server (its in-memory store only grows, and slows as it fills).
# Temporary files live under /var/tmp; everything is stopped on exit.
# Prints one markdown row per run.
set -euo pipefail

build=$(cd "${1:?usage: import_bench.sh BUILD_DIR [size_gib] [runs]}" && pwd)
size_gib=${2:-4}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/shoal-import-bench.XXXXXX)
tracker_pid=
cleanup() {
  [[ -n $tracker_pid ]] && kill "$tracker_pid" 2>/dev/null && wait "$tracker_pid" 2>/dev/null
  "$here/../s3/radosgw.sh" stop "$work/src" >/dev/null 2>&1 || true
  "$here/../s3/radosgw.sh" stop "$work/dst" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

export SHOAL_RGW_MEMSTORE_BYTES=$(( (size_gib + 2) * 1073741824 ))
# fresh_rgw, stop_rgw, seconds
source "$here/bench_lib.sh"

# A safetensors-like checkpoint: four shards, a config, a tokenizer.
ckpt=$work/ckpt
mkdir -p "$ckpt/tokenizer"
shard=$((size_gib * 1024 / 4))
for i in 1 2 3 4; do
  head -c $((shard << 20)) /dev/urandom >"$ckpt/model-0000$i-of-00004.safetensors"
done
head -c 2300 /dev/urandom >"$ckpt/config.json"
head -c 1900000 /dev/urandom >"$ckpt/tokenizer/tokenizer.json"
bytes=$(du -sb "$ckpt" | cut -f1)

start_tracker() {  # a tracker whose origin is the dst server's bucket
  rm -rf "$work/tracker" "$work/ports"
  "$build/bin/shoal-tracker" serve --data-dir "$work/tracker" --rpc-listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --port-file "$work/ports" --origin "s3://$SHOAL_S3_BUCKET/origin" \
    --s3-endpoint "$dst_endpoint" >"$work/tracker.log" 2>&1 &
  tracker_pid=$!
  for _ in $(seq 100); do [[ -s $work/ports ]] && break; sleep 0.1; done
  export SHOAL_TRACKER=127.0.0.1:$(cut -d' ' -f1 "$work/ports")
  SHOAL_TOKEN=$("$build/bin/shoal-tracker" token create --data-dir "$work/tracker" --ns bench \
    --role write --subject bench)
  export SHOAL_TOKEN SHOAL_ORIGIN=s3://$SHOAL_S3_BUCKET/origin SHOAL_S3_ENDPOINT=$dst_endpoint
  export SHOAL_PROGRESS=0 XDG_CACHE_HOME=$work/cache-$RANDOM  # a cold hash cache
}
stop_tracker() {
  kill "$tracker_pid" && wait "$tracker_pid" 2>/dev/null || true
  tracker_pid=
}

printf "| run | download, s | shoal publish of it, s | two-step, s | upload of the download, s | shoal import, s | import against two-step | against download alone | against download + upload | import peak RSS |\n"
printf "|---|---|---|---|---|---|---|---|---|---|\n"
for run in $(seq "$runs"); do
  fresh_rgw src
  /usr/bin/aws --endpoint-url "$src_endpoint" s3 cp --recursive --only-show-errors "$ckpt" \
    "s3://$SHOAL_S3_BUCKET/source/"
  rm -rf "$work/download"
  sync
  dl_s=$(seconds /usr/bin/aws --endpoint-url "$src_endpoint" s3 cp --recursive \
    --only-show-errors "s3://$SHOAL_S3_BUCKET/source/" "$work/download/")
  fresh_rgw dst
  up_s=$(seconds /usr/bin/aws --endpoint-url "$dst_endpoint" s3 cp --recursive \
    --only-show-errors "$work/download/" "s3://$SHOAL_S3_BUCKET/copy/")
  fresh_rgw dst
  start_tracker
  pub_s=$(seconds "$build/bin/shoal" publish "$work/download" --name bench/model --no-seed)
  stop_tracker
  rm -rf "$work/download"
  fresh_rgw dst
  start_tracker
  imp_s=$(seconds "$build/bin/shoal" import "s3://$SHOAL_S3_BUCKET/source" --name bench/model \
    --source-endpoint "$src_endpoint")
  rss=$(sed -n 's/.*peak memory: //p' "$work/out")
  stop_tracker
  awk -v r="$run" -v d="$dl_s" -v p="$pub_s" -v u="$up_s" -v i="$imp_s" -v m="$rss" 'BEGIN {
    printf "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.2fx faster | %.2fx | %.2fx | %s |\n", r, d, p, d + p, u, i, (d + p) / i, d / i, (d + u) / i, m }'
done
awk -v b="$bytes" 'BEGIN { printf "\n%.2f GiB in 6 files, 16 MiB pieces, two radosgw on the same cores.\n", b / 1073741824 }'
