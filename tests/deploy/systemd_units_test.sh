#!/usr/bin/env bash
# The systemd units in deploy/systemd/, checked by systemd itself against the
# binaries `cmake --install` produces:
#   - the build installs shoald, shoal-tracker and shoal where ExecStart says;
#   - `systemd-analyze verify` has nothing to say about either unit (it
#     refuses a missing ExecStart binary, and warns of unknown keys, which
#     count as failures here);
#   - `systemd-analyze security --offline` rates both units OK (exposure 2.0
#     or less), so a dropped hardening line shows;
#   - systemd-sysusers and systemd-tmpfiles accept the users and folders the
#     units need, in a scratch root, and create what the units name;
#   - the example config files the units read are accepted by the binaries.
#
#   systemd_units_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src=$1
build=$2
units=$src/deploy/systemd
fail() { echo "systemd_units_test: $*" >&2; exit 1; }

tmp=$(mktemp -d /tmp/shoal-units.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Install as an operator would, into a scratch root.
root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix /usr/local >"$tmp/install.log" ||
  fail "cmake --install failed: $(tail -n 3 "$tmp/install.log")"

for unit in shoald shoal-tracker; do
  exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$units/$unit.service")
  [[ $exec_start == /usr/local/bin/$unit ]] || fail "$unit.service runs $exec_start, not /usr/local/bin/$unit"
  [[ -x $root$exec_start ]] || fail "cmake --install did not put $unit at $exec_start"
  # The same unit, pointing at the installed binary.
  sed "s|^ExecStart=$exec_start|ExecStart=$root$exec_start|" "$units/$unit.service" >"$tmp/$unit.service"
done

out=$(cd "$tmp" && systemd-analyze verify ./shoald.service ./shoal-tracker.service 2>&1) ||
  fail "systemd-analyze verify failed: $out"
[[ -z $out ]] || fail "systemd-analyze verify complains: $out"

for unit in shoald shoal-tracker; do
  if ! out=$(cd "$tmp" && systemd-analyze security --offline=true --threshold=20 "./$unit.service" 2>&1); then
    fail "$unit.service is exposed above 2.0: $(grep 'Overall exposure' <<<"$out")"
  fi
done

# Users, then folders, as on a fresh host.
mkdir -p "$root/etc"
systemd-sysusers --root="$root" "$units/shoal.sysusers" >/dev/null 2>"$tmp/sysusers.err" ||
  fail "systemd-sysusers refuses shoal.sysusers: $(cat "$tmp/sysusers.err")"
for unit in shoald shoal-tracker; do
  user=$(sed -n 's/^User=//p' "$units/$unit.service")
  grep -q "^$user:" "$root/etc/passwd" || fail "$unit.service runs as $user, which shoal.sysusers does not create"
done
systemd-tmpfiles --root="$root" --create "$units/shoal.tmpfiles" 2>"$tmp/tmpfiles.err" ||
  fail "systemd-tmpfiles refuses shoal.tmpfiles: $(cat "$tmp/tmpfiles.err")"
# The shared folder for pulls belongs to the group that may use the socket.
models=/var/lib/shoal/models
[[ -d $root$models ]] || fail "shoal.tmpfiles does not create $models, the shared folder for pulls"
group=$(sed -n 's/^Group=//p' "$units/shoald.service")
gid=$(awk -F: -v g="$group" '$1 == g {print $3}' "$root/etc/group")
[[ $(stat -c %g "$root$models") == "$gid" ]] || fail "$models is not group $group, who may use the control socket"
[[ $(stat -c %a "$root$models") == 2775 ]] || fail "$models is not 2775 (group-writable, setgid)"

# The config files the units read.
"$build/bin/shoald" --config "$src/deploy/config/shoald.toml" --print-config >/dev/null ||
  fail "shoald refuses deploy/config/shoald.toml"
"$build/bin/shoal-tracker" --config "$src/deploy/config/shoal-tracker.toml" serve --print-config >/dev/null ||
  fail "shoal-tracker refuses deploy/config/shoal-tracker.toml"
socket=$("$build/bin/shoald" --config "$src/deploy/config/shoald.toml" --print-config |
  sed -n 's/^control-socket="\(.*\)"$/\1/p')
runtime=$(sed -n 's/^RuntimeDirectory=//p' "$units/shoald.service")
[[ $(dirname "$socket") == /run/$runtime ]] || fail "the control socket $socket is not in RuntimeDirectory /run/$runtime"

echo "systemd units: verify clean, exposure OK, users and folders created, configs accepted"
