#!/usr/bin/env bash
# Sanitizer builds of the unit tests, beside the Release build:
#   tsan  ThreadSanitizer, for the tests that exercise threads: the fetch
#         component, the peer-to-peer engine (its sessions, disk workers and
#         stops under TLS), the server and the tracker's units;
#   asan  AddressSanitizer with UndefinedBehaviorSanitizer, for every unit
#         test binary.
#
#   tests/sanitize.sh tsan|asan [BUILD_DIR] [TEST_TARGET...]
#
# BUILD_DIR defaults to build-tsan or build-asan. Each target is built,
# then run whole; the script prints each binary's result and the number of
# sanitizer reports, and exits non-zero if a test failed or anything was
# reported. Cold, on 2 cores, the tsan targets build in about 10 minutes.
#
# Debian's libtorrent, LevelDB and Cap'n Proto are not instrumented.
# ThreadSanitizer still sees their mutexes (it intercepts pthreads) but not
# their atomics, so a report whose stack lies wholly inside one of them is
# worth a second look before it is called a Shoal bug. GCC warns that
# Boost.Asio's atomic_thread_fence is invisible to ThreadSanitizer
# (-Wtsan); that warning is silenced here, not fixed.
set -euo pipefail
kind=${1:?usage: sanitize.sh tsan|asan [BUILD_DIR] [TEST_TARGET...]}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$src/build-$kind}
shift $(($# < 2 ? $# : 2))
targets=("$@")
case $kind in
  tsan)
    flags="-fsanitize=thread -Wno-tsan"
    [[ ${#targets[@]} -gt 0 ]] || targets=(shoal_fetch_tests shoal_p2p_tests shoal_server_tests shoal_tracker_unit_tests)
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0 second_deadlock_stack=1}
    ;;
  asan)
    flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    [[ ${#targets[@]} -gt 0 ]] || targets=(shoal_core_tests shoal_fetch_tests shoal_read_tests shoal_server_tests
      shoal_tracker_unit_tests shoal_daemon_unit_tests shoal_cli_unit_tests shoal_p2p_tests)
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
    ;;
  *) echo "sanitize.sh: tsan or asan, not '$kind'" >&2; exit 2 ;;
esac

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="${flags%% *}" "${launcher[@]}" >/dev/null
cmake --build "$build" --target "${targets[@]}"

status=0
for t in "${targets[@]}"; do
  log="$build/$t.$kind.log"
  bin=$(find "$build/tests" -maxdepth 2 -type f -name "$t" | head -1)
  [[ -x $bin ]] || { echo "$t: not built" >&2; status=1; continue; }
  rc=0
  (cd "$build" && "$bin" >"$log" 2>&1) || rc=$?
  reports=$(grep -cE '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer|.*runtime error:)' "$log" || true)
  result=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -1)
  echo "$t: exit $rc, $reports sanitizer reports; ${result:-no summary} (log: $log)"
  [[ $rc -eq 0 && $reports -eq 0 ]] || status=1
done
exit $status
