#!/usr/bin/env bash
# Federation benchmark: a tracker mirroring another cluster's namespace
# (--follow) copies a published version between two S3 servers (two
# radosgw, as two clusters' buckets are), against `aws s3 sync` of the same
# objects in the same run. Two S3 servers cannot copy server-side, so the
# baseline goes through this machine: sync down to a local disk, then sync
# up (and the download alone, the tighter bound, is shown too).
#
#   tests/perf/federation_bench.sh BUILD_DIR [size_gib=4] [runs=3]
#
# Per run:
#   1. the upstream: a fresh source radosgw, its tracker, `shoal publish`
#      of a 10-file checkpoint (v1);
#   2. the baseline: `aws s3 sync` of v1's chunk objects down from the
#      source, then up to a fresh second radosgw;
#   3. the mirror: a fresh second radosgw and a tracker following the
#      upstream; its first copy of v1 (read from its log: resolve to commit);
#   4. v2, which changes one of the ten files, published upstream while the
#      mirror watches: the time from the publish's end to the mirror's tag,
#      against the copy's own time, and the bytes it copied against the
#      changed file's size;
#   5. the baseline for v2: `aws s3 sync` of the v2 folder onto a bucket
#      that holds the v1 folder.
# Everything shares this machine's cores. Temporary files live under
# /var/tmp; everything is stopped on exit. Prints one markdown row per run.
set -euo pipefail

build=$(cd "${1:?usage: federation_bench.sh BUILD_DIR [size_gib] [runs]}" && pwd)
size_gib=${2:-4}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/shoal-federation-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$here/../s3/radosgw.sh" stop "$work/src" >/dev/null 2>&1 || true
  "$here/../s3/radosgw.sh" stop "$work/dst" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

export SHOAL_RGW_MEMSTORE_BYTES=$(( (size_gib * 3 / 2 + 2) * 1073741824 ))
export SHOAL_PROGRESS=0
# fresh_rgw, stop_rgw, seconds
source "$here/bench_lib.sh"

# Ten files: nine shards and a config; v2 changes shard 5.
v1=$work/v1
mkdir -p "$v1"
shard=$((size_gib * 1024 / 9))
for i in 1 2 3 4 5 6 7 8 9; do
  head -c $((shard << 20)) /dev/urandom >"$v1/model-0000$i-of-00009.safetensors"
done
head -c 2300 /dev/urandom >"$v1/config.json"
v2=$work/v2
cp -a "$v1" "$v2"
head -c $((shard << 20)) /dev/urandom >"$v2/model-00005-of-00009.safetensors"
changed=$((shard << 20))
bytes=$(du -sb "$v1" | cut -f1)

# start_tracker NAME ENDPOINT [flags...]: a tracker whose origin is the bucket
# at ENDPOINT; sets NAME_rpc, NAME_http and NAME_pid.
start_tracker() {
  local name=$1 endpoint=$2
  shift 2
  rm -rf "$work/$name" "$work/$name.ports"
  "$build/bin/shoal-tracker" serve --data-dir "$work/$name" --rpc-listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --port-file "$work/$name.ports" \
    --origin "s3://$SHOAL_S3_BUCKET/origin" --s3-endpoint "$endpoint" "$@" \
    >"$work/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 150); do [[ -s $work/$name.ports ]] && break; sleep 0.1; done
  printf -v "${name}_pid" '%s' "$pid"
  printf -v "${name}_rpc" '%s' "127.0.0.1:$(cut -d' ' -f1 "$work/$name.ports")"
  printf -v "${name}_http" '%s' "$(cut -d' ' -f2 "$work/$name.ports")"
}
stop_tracker() { kill "$1" 2>/dev/null && wait "$1" 2>/dev/null || true; }
metric() {  # metric HTTP_PORT SAMPLE
  curl -s "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s { print $2 }'
}
# The log field `field` of the last `event` line in `log`.
log_field() {
  python3 -c '
import json, sys
last = None
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == sys.argv[2]:
        last = e
print(last[sys.argv[3]] if last else "")' "$1" "$2" "$3"
}
iso_seconds() { python3 -c 'import sys, datetime; print(datetime.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00")).timestamp())' "$1"; }
# waits until `shoal inspect REF` on the mirror names VERSION
wait_tag() {
  for _ in $(seq 3000); do
    if SHOAL_TRACKER=$mirror_rpc SHOAL_TOKEN=$mirror_token "$build/bin/shoal" inspect "$1" \
        2>/dev/null | grep -q "${2:0:16}"; then
      return 0
    fi
    sleep 0.2
  done
  echo "federation_bench: the mirror never tagged $1 as $2" >&2
  tail -20 "$work/mirror.log" >&2
  exit 1
}

printf "| run | aws down, s | aws up, s | aws sync down+up, s | mirror copy, s | against down+up | against down | v2: aws sync of the folder, s | v2: mirror copy, s | v2: publish end to mirror tag, s | v2 bytes copied / changed file |\n"
printf "|---|---|---|---|---|---|---|---|---|---|---|\n"
for run in $(seq "$runs"); do
  fresh_rgw src
  start_tracker upstream "$src_endpoint"
  up_token=$("$build/bin/shoal-tracker" token create --data-dir "$work/upstream" --ns bench \
    --role write --subject bench)
  SHOAL_TRACKER=$upstream_rpc SHOAL_TOKEN=$up_token SHOAL_ORIGIN=s3://$SHOAL_S3_BUCKET/origin \
    SHOAL_S3_ENDPOINT=$src_endpoint XDG_CACHE_HOME=$work/cache-$run \
    seconds "$build/bin/shoal" publish "$v1" --name bench/model --tag latest --no-seed >/dev/null

  # The baseline: the same chunk objects, down through this disk and up.
  rm -rf "$work/dl"
  sync
  down_s=$(seconds /usr/bin/aws --endpoint-url "$src_endpoint" s3 sync --only-show-errors \
    "s3://$SHOAL_S3_BUCKET/origin/chunks/" "$work/dl/")
  fresh_rgw dst
  up_s=$(seconds /usr/bin/aws --endpoint-url "$dst_endpoint" s3 sync --only-show-errors \
    "$work/dl/" "s3://$SHOAL_S3_BUCKET/copy/")
  rm -rf "$work/dl"

  # The mirror, on a fresh bucket: its first copy of v1.
  fresh_rgw dst
  install -m 0600 /dev/null "$work/follow.token"
  "$build/bin/shoal-tracker" token create --data-dir "$work/upstream" --ns bench --role read \
    --subject mirror >"$work/follow.token"
  start_tracker mirror "$dst_endpoint" --follow "$upstream_rpc" --follow-ns bench \
    --follow-token-file "$work/follow.token" --follow-origin "s3://$SHOAL_S3_BUCKET/origin" \
    --follow-s3-endpoint "$src_endpoint"
  mirror_token=$("$build/bin/shoal-tracker" token create --data-dir "$work/mirror" --ns bench \
    --role read --subject bench)
  v1_id=$(SHOAL_TRACKER=$upstream_rpc SHOAL_TOKEN=$up_token "$build/bin/shoal" inspect \
    bench/model:latest | sed -n 's/.*  version \([0-9a-f]*\).*/\1/p' | head -1)
  wait_tag bench/model:latest "$v1_id"
  copy_s=$(log_field "$work/mirror.log" mirror.version_copied seconds)
  copied_before=$(metric "$mirror_http" shoal_tracker_follow_bytes_copied_total)

  # v2, published while the mirror watches.
  SHOAL_TRACKER=$upstream_rpc SHOAL_TOKEN=$up_token SHOAL_ORIGIN=s3://$SHOAL_S3_BUCKET/origin \
    SHOAL_S3_ENDPOINT=$src_endpoint XDG_CACHE_HOME=$work/cache-$run \
    "$build/bin/shoal" publish "$v2" --name bench/model --tag latest --no-seed >"$work/pub2.out"
  published_at=$(date +%s.%N)
  v2_id=$(sed -n 's/.*published bench\/model:\([0-9a-f]*\).*/\1/p' "$work/pub2.out" | head -1)
  wait_tag bench/model:latest "$v2_id"
  copy2_s=$(log_field "$work/mirror.log" mirror.version_copied seconds)
  tagged_at=$(iso_seconds "$(log_field "$work/mirror.log" mirror.tag_moved ts)")
  copied_after=$(metric "$mirror_http" shoal_tracker_follow_bytes_copied_total)
  stop_tracker "$mirror_pid"
  stop_tracker "$upstream_pid"
  stop_rgw src

  # The folder baseline for v2: a bucket holding v1's folder syncs v2's.
  fresh_rgw dst
  /usr/bin/aws --endpoint-url "$dst_endpoint" s3 sync --only-show-errors "$v1/" \
    "s3://$SHOAL_S3_BUCKET/folder/"
  # `aws s3 sync` goes by size and time: the changed shard has v1's size, so
  # it must look newer than the upload just made, or sync skips it.
  touch "$v2/model-00005-of-00009.safetensors"
  sync2_s=$(seconds /usr/bin/aws --endpoint-url "$dst_endpoint" s3 sync --only-show-errors \
    "$v2/" "s3://$SHOAL_S3_BUCKET/folder/")
  stop_rgw dst

  awk -v r="$run" -v d="$down_s" -v u="$up_s" -v m="$copy_s" -v s2="$sync2_s" -v m2="$copy2_s" \
    -v p="$published_at" -v t="$tagged_at" -v b="$copied_after" -v a="$copied_before" \
    -v c="$changed" 'BEGIN {
    printf "| %d | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.1f | %.1f | %.1f | %.3f |\n",
      r, d, u, d + u, m, (d + u) / m, d / m, s2, m2, t - p, (b - a) / c }'
done
awk -v b="$bytes" 'BEGIN { printf "\n%.2f GiB in 10 files, 16 MiB pieces, two radosgw on the same cores.\n", b / 1073741824 }'
