#!/usr/bin/env bash
# A one-node Ceph radosgw on loopback, for the S3 tests and the benchmark.
#
#   radosgw.sh start DIR      mon + osd + radosgw in DIR on free ports; writes DIR/s3.env
#   radosgw.sh stop DIR       stops everything started in DIR and removes DIR
#   radosgw.sh kill-rgw DIR   kills only radosgw (SIGKILL), as a crash would
#   radosgw.sh start-rgw DIR  starts radosgw again on the same ports; waits until it answers
#
# DIR/s3.env holds shell-style KEY=VALUE lines: SHOAL_S3_ENDPOINT, SHOAL_S3_TLS_ENDPOINT,
# SHOAL_S3_CA_FILE, SHOAL_S3_ACCESS_KEY, SHOAL_S3_SECRET_KEY, SHOAL_S3_BUCKET, SHOAL_S3_REGION,
# SHOAL_S3_RGW_SCRIPT and SHOAL_S3_DIR. SHOAL_RGW_MEMSTORE_BYTES sizes the in-memory OSD
# (default 4 GiB). SHOAL_RGW_ADDR is the IPv4 address radosgw listens on and the
# endpoints name (default 127.0.0.1; ceph-mon stays on 127.0.0.1). Every wait is
# bounded; start cleans up after itself on failure.
set -euo pipefail

cmd=${1:?usage: radosgw.sh start|stop|kill-rgw|start-rgw DIR}
dir=${2:?usage: radosgw.sh start|stop|kill-rgw|start-rgw DIR}
RGW_ID=shoal
ACCESS_KEY=SHOALTESTACCESSKEY01
SECRET_KEY=shoalTestSecretKey0123456789abcdefghijKL
BUCKET=shoal-test
REGION=us-east-1

log() { echo "radosgw.sh: $*" >&2; }
# free_port, wait_for, alive, kill_pidfile
source "$(dirname "$0")/../support/daemon_lib.sh"

ceph_cmd() { timeout 20 ceph -c "$dir/ceph.conf" "$@"; }

rgw_answers() {
  local code
  code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 2 "http://$(cat "$dir/rgw_addr"):$(cat "$dir/rgw_port")/")
  [[ "$code" == 200 || "$code" == 403 ]]
}

start_rgw() {
  if [[ -f "$dir/rgw.pid" ]] && alive "$(cat "$dir/rgw.pid")"; then
    return 0  # already running
  fi
  setsid radosgw -f -c "$dir/ceph.conf" -n client.rgw.$RGW_ID \
    >"$dir/log/rgw.out" 2>&1 </dev/null &
  local pid=$!
  echo $pid >"$dir/rgw.pid"
  rgw_alive_and_answers() { alive "$pid" && rgw_answers; }
  if ! wait_for 60 rgw_alive_and_answers; then
    log "radosgw did not answer within 60 s; see $dir/log"
    return 1
  fi
}

stop_all() {
  kill_pidfile "$dir/rgw.pid" TERM
  kill_pidfile "$dir/osd.pid" TERM
  kill_pidfile "$dir/mon.pid" TERM
}

do_start() {
  # A run that died without its cleanup step leaves its cluster behind: stop it first.
  if [[ -d "$dir" ]]; then stop_all; rm -rf "$dir"; fi
  mkdir -p "$dir"/{mon,osd,log,run}
  dir=$(cd "$dir" && pwd)
  trap 'log "start failed; tearing down"; stop_all' ERR
  local mon_port rgw_port tls_port fsid addr=${SHOAL_RGW_ADDR:-127.0.0.1}
  mon_port=$(free_port); rgw_port=$(free_port "$addr"); tls_port=$(free_port "$addr")
  while [[ "$rgw_port" == "$mon_port" || "$tls_port" == "$rgw_port" || "$tls_port" == "$mon_port" ]]; do
    tls_port=$(free_port "$addr"); rgw_port=$(free_port "$addr")
  done
  echo "$rgw_port" >"$dir/rgw_port"
  echo "$addr" >"$dir/rgw_addr"
  fsid=$(cat /proc/sys/kernel/random/uuid)

  # A self-signed certificate for the address, so the TLS tests have a CA file to trust.
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$addr" \
    -addext "subjectAltName=IP:$addr" \
    -keyout "$dir/tls.key" -out "$dir/tls.crt" >/dev/null 2>&1

  cat >"$dir/ceph.conf" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
mon initial members = a
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $dir/keyring
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/run/\$name.pid
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd crush chooseleaf type = 0
osd pool default pg num = 8
osd pool default pgp num = 8
mon data avail warn = 1
mon data avail crit = 0
mon warn on pool no redundancy = false
ms bind ipv6 = false
[mon.a]
mon data = $dir/mon
[osd.0]
osd data = $dir/osd
osd objectstore = memstore
memstore device bytes = ${SHOAL_RGW_MEMSTORE_BYTES:-4294967296}
osd max object size = 134217728
[client.rgw.$RGW_ID]
rgw frontends = beast endpoint=$addr:$rgw_port ssl_endpoint=$addr:$tls_port ssl_certificate=$dir/tls.crt ssl_private_key=$dir/tls.key
rgw dns name = localhost
rgw enable usage log = true
rgw usage log tick interval = 1
rgw usage log flush threshold = 1
rgw max chunk size = 4194304
rgw thread pool size = 128
CONF

  ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$dir/keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
  ceph-authtool "$dir/keyring" --gen-key -n client.rgw.$RGW_ID \
    --cap mon 'allow rw' --cap osd 'allow rwx' --cap mgr 'allow rw' >/dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null
  ceph-mon -c "$dir/ceph.conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring" \
    >"$dir/log/mkfs-mon.out" 2>&1
  setsid ceph-mon -f -c "$dir/ceph.conf" -i a >"$dir/log/mon.out" 2>&1 </dev/null &
  echo $! >"$dir/mon.pid"
  wait_for 30 ceph_cmd -s || { log "ceph-mon did not come up"; false; }

  local uuid; uuid=$(cat /proc/sys/kernel/random/uuid)
  ceph_cmd osd new "$uuid" 0 >/dev/null
  ceph_cmd auth get-or-create osd.0 mon 'allow profile osd' osd 'allow *' mgr 'allow profile osd' \
    >"$dir/osd/keyring"
  ceph-osd -c "$dir/ceph.conf" -i 0 --mkfs --osd-uuid "$uuid" --keyring "$dir/osd/keyring" \
    >"$dir/log/mkfs-osd.out" 2>&1
  setsid ceph-osd -f -c "$dir/ceph.conf" -i 0 --keyring "$dir/osd/keyring" \
    >"$dir/log/osd.out" 2>&1 </dev/null &
  echo $! >"$dir/osd.pid"
  osd_up() { ceph_cmd osd stat | grep -q '1 up'; }
  wait_for 60 osd_up || { log "ceph-osd did not come up"; false; }

  start_rgw
  timeout 60 radosgw-admin -c "$dir/ceph.conf" user create --uid test --display-name test \
    --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY" >/dev/null
  # Create the bucket with a plain SigV4 request, so start-up does not depend on any S3 client.
  local code
  code=$(curl -s --noproxy '*' -o "$dir/log/mkbucket.out" -w '%{http_code}' --max-time 20 -X PUT \
    --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "http://$addr:$rgw_port/$BUCKET")
  [[ "$code" == 200 ]] || { log "bucket creation answered $code"; false; }

  cat >"$dir/s3.env.tmp" <<ENV
SHOAL_S3_ENDPOINT=http://$addr:$rgw_port
SHOAL_S3_TLS_ENDPOINT=https://$addr:$tls_port
SHOAL_S3_CA_FILE=$dir/tls.crt
SHOAL_S3_ACCESS_KEY=$ACCESS_KEY
SHOAL_S3_SECRET_KEY=$SECRET_KEY
SHOAL_S3_BUCKET=$BUCKET
SHOAL_S3_REGION=$REGION
SHOAL_S3_RGW_SCRIPT=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
SHOAL_S3_DIR=$dir
ENV
  mv "$dir/s3.env.tmp" "$dir/s3.env"
  trap - ERR
  log "radosgw ready at http://$addr:$rgw_port (env in $dir/s3.env)"
}

case "$cmd" in
  start) do_start ;;
  stop)
    if [[ -d "$dir" ]]; then stop_all; rm -rf "$dir"; fi ;;
  kill-rgw) kill_pidfile "$dir/rgw.pid" KILL ;;
  start-rgw) start_rgw ;;
  *) log "unknown command $cmd"; exit 2 ;;
esac
