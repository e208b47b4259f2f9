#!/usr/bin/env bash
# The local demo: a generated checkpoint on this machine, end to end with
# whatever Shoal can do so far. Today that is hashing a checkpoint folder and
# showing its manifest; as the tracker and agents land, this script starts a
# tracker and several agents on loopback and distributes the checkpoint among
# them, with the same command.
#
#   deploy/local-cluster.sh [--build-dir DIR] [--size-mib N] [--keep]
set -euo pipefail

build_dir=build
size_mib=256
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --size-mib) size_mib=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "local-cluster: unknown option $1" >&2; exit 2 ;;
  esac
done

shoal="$build_dir/bin/shoal"
[[ -x "$shoal" ]] || { echo "local-cluster: $shoal not found; build first" >&2; exit 1; }

work=$(mktemp -d /tmp/shoal-demo.XXXXXX)
cleanup() { [[ $keep == 1 ]] && echo "kept $work" || rm -rf "$work"; }
trap cleanup EXIT

echo "== generating a ${size_mib} MiB checkpoint in $work/ckpt"
mkdir -p "$work/ckpt/tokenizer"
half=$((size_mib / 2))
head -c $((half * 1048576)) /dev/urandom > "$work/ckpt/model-00001-of-00002.safetensors"
head -c $(((size_mib - half) * 1048576 - 4096)) /dev/urandom > "$work/ckpt/model-00002-of-00002.safetensors"
printf '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}\n' > "$work/ckpt/config.json"
head -c 1800000 /dev/urandom > "$work/ckpt/tokenizer/tokenizer.json"

echo "== shoal inspect"
"$shoal" inspect "$work/ckpt" --name demo/llama-ft
