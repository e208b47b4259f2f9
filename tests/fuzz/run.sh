#!/usr/bin/env bash
# Builds Shoal's libFuzzer targets with clang (ASan + UBSan) and runs them.
#
#   tests/fuzz/run.sh SECONDS [TARGET...]   fuzz each target for SECONDS on its corpus;
#                                           new inputs are kept in BUILD/corpus/TARGET
#   tests/fuzz/run.sh --regress             replay every checked-in corpus plus a short,
#                                           fixed number of mutations; fails on any crash
#   tests/fuzz/run.sh --build               only configure and build the targets (the main
#                                           build does this when clang is installed)
#
# BUILD is $SHOAL_FUZZ_BUILD_DIR, by default build/fuzz in the checkout; it is
# configured with CC=clang CXX=clang++ -DSHOAL_FUZZ=ON the first time. A crash
# leaves its input in BUILD/artifacts/TARGET/ and libFuzzer's output is in
# BUILD/logs/MODE/TARGET.log (MODE is timed or regress). Prints, per target, the
# executions per second and the coverage libFuzzer reached (cov: edges,
# ft: features).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${SHOAL_FUZZ_BUILD_DIR:-$root/build/fuzz}
all_targets=(manifest http_request range sigv4 s3_address announce s3_xml token tracker_rpc)

usage() { echo "usage: run.sh SECONDS [TARGET...] | run.sh --regress | run.sh --build" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
mode=timed seconds=0
if [[ $1 == --build ]]; then
  mode=build
  shift
  [[ $# -eq 0 ]] || usage
elif [[ $1 == --regress ]]; then
  mode=regress
  shift
  [[ $# -eq 0 ]] || usage
elif [[ $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
else
  usage
fi
targets=("${@:-${all_targets[@]}}")

export CCACHE_BASEDIR=/
if [[ ! -f $build/build.ninja ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DSHOAL_FUZZ=ON -DSHOAL_WERROR=OFF \
    -DCMAKE_BUILD_TYPE=Fuzz >/dev/null
fi
nice -n 10 cmake --build "$build" --target fuzz_targets
[[ $mode == build ]] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Mutations per target in --regress, after the corpus replay: enough to
# catch a parser that crashes near its seeds, small enough for ctest. The
# tracker's RPC target serves a whole connection per input, so it gets fewer.
regress_runs() { [[ $1 == tracker_rpc ]] && echo 300 || echo 20000; }

summary=()
failed=0
for t in "${targets[@]}"; do
  bin=$build/bin/fuzz_$t
  seeds=$here/corpus/$t
  [[ -x $bin && -d $seeds ]] || { echo "run.sh: no target or corpus for '$t'" >&2; exit 2; }
  artifacts=$build/artifacts/$t
  mkdir -p "$artifacts"
  log=$build/logs/$mode/$t.log
  mkdir -p "$(dirname "$log")"
  if [[ $mode == regress ]]; then
    # New inputs go to a scratch folder, never into the checkout.
    work=$(mktemp -d)
    args=(-runs="$(regress_runs "$t")" -seed=1 "$work" "$seeds")
  else
    work=$build/corpus/$t
    mkdir -p "$work"
    args=(-max_total_time="$seconds" "$work" "$seeds")
  fi
  start=$SECONDS
  status=ok
  if ! nice -n 10 "$bin" -artifact_prefix="$artifacts/" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "${args[@]}" >"$log" 2>&1; then
    status="FAILED (see $log)"
    failed=1
  fi
  [[ $mode == regress ]] && rm -rf "$work"
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$last")
  execs=$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+)/\1/p' "$log")
  rate=$(sed -nE 's/^stat::average_exec_per_sec: +([0-9]+)/\1/p' "$log")
  summary+=("$(printf '%-13s %6ss %10s %9s %7s %7s  %s' "$t" "$((SECONDS - start))" \
    "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" "$status")")
done

printf '%-13s %7s %10s %9s %7s %7s  %s\n' target time execs exec/s cov ft result
printf '%s\n' "${summary[@]}"
exit $failed
