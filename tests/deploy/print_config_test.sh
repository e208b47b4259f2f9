#!/usr/bin/env bash
# `--print-config` on shoald and `shoal-tracker serve`: the printed
# configuration is a config file. For each daemon, with settings from flags,
# a config file and the environment:
#   - it exits 0 and prints the settings given, not just the defaults;
#   - fed back through --config, it prints exactly the same text;
#   - a daemon started from the printed file alone sees the same settings;
#   - secrets (the agent token, the S3 secret key) are never printed;
#   - an unset option does not override its environment variable;
#   - a misspelt key is refused with one line on stderr and a non-zero exit;
#   - every key printed is documented in docs/configuration.md.
#
#   print_config_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src=$1
bin=$2/bin
fail() { echo "print_config_test: $*" >&2; exit 1; }

tmp=$(mktemp -d /tmp/shoal-print-config.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset SHOAL_TRACKER SHOAL_AGENT_TOKEN SHOAL_ORIGIN SHOAL_S3_ENDPOINT

# round_trip NAME PRINT_ARGS... : PRINT_ARGS print a config; "{}" in them
# stands for --config's file.
round_trip() {
  local name=$1; shift
  local first=$tmp/$name.1.toml second=$tmp/$name.2.toml
  "${@//\{\}/$tmp/$name.input.toml}" >"$first" 2>"$tmp/err" || fail "$name: exit $? printing: $(cat "$tmp/err")"
  [[ -s $first ]] || fail "$name: printed nothing"
  # Again, from the printed file alone (plus the same environment).
  "${@//\{\}/$first}" >"$second" 2>"$tmp/err" || fail "$name: exit $? re-reading: $(cat "$tmp/err")"
  diff -u "$first" "$second" >"$tmp/diff" || fail "$name: printed config changes when fed back:
$(cat "$tmp/diff")"
}

expect_line() {  # FILE LINE
  grep -qxF -- "$2" "$1" || fail "$(basename "$1"): no line '$2' in
$(cat "$1")"
}

# --- shoald: flags, a file and the environment together --------------------
printf 'cache-dir="/srv/shoal-cache"\norigin-parallelism=9\n' >"$tmp/shoald.input.toml"
export SHOAL_AGENT_TOKEN=tok-do-not-print SHOAL_TRACKER=tracker.example:7400
round_trip shoald "$bin/shoald" --config {} --zone rack-7 --cache-size 3GiB --log-level debug --print-config
out=$tmp/shoald.1.toml
expect_line "$out" 'zone="rack-7"'
expect_line "$out" 'cache-size="3GiB"'
expect_line "$out" 'cache-dir="/srv/shoal-cache"'
expect_line "$out" 'origin-parallelism=9'
expect_line "$out" 'tracker="tracker.example:7400"'
expect_line "$out" 'log-level="debug"'
expect_line "$out" '# token=(not printed)'
expect_line "$out" '# origin=""'
! grep -q tok-do-not-print "$out" || fail "shoald printed its token"
# Unset options are commented out, so the file leaves their variables alone.
SHOAL_ORIGIN=file:///from-env "$bin/shoald" --config "$out" --print-config >"$tmp/env.toml"
expect_line "$tmp/env.toml" 'origin="file:///from-env"'
unset SHOAL_AGENT_TOKEN SHOAL_TRACKER

# --- shoal-tracker serve ----------------------------------------------------
printf '[serve]\norigin="file:///srv/origin"\nkeep-versions=4\n' >"$tmp/tracker.input.toml"
round_trip tracker "$bin/shoal-tracker" serve --config {} --rpc-listen 0.0.0.0:7400 --gc-grace 2h \
  --s3-secret-key sk-do-not-print --print-config
out=$tmp/tracker.1.toml
expect_line "$out" '[serve]'
expect_line "$out" 'rpc-listen="0.0.0.0:7400"'
expect_line "$out" 'gc-grace="2h"'
expect_line "$out" 'origin="file:///srv/origin"'
expect_line "$out" 'keep-versions=4'
expect_line "$out" '# s3-secret-key=(not printed)'
! grep -q sk-do-not-print "$out" || fail "shoal-tracker printed the S3 secret key"
# --config works before the subcommand too.
"$bin/shoal-tracker" --config "$out" serve --print-config | diff -q - "$out" >/dev/null ||
  fail "shoal-tracker --config FILE serve prints something else than serve --config FILE"

# The printed file is what a starting tracker uses: it listens where it says.
data=$tmp/tracker-data
sed -e "s|^data-dir=.*|data-dir=\"$data\"|" -e 's|^rpc-listen=.*|rpc-listen="127.0.0.1:0"|' \
  -e 's|^http-listen=.*|http-listen="127.0.0.1:0"|' -e "s|^origin=.*|origin=\"file://$tmp/origin\"|" \
  -e "s|^# port-file=.*|port-file=\"$tmp/ports\"|" "$out" >"$tmp/run.toml"
"$bin/shoal-tracker" serve --config "$tmp/run.toml" >"$tmp/tracker.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s $tmp/ports ]] && break; sleep 0.1; done
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[[ -s $tmp/ports && -s $data/token.secret ]] ||
  fail "a tracker started from the printed config did not come up: $(tail -n 3 "$tmp/tracker.log")"

# --- a misspelt key: one line, non-zero -------------------------------------
printf 'cache_size="3GiB"\n' >"$tmp/typo.toml"
if "$bin/shoald" --config "$tmp/typo.toml" --print-config >/dev/null 2>"$tmp/err"; then
  fail "shoald accepted a misspelt key"
fi
[[ $(wc -l <"$tmp/err") == 1 ]] || fail "shoald's error is not one line: $(cat "$tmp/err")"
grep -q cache_size "$tmp/err" || fail "shoald's error does not name the key: $(cat "$tmp/err")"
printf '[serve]\norigin="file:///o"\ngc-grace-period="1h"\n' >"$tmp/typo.toml"
if "$bin/shoal-tracker" serve --config "$tmp/typo.toml" --print-config >/dev/null 2>"$tmp/err"; then
  fail "shoal-tracker accepted a misspelt key"
fi
[[ $(wc -l <"$tmp/err") == 1 ]] || fail "shoal-tracker's error is not one line: $(cat "$tmp/err")"

# --- every printed key is documented ---------------------------------------
doc=$src/docs/configuration.md
for f in "$tmp/shoald.1.toml" "$tmp/tracker.1.toml"; do
  for key in $(sed -n 's/^\(# \)\{0,1\}\([a-z0-9-]*\)=.*/\2/p' "$f"); do
    grep -q -- "\`$key\`" "$doc" || fail "$(basename "$f" .1.toml) key '$key' is not in docs/configuration.md"
  done
done

echo "print-config: both daemons round-trip, keep secrets out, refuse typos; every key documented"
