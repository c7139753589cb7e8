#!/usr/bin/env bash
# Every example, run briefly, writes the same logs, commitments, transcripts
# and final state digests as it did when tests/fixtures/examples/ was
# recorded (`bash tests/examples_golden.sh --record`, before a change that
# must not change behaviour). What is compared: the bytes of every file an
# example writes (as SHA-256) and its printed output with wall-clock times
# masked. Orders are pinned (threads:2): a trainer's log records what its
# own order computed. Last line: "N passed, M failed".
# `--record NAME...` records only the named examples (a new example, or one
# whose output changed on purpose) and compares the others.
# `--part swarm` runs only btard_swarm, whose in-process peers have real-time
# deadlines, and `--part rest` all the others, which have none: make test
# runs the rest beside the other programs and the swarm alone.
set -u
cd "$(dirname "$0")/.."
REC=0; ONLY=" "; PART=all
if [ "${1:-}" = --part ]; then PART=${2:-}; shift 2
  case "$PART" in swarm|rest) ;; *) echo "examples_golden: --part swarm|rest"; echo "0 passed, 1 failed"; exit 1 ;; esac
fi
if [ "${1:-}" = --record ]; then REC=1; shift; for n in "$@"; do ONLY="$ONLY$n "; done; fi
# want NAME: this run includes example NAME
want() { [ $PART = all ] || { [ $PART = swarm ] && [ "$1" = btard_swarm ]; } || { [ $PART = rest ] && [ "$1" != btard_swarm ]; }; }
G=tests/fixtures/examples; W=build/golden
mkdir -p "$G" "$W"
pass=0; fail=0

mask() { sed -E 's/[0-9]+\.[0-9]+ (s|ms)\b/T \1/g; s/\([0-9]+ s\)/(T s)/g; s/[0-9.]+ ms\/step/T ms\/step/g'; }
hashes() { for f in "$@"; do printf '%s %s\n' "$(sha256sum < "$f" | cut -c1-64)" "${f#$W/}"; done; }

# check NAME: compares $W/NAME.out (output, masked, and file hashes) with the recording
check() {
  local name=$1
  if [ $REC = 1 ] && { [ "$ONLY" = " " ] || [[ "$ONLY" == *" $name "* ]]; }; then
    cp "$W/$name.out" "$G/$name.txt"; echo "recorded $name"; return
  fi
  if [ ! -f "$G/$name.txt" ]; then echo "FAIL $name: no recording $G/$name.txt"; fail=$((fail + 1)); return; fi
  # runs of spaces compare as one: a time printed with padding ("( 9.81 ms/step)") is masked to T either way
  if diff -u <(tr -s ' ' < "$G/$name.txt") <(tr -s ' ' < "$W/$name.out") > "$W/$name.diff"; then
    echo "ok   $name"; pass=$((pass + 1))
  else
    echo "FAIL $name: output or files differ from $G/$name.txt"; head -40 "$W/$name.diff"; fail=$((fail + 1))
  fi
}

run() { # NAME, then the command; stdout masked into $W/NAME.out
  local name=$1; shift
  if ! "$@" 2>&1 | mask > "$W/$name.out"; then echo "FAIL $name: '$*' failed"; cat "$W/$name.out"; fail=$((fail + 1)); return 1; fi
}

# a fresh directory for what runs (the swarm's files alone for --part swarm,
# so that the two parts can follow each other)
if [ $PART = swarm ]; then rm -f "$W"/swarm.* "$W"/btard_swarm.*; else rm -rf "${W:?}"/*; fi
if want train_digits && run train_digits ./build/train_digits --steps 40 --order threads:2 --log "$W/digits.vtlog"; then
  hashes "$W/digits.vtlog" "$W/digits.vtlog.commits" >> "$W/train_digits.out"; check train_digits; fi
if want train_chargpt && run train_chargpt ./build/train_chargpt --steps 5 --layers 2 --width 64 --order threads:2 --log "$W/chargpt.vtlog"; then
  hashes "$W/chargpt.vtlog" "$W/chargpt.vtlog.commits" >> "$W/train_chargpt.out"; check train_chargpt; fi
if want demo && run demo ./build/demo --steps 6; then
  hashes build/demo.vtlog build/demo.vtlog.commits >> "$W/demo.out"; check demo; fi
if want vtrain_cli && run vtrain_cli ./build/vtrain train "$W/cli" --steps 5 --layers 2 --width 32 --heads 2 --context 32 --batch 4 --ckpt-every 2 --threads 2 &&
   ./build/vtrain audit "$W/cli" --threads 1 2>&1 | mask >> "$W/vtrain_cli.out" &&
   ./build/vtrain inspect "$W/cli" 2>&1 | mask >> "$W/vtrain_cli.out"; then
  hashes "$W"/cli/* >> "$W/vtrain_cli.out"; check vtrain_cli; fi
# without libsodium btard_swarm refuses BTARD runs (exit 2, one line): skipped, named
skip=0
if want btard_swarm && ./build/btard_swarm --steps 1 --every 1 --attacks none --defences btard --quiet --svg /dev/null 2>&1 | grep -q 'built without libsodium'; then
  echo "skipped: btard_swarm: built without libsodium (Debian libsodium-dev): the swarm's golden output is not compared"; skip=1
elif want btard_swarm && run btard_swarm ./build/btard_swarm --steps 12 --start 3 --every 4 --peers 6 --byzantine 2 --attacks none,sign_flip \
     --defences btard,mean --quiet --md "$W/swarm.md" --svg "$W/swarm.svg"; then
  cat "$W/swarm.md" >> "$W/btard_swarm.out"; check btard_swarm; fi
if want nondeterminism_lab && run nondeterminism_lab ./build/nondeterminism_lab; then check nondeterminism_lab; fi
if want train_digits_cnn && run train_digits_cnn ./build/train_digits_cnn --steps 12 --order threads:2 --audit-order threads:1,chaos:3 --log "$W/digits_cnn.vtlog"; then
  hashes "$W/digits_cnn.vtlog" "$W/digits_cnn.vtlog.commits" >> "$W/train_digits_cnn.out"; check train_digits_cnn; fi
if want train_resnet && run train_resnet ./build/train_resnet --data synthetic --width 4 --batch 8 --steps 3 --order threads:2 --out "$W/resnet" --audit chaos:2; then
  hashes "$W"/resnet/* >> "$W/train_resnet.out"; check train_resnet; fi
if want vtrain_cli_cnn && run vtrain_cli_cnn ./build/vtrain train "$W/cli_cnn" --model cnn --steps 6 --width 4 --batch 16 --ckpt-every 2 --threads 2 &&
   ./build/vtrain audit "$W/cli_cnn" --threads 1 2>&1 | mask >> "$W/vtrain_cli_cnn.out"; then
  hashes "$W"/cli_cnn/* >> "$W/vtrain_cli_cnn.out"; check vtrain_cli_cnn; fi

[ $REC = 1 ] && [ "$ONLY" = " " ] && exit 0
if [ $skip -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
