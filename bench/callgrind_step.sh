#!/bin/bash
# bench/callgrind_step.sh - instructions per training step of bench_step's GPT, per mode, by callgrind
#
#   bash bench/callgrind_step.sh [SRCDIR] [MODES] [-- extra bench_step arguments]
#
# Builds SRCDIR/bench/step.c (default: this checkout) for -march=x86-64-v3
# (valgrind 3.19 cannot run AVX-512 code; the AVX2 kernels run), runs the
# listed modes (default verified,fp64) side by side for two rounds, one
# thread, with a callgrind dump before every vt_step_begin, and prints the
# instructions of each mode's first step after setup (round 0; the second
# round keeps the exit's teardown out of the last mode's figure). Counts do
# not move with the machine's load; the wall time of the run does (40 to 60
# minutes at load 8 to 20 on the shared 2-core VM, 2026-12-01).
set -e
SRC=${1:-.}
MODES=${2:-verified,fp64}
shift 2 2>/dev/null || shift $#
[ "$1" = "--" ] && shift
OUT=$(mktemp -d /tmp/vtcg.XXXXXX)
gcc -std=c99 -O2 -march=x86-64-v3 -ffp-contract=off -g "$SRC/bench/step.c" -o "$OUT/bench_step" -lm -lpthread
valgrind --tool=callgrind --dump-before=vt_step_begin --callgrind-out-file="$OUT/cg.out" \
    "$OUT/bench_step" --threads 1 --model gpt --warmup 0 --steps 2 --mode "$MODES" "$@" > "$OUT/run.log" 2>&1
# dumps: .1 = setup, then one per step: round r, mode k is dump 2 + r * nmodes + k
NM=$(echo "$MODES" | tr ',' '\n' | wc -l)
k=0
for m in $(echo "$MODES" | tr ',' ' '); do
    f="$OUT/cg.out.$((2 + k))"
    n=$(grep -m1 '^summary:\|^totals:' "$f" | awk '{print $2}')
    printf '%-12s %14s instructions per step   (%s)\n' "$m" "$n" "$f"
    k=$((k + 1))
done
echo "callgrind files: $OUT"
