#!/usr/bin/env bash
# Hashing benchmark: `shoal inspect` over a generated checkpoint folder,
# against `openssl speed -evp sha256` measured in the same run.
#
#   tests/perf/hash_bench.sh [BUILD_DIR] [SIZE_GIB]
#
# Prints a markdown table: throughput for 1 thread and for all cores, each as
# a ratio to OpenSSL's SHA-256 rate on 16 KiB blocks times the cores used, and
# the peak RSS of the hashing process. The folder is read from the page cache
# (it is read once before timing), so this measures hashing, not the disk.
set -euo pipefail
build=${1:-build}
size_gib=${2:-4}
shoal="$build/bin/shoal"
[[ -x "$shoal" ]] || { echo "hash_bench: build first ($shoal missing)" >&2; exit 1; }
cores=$(nproc)
work=$(mktemp -d /var/tmp/shoal-hash-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# A safetensors-like layout: a few large shards of unequal size, plus small files.
total_mib=$((size_gib * 1024))
shard=$((total_mib * 3 / 10))
mkdir -p "$work/ckpt/tokenizer"
head -c $((shard * 1048576)) /dev/urandom > "$work/ckpt/model-00001-of-00004.safetensors"
head -c $((shard * 1048576)) /dev/urandom > "$work/ckpt/model-00002-of-00004.safetensors"
head -c $(((total_mib - 2 * shard) / 2 * 1048576 + 12345)) /dev/urandom > "$work/ckpt/model-00003-of-00004.safetensors"
head -c $(((total_mib - 2 * shard) / 2 * 1048576 - 777)) /dev/urandom > "$work/ckpt/model-00004-of-00004.safetensors"
head -c 2300 /dev/urandom > "$work/ckpt/config.json"
head -c 1900000 /dev/urandom > "$work/ckpt/tokenizer/tokenizer.json"
bytes=$(du -sb "$work/ckpt" | cut -f1)
cat "$work"/ckpt/*.safetensors > /dev/null  # warm the page cache

openssl_rate() {  # bytes/s of SHA-256 on 16 KiB blocks, over $1 processes
  local out
  if [[ $1 -gt 1 ]]; then
    out=$(openssl speed -multi "$1" -seconds 3 -evp sha256 -bytes 16384 2>/dev/null | grep -E '^evp|^sha256' | tail -1)
  else
    out=$(openssl speed -seconds 3 -evp sha256 -bytes 16384 2>/dev/null | grep -E '^sha256|^SHA256|^evp' | tail -1)
  fi
  # The last column is in 1000s of bytes per second, with a trailing 'k'.
  echo "$out" | awk '{v=$NF; sub(/k$/,"",v); printf "%.0f\n", v*1000}'
}

run_shoal() {  # prints "wall_seconds peak_rss_kib user_seconds sys_seconds"
  local threads=$1
  /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$shoal" inspect "$work/ckpt" --threads "$threads" > /dev/null
  cat "$work/time"
}

ossl1=$(openssl_rate 1)
osslN=$(openssl_rate "$cores")
read -r s1 rss1 u1 k1 < <(run_shoal 1)
read -r sN rssN uN kN < <(run_shoal "$cores")

awk -v b="$bytes" -v o1="$ossl1" -v oN="$osslN" -v s1="$s1" -v sN="$sN" -v r1="$rss1" -v rN="$rssN" -v c="$cores" \
    -v u1="$u1" -v k1="$k1" -v uN="$uN" -v kN="$kN" 'BEGIN {
  t1 = b / s1; tN = b / sN;
  g = b / 1073741824;
  printf "| threads | shoal inspect | openssl speed (same run) | ratio | user CPU s/GiB | kernel CPU s/GiB | peak RSS |\n";
  printf "|---|---|---|---|---|---|---|\n";
  printf "| 1 | %.0f MB/s | %.0f MB/s | %.2f | %.2f | %.2f | %.1f MiB |\n", t1/1e6, o1/1e6, t1/o1, u1/g, k1/g, r1/1024;
  printf "| %d | %.0f MB/s | %.0f MB/s | %.2f | %.2f | %.2f | %.1f MiB |\n", c, tN/1e6, oN/1e6, tN/oN, uN/g, kN/g, rN/1024;
  printf "\nOpenSSL alone needs %.2f core-s/GiB on one core.\n", 1073741824/o1;
  printf "\n%.2f GiB hashed from the page cache; openssl speed -evp sha256 -bytes 16384 (-multi %d).\n", b/1073741824, c;
}'
