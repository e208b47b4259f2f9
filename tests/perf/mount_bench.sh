#!/usr/bin/env bash
# Mount benchmark: a 1 GiB file read through `shoal mount`, against `cat`
# and against the agent's HTTP API.
#
#   tests/perf/mount_bench.sh BUILD_DIR [TRIALS=8]
#
# A tracker and one agent on a folder origin (file://) on 127.0.0.1, and a
# file of random bytes (MOUNT_BENCH_MIB, default 1024) in 16 MiB pieces
# (PIECE_SIZE) published to the origin only, so the agent starts cold.
# MOUNT_FLAGS go to the measured mount; READ_AHEAD_KB sets its kernel
# read-ahead (default 128).
#   Cold: mount_bench_cold.py reads 1 MiB ranges of pieces the agent lacks,
#     through the mount and through the agent's plain HTTP API.
#   Warm: the rest of the file is read into the agent's cache, then, three
#     times each: the whole file through the mount with the page cache
#     dropped, against `cat` of the agent's chunk files with the page cache
#     dropped; and a second pass through the mount (the kernel keeps a
#     mounted file's pages), against `cat` of a page-cached copy. A second
#     mount with --no-splice shows what splicing the chunk files saves.
#     bindfs (deploy/install-deps.sh --bench) mounts the copy's folder,
#     read the same two ways: what any FUSE file system costs on this kernel.
#     BASE_SHOAL, the path of another build's `shoal`, mounts the file with
#     it too and reads it in the same rounds, page cache dropped: a change
#     against the code before it, side by side on one agent.
# Needs root: it mounts, and drops the page cache (DROP_CACHES=0 skips
# that, for a trial run of the script). Prints markdown tables.
set -euo pipefail
trap 'echo "mount_bench: line $LINENO: $BASH_COMMAND failed" >&2' ERR

build=$(cd "${1:?usage: mount_bench.sh BUILD_DIR [trials]}" && pwd)
trials=${2:-8}
mib=${MOUNT_BENCH_MIB:-1024}
piece=${PIECE_SIZE:-16777216}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin
py=/usr/bin/python3
work=$(mktemp -d /var/tmp/shoal-mount-bench.XXXXXX)
pids=()
cleanup() {
  for m in "$work/mnt" "$work/mnt-copy" "$work/mnt-bindfs" "$work/mnt-base"; do
    if mountpoint -q "$m" 2>/dev/null; then fusermount3 -u -z "$m" 2>/dev/null || true; fi
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -z ${KEEP:-} ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT
# shellcheck source=tests/support/daemon_lib.sh
source "$here/../support/daemon_lib.sh"
drop_caches() {
  sync
  if [[ ${DROP_CACHES:-1} == 1 ]]; then echo 3 >/proc/sys/vm/drop_caches; fi
}
timed() {  # timed COMMAND...: milliseconds COMMAND took, its output dropped
  local t; t=$(date +%s%N); "$@" >/dev/null; ms_since "$t"
}

mkdir -p "$work/origin" "$work/ckpt" "$work/mnt" "$work/mnt-copy" "$work/mnt-bindfs" "$work/mnt-base" "$work/plain"
"$bin/shoal-tracker" serve --data-dir "$work/tracker" --rpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --port-file "$work/tracker.ports" --origin "file://$work/origin" --announce-interval 1s \
  >"$work/tracker.log" 2>&1 &
pids+=($!)
must_wait_for 15 test -s "$work/tracker.ports"
read -r rpc _ <"$work/tracker.ports"
token() { "$bin/shoal-tracker" token create --data-dir "$work/tracker" --ns "$1" --role "$2" --subject "$3" | head -1; }
agent_token=$(token '*' read agents)
writer=$(token bench write trainer)
reader=$(token bench read pod)

"$bin/shoald" --name bench --tracker "127.0.0.1:$rpc" --token "$agent_token" --cache-dir "$work/cache" \
  --cache-size 4GiB --peer-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --control-socket "$work/agent.sock" \
  --port-file "$work/agent.ports" --origin "file://$work/origin" >"$work/agent.log" 2>&1 &
pids+=($!)
must_wait_for 15 test -s "$work/agent.ports"
http_port=$(awk '{print $2}' "$work/agent.ports")
agent=http://127.0.0.1:$http_port
must_wait_for 15 sh -c "curl -s $agent/metrics | grep -q '^shoal_agent_tracker_registered 1'"

head -c $((mib << 20)) /dev/urandom >"$work/ckpt/model.safetensors"
SHOAL_TRACKER=127.0.0.1:$rpc SHOAL_TOKEN=$writer SHOAL_PROGRESS=0 "$bin/shoal" publish "$work/ckpt" \
  --name bench/model --tag latest --piece-size "$piece" --origin "file://$work/origin" --no-seed >/dev/null
chunks=$(curl -sf -H "Authorization: Bearer $reader" "$agent/v1/models/bench/model:latest/manifest" |
  "$py" -c 'import json,sys; l=json.load(sys.stdin)["manifest"]["files"][0]["pieceLayer"]; print(" ".join(l[i:i+64] for i in range(0, len(l), 64)))')

# shellcheck disable=SC2086
SHOAL_TOKEN=$reader "$bin/shoal" mount bench/model:latest "$work/mnt" --agent "$work/agent.sock" \
  ${MOUNT_FLAGS:-} >"$work/mount.log" 2>&1 &
mount_pid=$!
pids+=("$mount_pid")
must_wait_for 20 mountpoint -q "$work/mnt"
mounted=$work/mnt/model.safetensors
bdi=/sys/class/bdi/$(mountpoint -d "$work/mnt")
if [[ -n ${READ_AHEAD_KB:-} ]]; then echo "$READ_AHEAD_KB" >"$bdi/read_ahead_kb"; fi

echo "Mount benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);" \
  "$(uname -r); origin file://; $mib MiB file in $((piece >> 20)) MiB pieces;" \
  "the mount's read_ahead_kb $(cat "$bdi/read_ahead_kb" 2>/dev/null || echo '?')"
echo
echo "### Cold 1 MiB range, milliseconds"
echo
"$py" "$here/mount_bench_cold.py" "$agent" "$reader" bench/model:latest model.safetensors "$mounted" \
  "$piece" 1048576 "$trials"

# Every chunk into the agent's cache, and a copy of the file beside it.
curl -sf -H "Authorization: Bearer $reader" -o /dev/null "$agent/v1/models/bench/model:latest/files/model.safetensors"
files=()
for c in $chunks; do files+=("$work/cache/chunks/${c:0:2}/${c:2:2}/$c"); done
cp "$work/ckpt/model.safetensors" "$work/plain/copy"
ln "$work/plain/copy" "$work/copy"
cmp "$mounted" "$work/copy"
bindfs_file=
if command -v bindfs >/dev/null; then
  bindfs -o ro,kernel_cache "$work/plain" "$work/mnt-bindfs"
  bindfs_file=$work/mnt-bindfs/copy
fi
SHOAL_TOKEN=$reader "$bin/shoal" mount bench/model:latest "$work/mnt-copy" --agent "$work/agent.sock" \
  --no-splice >"$work/mount-copy.log" 2>&1 &
pids+=($!)
must_wait_for 20 mountpoint -q "$work/mnt-copy"
if [[ -n ${BASE_SHOAL:-} ]]; then
  # shellcheck disable=SC2086
  SHOAL_TOKEN=$reader "$BASE_SHOAL" mount bench/model:latest "$work/mnt-base" --agent "$work/agent.sock" \
    ${MOUNT_FLAGS:-} >"$work/mount-base.log" 2>&1 &
  pids+=($!)
  must_wait_for 20 mountpoint -q "$work/mnt-base"
fi

mount_runs=() chunk_runs=() second_runs=() copy_runs=() nosplice_runs=() bindfs_runs=() bindfs2_runs=()
base_runs=()
for _ in 1 2 3; do
  if [[ -n ${BASE_SHOAL:-} ]]; then
    drop_caches
    base_runs+=("$(timed cat "$work/mnt-base/model.safetensors")")
  fi
  if [[ -n $bindfs_file ]]; then
    drop_caches
    bindfs_runs+=("$(timed cat "$bindfs_file")")
    bindfs2_runs+=("$(timed cat "$bindfs_file")")
  fi
  drop_caches
  mount_runs+=("$(timed cat "$mounted")")
  second_runs+=("$(timed cat "$mounted")")
  drop_caches
  nosplice_runs+=("$(timed cat "$work/mnt-copy/model.safetensors")")
  drop_caches
  chunk_runs+=("$(timed cat "${files[@]}")")
  cat "$work/copy" >/dev/null
  copy_runs+=("$(timed cat "$work/copy")")
done
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
mbs() { awk -v b="$((mib << 20))" -v ms="$1" 'BEGIN { printf "%.0f", b / (ms / 1000) / 1e6 }'; }
m=$(median "${mount_runs[@]}") c=$(median "${chunk_runs[@]}")
s=$(median "${second_runs[@]}") p=$(median "${copy_runs[@]}")
echo
echo "### Sequential read of the whole file, warm agent cache"
echo
echo "| read | MB/s (median of 3) | runs (ms) |"
echo "|---|---|---|"
echo "| \`cat\` through the mount, page cache dropped | $(mbs "$m") | ${mount_runs[*]} |"
echo "| \`cat\` through a --no-splice mount, page cache dropped | $(mbs "$(median "${nosplice_runs[@]}")") | ${nosplice_runs[*]} |"
echo "| \`cat\` of the same $(wc -w <<<"$chunks") chunk files, page cache dropped | $(mbs "$c") | ${chunk_runs[*]} |"
echo "| \`cat\` through the mount again (its pages cached) | $(mbs "$s") | ${second_runs[*]} |"
echo "| \`cat\` of a page-cached copy | $(mbs "$p") | ${copy_runs[*]} |"
b=0 b2=0
if [[ -n $bindfs_file ]]; then
  b=$(median "${bindfs_runs[@]}") b2=$(median "${bindfs2_runs[@]}")
  echo "| \`cat\` of the copy through bindfs, page cache dropped | $(mbs "$b") | ${bindfs_runs[*]} |"
  echo "| \`cat\` of the copy through bindfs again (its pages cached) | $(mbs "$b2") | ${bindfs2_runs[*]} |"
fi
base=0
if [[ -n ${BASE_SHOAL:-} ]]; then
  base=$(median "${base_runs[@]}")
  echo "| \`cat\` through a mount by BASE_SHOAL, page cache dropped | $(mbs "$base") | ${base_runs[*]} |"
fi
echo
awk -v m="$m" -v c="$c" -v s="$s" -v p="$p" -v b="$b" -v b2="$b2" -v base="$base" 'BEGIN {
  r = c / m; q = p / s;
  printf "mount / cat of the chunk files = %.2f (goal >= 0.8: %s)\n", r, (r >= 0.8 ? "met" : "NOT met");
  printf "mount again / cat of a cached copy = %.2f (goal >= 0.9: %s)\n", q, (q >= 0.9 ? "met" : "NOT met");
  if (b > 0) {
    printf "bindfs / cat of the copy: dropped %.2f, cached %.2f\n", c / b, p / b2;
    printf "mount / bindfs: dropped %.2f, cached %.2f\n", b / m, b2 / s;
  }
  if (base > 0) printf "mount / the BASE_SHOAL mount, dropped: %.2f\n", base / m;
}'

# Untimed: which calls a read through the mount makes, to show whether
# libfuse splices the chunk files or copies them.
if command -v strace >/dev/null; then
  strace -q -f -c -e trace=splice,vmsplice,read,pread64,writev -o "$work/strace.txt" -p "$mount_pid" &
  strace_pid=$!
  sleep 1
  # O_DIRECT, so every read reaches the mount whatever the page cache
  # holds, in the 128 KiB requests `cat` makes.
  dd if="$mounted" of=/dev/null bs=128K iflag=direct status=none
  kill -INT "$strace_pid"; wait "$strace_pid" 2>/dev/null || true
  echo "the mount's calls for one pass: $(awk '$NF ~ /^(splice|vmsplice|read|pread64|writev)$/ { printf "%s %s; ", $NF, $4 }' "$work/strace.txt")"
fi
