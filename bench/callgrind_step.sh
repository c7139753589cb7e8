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
# round keeps the exit's teardown out of the last mode's figure), then the
# functions where the first two modes differ most (TOP of them, default 15,
# by their own instructions: what to look at next). Counts do
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
# where the first two modes differ: each function's own instructions (callgrind_annotate, inlined code counted in
# the function it was inlined into), the TOP largest differences (TOP=0: none)
if [ "$NM" -ge 2 ] && [ "${TOP:-15}" -gt 0 ]; then
    m1=$(echo "$MODES" | cut -d, -f1); m2=$(echo "$MODES" | cut -d, -f2)
    for k in 0 1; do
        callgrind_annotate --inclusive=no --threshold=100 --auto=no "$OUT/cg.out.$((2 + k))" 2>/dev/null |
            awk '/^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]+:/ { n = $1; gsub(",", "", n); l = $0; sub(/^[^%]*%\) +/, "", l)
                                                     split(l, w, " "); f = w[1]; sub(/^.*:/, "", f)
                                                     if (f !~ /^(\(below|main$|__libc_start|0x)/) s[f] += n }
                 END { for (f in s) print f, s[f] }' > "$OUT/fn.$k"
    done
    printf '\n%-40s %12s %12s %12s\n' "function (own instructions)" "$m1" "$m2" "difference"
    awk 'NR == FNR { a[$1] = $2; d[$1] = 1; next } { b[$1] = $2; d[$1] = 1 }
         END { for (f in d) { x = a[f] + 0; y = b[f] + 0; print (x > y ? x - y : y - x), f, x, y } }' "$OUT/fn.0" "$OUT/fn.1" |
        sort -k1,1 -g -r | head -n "${TOP:-15}" |
        awk '{ printf "%-40s %11.2fM %11.2fM %+11.2fM\n", substr($2, 1, 40), $3 / 1e6, $4 / 1e6, ($3 - $4) / 1e6 }'
fi
echo "callgrind files: $OUT"
