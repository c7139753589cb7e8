#!/usr/bin/env bash
# bench/cnn_cpu.sh - CPU seconds per step of bench_cnn's verified and fp64
# modes, for one or more builds of it, where wall clock is too noisy (a
# loaded shared machine): per step = (T(S) - T(2)) / (S - 2), T the user +
# system seconds of a whole run (`/usr/bin/time`), each the minimum over R
# rounds; rounds alternate builds and modes (ABAB). Prints verified / fp64.
#
#   bash bench/cnn_cpu.sh WIDTH BATCH S R THREADS BENCH_CNN...
#   e.g. bash bench/cnn_cpu.sh 16 16 5 3 1 ./build/bench_cnn /tmp/old/bench_cnn
set -u
[ $# -ge 6 ] || { echo "usage: $0 WIDTH BATCH S R THREADS BENCH_CNN..." >&2; exit 2; }
W=$1; B=$2; S2=$3; R=$4; TH=$5; shift 5
declare -A best
for r in $(seq 1 "$R"); do
  for bin in "$@"; do
    for m in verified fp64; do
      for s in 2 "$S2"; do
        t=$( { /usr/bin/time -f "%U %S" nice "$bin" --width "$W" --batch "$B" --steps "$s" --rounds 1 --modes $m --threads "$TH" >/dev/null; } 2>&1 | tail -1 | awk '{print $1 + $2}')
        k="$bin.$m.$s"
        if [ -z "${best[$k]:-}" ] || awk "BEGIN{exit !($t < ${best[$k]})}"; then best[$k]=$t; fi
      done
    done
  done
done
for bin in "$@"; do
  v=$(awk "BEGIN{print (${best[$bin.verified.$S2]} - ${best[$bin.verified.2]}) / ($S2 - 2)}")
  f=$(awk "BEGIN{print (${best[$bin.fp64.$S2]} - ${best[$bin.fp64.2]}) / ($S2 - 2)}")
  echo "$bin width $W batch $B threads $TH: CPU s/step verified $v fp64 $f verified/fp64 $(awk "BEGIN{printf \"%.3f\", $v / $f}")"
done
