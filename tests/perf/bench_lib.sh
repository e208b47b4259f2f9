# Sourced by the benchmarks that run their own radosgw servers and time
# commands. Needs $here (tests/perf) and $work (the run's temporary folder).
#
# fresh_rgw NAME: a new radosgw in $work/NAME (any old one there is stopped
# and removed); exports its keys and region for aws-cli and Shoal, and sets
# NAME_endpoint.
fresh_rgw() {
  "$here/../s3/radosgw.sh" stop "$work/$1" >/dev/null 2>&1 || true
  rm -rf "${work:?}/$1"
  "$here/../s3/radosgw.sh" start "$work/$1" >/dev/null 2>&1
  # shellcheck disable=SC1090
  source "$work/$1/s3.env"
  export AWS_ACCESS_KEY_ID=$SHOAL_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SHOAL_S3_SECRET_KEY
  export AWS_DEFAULT_REGION=$SHOAL_S3_REGION AWS_REGION=$SHOAL_S3_REGION
  printf -v "${1}_endpoint" '%s' "$SHOAL_S3_ENDPOINT"
}

# stop_rgw NAME: stops and removes the radosgw in $work/NAME.
stop_rgw() { "$here/../s3/radosgw.sh" stop "$work/$1" >/dev/null 2>&1 || true; }

# seconds CMD...: prints the wall seconds of CMD, whose output goes to
# $work/out; a CMD that fails ends the benchmark with that output.
seconds() {
  if ! /usr/bin/time -f '%e' -o "$work/t" "$@" >"$work/out" 2>&1; then
    echo "$(basename "$0" .sh): '$*' failed:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  cat "$work/t"
}
