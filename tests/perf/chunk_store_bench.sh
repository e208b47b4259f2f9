#!/bin/sh
# Chunk store benchmark: put/read throughput against dd on the same disk in
# the same run, and index memory per entry. Usage:
#   tests/perf/chunk_store_bench.sh [build-dir] [scratch-dir-on-the-disk] [MiB per round]
# The index measurement writes 100,000 tiny chunk files; it runs on tmpfs
# (/dev/shm), whose pages do not count in the process's RSS, to save time.
set -eu
build=${1:-build}
scratch=${2:-/var/tmp/shoal-store-bench}
mib=${3:-512}
index_scratch=${4:-/dev/shm}
cmake --build "$build" --target chunk_store_bench
mkdir -p "$scratch"
dir=$(mktemp -d "$scratch/run-XXXXXX")
index_dir=$(mktemp -d "$index_scratch/shoal-index-bench-XXXXXX")
trap 'rm -rf "$dir" "$index_dir"' EXIT
echo "## $(uname -r), $(nproc) cores, $(df -h "$dir" | awk 'NR==2 {print $1}')"
"$build/tests/perf/chunk_store_bench" throughput "$dir" "$mib"
"$build/tests/perf/chunk_store_bench" index "$index_dir" 100000
