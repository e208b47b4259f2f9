#!/usr/bin/env bash
# Import benchmark: `shoal import s3://…` of a generated checkpoint from a
# source bucket on a real radosgw into Shoal's origin (another prefix of the
# same radosgw), against the two-step way in the same run (`aws s3 cp
# --recursive` to a local disk, then `shoal publish` of that folder), and
# against the download alone. `aws s3 cp --recursive` of the downloaded
# folder back up (to a third prefix) is measured too: the source and the
# origin are one radosgw on the same cores here, so its download + upload
# is what that server can do for an import.
#
#   tests/perf/import_bench.sh BUILD_DIR [size_gib=4] [runs=3]
#
# Each run starts a fresh radosgw and tracker in a temporary folder under
# /var/tmp (always stopped). Prints one markdown row per run.
set -euo pipefail

build=$(cd "${1:?usage: import_bench.sh BUILD_DIR [size_gib] [runs]}" && pwd)
size_gib=${2:-4}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/shoal-import-bench.XXXXXX)
tracker_pid=
cleanup() {
  [[ -n $tracker_pid ]] && kill "$tracker_pid" 2>/dev/null && wait "$tracker_pid" 2>/dev/null
  "$here/../s3/radosgw.sh" stop "$work/rgw" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The source, the re-upload, the two-step publish's origin and the import's origin.
export SHOAL_RGW_MEMSTORE_BYTES=$(( (4 * size_gib + 2) * 1073741824 ))
fresh_rgw() {
  "$here/../s3/radosgw.sh" stop "$work/rgw" >/dev/null 2>&1 || true
  "$here/../s3/radosgw.sh" start "$work/rgw" >/dev/null 2>&1
  # shellcheck disable=SC1090
  source "$work/rgw/s3.env"
  export AWS_ACCESS_KEY_ID=$SHOAL_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SHOAL_S3_SECRET_KEY
  export AWS_DEFAULT_REGION=$SHOAL_S3_REGION AWS_REGION=$SHOAL_S3_REGION
}

# A safetensors-like checkpoint: four shards, a config, a tokenizer.
ckpt=$work/ckpt
mkdir -p "$ckpt/tokenizer"
total_mib=$((size_gib * 1024))
shard=$((total_mib / 4))
for i in 1 2 3 4; do
  head -c $((shard << 20)) /dev/urandom >"$ckpt/model-0000$i-of-00004.safetensors"
done
head -c 2300 /dev/urandom >"$ckpt/config.json"
head -c 1900000 /dev/urandom >"$ckpt/tokenizer/tokenizer.json"
bytes=$(du -sb "$ckpt" | cut -f1)

seconds() {  # prints the wall seconds of a command that must succeed
  if ! /usr/bin/time -f '%e' -o "$work/t" "$@" >"$work/out" 2>&1; then
    echo "import_bench: '$*' failed:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  cat "$work/t"
}

start_tracker() {  # PREFIX
  rm -rf "$work/tracker" "$work/ports"
  "$build/bin/shoal-tracker" serve --data-dir "$work/tracker" --rpc-listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --port-file "$work/ports" --origin "s3://$SHOAL_S3_BUCKET/$1" \
    --s3-endpoint "$SHOAL_S3_ENDPOINT" >"$work/tracker-$1.log" 2>&1 &
  tracker_pid=$!
  for _ in $(seq 100); do [[ -s $work/ports ]] && break; sleep 0.1; done
  export SHOAL_TRACKER=127.0.0.1:$(cut -d' ' -f1 "$work/ports")
  SHOAL_TOKEN=$("$build/bin/shoal-tracker" token create --data-dir "$work/tracker" --ns bench \
    --role write --subject bench)
  export SHOAL_TOKEN SHOAL_ORIGIN=s3://$SHOAL_S3_BUCKET/$1 SHOAL_S3_ENDPOINT SHOAL_PROGRESS=0
  export XDG_CACHE_HOME=$work/cache-$1  # cold hash caches
}
stop_tracker() {
  kill "$tracker_pid" && wait "$tracker_pid" 2>/dev/null || true
  tracker_pid=
}

printf "| run | aws s3 cp download, s | shoal publish of it, s | two-step, s | aws s3 cp upload, s | shoal import, s | import against two-step | against download alone | against download + upload | import peak RSS |\n"
printf "|---|---|---|---|---|---|---|---|---|---|\n"
for run in $(seq "$runs"); do
  fresh_rgw
  aws() { /usr/bin/aws --endpoint-url "$SHOAL_S3_ENDPOINT" "$@"; }
  aws s3 cp --recursive --only-show-errors "$ckpt" "s3://$SHOAL_S3_BUCKET/source/"
  rm -rf "$work/download"
  sync
  dl_s=$(seconds /usr/bin/aws --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --recursive \
    --only-show-errors "s3://$SHOAL_S3_BUCKET/source/" "$work/download/")
  up_s=$(seconds /usr/bin/aws --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --recursive \
    --only-show-errors "$work/download/" "s3://$SHOAL_S3_BUCKET/reupload/")
  start_tracker twostep
  pub_s=$(seconds "$build/bin/shoal" publish "$work/download" --name bench/model --no-seed)
  stop_tracker
  start_tracker imported
  imp_s=$(seconds "$build/bin/shoal" import "s3://$SHOAL_S3_BUCKET/source" --name bench/model \
    --source-endpoint "$SHOAL_S3_ENDPOINT")
  rss=$(sed -n 's/.*peak memory: //p' "$work/out")
  stop_tracker
  awk -v r="$run" -v d="$dl_s" -v p="$pub_s" -v u="$up_s" -v i="$imp_s" -v m="$rss" 'BEGIN {
    printf "| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.2fx faster | %.2fx | %.2fx | %s |\n", r, d, p, d + p, u, i, (d + p) / i, d / i, (d + u) / i, m }'
done
awk -v b="$bytes" 'BEGIN { printf "\n%.2f GiB in 6 files, 16 MiB pieces.\n", b / 1073741824 }'
