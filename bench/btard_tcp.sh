#!/usr/bin/env bash
# BTARD's overhead over a plain mean all-reduce with peers as separate
# processes over TCP (vtrain_btard.h's ZeroMQ transport, 127.0.0.1):
# 16 processes of examples/btard_peer.c, the digits MLP 64-128-10, 32
# samples per peer, 1 validator per step for BTARD (2 with --validators).
# Rounds alternate mean, BTARD, mean, BTARD (ABAB); a round's time per
# step is the slowest peer's (steps 2..S); the ratio is of the medians.
#   bash bench/btard_tcp.sh [ROUNDS] [STEPS] [BATCH]
set -u
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}; STEPS=${2:-100}; BATCH=${3:-32}; N=16
make -s build/btard_peer || exit 1
dir=build/tcp_bench; mkdir -p "$dir"
base=$((14000 + ($$ % 500) * 20))
one() { # defence -> slowest peer's ms/step
  local def=$1 r pids=()
  for ((r = 0; r < N; r++)); do
    build/btard_peer --rank $r --peers $N --port $base --steps "$STEPS" --hidden 128 --batch "$BATCH" --timeout 5 \
      --defence "$def" > "$dir/$def.$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  base=$((base + N))
  grep -h '^ms/step' "$dir/$def".*.log | awk 'BEGIN{m=0} {if ($2 > m) m = $2} END{printf "%.3f\n", m}'
}
echo "BTARD over TCP: $N processes on 127.0.0.1 ($(nproc) cores), MLP 64-128-10, $BATCH samples per peer, $STEPS steps, $ROUNDS rounds ABAB"
m=(); b=()
for ((k = 0; k < ROUNDS; k++)); do
  x=$(one mean); y=$(one btard)
  echo "  round $k: mean all-reduce $x ms/step, BTARD $y ms/step"
  m+=("$x"); b+=("$y")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mm=$(med "${m[@]}"); bm=$(med "${b[@]}")
awk -v a="$mm" -v b="$bm" 'BEGIN{printf "  median: mean all-reduce %.2f ms/step, BTARD %.2f ms/step: x%.2f\n", a, b, b / a}'
