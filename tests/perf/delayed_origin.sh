# Sourced by the benchmarks that read an origin across a slow link
# (read_bench.sh, loader_bench.sh): starts radosgw (tests/s3/radosgw.sh) in
# $work/rgw, a TCP proxy adding $delay_ms of round trip in front of it
# (delay_proxy.py), and a tracker whose origin is s3://<bucket>/$bench_prefix,
# then mints the tokens. Expects $here, $bin, $py, $work, $delay_ms,
# $bench_prefix and the pids array; sets the AWS_* keys, $origin,
# $delayed (the proxy's URL), $rpc, $agent_token, $writer and $reader.
# Namespace "bench" is the models'. BENCH_TRACKER_FLAGS adds tracker flags.
"$here/../s3/radosgw.sh" start "$work/rgw" >/dev/null 2>&1
# shellcheck disable=SC1091
source "$work/rgw/s3.env"
export AWS_ACCESS_KEY_ID=$SHOAL_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SHOAL_S3_SECRET_KEY AWS_DEFAULT_REGION=$SHOAL_S3_REGION
origin=s3://$SHOAL_S3_BUCKET/$bench_prefix

"$py" "$here/delay_proxy.py" 0 "${SHOAL_S3_ENDPOINT#http://}" "$delay_ms" >"$work/proxy.log" 2>&1 &
pids+=($!)
must_wait_for 10 grep -q listening "$work/proxy.log"
delayed=http://127.0.0.1:$(awk '/listening/ {print $2}' "$work/proxy.log")

rpc=$(free_port)
"$bin/shoal-tracker" serve --data-dir "$work/tracker" --rpc-listen "127.0.0.1:$rpc" --http-listen 127.0.0.1:0 \
  --origin "$origin" --s3-endpoint "$SHOAL_S3_ENDPOINT" --s3-region "$SHOAL_S3_REGION" --announce-interval 1s \
  ${BENCH_TRACKER_FLAGS:-} >"$work/tracker.log" 2>&1 &
pids+=($!)
must_wait_for 15 "$py" -c "import socket; socket.create_connection(('127.0.0.1', $rpc))"
token() { "$bin/shoal-tracker" token create --data-dir "$work/tracker" --ns "$1" --role "$2" --subject "$3" | head -1; }
agent_token=$(token '*' read agents)
writer=$(token bench write trainer)
reader=$(token bench read pod)
