#!/usr/bin/env bash
# deploy/Dockerfile, checked without building an image (no container engine
# needed): its runtime stage must install, by Debian package name, every
# shared library the three binaries load, as dpkg says which package ships
# each; its build stage must use deploy/install-deps.sh and `cmake --install`,
# and `cmake --install` must produce the binaries the image copies.
#
#   image_deps_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src=$1
build=$2
dockerfile=$src/deploy/Dockerfile
fail() { echo "image_deps_test: $*" >&2; exit 1; }

# Every Debian image has these: the C library and the GCC runtime are
# needed by its essential packages, the C++ runtime by apt.
base_pkgs=" libc6 libgcc-s1 libstdc++6 "

tmp=$(mktemp -d /tmp/shoal-image-deps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The runtime stage: everything after the last FROM.
awk '/^FROM /{stage=""} {stage = stage $0 "\n"} END {printf "%s", stage}' "$dockerfile" >"$tmp/runtime"
grep -q '^FROM ' "$tmp/runtime" || fail "no FROM in $dockerfile"
# Package names of its apt-get install: the words after `install` up to `&&`.
runtime_pkgs=" $(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$tmp/runtime" |
  sed -n 's/.*apt-get install\(.*\)/\1/p' | sed 's/&&.*//' | tr ' ' '\n' | grep -v '^-' | grep -v '^$' | tr '\n' ' ') "
[[ $runtime_pkgs =~ [a-z] ]] || fail "found no apt-get install in the runtime stage"
if grep -qE 'apt-get install[^&]*(-dev|g\+\+|cmake|ninja)' "$tmp/runtime"; then
  fail "the runtime stage installs build tools or -dev packages"
fi

# The build stage uses the project's own scripts.
grep -q 'RUN deploy/install-deps.sh' "$dockerfile" || fail "the build stage does not run deploy/install-deps.sh"
grep -q 'cmake --install' "$dockerfile" || fail "the build stage does not run cmake --install"

# What cmake --install produces is what the image copies.
DESTDIR=$tmp/staging cmake --install "$build" --prefix /usr/local >"$tmp/install.log" ||
  fail "cmake --install failed: $(tail -n 3 "$tmp/install.log")"
grep -q 'COPY --from=build /staging/usr/local/bin/ /usr/local/bin/' "$dockerfile" ||
  fail "the runtime stage does not copy /staging/usr/local/bin"
for b in shoald shoal-tracker shoal; do
  [[ -x $tmp/staging/usr/local/bin/$b ]] || fail "cmake --install does not install $b in bin/"
done

# Every shared library any of the three loads, by package. dpkg knows a
# library by the path its package installed, which on a merged-/usr system
# may differ from the one ldd prints.
missing=""
for b in shoald shoal-tracker shoal; do
  ldd "$tmp/staging/usr/local/bin/$b" | awk '/=> \// {print $3}'
done | sort -u >"$tmp/libs"
[[ -s $tmp/libs ]] || fail "ldd lists no shared libraries"
while read -r lib; do
  pkg=""
  for path in "$lib" "$(readlink -f "$lib")" "${lib#/usr}" "/usr$lib"; do
    pkg=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1) && [[ -n $pkg ]] && break
  done
  [[ -n $pkg ]] || fail "no Debian package ships $lib"
  if [[ $base_pkgs != *" $pkg "* && $runtime_pkgs != *" $pkg "* ]]; then
    missing+=" $pkg($(basename "$lib"))"
  fi
done <"$tmp/libs"
[[ -z $missing ]] || fail "the runtime stage lacks packages:$missing"

echo "Dockerfile: runtime packages cover every shared library;$runtime_pkgs"
