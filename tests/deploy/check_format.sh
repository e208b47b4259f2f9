#!/usr/bin/env bash
# Fails, naming each file, if any C++ source tracked by git is not as
# clang-format (with the repository's .clang-format) would write it.
# To fix: clang-format -i $(git ls-files '*.cpp' '*.h')
#
#   tests/deploy/check_format.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: check_format.sh SOURCE_DIR}"
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format is not installed (deploy/install-deps.sh --test installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [[ ${#files[@]} -eq 0 ]]; then
  echo "check_format: no C++ sources found under $PWD (not a git checkout?)" >&2
  exit 1
fi
# Many files per clang-format, on every core: one process per file took
# half a minute. A file that needs formatting is named in the warnings.
status=0
out=$(printf '%s\0' "${files[@]}" |
  xargs -0 -P "$(nproc)" -n 40 clang-format --dry-run --Werror 2>&1 >/dev/null) || status=$?
mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: (error|warning): code should be clang-formatted' \
  <<<"$out" | cut -d: -f1 | sort -u)
if [[ $status -ne 0 && ${#bad[@]} -eq 0 ]]; then
  echo "check_format: clang-format failed:" >&2
  echo "$out" | head -20 >&2
  exit 1
fi
if [[ ${#bad[@]} -gt 0 ]]; then
  printf 'check_format: not clang-formatted: %s\n' "${bad[@]}" >&2
  echo "check_format: ${#bad[@]} of ${#files[@]} files; run clang-format -i on them" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
