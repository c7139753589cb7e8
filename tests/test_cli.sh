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

# expectj: the same, PATTERN matched against the whole output joined into one line
expectj() {
  local name=$1 rc=$2 pat=$3 out got; shift 3
  out=$(timeout 300 "$@" 2>&1); got=$?
  if [ "$got" = "$rc" ] && printf '%s\n' "$out" | tr '\n' ' ' | grep -Eq -- "$pat"; then ok "$name"
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
train $T --mode fast|--mode: unknown mode 'fast'
train $T --mode|--mode needs a value
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

# --- transcripts: audit, resume, dispute --------------------------------------------
SMALL="--layers 1 --width 16 --heads 2 --context 8 --batch 2 --threads 2"
A="$W/a"
# shellcheck disable=SC2086
expect "train a small run" 0 "done: 30 steps" $V train "$A" --steps 30 $SMALL --ckpt-every 10
expect "audit it" 0 "audit passed: 30 steps replayed, every leaf equal, Merkle root verified" $V audit "$A" --threads 1
# --backend cuda: the CUDA build of the tool (make cuda) audits on a GPU; without one it says that nothing was verified
if [ -x ./build/vtrain_cuda ]; then
    out=$(./build/vtrain_cuda audit "$A" --threads 1 --backend cuda 2>&1); rc=$?
    if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "audit passed: 30 steps"; then ok "audit --backend cuda (on a GPU)"
    elif [ $rc = 1 ] && printf '%s\n' "$out" | grep -q "AUDIT NOT RUN: this machine cannot replay here.*CUDA"; then ok "audit --backend cuda without a GPU: not run, said so"
    else bad "audit --backend cuda" "exit $rc: $out"; fi
else echo "skip: audit --backend cuda (no build/vtrain_cuda: make cuda needs nvcc)"; fi
expect "audit without the CUDA backend in the build: not run" 1 "AUDIT NOT RUN: .*built without the CUDA backend" $V audit "$A" --backend cuda
expect "audit reports the trainer's freedom" 0 "trainer's freedom: [0-9]+ entries with more than one plausible value, [0-9.]+ bits in all" $V audit "$A" --threads 1
expect "inspect --freedom replays and reports it" 0 "trainer's freedom: [0-9]+ entries" $V inspect "$A" --freedom
expect "inspect: unknown flag" 2 "unknown option '--bogus'" $V inspect "$A" --bogus

# root.txt: every field is checked; an audit never claims a root it did not verify
while IFS='|' read -r sedexpr pat; do
  [ -z "$sedexpr" ] && continue
  rm -rf "$W/e"; cp -r "$A" "$W/e"; sed -i "$sedexpr" "$W/e/root.txt"
  expect "audit, root.txt $sedexpr" 1 "AUDIT FAILED: .*$pat" $V audit "$W/e" --threads 1
  if $V audit "$W/e" --threads 1 2>&1 | grep -q "Merkle root verified"; then bad "audit, root.txt $sedexpr: claims a verified root"; fi
done <<ROOTS
s/^steps = 30/steps = 29/|says steps = 29
s/^steps = 30/steps = 31/|says steps = 31
s/^leaves_root = ./leaves_root = 0/|leaves_root is not the Merkle root
s/^leaves_root = .*/leaves_root = 0000000000000000000000000000000000000000000000000000000000000000/|leaves_root is not the Merkle root
s/^run = ./run = 0/|run is not the commitment
s/^manifest = ./manifest = 0/|names another manifest
s/^steps = 30/steps = 3O/|is not a step count
ROOTS
rm -rf "$W/e"; cp -r "$A" "$W/e"; sed -i 's/^steps = 30/steps = 29/' "$W/e/root.txt"
expect "inspect names a root that does not match" 0 "root.txt DOES NOT MATCH.*says steps = 29" $V inspect "$W/e"

# dispute: every branch states its outcome; the honest party is never convicted
rm -rf "$W/b"; cp -r "$A" "$W/b"
expect "dispute: agreeing roots" 0 "no dispute" $V dispute "$A" "$W/b"
out=$($V dispute "$A" "$W/b" 2>&1)
if printf '%s\n' "$out" | grep -q "judge"; then bad "dispute: agreeing roots went to the judge" "$out"; else ok "dispute: agreeing roots skip the judge"; fi
sed -i 's/^leaves_root = ./leaves_root = 0/' "$W/b/root.txt"
expect "dispute: the auditor's root edited (the issue's case)" 0 "verdict: the auditor \(B\) is wrong" $V dispute "$A" "$W/b"
expect "dispute: the trainer's root edited" 0 "verdict: the trainer \(A\) is wrong" $V dispute "$W/b" "$A"
# shellcheck disable=SC2086
expect "train a poisoned run" 0 "done: 30 steps" $V train "$W/p" --steps 30 $SMALL --ckpt-every 10 --poison-at 17
expect "dispute: poisoned trainer" 0 "verdict: the trainer \(A\) is wrong" $V dispute "$W/p" "$A"
expect "dispute: honest trainer, poisoned auditor" 0 "verdict: the auditor \(B\) is wrong" $V dispute "$A" "$W/p"
# shellcheck disable=SC2086
expect "train another program" 0 "done: 30 steps" $V train "$W/o" --steps 30 $SMALL --ckpt-every 10 --lr 0.002
expect "dispute: different programs" 1 "different programs: no game, no verdict" $V dispute "$A" "$W/o"
expect "audit: a poisoned run fails at its step" 1 "AUDIT FAILED at step 17" $V audit "$W/p" --threads 1
# a run without a rounding log: its audit replays it and says that this is no proof (exit 1, whatever the replay found)
for m in native round-only; do
  # shellcheck disable=SC2086
  expect "train a $m run" 0 "done: 12 steps" $V train "$W/$m" --steps 12 $SMALL --ckpt-every 4 --mode $m
  expect "audit of a $m run: no proof" 1 "AUDIT IS NO PROOF: '$W/$m' was trained in mode $m, which keeps no rounding log" $V audit "$W/$m" --threads 1
  expect "dispute of $m runs: no game" 1 "only verified transcripts can be judged" $V dispute "$W/$m" "$W/$m"
done

# the trainer answers for every file of its transcript: one missing or bogus file loses it the game (q > 0 as at q = 0)
rm -rf "$W/p1"; cp -r "$W/p" "$W/p1"; rm "$W/p1/log.vtlog"
expectj "dispute: poisoned trainer without its log" 0 "cannot open the log file.*verdict: the trainer \(A\) is wrong" $V dispute "$W/p1" "$A"
# a stray ckpt-15.safetensors is not a checkpoint name (only ckpt-%08d counts): the judge rebuilds the state
# before step 17 from ckpt-00000010, so an honest trainer holding the stray file still wins (were it taken
# for checkpoint 15, the junk would lose the honest trainer the game), and a poisoned one still loses
rm -rf "$W/a1"; cp -r "$A" "$W/a1"; echo junk > "$W/a1/ckpt-15.safetensors"
expect "dispute: honest trainer with a stray ckpt-15.safetensors still wins" 0 "verdict: the auditor \(B\) is wrong" $V dispute "$W/a1" "$W/p"
rm -rf "$W/p1"; cp -r "$W/p" "$W/p1"; echo junk > "$W/p1/ckpt-15.safetensors"
expect "dispute: poisoned trainer with a stray ckpt-15.safetensors" 0 "verdict: the trainer \(A\) is wrong" $V dispute "$W/p1" "$A"
rm -rf "$W/p1"; cp -r "$W/p" "$W/p1"; rm "$W/p1/ckpt-00000010.safetensors"; ln -s /nonexistent "$W/p1/ckpt-00000010.safetensors"
expectj "dispute: poisoned trainer with a dangling checkpoint link" 0 "ckpt-00000010.safetensors.*verdict: the trainer \(A\) is wrong" $V dispute "$W/p1" "$A"
# ... its manifest too: missing or edited, the trainer loses and the auditor likewise (before, a trainer's
# unreadable manifest stopped the tool before the game: "no verdict"); data the judge's machine lacks is its own
# failure: no verdict, and nobody convicted
rm -rf "$W/p1"; cp -r "$W/p" "$W/p1"; rm "$W/p1/manifest.txt"
expect "dispute: poisoned trainer without its manifest" 0 "verdict: the trainer \(A\) is wrong" $V dispute "$W/p1" "$A"
expect "dispute: honest trainer, auditor without its manifest" 0 "verdict: the auditor \(B\) is wrong" $V dispute "$A" "$W/p1"
rm -rf "$W/p1"; cp -r "$W/p" "$W/p1"; sed -i 's/^model.width *= *.*/model.width = abc/' "$W/p1/manifest.txt"
expect "dispute: poisoned trainer with a garbled manifest value" 0 "verdict: the trainer \(A\) is wrong" $V dispute "$W/p1" "$A"
rm -rf "$W/p1"; cp -r "$A" "$W/p1"; echo "extra = 1" >> "$W/p1/manifest.txt"
expect "dispute: honest trainer with an edited manifest" 0 "verdict: the trainer \(A\) is wrong" $V dispute "$W/p1" "$A"
cp data/kjv_nt.txt "$W/own.txt"
# shellcheck disable=SC2086
expect "train on a data file of its own" 0 "done: 12 steps" $V train "$W/da" --data "$W/own.txt" --steps 12 $SMALL --ckpt-every 5
# shellcheck disable=SC2086
expect "... and a poisoned run on it" 0 "done: 12 steps" $V train "$W/dp" --data "$W/own.txt" --steps 12 $SMALL --ckpt-every 5 --poison-at 7
expect "dispute: the data file present, a verdict" 0 "verdict: the trainer \(A\) is wrong" $V dispute "$W/dp" "$W/da"
mv "$W/own.txt" "$W/own.moved"
expect "dispute: the judge lacks the data: no verdict" 1 "cannot rebuild the program.*no verdict" $V dispute "$W/dp" "$W/da"
expect "dispute: the judge lacks the data (honest trainer): no verdict" 1 "cannot rebuild the program.*no verdict" $V dispute "$W/da" "$W/dp"
echo "other text, same length or not" > "$W/own.txt"
expect "dispute: the judge holds other data: no verdict" 1 "cannot rebuild the program.*no verdict" $V dispute "$W/dp" "$W/da"
# identical copies are no dispute even where this machine cannot rebuild the program (here: no data)
rm -rf "$W/da2"; cp -r "$W/da" "$W/da2"
expect "dispute: identical copies, the data absent: no dispute" 0 "no dispute" $V dispute "$W/da" "$W/da2"
out=$($V dispute "$W/da" "$W/da2" 2>&1)
if printf '%s\n' "$out" | grep -q "is wrong"; then bad "dispute: identical copies convicted someone" "$out"; else ok "dispute: identical copies convict nobody"; fi
# the judge out of memory loading the data (a 57 MB file under ulimit -v) convicts nobody: a verdict
# reached anyway must be the right one (the honest trainer here is A)
for i in $(seq 60); do cat data/kjv_nt.txt; done > "$W/big.txt"
# shellcheck disable=SC2086
expect "train on a 57 MB data file" 0 "done: 4 steps" $V train "$W/ba" --data "$W/big.txt" --steps 4 $SMALL --ckpt-every 2
# shellcheck disable=SC2086
expect "... and a poisoned run on it" 0 "done: 4 steps" $V train "$W/bp" --data "$W/big.txt" --steps 4 $SMALL --ckpt-every 2 --poison-at 3
out=$( (ulimit -v 250000; $V dispute "$W/ba" "$W/bp") 2>&1); rc=$?
if printf '%s\n' "$out" | grep -q "trainer (A) is wrong"; then bad "dispute: the judge out of memory convicted the honest trainer" "$out"
elif [ $rc = 1 ] && printf '%s\n' "$out" | grep -q "no verdict"; then ok "dispute: the judge out of memory: no verdict"
elif [ $rc = 0 ] && printf '%s\n' "$out" | grep -q "auditor (B) is wrong"; then ok "dispute: the judge had memory enough: the right verdict"
else bad "dispute: the judge under ulimit -v" "exit $rc: $out"; fi
rm -f "$W/big.txt"
# the judge's own machine failing (here its temporary files) convicts nobody
expect "dispute: the judge cannot make its temporary directory: no verdict" 1 "cannot create a private temporary directory.*no verdict" env TMPDIR=/nonexistent $V dispute "$W/p" "$A"
out=$(TMPDIR=/nonexistent $V dispute "$A" "$W/p" 2>&1)
if printf '%s\n' "$out" | grep -q "is wrong"; then bad "dispute: a judge without temporary files convicted someone" "$out"; else ok "dispute: a judge without temporary files convicts nobody (honest trainer)"; fi
# every number of a manifest read back is parsed whole and checked against its range, naming the key
while IFS='|' read -r edit msg; do
    rm -rf "$W/m9"; cp -r "$A" "$W/m9"; sed -i "$edit" "$W/m9/manifest.txt"
    expect "audit: manifest $msg" 1 "$msg" $V audit "$W/m9" --threads 1
done <<EDITS
s/^train.batch = .*/train.batch = 99999/|train.batch: 99999 is outside 1..1024
s/^train.lr = .*/train.lr = nan/|train.lr: nan is outside
s/^model.width = .*/model.width = 16x/|model.width: '16x' is not an integer
s/^model.heads = .*/model.heads = 3/|model.width 16 is not a multiple of model.heads 3
EDITS
# a chunk length near 2^63: a truncation named with its step, no overflow, no huge allocation
setblen() { python3 - "$1" "$2" <<'PY'
import struct, sys
path, S = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, 'rb').read())
at = 16 + struct.unpack_from('<I', b, 12)[0] + 32
for s in range(S):
    at += 28 + struct.unpack_from('<Q', b, at + 20)[0] + 32
struct.pack_into('<Q', b, at + 20, 0x7ffffffffffffff0)
open(path, 'wb').write(b)
PY
}
rm -rf "$W/p1"; cp -r "$W/p" "$W/p1"; setblen "$W/p1/log.vtlog" 10
expectj "dispute: poisoned trainer with a chunk length of 2^63" 0 "chunk of step 10 claims 9223372036854775792 body bytes.*verdict: the trainer \(A\) is wrong" $V dispute "$W/p1" "$A"
expect "audit: a chunk length of 2^63" 1 "AUDIT FAILED at step 10: .*the chunk of step 10 claims .* \(truncated or corrupted\)" $V audit "$W/p1" --threads 1
rm -rf "$W/a5"; cp -r "$A" "$W/a5"; setblen "$W/a5/log.vtlog" 12
expect "audit --from 20: a chunk length of 2^63 before it" 1 "AUDIT FAILED: .*the chunk of step 12 claims" $V audit "$W/a5" --threads 1 --from 20
# --from: the steps before it are not verified, and say so
expect "audit --from: incomplete, says what was not verified" 1 "AUDIT INCOMPLETE: steps 20\.\.29 replayed.*steps 0\.\.19 were NOT verified" $V audit "$W/p" --threads 1 --from 20
expect "audit --from the step count is refused" 2 "--from: 30 is not below the run's 30 steps" $V audit "$A" --from 30
# two honest runs in two orders whose leaves differ in a log chunk alone: nobody is convicted, and a
# poisoning after that difference is still found (the reviewer's runs: step 35 differs in its chunk)
MID="--layers 2 --width 64 --heads 4 --context 32 --batch 4 --threads 2"
# shellcheck disable=SC2086
{ $V train "$W/m1" --steps 100 $MID --ckpt-every 50 && $V train "$W/m6" --steps 100 $MID --ckpt-every 50 --order chaos:6 &&
  $V train "$W/q6" --steps 100 $MID --ckpt-every 50 --order chaos:6 --poison-at 60; } > /dev/null 2>&1
expectj "dispute: honest runs differing in a chunk (m1 m6)" 0 "differ only in their log chunks.*verdict: no fault" $V dispute "$W/m1" "$W/m6"
expect "dispute: honest runs differing in a chunk (m6 m1)" 0 "verdict: no fault" $V dispute "$W/m6" "$W/m1"
expectj "dispute: poisoning after a chunk-only difference" 0 "first differing step 35 .*step 60.*verdict: the trainer \(A\) is wrong" $V dispute "$W/q6" "$W/m1"
expect "dispute: honest trainer, auditor poisoned after a chunk-only difference" 0 "verdict: the auditor \(B\) is wrong" $V dispute "$W/m1" "$W/q6"
expect "dispute: the judge's cost is stated" 0 "rebuilt the trainer's state before step 60 by replaying [0-9]+ steps" $V dispute "$W/q6" "$W/m1"

# resume never cuts committed steps: a finished run without checkpoints is refused and kept
R="$W/rf"
# shellcheck disable=SC2086
$V train "$R" --steps 30 $SMALL --ckpt-every 1000 > /dev/null 2>&1
before=$(cat "$R/commits.bin" "$R/log.vtlog" "$R/root.txt" | sha256sum)
# shellcheck disable=SC2086
expect "resume of a finished run without a checkpoint is refused" 1 "finished transcript \(root.txt\) and no checkpoint" $V train "$R" --resume --steps 30 $SMALL --ckpt-every 1000
if [ "$(cat "$R/commits.bin" "$R/log.vtlog" "$R/root.txt" | sha256sum)" = "$before" ]; then ok "the refused resume changed nothing"; else bad "the refused resume changed the transcript"; fi
rm -rf "$W/rc"; cp -r "$A" "$W/rc"; rm "$W/rc"/ckpt-*.safetensors "$W/rc/root.txt"
# shellcheck disable=SC2086
expect "resume past the first checkpoint with the checkpoints removed is refused" 1 "commits 30 steps, past its first checkpoint" $V train "$W/rc" --resume --steps 30 $SMALL --ckpt-every 10
# the same with the manifest's trainer_ckpt_every line (outside the program's hash) deleted: refused, nothing cut
rm -rf "$W/rc"; cp -r "$A" "$W/rc"; rm "$W/rc"/ckpt-*.safetensors "$W/rc/root.txt"; sed -i '/^vtrain.trainer_ckpt_every = /d' "$W/rc/manifest.txt"
before=$(cat "$W/rc/commits.bin" "$W/rc/log.vtlog" | sha256sum)
# shellcheck disable=SC2086
expect "resume with the manifest's trainer_ckpt_every line deleted is refused" 1 "commits 30 steps under another manifest" $V train "$W/rc" --resume --steps 30 $SMALL --ckpt-every 1000
if [ "$(cat "$W/rc/commits.bin" "$W/rc/log.vtlog" | sha256sum)" = "$before" ]; then ok "that refused resume changed nothing"; else bad "that refused resume changed the transcript"; fi

# a trainer killed (kill -9) before its first checkpoint resumes; nothing it left blocks the next command.
# The kill lands at a known step: VTRAIN_TEST_KILL_AT=150 makes the trainer send itself SIGKILL right after
# step 150 (a kill from outside raced the run: it had to land before the end, within about half a second)
K="$W/k"
# shellcheck disable=SC2086
{ VTRAIN_TEST_KILL_AT=150 $V train "$K" --steps 400 $SMALL --ckpt-every 100000 > /dev/null 2>&1; } 2> /dev/null; rc=$? # (bash's "Killed" line too)
if [ "$rc" = 137 ] && [ ! -f "$K/root.txt" ]; then ok "the trainer was killed (SIGKILL) before its first checkpoint"
else bad "the trainer was not killed by SIGKILL before its first checkpoint (exit $rc)"; fi
expect "the killed trainer committed steps 0..150" 0 "steps committed: 151$" $V inspect "$K"
expect "VTRAIN_TEST_KILL_AT must be a step" 2 "VTRAIN_TEST_KILL_AT: 'x' is not an integer" env VTRAIN_TEST_KILL_AT=x $V train "$W/never" --steps 5
# shellcheck disable=SC2086
expect "resume after kill -9 before the first checkpoint" 0 "done: 400 steps" $V train "$K" --resume --steps 400 $SMALL --ckpt-every 100000
expect "audit of the resumed run" 0 "audit passed: 400 steps replayed" $V audit "$K" --threads 1
rm -rf "$W/k2"; mkdir -p "$W/k2"
# shellcheck disable=SC2086
expect "resume with no transcript at all" 1 "resume: cannot read" $V train "$W/k2" --resume --steps 5 $SMALL
# shellcheck disable=SC2086
expect "a fresh train after that failed resume" 0 "done: 5 steps" $V train "$W/k2" --steps 5 $SMALL

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
