#!/usr/bin/env bash
# The local demo: a tracker, a few agents and a generated checkpoint,
# distributed among them on loopback, on the embedded defaults (a folder
# origin, LevelDB metadata). Everything runs under one temporary folder and
# is stopped on exit, whatever happens.
#
#   deploy/local-cluster.sh [--build-dir DIR] [--agents N] [--size-mib N] [--keep]
set -euo pipefail

build_dir=build
agents=3
size_mib=256
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --agents) agents=$2; shift 2 ;;
    --size-mib) size_mib=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "local-cluster: unknown option $1" >&2; exit 2 ;;
  esac
done

bin=$(cd "$build_dir/bin" 2>/dev/null && pwd) || { echo "local-cluster: $build_dir/bin not found; build first" >&2; exit 1; }
for b in shoal shoal-tracker shoald; do
  [[ -x $bin/$b ]] || { echo "local-cluster: $bin/$b missing; build first" >&2; exit 1; }
done

work=$(mktemp -d /tmp/shoal-demo.XXXXXX)
pids=()       # the tracker and the agents
pull_pids=()  # pulls running in the background
cleanup() {
  for p in "${pull_pids[@]}" "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pull_pids[@]}" "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ $keep == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT   # so an interrupted demo still stops what it started
trap 'exit 143' TERM

wait_file() {  # waits up to 10 s for a non-empty file
  for _ in $(seq 100); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "local-cluster: $1 did not appear; see the logs in $work" >&2
  return 1
}

echo "== generating a ${size_mib} MiB checkpoint"
ckpt=$work/ckpt
mkdir -p "$ckpt/tokenizer" "$work/origin"
half=$((size_mib / 2))
head -c $((half << 20)) /dev/urandom >"$ckpt/model-00001-of-00002.safetensors"
# 4 KiB short of a whole MiB, so the last piece is a partial one. (One head,
# not two in a pipe: the first would die of SIGPIPE, failing the pipeline.)
head -c $((((size_mib - half) << 20) - 4096)) /dev/urandom >"$ckpt/model-00002-of-00002.safetensors"
printf '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}\n' >"$ckpt/config.json"
head -c 1800000 /dev/urandom >"$ckpt/tokenizer/tokenizer.json"

echo "== starting shoal-tracker (origin: $work/origin)"
"$bin/shoal-tracker" serve --data-dir "$work/tracker" --origin "file://$work/origin" \
  --rpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --port-file "$work/tracker.ports" \
  --announce-interval 2s >"$work/tracker.log" 2>&1 &
pids+=($!)
wait_file "$work/tracker.ports"
read -r rpc_port http_port <"$work/tracker.ports"
export SHOAL_TRACKER=127.0.0.1:$rpc_port
writer=$("$bin/shoal-tracker" token create --data-dir "$work/tracker" --ns demo --role write --subject trainer)
reader=$("$bin/shoal-tracker" token create --data-dir "$work/tracker" --ns demo --role read --subject pod)
agent_token=$("$bin/shoal-tracker" token create --data-dir "$work/tracker" --ns '*' --role read --subject agents)

echo "== starting $agents agents"
for i in $(seq 1 "$agents"); do
  "$bin/shoald" --name "agent$i" --token "$agent_token" --cache-dir "$work/agent$i" --cache-size 2GiB \
    --peer-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --control-socket "$work/agent$i.sock" \
    --port-file "$work/agent$i.ports" --origin "file://$work/origin" >"$work/agent$i.log" 2>&1 &
  pids+=($!)
done
for i in $(seq 1 "$agents"); do wait_file "$work/agent$i.ports"; done
sleep 1  # registration

echo "== shoal publish"
SHOAL_TOKEN=$writer "$bin/shoal" publish "$ckpt" --name demo/llama-ft --tag latest --tag prod \
  --origin "file://$work/origin" --label epoch=3 --no-seed

echo "== shoal pull on agent1 (cold: chunks come from the origin)"
SHOAL_TOKEN=$reader "$bin/shoal" pull demo/llama-ft:prod --to "$work/pulled1" --agent "$work/agent1.sock"
echo "== shoal pull on the other agents at once (chunks come from peers)"
for i in $(seq 2 "$agents"); do
  SHOAL_TOKEN=$reader "$bin/shoal" pull demo/llama-ft:prod --to "$work/pulled$i" \
    --agent "$work/agent$i.sock" >"$work/pull$i.out" 2>&1 &
  pull_pids+=($!)
done
for p in "${pull_pids[@]}"; do wait "$p"; done
for i in $(seq 2 "$agents"); do cat "$work/pull$i.out"; done

echo "== checking bytes"
for i in $(seq 1 "$agents"); do
  diff -r "$ckpt" "$work/pulled$i" >/dev/null || { echo "agent$i: files differ" >&2; exit 1; }
done
echo "all $agents copies are byte-identical to the checkpoint"
# The sum over all agents of the unlabelled metric $1, as an integer.
sum_metric() {
  local sum=0 agent_http v
  for i in $(seq 1 "$agents"); do
    read -r _ agent_http _ <"$work/agent$i.ports"
    v=$(curl -s "http://127.0.0.1:$agent_http/metrics" | awk -v m="$1" '$1 == m {print $2}')
    sum=$((sum + ${v%.*}))
  done
  echo "$sum"
}
origin_get=$(sum_metric shoal_agent_origin_bytes_total)
total=$(find "$ckpt" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "origin bytes read by all agents: $origin_get of $total checkpoint bytes"
tls=$(sum_metric shoal_agent_peer_tls)
echo "agents exchanging pieces over TLS with cluster certificates: $tls of $agents"
echo "== shoal ls demo"
SHOAL_TOKEN=$reader "$bin/shoal" ls demo
