#!/usr/bin/env bash
# bench/dp.sh - shards and ranks (make bench-dp; needs Open MPI).
#   1. one process, S = 4: every rounding point's time and entries per step
#      beside the cross-shard sum's, and the sum against a plain binary32
#      sum of the same values (bench/dp.c sum)
#   2. the character GPT (S = 4) on -np 2 with one thread each against one
#      process with two threads: steps per second and log bytes per step,
#      ROUNDS alternating rounds (ABAB), medians; the state digests must
#      agree (the same run)
set -u
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}; STEPS=${STEPS:-10}
mkdir -p build
mpicc -std=c99 -O2 ${ARCH:--march=native} -ffp-contract=off -Wall -Wextra -Werror bench/dp.c -o build/bench_dp -lm -lpthread || exit 1
args=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
  args+=(--oversubscribe --bind-to none)
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
fi
echo "date: $(date -u +%Y-%m-%d)   cpu: $(lscpu | sed -n 's/^Model name: *//p')   load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
./build/bench_dp sum --steps "$STEPS" --threads 2
echo
if command -v valgrind >/dev/null; then # instructions do not move with the machine's load
  n=200000
  for f in exact_sum native_sum; do
    valgrind --tool=callgrind --callgrind-out-file=build/dp_$f.cg "--toggle-collect=$f*" ./build/bench_dp icount $n > build/dp_$f.txt 2>&1
    eval "ic_$f=\$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' build/dp_$f.txt)"
  done
  awk -v e="$ic_exact_sum" -v b="$ic_native_sum" -v n=$n 'BEGIN { printf "callgrind, %d values x 4 shards: the exact rule %.1f instructions per value, a plain binary32 sum %.1f, ratio %.2f\n", n, e / n, b / n, e / b }'
  grep -h '^icount' build/dp_exact_sum.txt
  echo
fi
a=(); b=(); ba=0; bb=0; sa=""; sb=""
for r in $(seq 1 "$ROUNDS"); do
  la=$(mpirun "${args[@]}" -np 2 ./build/bench_dp run --steps "$STEPS" --threads 1 2>&1 | grep '^RESULT')
  lb=$(mpirun "${args[@]}" -np 1 ./build/bench_dp run --steps "$STEPS" --threads 2 2>&1 | grep '^RESULT')
  echo "round $r: -np 2 x 1 thread: $la"
  echo "round $r: -np 1 x 2 threads: $lb"
  a+=("$(echo "$la" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')"); b+=("$(echo "$lb" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')")
  ba=$(echo "$la" | sed -n 's/.*log_bytes=\([0-9]*\).*/\1/p'); bb=$(echo "$lb" | sed -n 's/.*log_bytes=\([0-9]*\).*/\1/p')
  sa=$(echo "$la" | sed -n 's/.*state=\([0-9a-f]*\).*/\1/p'); sb=$(echo "$lb" | sed -n 's/.*state=\([0-9a-f]*\).*/\1/p')
done
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ma=$(med "${a[@]}"); mb=$(med "${b[@]}")
echo
awk -v a="$ma" -v b="$mb" -v s="$STEPS" -v ba="$ba" -v bb="$bb" 'BEGIN {
  printf "| | steps/s (median of rounds) | log bytes/step |\n|---|---|---|\n";
  printf "| -np 2, 1 thread each | %.3f | %.0f |\n", s / a, ba / s;
  printf "| 1 process, 2 threads | %.3f | %.0f |\n", s / b, bb / s;
  printf "\n-np 2 / one process (throughput): %.2f\n", b / a }'
[ "$sa" = "$sb" ] && echo "the same state after $STEPS steps ($sa...) and the same log size" || echo "STATES DIFFER: $sa / $sb"
