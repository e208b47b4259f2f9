#!/usr/bin/env bash
# The user's alternative, in the same run: Debian's `aws s3 cp` of the same
# number of bytes from a one-node radosgw, against the peer-to-peer transfer
# of tests/perf/p2p_bench.sh (16 MiB pieces) in each peer security mode
# (the tracker's --peer-security): off, tls (the default) and auth.
#
#   tests/perf/p2p_vs_s3_bench.sh BUILD_DIR [SIZE_MIB=2048] [MODES=off,tls,auth] [SESSIONS=1]
#
# SESSIONS is a comma-separated list of peer session counts (an agent's
# --peer-sessions): each mode runs once per count, with the bytes in 8
# files (one torrent each, spread over the sessions) when any count is
# above 1, and in one file otherwise.
#
# The last line compares each mode's MB/s with awscli; the default mode's
# figure is the one after "with TLS on". A mode with the suffix -before
# (tls-before) runs against the libtorrent in $P2P_BENCH_BEFORE_LIBDIR, for
# example an earlier Shoal build of it unpacked with
#   dpkg-deb -x /var/cache/shoal/libtorrent/VERSION/libtorrent-rasterbar2.0_*.deb DIR
# and P2P_BENCH_BEFORE_LIBDIR=DIR/usr/lib/x86_64-linux-gnu, so a change to
# the library is measured before and after in one run.
set -euo pipefail
build=$(cd "${1:?usage: p2p_vs_s3_bench.sh BUILD_DIR [size_mib]}" && pwd)
size_mib=${2:-2048}
IFS=, read -r -a modes <<<"${3:-off,tls,auth}"
IFS=, read -r -a session_counts <<<"${4:-1}"
files=1
for n in "${session_counts[@]}"; do [[ $n -gt 1 ]] && files=8; done
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /var/tmp/shoal-p2p-s3.XXXXXX)
cleanup() { "$here/../s3/radosgw.sh" stop "$work/rgw" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

mbs() { awk -F'|' '/^\| 16 / {gsub(/ /, "", $3); print $3}'; }
declare -A rate=()
runs=()
for m in "${modes[@]}"; do
  for n in "${session_counts[@]}"; do
    lib=${LD_LIBRARY_PATH:-}
    if [[ $m == *-before ]]; then
      lib=${P2P_BENCH_BEFORE_LIBDIR:?mode $m needs P2P_BENCH_BEFORE_LIBDIR}
    fi
    out=$(LD_LIBRARY_PATH=$lib P2P_BENCH_SECURITY=${m%-before} P2P_BENCH_SESSIONS=$n \
      P2P_BENCH_FILES=$files "$here/p2p_bench.sh" "$build" "$size_mib" 16)
    echo "$out"
    run=$m
    [[ ${#session_counts[@]} -gt 1 || $n -gt 1 ]] && run="$m/$n"
    runs+=("$run")
    rate[$run]=$(echo "$out" | mbs)
  done
done

export SHOAL_RGW_MEMSTORE_BYTES=$(( (size_mib / 1024 + 2) * 1073741824 ))
"$here/../s3/radosgw.sh" start "$work/rgw" >/dev/null 2>&1
# shellcheck disable=SC1090
source "$work/rgw/s3.env"
export AWS_ACCESS_KEY_ID=$SHOAL_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SHOAL_S3_SECRET_KEY AWS_DEFAULT_REGION=$SHOAL_S3_REGION
head -c $((size_mib << 20)) /dev/urandom >"$work/object"
/usr/bin/aws --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --only-show-errors "$work/object" "s3://$SHOAL_S3_BUCKET/p2p-baseline"
rm -f "$work/object"
/usr/bin/time -f '%e' -o "$work/t" /usr/bin/aws --endpoint-url "$SHOAL_S3_ENDPOINT" s3 cp --only-show-errors \
  "s3://$SHOAL_S3_BUCKET/p2p-baseline" /dev/null
aws_s=$(cat "$work/t")
rates=""
for r in "${runs[@]}"; do rates+="$r=${rate[$r]} "; done
awk -v mib="$size_mib" -v s="$aws_s" -v rates="$rates" 'BEGIN {
  a = mib * 1048576 / s / 1e6;
  printf "\naws s3 cp of %d MiB from radosgw: %.1f s, %.0f MB/s; peer-to-peer", mib, s, a;
  n = split(rates, r, " ");
  for (i = 1; i <= n; i++) {
    split(r[i], kv, "=");
    split(kv[1], ms, "/");
    mode = ms[1]; sub(/-before$/, "", mode);
    label = mode == "off" ? "TLS off" : mode == "tls" ? "TLS on" : "auth (proof, then plain)";
    if (ms[1] ~ /-before$/) label = label " (library before)";
    if (ms[2] != "") label = label ", " ms[2] " peer session" (ms[2] > 1 ? "s" : "");
    printf "%s %s MB/s = %.2fx awscli with %s", (i > 1 ? "," : ""), kv[2], kv[2] / a, label;
  }
  printf "\n";
}'
