#!/usr/bin/env bash
# Peer-to-peer benchmark: move a generated file between two TorrentEngines in
# separate processes over loopback, at two piece sizes.
#
#   tests/perf/p2p_bench.sh [BUILD_DIR] [SIZE_MIB] [PIECE_MIB...]
#
# Both chunk stores live under $P2P_BENCH_DIR (default /var/tmp), without
# fsync. On tmpfs (/dev/shm) the store's fallocate zeroes every page before
# it is written, which costs the leecher about 0.4 core-s/GiB that a disk
# filesystem does not charge. For each piece size it prints
# wall-clock MB/s, CPU seconds per GiB for both processes together during
# the transfer, that CPU as a multiple of the SHA-256 floor F measured in the
# same run by `openssl speed -evp sha256 -bytes 16384`, and each process's
# peak anonymous RSS (file pages of the page cache and tmpfs not counted).
# The busiest thread column is the CPU per GiB of each process's busiest
# thread (a session's network thread): one core moves at most 1/that GiB/s
# through one session, the per-session ceiling docs/scale.md rests on.
# P2P_BENCH_SECURITY says how peers admit each other, as the tracker's
# --peer-security: off (the default), tls (by certificate, over TLS, as
# agents do by default) or auth (a membership proof, then plain BitTorrent).
# P2P_BENCH_TLS=1 is the older spelling of tls. P2P_BENCH_SYNC=1 makes the
# leecher's store fsync each chunk, as an agent's does by default
# (--cache-sync), and adds a baseline: `dd conv=fdatasync` of the same
# number of bytes into the same folder, in the same run.
# P2P_BENCH_DISK_THREADS=N sets both engines' disk threads (default 2).
# P2P_BENCH_SESSIONS=N gives both engines N peer sessions (default 1), and
# P2P_BENCH_FILES=K splits the bytes into K files, one torrent each (default
# 1; torrents are spread over the sessions, so several sessions need
# several files).
set -euo pipefail
build=${1:-build}
size_mib=${2:-2048}
shift 2 2>/dev/null || true
pieces=("$@")
[[ ${#pieces[@]} -gt 0 ]] || pieces=(16 4)
bench="$build/tests/perf/p2p_bench"
[[ -x "$bench" ]] || { echo "p2p_bench: build first ($bench missing)" >&2; exit 1; }
work=$(mktemp -d "${P2P_BENCH_DIR:-/var/tmp}/shoal-p2p-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
size=$((size_mib * 1048576))
security=${P2P_BENCH_SECURITY:-$([[ ${P2P_BENCH_TLS:-0} == 1 ]] && echo tls || echo off)}
case $security in tls | auth | off) ;; *) echo "P2P_BENCH_SECURITY: tls, auth or off" >&2; exit 1 ;; esac

# F: core-seconds per GiB for SHA-256 over 16 KiB blocks.
sha_kbs=$(openssl speed -seconds 3 -evp sha256 -bytes 16384 2>/dev/null | grep -iE '^(sha256|sha2-256|evp)' | tail -1 | awk '{print $NF}' | tr -d k)
floor=$(awk -v k="$sha_kbs" 'BEGIN { printf "%.3f", 1073741824 / (k * 1000) }')
echo "SHA-256 16 KiB: ${sha_kbs} kB/s per core, F = ${floor} core-s/GiB; peer security $security; ${P2P_BENCH_SESSIONS:-1} peer session(s), ${P2P_BENCH_FILES:-1} file(s); stores on $(findmnt -n -o FSTYPE --target "$work"); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| piece | MB/s | CPU core-s/GiB (seed + leech) | CPU / F | busiest thread core-s/GiB (seed, leech) | seeder peak anon RSS | leecher peak anon RSS |"
echo "|---|---|---|---|---|---|---|"
for p in "${pieces[@]}"; do
  run="$work/p$p"
  mkdir -p "$run"
  flags=()
  if [[ $security != off ]]; then mkdir -p "$run/tls"; flags=(--tls "$run/tls"); fi
  if [[ $security == auth ]]; then flags+=(--auth 1); fi
  [[ ${P2P_BENCH_SYNC:-0} == 1 ]] && flags+=(--sync 1)
  [[ -n ${P2P_BENCH_DISK_THREADS:-} ]] && flags+=(--disk-threads "$P2P_BENCH_DISK_THREADS")
  flags+=(--sessions "${P2P_BENCH_SESSIONS:-1}")
  "$bench" seed --dir "$run/seed" --size "$size" --piece $((p * 1048576)) "${flags[@]}" \
    --files "${P2P_BENCH_FILES:-1}" \
    --entry "$run/entry" --port-file "$run/port" --done "$run/done" > "$run/seed.json" 2> "$run/seed.log" &
  seed_pid=$!
  while [[ ! -f "$run/port" ]]; do
    kill -0 "$seed_pid" 2>/dev/null || { cat "$run/seed.log" >&2; exit 1; }
    sleep 0.2
  done
  "$bench" leech --dir "$run/leech" --entry "$run/entry" --peer "$(cat "$run/port")" "${flags[@]}" \
    --done "$run/done" > "$run/leech.json" 2> "$run/leech.log"
  wait "$seed_pid"
  python3 - "$run/seed.json" "$run/leech.json" "$p" "$floor" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); l = json.load(open(sys.argv[2]))
p, floor = sys.argv[3], float(sys.argv[4])
gib = l["bytes"] / 2**30
cpu = (s["cpu_s"] + l["cpu_s"]) / gib
print(f"| {p} MiB | {l['mb_per_s']:.0f} | {cpu:.2f} ({s['cpu_s']/gib:.2f} + {l['cpu_s']/gib:.2f}) "
      f"| {cpu/floor:.1f} F | {s['busiest_thread_s']/gib:.2f}, {l['busiest_thread_s']/gib:.2f} "
      f"| {s['peak_anon_rss_kib']/1024:.0f} MiB | {l['peak_anon_rss_kib']/1024:.0f} MiB |")
PY
  rm -rf "$run"
done
if [[ ${P2P_BENCH_SYNC:-0} == 1 ]]; then
  dd_out=$(dd if=/dev/zero of="$work/dd" bs=16M count=$((size_mib / 16)) conv=fdatasync 2>&1 | tail -1)
  rm -f "$work/dd"
  echo
  echo "dd conv=fdatasync of $size_mib MiB into the same folder: $(echo "$dd_out" | awk -F, '{print $NF}' | sed 's/^ *//')"
fi
