#!/usr/bin/env bash
# BTARD's overhead over a plain mean all-reduce with peers as separate
# processes over TCP (vtrain_btard.h's ZeroMQ transport, 127.0.0.1):
# N processes (default 16) of examples/btard_peer.c. Rounds alternate
# mean, BTARD, mean, BTARD (ABAB); a round's time per step is the slowest
# peer's wall time (steps 2..S), its CPU per step the sum over the N
# processes of each one's CPU (all its threads, ZeroMQ's I/O thread
# included) over the same steps; the ratios are of the medians. Each
# round also prints the messages a peer hands its transport per step.
#
#   bash bench/btard_tcp.sh [ROUNDS] [STEPS] [BATCH] [options]
#     --model mlp|cnn|resnet18   the digits MLP 64-H-10 (default), the digits
#                       CNN (vtrain_btard.h's vt_btard_cnn_digits task, batch
#                       norm) or a ResNet-18 on synthetic CIFAR-shaped images
#                       (vt_btard_cnn_cifar: the paper's setting at width 8)
#     --hidden H        the MLP's hidden width (default 128)
#     --width W         the CNN's base width (default 16; ResNet-18: 8)
#     --batch B         samples per peer per step (default: MLP 32, CNN 8)
#     --validators M    BTARD's validators per step (default 1, as
#                       bench/btard.c's in-process figures)
#     --peers N         processes (default 16)
#     --rounds R, --steps S   (defaults 3, MLP 100, CNN 30, ResNet-18 12)
#     --timeout T       the peers' deadline (default 5 s; ResNet-18 also gets a
#                       compute budget of 60 s: its 16 gradients share the cores)
#     --peer BIN        the peer program (default build/btard_peer, built here;
#                       another build of it, e.g. main's, to compare ABAB)
#
#   bash bench/btard_tcp.sh 3 60
#   bash bench/btard_tcp.sh --model cnn --rounds 3 --steps 30
#   bash bench/btard_tcp.sh --model mlp --hidden 1024 --rounds 3 --steps 40
set -u
cd "$(dirname "$0")/.."
ROUNDS=3; STEPS=; BATCH=; N=16; MODEL=mlp; HIDDEN=128; WIDTH=; VAL=1; PEER=build/btard_peer; TMO=
pos=0
while (($#)); do
  case $1 in
    --model) MODEL=$2; shift 2 ;;
    --hidden) HIDDEN=$2; shift 2 ;;
    --width) WIDTH=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --validators) VAL=$2; shift 2 ;;
    --peers) N=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --peer) PEER=$2; shift 2 ;;
    --timeout) TMO=$2; shift 2 ;;
    --*) echo "btard_tcp.sh: unknown option $1" >&2; exit 2 ;;
    *) case $pos in 0) ROUNDS=$1 ;; 1) STEPS=$1 ;; 2) BATCH=$1 ;; *) echo "btard_tcp.sh: too many arguments" >&2; exit 2 ;; esac
       pos=$((pos + 1)); shift ;;
  esac
done
case $MODEL in
  mlp) STEPS=${STEPS:-100}; BATCH=${BATCH:-32}; what="digits MLP 64-$HIDDEN-10"; mopt="--model mlp --hidden $HIDDEN" ;;
  cnn) STEPS=${STEPS:-30}; BATCH=${BATCH:-8}; WIDTH=${WIDTH:-16}; what="digits CNN width $WIDTH"; mopt="--model cnn --width $WIDTH" ;;
  resnet18) STEPS=${STEPS:-12}; BATCH=${BATCH:-8}; WIDTH=${WIDTH:-8}; what="ResNet-18 width $WIDTH (synthetic CIFAR-shaped images)"
    mopt="--model resnet18 --width $WIDTH --compute-timeout 60" ;;
  *) echo "btard_tcp.sh: --model mlp, cnn or resnet18" >&2; exit 2 ;;
esac
if [ "$PEER" = build/btard_peer ]; then make -s build/btard_peer || exit 1; fi
[ -x "$PEER" ] || { echo "btard_tcp.sh: no peer program $PEER" >&2; exit 1; }
# main's btard_peer (before --model) knows neither --model nor --validators: pass them only when asked
"$PEER" --model 2>&1 | grep -q -- '--model' || { mopt="--hidden $HIDDEN"; [ "$MODEL" = mlp ] || { echo "btard_tcp.sh: $PEER has no --model" >&2; exit 1; }; }
vopt="--validators $VAL"; "$PEER" --model 2>&1 | grep -q -- '--validators' || { vopt=; echo "  ($PEER has no --validators: its own 2 validators per step)"; }
dir=build/tcp_bench; mkdir -p "$dir"
base=$((14000 + ($$ % 500) * 20))
one() { # defence -> "slowest peer's ms/step  sum of the peers' CPU ms/step"
  local def=$1 r pids=() v=
  [ "$def" = btard ] && v=$vopt
  rm -f "$dir/$def".*.log # a run with fewer peers must not read an earlier run's logs
  for ((r = 0; r < N; r++)); do
    "$PEER" --rank $r --peers $N --port $base --steps "$STEPS" $mopt --batch "$BATCH" $v --timeout "${TMO:-5}" \
      --defence "$def" > "$dir/$def.$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  base=$((base + N))
  local w c
  w=$(grep -h '^ms/step' "$dir/$def".*.log | awk 'BEGIN{m=0} {if ($2 > m) m = $2} END{printf "%.3f", m}')
  c=$(grep -h '^cpu_ms/step' "$dir/$def".*.log | awk '{s += $2; k++} END{if (k) printf "%.3f", s; else printf "-"}')
  [ "$(grep -c '^ms/step' "$dir/$def".*.log | awk -F: '{s += $2} END{print s}')" = "$N" ] || echo "  warning: not every $def peer finished (see $dir/$def.*.log)" >&2
  local sm
  sm=$(grep -h '^sent/step' "$dir/$def".*.log | awk '{s += $2; k++} END{if (k) printf "%.0f", s / k; else printf "-"}')
  echo "$w $c $sm"
}
echo "BTARD over TCP: $N processes on 127.0.0.1 ($(nproc) cores), $what, $BATCH samples per peer, $STEPS steps, $ROUNDS rounds ABAB, ${vopt:-2 validators}, $PEER, load $(cut -d' ' -f1-3 /proc/loadavg)"
m=(); b=(); mc=(); bc=()
for ((k = 0; k < ROUNDS; k++)); do
  read -r x xc xm <<< "$(one mean)"; read -r y yc ym <<< "$(one btard)"
  echo "  round $k: mean all-reduce $x ms/step (CPU $xc), BTARD $y ms/step (CPU $yc); messages sent per peer per step: $xm, $ym"
  m+=("$x"); b+=("$y"); mc+=("$xc"); bc+=("$yc")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mm=$(med "${m[@]}"); bm=$(med "${b[@]}"); mmc=$(med "${mc[@]}"); bmc=$(med "${bc[@]}")
awk -v a="$mm" -v b="$bm" -v ac="$mmc" -v bc="$bmc" 'BEGIN{printf "  median: mean all-reduce %.2f ms/step (CPU %.1f), BTARD %.2f ms/step (CPU %.1f): x%.2f wall, x%.2f CPU\n", a, ac, b, bc, b / a, (ac > 0 ? bc / ac : 0)}'
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"
