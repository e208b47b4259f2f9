#!/usr/bin/env bash
# A three-member etcd cluster on loopback, for the tests of the tracker's
# etcd client and of anything that keeps state in etcd.
#
#   etcd_cluster.sh start DIR        three members on free ports, data in DIR/mN;
#                                    waits until all answer and a leader is elected;
#                                    writes DIR/etcd.env
#   etcd_cluster.sh stop DIR         kills every member started in DIR and removes DIR
#   etcd_cluster.sh kill DIR N       SIGKILLs member N (1-3), as a crash would
#   etcd_cluster.sh restart DIR N    starts member N again on its ports and data;
#                                    waits until the cluster is healthy again
#   etcd_cluster.sh leader DIR       prints the number (1-3) of the current leader
#   etcd_cluster.sh kill-leader DIR  SIGKILLs the leader; prints its number
#   etcd_cluster.sh start-tls DIR    one member serving clients over HTTPS with a
#                                    self-signed certificate for 127.0.0.1 (DIR/tls.crt);
#                                    writes DIR/etcd.env; stop it with stop
#
# DIR/etcd.env holds shell-style KEY=VALUE lines: SHOAL_ETCD_ENDPOINTS (the
# three client URLs, comma-separated), SHOAL_ETCD_SCRIPT (this script),
# SHOAL_ETCD_DIR, and for N in 1-3 SHOAL_ETCD_ENDPOINT_N, SHOAL_ETCD_PID_N
# and SHOAL_ETCD_DATA_N. It is rewritten when a member restarts. Short
# election timeouts (50 ms heartbeat, 500 ms election) make a lost leader
# replaced within about a second; everything else is etcd's default, fsync
# included. Every wait is bounded; start cleans up after itself on failure.
set -euo pipefail

usage="usage: etcd_cluster.sh start|stop|leader|kill-leader DIR, or kill|restart DIR N"
cmd=${1:?$usage}
dir=${2:?$usage}
MEMBERS=(1 2 3)

log() { echo "etcd_cluster.sh: $*" >&2; }
# free_port, wait_for, alive, kill_pidfile
source "$(dirname "$0")/../support/daemon_lib.sh"

client_url() { echo "$(cat "$dir/scheme" 2>/dev/null || echo http)://127.0.0.1:$(cat "$dir/m$1/client_port")"; }
peer_url() { echo "http://127.0.0.1:$(cat "$dir/m$1/peer_port")"; }

# The cluster as etcd's --initial-cluster wants it: m1=http://...,m2=...
initial_cluster() {
  local n out=""
  for n in "${MEMBERS[@]}"; do out+="${out:+,}m$n=$(peer_url "$n")"; done
  echo "$out"
}

# Starts member $1 in the background; its data stays in DIR/mN/data. Any
# further arguments go to etcd.
start_member() {
  local n=$1; shift
  if [[ -f "$dir/m$n/pid" ]] && alive "$(cat "$dir/m$n/pid")"; then return 0; fi
  setsid etcd --name "m$n" --data-dir "$dir/m$n/data" "$@" \
    --listen-client-urls "$(client_url "$n")" --advertise-client-urls "$(client_url "$n")" \
    --listen-peer-urls "$(peer_url "$n")" --initial-advertise-peer-urls "$(peer_url "$n")" \
    --initial-cluster "$(initial_cluster)" --initial-cluster-state new \
    --initial-cluster-token "shoal-test-$(basename "$dir")" \
    --heartbeat-interval 50 --election-timeout 500 \
    >>"$dir/m$n/etcd.log" 2>&1 </dev/null &
  echo $! >"$dir/m$n/pid"
}

# True if member $1 answers /health with a leader ({"health":"true"}).
member_healthy() {
  curl -s --noproxy '*' --max-time 2 --cacert "$dir/tls.crt" "$(client_url "$1")/health" |
    grep -q '"health":"true"'
}

# True if every member that should run is healthy.
cluster_healthy() {
  local n
  for n in "${MEMBERS[@]}"; do
    if [[ -f "$dir/m$n/pid" ]]; then member_healthy "$n" || return 1; fi
  done
}

# The number of the leader, as the first member that answers sees it.
leader() {
  local n status
  for n in "${MEMBERS[@]}"; do
    [[ -f "$dir/m$n/pid" ]] || continue
    status=$(curl -s --noproxy '*' --max-time 2 -X POST -d '{}' \
      "$(client_url "$n")/v3/maintenance/status") || continue
    local id
    id=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("leader", ""))' \
      <<<"$status") || continue
    [[ -n "$id" && "$id" != 0 ]] || continue
    local m member
    for m in "${MEMBERS[@]}"; do
      [[ -f "$dir/m$m/pid" ]] || continue
      member=$(curl -s --noproxy '*' --max-time 2 -X POST -d '{}' \
        "$(client_url "$m")/v3/maintenance/status" |
        /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["member_id"])' \
        2>/dev/null) || continue
      if [[ "$member" == "$id" ]]; then echo "$m"; return 0; fi
    done
  done
  return 1
}

write_env() {
  local n endpoints=""
  for n in "${MEMBERS[@]}"; do endpoints+="${endpoints:+,}$(client_url "$n")"; done
  {
    echo "SHOAL_ETCD_ENDPOINTS=$endpoints"
    echo "SHOAL_ETCD_SCRIPT=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
    echo "SHOAL_ETCD_DIR=$dir"
    for n in "${MEMBERS[@]}"; do
      echo "SHOAL_ETCD_ENDPOINT_$n=$(client_url "$n")"
      echo "SHOAL_ETCD_PID_$n=$(cat "$dir/m$n/pid" 2>/dev/null || echo 0)"
      echo "SHOAL_ETCD_DATA_$n=$dir/m$n/data"
    done
  } >"$dir/etcd.env.tmp"
  mv "$dir/etcd.env.tmp" "$dir/etcd.env"
}

stop_all() {
  local n
  for n in "${MEMBERS[@]}"; do kill_pidfile "$dir/m$n/pid" KILL; done
}

do_start() {
  # A run that died without its cleanup step leaves its cluster behind: stop it first.
  if [[ -d "$dir" ]]; then stop_all; rm -rf "$dir"; fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  trap 'log "start failed; tearing down (logs were in $dir/mN/etcd.log)"; tail -n 5 "$dir"/m*/etcd.log >&2 || true; stop_all' ERR
  local n ports=() p
  while ((${#ports[@]} < 6)); do
    p=$(free_port)
    [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
  done
  for n in "${MEMBERS[@]}"; do
    mkdir -p "$dir/m$n"
    echo "${ports[$((2 * n - 2))]}" >"$dir/m$n/client_port"
    echo "${ports[$((2 * n - 1))]}" >"$dir/m$n/peer_port"
  done
  for n in "${MEMBERS[@]}"; do start_member "$n"; done
  wait_for 30 cluster_healthy || { log "the cluster was not healthy within 30 s"; false; }
  write_env
  trap - ERR
  log "etcd ready at $(grep ENDPOINTS= "$dir/etcd.env" | cut -d= -f2) (env in $dir/etcd.env)"
}

do_start_tls() {
  if [[ -d "$dir" ]]; then stop_all; rm -rf "$dir"; fi
  mkdir -p "$dir/m1"
  dir=$(cd "$dir" && pwd)
  MEMBERS=(1)
  trap 'log "start-tls failed; tearing down"; tail -n 5 "$dir"/m1/etcd.log >&2 || true; stop_all' ERR
  echo https >"$dir/scheme"
  free_port >"$dir/m1/client_port"
  local peer; peer=$(free_port)
  while [[ "$peer" == "$(cat "$dir/m1/client_port")" ]]; do peer=$(free_port); done
  echo "$peer" >"$dir/m1/peer_port"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$dir/tls.key" -out "$dir/tls.crt" >/dev/null 2>&1
  start_member 1 --cert-file "$dir/tls.crt" --key-file "$dir/tls.key"
  wait_for 30 cluster_healthy || { log "the TLS member was not healthy within 30 s"; false; }
  write_env
  echo "SHOAL_ETCD_CA_FILE=$dir/tls.crt" >>"$dir/etcd.env"
  trap - ERR
}

member_arg() {
  local n=${1:?$usage}
  [[ "$n" =~ ^[123]$ ]] || { log "member must be 1, 2 or 3, not $n"; exit 2; }
  echo "$n"
}

case "$cmd" in
  start) do_start ;;
  start-tls) do_start_tls ;;
  stop)
    if [[ -d "$dir" ]]; then stop_all; rm -rf "$dir"; fi ;;
  kill)
    n=$(member_arg "${3:-}")
    kill_pidfile "$dir/m$n/pid" KILL
    write_env ;;
  restart)
    n=$(member_arg "${3:-}")
    start_member "$n"
    write_env
    wait_for 30 cluster_healthy || { log "member $n did not rejoin within 30 s"; exit 1; } ;;
  leader) leader ;;
  kill-leader)
    wait_for 10 leader || { log "no leader within 10 s"; exit 1; }
    n=$(leader)
    kill_pidfile "$dir/m$n/pid" KILL
    write_env
    echo "$n" ;;
  *) log "unknown command $cmd"; exit 2 ;;
esac
