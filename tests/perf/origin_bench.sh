#!/usr/bin/env bash
# Origin benchmark: 1 GiB of 16 MiB ranged GETs through Shoal's S3 client at
# 1, 4 and 16 requests in flight, against Debian's `aws s3 cp` of the same
# object from the same radosgw, at the same concurrency and part size.
#
#   tests/perf/origin_bench.sh BUILD_DIR [size_mib=1024] [repeats=3]
#
# Starts its own radosgw (tests/s3/radosgw.sh) in a temporary folder and
# always stops it. Prints a markdown table: median throughput of `repeats`
# runs, and CPU seconds per GiB of the client process (user + sys).
set -euo pipefail

build=$(cd "${1:?usage: origin_bench.sh BUILD_DIR [size_mib] [repeats]}" && pwd)
size_mib=${2:-1024}
repeats=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/shoal-origin-bench.XXXXXX)
cleanup() { "$here/../s3/radosgw.sh" stop "$work/rgw" || true; rm -rf "$work"; }
trap cleanup EXIT

"$here/../s3/radosgw.sh" start "$work/rgw"
export SHOAL_S3_ENV=$work/rgw/s3.env
# shellcheck disable=SC1090
source "$SHOAL_S3_ENV"
export AWS_ACCESS_KEY_ID=$SHOAL_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SHOAL_S3_SECRET_KEY
export AWS_DEFAULT_REGION=$SHOAL_S3_REGION
bench=$build/tests/shoal_origin_bench

echo "upload: $("$bench" put "$size_mib")" >&2

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Prints "MiB/s cpu_s_per_GiB" for one run of the Shoal client.
run_shoal() {
  local line
  line=$("$bench" get "$1" 16)
  echo "$line" | sed -E 's/.*MiB_per_s=([0-9.]+).*cpu_s_per_GiB=([0-9.]+).*/\1 \2/'
}

# Prints "MiB/s cpu_s_per_GiB" for one run of aws s3 cp into a file on tmpfs-less disk.
run_aws() {
  local n=$1
  cat >"$work/aws-config" <<CONF
[default]
region = $SHOAL_S3_REGION
s3 =
  max_concurrent_requests = $n
  multipart_chunksize = 16MB
  multipart_threshold = 16MB
CONF
  rm -f "$work/out"
  local t
  t=$( { NO_PROXY='*' AWS_CONFIG_FILE=$work/aws-config /usr/bin/time -f '%e %U %S' /usr/bin/aws \
        --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --only-show-errors \
        "s3://$SHOAL_S3_BUCKET/bench/object" /dev/null; } 2>&1 | tail -1)
  echo "$t" | awk -v mib="$size_mib" '{printf "%.1f %.3f\n", mib/$1, ($2+$3)/(mib/1024)}'
}

echo "| in flight | shoal MiB/s | aws s3 cp MiB/s | ratio | shoal CPU s/GiB | aws CPU s/GiB |"
echo "|---|---|---|---|---|---|"
for n in 1 4 16; do
  : >"$work/s"; : >"$work/a"
  for _ in $(seq 1 "$repeats"); do
    run_shoal "$n" >>"$work/s"
    run_aws "$n" >>"$work/a"
  done
  s_tp=$(cut -d' ' -f1 "$work/s" | median); s_cpu=$(cut -d' ' -f2 "$work/s" | median)
  a_tp=$(cut -d' ' -f1 "$work/a" | median); a_cpu=$(cut -d' ' -f2 "$work/a" | median)
  ratio=$(awk -v s="$s_tp" -v a="$a_tp" 'BEGIN {printf "%.2f", s/a}')
  echo "| $n | $s_tp | $a_tp | ${ratio}x | $s_cpu | $a_cpu |"
done
