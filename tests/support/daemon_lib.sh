# Shell helpers for the test fixtures that run daemons (tests/s3/radosgw.sh,
# tests/etcd/etcd_cluster.sh). Sourced, not run. Every wait is bounded.

# A TCP port on address $1 (default 127.0.0.1) that nothing listens on now.
free_port() {
  /usr/bin/python3 -c \
    'import socket,sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' \
    "${1:-127.0.0.1}"
}

# Waits up to $1 seconds for the command in the remaining arguments to succeed.
wait_for() {
  local secs=$1; shift
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then return 1; fi
    sleep 0.3
  done
}

# wait_for, or exits 1 naming the command it waited on.
must_wait_for() {
  wait_for "$@" || { echo "$(basename "$0"): timed out waiting for: ${*:2}" >&2; exit 1; }
}

# Milliseconds since $1, a `date +%s%N` reading.
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# True while process $1 runs. A zombie does not count: under a container
# init that never reaps, a killed daemon stays a zombie.
alive() {
  local state
  state=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# Sends signal $2 (default TERM) to the pid in file $1, waits up to 10 s for
# it to go (then SIGKILL), and removes the file.
kill_pidfile() {
  local f=$1 sig=${2:-TERM}
  [[ -f "$f" ]] || return 0
  local pid; pid=$(cat "$f")
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    alive "$pid" || { rm -f "$f"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.2
  rm -f "$f"
}
