#!/usr/bin/env bash
# The command-line tool (build/vtrain) against hostile command lines and
# hostile transcripts: every bad flag is refused with exit status 2 and a
# message that names the flag, before anything is written; a short data
# file is an error, not a crash; audit and dispute state their outcome on
# every branch (tests/test_transcript.c tests the library underneath).
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
V=./build/vtrain
W=build/cli_test
rm -rf "$W"; mkdir -p "$W"
pass=0; fail=0

ok()  { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | head -20 | sed 's/^/    /'; fail=$((fail + 1)); }

# expect NAME RC PATTERN CMD...: CMD exits RC and its output (stdout and stderr) matches PATTERN (grep -E)
expect() {
  local name=$1 rc=$2 pat=$3 out got; shift 3
  out=$(timeout 300 "$@" 2>&1); got=$?
  if [ "$got" = "$rc" ] && printf '%s\n' "$out" | grep -Eq -- "$pat"; then ok "$name"
  else bad "$name: exit $got (want $rc), output does not match /$pat/" "$out"; fi
}

# --- flags: each bad value exits 2, names the flag, and writes nothing ---------
T="$W/never"
while IFS='|' read -r args pat; do
  [ -z "$args" ] && continue
  # shellcheck disable=SC2086
  expect "flag: $args" 2 "$pat" $V $args
  if [ -e "$T" ]; then bad "flag: $args wrote $T"; rm -rf "$T"; fi
done <<EOF
train $T --steps abc|--steps: 'abc' is not an integer
train $T --steps 0|--steps: 0 is outside 1\.\.
train $T --steps 9223372036854775808|--steps: 9223372036854775808 is outside
train $T --steps 99999999999999999999999|--steps: .* is outside
train $T --steps 5x|--steps: '5x' is not an integer
train $T --steps|--steps needs a value
train $T --layers -2|--layers: -2 is outside
train $T --width 0|--width: 0 is outside 1\.\.
train $T --width 30 --heads 4|--width 30 is not a multiple of --heads 4
train $T --heads 0|--heads: 0 is outside
train $T --context 1|--context: 1 is outside
train $T --batch 5000|--batch: 5000 is outside 1\.\.1024
train $T --lr abc|--lr: 'abc' is not a number
train $T --lr 0|--lr: 0 is outside
train $T --lr -0.1|--lr: -0.1 is outside
train $T --lr nan|--lr: nan is outside
train $T --lr inf|--lr: inf is outside
train $T --bound garbage|--bound: unknown bound mode 'garbage'
train $T --threads -1|--threads: -1 is outside 1\.\.256
train $T --threads 100000|--threads: 100000 is outside 1\.\.256
train $T --threads 2.5|--threads: '2.5' is not an integer
train $T --ckpt-every -5|--ckpt-every: -5 is outside
train $T --poison-at -3|--poison-at: -3 is outside
train $T --order threads:100000|--order: .*threads:100000 is outside 1\.\.256
train $T --order threads:-1|--order: .*'threads' needs a number
train $T --order block:99999999999999999999|--order: .*does not fit in 64 bits
train $T --order chaos:-5|--order: .*'chaos' needs a number
train $T --backend tpu|--backend: unknown backend 'tpu'
train $T --frobnicate|unknown option '--frobnicate'
audit $T --from -1|--from: -1 is outside 0\.\.
audit $T --from abc|--from: 'abc' is not an integer
audit $T --threads 0|--threads: 0 is outside
dispute $T|needs two transcripts
EOF

# --- data: a file shorter than one window is refused, not a crash --------------
printf 'short text\n' > "$W/short.txt"
expect "data: shorter than one window" 1 "needs at least context \+ 2" $V train "$W/short" --data "$W/short.txt" --steps 2
printf '' > "$W/empty.txt"
expect "data: empty file" 1 "too short to train on" $V train "$W/empty" --data "$W/empty.txt" --steps 2
expect "data: missing file" 1 "cannot open" $V train "$W/missing" --data "$W/nope.txt" --steps 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
