#!/bin/sh
# Chunk store benchmark: put/read throughput against dd on the same disk in
# the same run, and index memory per entry. Usage:
#   tests/perf/chunk_store_bench.sh [build-dir] [scratch-dir-on-the-disk] [MiB per round]
set -eu
build=${1:-build}
scratch=${2:-/var/tmp/shoal-store-bench}
mib=${3:-512}
cmake --build "$build" --target chunk_store_bench
mkdir -p "$scratch"
dir=$(mktemp -d "$scratch/run-XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "## $(uname -r), $(nproc) cores, $(df -h "$dir" | awk 'NR==2 {print $1}')"
"$build/tests/perf/chunk_store_bench" throughput "$dir" "$mib"
"$build/tests/perf/chunk_store_bench" index "$dir" 100000
