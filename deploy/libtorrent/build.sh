#!/usr/bin/env bash
# Rebuilds Debian 12's libtorrent-rasterbar 2.0.8 with the patches in
# patches/ (see docs/security.md) and installs the library and its -dev
# package in place of Debian's. Run as root; deploy/install-deps.sh calls it.
#
# The patched build gets the version <debian version>+shoal.<key>, where key
# is a hash of this script and the patches: it sorts above Debian's, so apt
# never "upgrades" it back, and a change to any patch yields a new version.
# The .debs are kept in /var/cache/shoal/libtorrent/<version>/; a machine
# that already runs the patched version does nothing, and one that has the
# .debs cached only installs them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src_pkg=libtorrent-rasterbar
src_version=2.0.8-1      # bookworm's source; its binaries are 2.0.8-1+b1
lib_pkg=libtorrent-rasterbar2.0
dev_pkg=libtorrent-rasterbar-dev
cache_root=${SHOAL_LIBTORRENT_CACHE:-/var/cache/shoal/libtorrent}

key=$(cat "$here/build.sh" "$here"/patches/*.patch | sha256sum | cut -c1-10)
version="${src_version}+b1+shoal.${key}"
cache="$cache_root/$version"

installed() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

if [[ $(installed $lib_pkg) == "$version" && $(installed $dev_pkg) == "$version" ]]; then
  echo "libtorrent: patched $version installed"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "libtorrent: the patched build $version is not installed; run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive

# A deb-src entry for every deb entry apt already has (same mirror, suites
# and keyring), so `apt-get source` fetches the source of the binaries.
add_deb_src() {
  local list=/etc/apt/sources.list.d/shoal-deb-src.sources
  [[ -f $list ]] && return 0
  local f
  : >"$list.tmp"
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f && $f != "$list" ]] || continue
    grep -q '^URIs: .*debian' "$f" || continue
    sed -e 's/^Types: deb$/Types: deb-src/' "$f" >>"$list.tmp"
    echo >>"$list.tmp"
  done
  if [[ -f /etc/apt/sources.list ]]; then
    sed -n 's/^deb \(.*\)$/deb-src \1/p' /etc/apt/sources.list >/etc/apt/sources.list.d/shoal-deb-src.list
  fi
  mv "$list.tmp" "$list"
}

build_debs() {
  local work
  work=$(mktemp -d /tmp/shoal-libtorrent.XXXXXX)
  add_deb_src
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends dpkg-dev patch >/dev/null
  (cd "$work" && apt-get source -qq "$src_pkg=$src_version")
  local dir="$work/$src_pkg-${src_version%-*}"
  local p
  for p in "$here"/patches/*.patch; do
    echo "libtorrent: applying $(basename "$p")"
    patch -d "$dir" -p1 --no-backup-if-mismatch <"$p"
  done
  # Shoal links the C++ library only: no Python bindings, no documentation.
  sed -i '/^Package: python3-libtorrent$/,$d' "$dir/debian/control"
  sed -i 's/-Dpython-bindings=ON -Dpython-egg-info=ON/-Dpython-bindings=OFF/' "$dir/debian/rules"
  rm -f "$dir/debian/python3-libtorrent.install"
  {
    echo "$src_pkg ($version) bookworm; urgency=medium"
    echo
    echo "  * Shoal: hash-message fixes from deploy/libtorrent/patches."
    echo
    echo " -- Shoal <shoal@localhost>  $(date -R)"
    echo
    cat "$dir/debian/changelog"
  } >"$dir/debian/changelog.new"
  mv "$dir/debian/changelog.new" "$dir/debian/changelog"
  apt-get build-dep -y -qq --arch-only "$dir" >/dev/null
  (cd "$dir" && DEB_BUILD_OPTIONS="nocheck nodoc parallel=$(nproc)" \
    dpkg-buildpackage -B -us -uc >"$work/build.log" 2>&1) || {
    tail -n 40 "$work/build.log" >&2
    echo "libtorrent: build failed; log in $work/build.log" >&2
    exit 1
  }
  mkdir -p "$cache.tmp"
  cp "$work/${lib_pkg}_${version}_"*.deb "$work/${dev_pkg}_${version}_"*.deb "$cache.tmp/"
  rm -rf "$cache"
  mv "$cache.tmp" "$cache"
  rm -rf "$work"
}

if ! ls "$cache/${lib_pkg}_"*.deb "$cache/${dev_pkg}_"*.deb >/dev/null 2>&1; then
  echo "libtorrent: building $version (about 15 minutes on 2 cores)"
  build_debs
fi
apt-mark unhold $lib_pkg $dev_pkg >/dev/null 2>&1 || true
apt-get install -y -qq --allow-downgrades --no-install-recommends \
  "$cache/${lib_pkg}_"*.deb "$cache/${dev_pkg}_"*.deb >/dev/null
apt-mark hold $lib_pkg $dev_pkg >/dev/null
echo "libtorrent: installed patched $version"
