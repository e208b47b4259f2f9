#!/usr/bin/env bash
# Installs the Debian 12 packages Shoal needs. Idempotent: packages already
# installed are skipped, and apt is not touched when nothing is missing.
# libtorrent-rasterbar is then replaced by Debian's own source rebuilt with
# the fixes in deploy/libtorrent/patches (deploy/libtorrent/build.sh): 15 to
# 20 minutes once per machine, seconds when the patched build is installed.
#
#   deploy/install-deps.sh          build and runtime packages
#   deploy/install-deps.sh --test   also the S3 server (Ceph radosgw), etcd, and
#                                   the reference S3 and hub clients the tests
#                                   compare with (the hub's JavaScript client from
#                                   the npm registry, with Debian's Node.js and npm
#                                   unless the machine has both)
#   deploy/install-deps.sh --bench  the --test packages, plus what the benchmarks
#                                   use (gnuplot, /usr/bin/time, bindfs)
set -euo pipefail

build_pkgs=(
  g++ cmake ninja-build pkg-config ccache make
  capnproto libcapnp-dev
  libtorrent-rasterbar-dev libboost-dev libboost-system-dev
  libssl-dev libleveldb-dev libsnappy-dev
  libcli11-dev catch2
  libfuse3-dev  # `shoal mount`: a read-only FUSE view of a version
  curl  # the local demo reads the agents' /metrics
  fuse3  # fusermount3, which `shoal mount` mounts and unmounts through
)
test_pkgs=(
  radosgw ceph-mon ceph-osd ceph-common
  python3-boto3 awscli curl iproute2 util-linux procps
  s3cmd rclone  # tests/integration/s3_clients_test.cpp: stock S3 clients against the read endpoint
  python3-libtorrent  # tests/integration/outsider_peer.py: a stock BitTorrent client as an outsider
  openssl  # tests/s3/radosgw.sh makes a self-signed certificate for the HTTPS tests
  python3-yaml systemd  # tests/deploy/: manifest checks; systemd-analyze, -sysusers, -tmpfiles
  clang-format  # tests/deploy/check_format.sh: the sources are formatted as .clang-format says
  clang libclang-rt-14-dev  # tests/fuzz/run.sh: libFuzzer, ASan and UBSan (ctest's fuzz:regress)
  etcd-server etcd-client  # tests/etcd/etcd_cluster.sh: a 3-member etcd; the tracker itself speaks HTTP
  python3-numpy  # tests/integration/mount_safetensors.py reads a tensor through `shoal mount`
  gdb  # tests/support: the threads of a process that does not exit in time, in the test's output
  valgrind  # p2p-valgrind: memory errors inside libtorrent, which ASan does not instrument
  docker-registry apache2-utils  # tests/integration/import_oci_test.cpp: a real OCI registry; htpasswd -B for its basic auth
)

bench_pkgs=(
  gnuplot-nox  # the completion-time plot of tests/perf/cluster_bench.sh
  time         # /usr/bin/time: CPU and peak RSS of the direct-S3 clients
  bindfs       # tests/perf/mount_bench.sh: another FUSE file system, as the mount's baseline
)

want=("${build_pkgs[@]}")
case "${1:-}" in
  "") ;;
  --test) want+=("${test_pkgs[@]}") ;;
  --bench) want+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "install-deps: unknown option $1 (expected --test or --bench)" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q " ok installed$"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#want[@]} packages present"
elif [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages (${missing[*]}); run as root" >&2
  exit 1
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

"$(dirname "$0")/libtorrent/build.sh"

# The hub's own JavaScript client (@huggingface/hub, pinned by its lock
# file) for tests/integration/hub_endpoint_test.cpp, into the tests' folder.
if [[ "${1:-}" == --test || "${1:-}" == --bench ]]; then
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "install-deps: installing nodejs npm"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  hub_js="$(cd "$(dirname "$0")/.." && pwd)/tests/integration/hub_js"
  if ! cmp -s "$hub_js/package-lock.json" "$hub_js/node_modules/.package-lock.json.installed"; then
    npm ci --prefix "$hub_js" --no-audit --no-fund --loglevel=error
    cp "$hub_js/package-lock.json" "$hub_js/node_modules/.package-lock.json.installed"
  fi
fi
