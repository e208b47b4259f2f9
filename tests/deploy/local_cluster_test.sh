#!/usr/bin/env bash
# deploy/local-cluster.sh starts and stops cleanly: run twice with a small
# checkpoint and two agents,
#   1. to the end: it exits 0, every copy matches, and afterwards no process
#      it started is left, every port it used is free, and the control
#      sockets are gone;
#   2. interrupted with SIGTERM while the agents run: it exits non-zero, and
#      again nothing is left.
# Processes are found by the demo's own temporary folder in their command
# line, so other Shoal processes on the machine do not count.
#
#   local_cluster_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src=$1
build=$2
script=$src/deploy/local-cluster.sh
fail() { echo "local_cluster_test: $*" >&2; exit 1; }

log=$(mktemp /tmp/shoal-local-cluster-test.XXXXXX)
work=""
# Whatever the demo failed to stop is stopped here, so a failing run leaves
# nothing behind either; only processes of this demo's folder are touched.
cleanup() {
  local p
  if [[ -n $work && $work == /tmp/shoal-demo.* ]]; then
    for p in $(procs_using "$work/"); do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$work"
  fi
  rm -f "$log"
  return 0
}
trap cleanup EXIT

# PIDs of live processes whose command line mentions $1.
procs_using() {
  local p
  for p in /proc/[0-9]*; do
    [[ -r $p/cmdline ]] || continue
    if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$1"; then echo "${p#/proc/}"; fi
  done
}

port_free() {  # nothing accepts connections on 127.0.0.1:$1
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Checks that nothing the run in $work started is left.
check_nothing_left() {
  local what=$1 left ports p
  # The script waits for what it started; allow exit handlers a moment.
  for _ in $(seq 50); do
    left=$(procs_using "$work/")
    [[ -z $left ]] && break
    sleep 0.1
  done
  [[ -z $left ]] || fail "$what: still running: $(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)"
  ports=$(cat "$work"/*.ports 2>/dev/null || true)
  [[ -n $ports ]] || fail "$what: no port files in $work"
  for p in $ports; do
    port_free "$p" || fail "$what: port $p is still open"
  done
  ! ls "$work"/*.sock >/dev/null 2>&1 || fail "$what: control sockets left: $(ls "$work"/*.sock)"
}

demo_dir() {  # the demo's folder, from the line that starts the tracker
  sed -n 's/^== starting shoal-tracker (origin: \(\/tmp\/shoal-demo\.[A-Za-z0-9]*\)\/origin)$/\1/p' "$log"
}

# 1. A full run.
status=0
timeout --foreground 50 "$script" --build-dir "$build" --agents 2 --size-mib 8 --keep >"$log" 2>&1 || status=$?
work=$(demo_dir)
[[ $status == 0 ]] || fail "the demo failed (exit $status): $(tail -n 20 "$log")"
grep -q "all 2 copies are byte-identical" "$log" || fail "the demo did not check its copies: $(tail -n 20 "$log")"
grep -qxF "kept $work" "$log" || fail "the demo did not run its exit handler: $(tail -n 5 "$log")"
check_nothing_left "after a full run"
rm -rf "$work"
work=""

# 2. Interrupted once the agents are up.
timeout --foreground 50 "$script" --build-dir "$build" --agents 2 --size-mib 8 --keep >"$log" 2>&1 &
demo=$!
for _ in $(seq 300); do
  grep -q "^== shoal publish" "$log" && break
  kill -0 "$demo" 2>/dev/null || break
  sleep 0.1
done
work=$(demo_dir)
grep -q "^== shoal publish" "$log" || fail "the demo did not get as far as publishing: $(tail -n 20 "$log")"
# `timeout --foreground` passes SIGTERM on to the script alone.
kill -TERM "$demo"
status=0
wait "$demo" || status=$?
[[ $status != 0 ]] || fail "the interrupted demo exited 0"
grep -qxF "kept $work" "$log" || fail "the interrupted demo did not run its exit handler: $(tail -n 5 "$log")"
check_nothing_left "after SIGTERM"

echo "local cluster: a full run and an interrupted one both leave nothing running"
