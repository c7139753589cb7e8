#!/usr/bin/env bash
# bench/load.sh - a 2-thread step against a 1-thread step while another
# process keeps one core busy (make bench-load).
#
# One busy loop (a shell `while :`) runs for the whole bench; bench_step's
# GPT (verified mode) runs with --threads 1 and --threads 2 in alternating
# rounds, then the same without the busy loop. Prints each round's median
# step and the medians over rounds; the pool degrades gracefully when
# "2 threads, loaded" is no slower than "1 thread, loaded".
#   bash bench/load.sh [BENCH_STEP] [ROUNDS]
set -u
exe=${1:-build/bench_step}; rounds=${2:-5}
args="--model gpt --mode verified --steps 10"
one() { "$exe" $args --threads "$1" | sed -E 's/.*: ([0-9.]+) ms.*/\1/'; }
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $exe $args"
for load in 1 0; do
  pid=
  if [ $load = 1 ]; then (while :; do :; done) & pid=$!; fi
  t1=(); t2=()
  for r in $(seq "$rounds"); do t1+=("$(one 1)"); t2+=("$(one 2)"); done
  [ -n "$pid" ] && kill "$pid" && wait "$pid" 2>/dev/null
  m1=$(printf '%s\n' "${t1[@]}" | med); m2=$(printf '%s\n' "${t2[@]}" | med)
  printf '%-22s 1 thread: %s ms   2 threads: %s ms   (rounds: %s | %s)   2/1 = %s\n' \
    "$([ $load = 1 ] && echo 'one core busy' || echo 'no extra load')" "$m1" "$m2" "${t1[*]}" "${t2[*]}" \
    "$(awk -v a="$m2" -v b="$m1" 'BEGIN {printf "%.2f", a / b}')"
done
