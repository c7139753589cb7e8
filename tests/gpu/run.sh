#!/usr/bin/env bash
# tests/gpu/run.sh OUTDIR - everything that needs a real GPU, in one go, in
# under 5 minutes on an H200 (a budget every stage's time limit is cut to:
# RUN_BUDGET_S, 290 s by default).
#
#   1. builds the PTX, the CUDA tests, the audit driver and the bench (make cuda)
#   2. probes GPU 0 (build/gpu_audit probe)
#   3. the CUDA test suite's GPU runs (build/test_cuda _on_gpu: every kernel
#      against the CPU op, GPU-trained runs audited on the CPU and the
#      reverse, native mode differs, two GPU runs write identical logs, ...)
#   4. the MLP and the character GPT trained on the GPU and audited on the
#      CPU, and the reverse, every step's state digest (weights and AdamW
#      moments) and log chunk hash compared (build/gpu_audit)
#   5. the GPT-2 124M step bench (B=8, T=1024) in verified, fp64 and native
#      modes, then PyTorch
#      eager on the same GPU (binary32 with TF32 off, and binary64)
#   6. a GPT-2-shaped model (12 layers, width 768, 12 heads, vocab 50257)
#      trained on the GPU and audited on the CPU for 20 steps (sequences of
#      64, batch 2: the CPU side is the slow one)
#   7. two MPI ranks sharing the GPU (vtrain_dp.h, S = 4, the character GPT),
#      the transcript audited on the CPU and compared leaf for leaf with one
#      CPU process (tests/gpu/dp.sh; needs Open MPI there)
#   8. the digits CNN (convolutions, batch norm, max pooling) trained on the
#      GPU and audited on the CPU for 20 steps, running statistics included
#   9. the ResNet-50 (CIFAR form, B=64) verified and fp64 step beside
#      PyTorch eager on the same GPU, binary32 (TF32 off) and binary64
#      (bench/torch_resnet.py over build/bench_gpu_cnn)
# Logs go to OUTDIR/<stage>.log; OUTDIR/summary.txt has each stage's exit
# status and OUTDIR/results.md the lines for bench/RESULTS.md.
#
# Without a GPU it says so, runs what the emulator can (the whole CUDA test
# suite, short emulated-GPU audits of the MLP, both benches on a tiny model)
# and exits 0 having measured nothing: dry runs of this script anywhere.
set -u
out=${1:?usage: tests/gpu/run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
t0=$(date +%s)
budget=${RUN_BUDGET_S:-290}
fails=0
: > "$out/summary.txt"

stage() { # name, time limit in seconds, command...
    local name=$1 limit=$2 rc left
    shift 2
    left=$(( budget - ($(date +%s) - t0) ))
    if [ "$left" -lt 10 ]; then
        echo "== $name: SKIPPED, the ${budget} s budget is spent"
        echo "$name skipped (budget)" >> "$out/summary.txt"; fails=$((fails + 1)); return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "== $name (at $(( $(date +%s) - t0 )) s, limit $limit s): $*"
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    rc=$?
    tail -n 4 "$out/$name.log" | sed 's/^/   /'
    if [ $rc -ne 0 ]; then echo "   FAILED (exit $rc; 124 = over its time limit): $out/$name.log"; fails=$((fails + 1)); fi
    echo "$name exit=$rc" >> "$out/summary.txt"
}

{ nvidia-smi; nvidia-smi -q | head -40; } > "$out/nvidia-smi.txt" 2>&1 || true
head -n 12 "$out/nvidia-smi.txt"
{ git log -1 --format='commit %H %s'; git status --short; } > "$out/git.txt" 2>&1 || true

stage build 150 make -j"$(nproc)" cuda
if [ ! -x build/gpu_audit ] || [ ! -x build/test_cuda ] || [ ! -x build/bench_gpu_step ] || [ ! -x build/bench_gpu_cnn ]; then
    echo "== the build failed (see $out/build.log): nothing else runs"; exit 1
fi
./build/gpu_audit probe > "$out/probe.log" 2>&1
gpu=$?
cat "$out/probe.log"

if [ "$gpu" -eq 0 ]; then
    stage test_cuda 90 ./build/test_cuda _on_gpu
    stage audit_mlp_gpu_cpu 30 ./build/gpu_audit mlp gpu cpu 60
    stage audit_mlp_cpu_gpu 30 ./build/gpu_audit mlp cpu gpu 60
    stage audit_chargpt_gpu_cpu 40 ./build/gpu_audit chargpt gpu cpu 30
    stage audit_chargpt_cpu_gpu 40 ./build/gpu_audit chargpt cpu gpu 30
    # (each mode sets up its own 124M-parameter context, ~10 s of host-side
    # init each: round-only, the least telling mode, is left out)
    stage bench_gpu_step 110 ./build/bench_gpu_step --warmup 2 --steps 10 --modes verified,fp64,native
    stage bench_torch 60 python3 bench/gpt2_torch.py --warmup 2 --steps 10
    stage audit_gpt2_gpu_cpu 150 ./build/gpu_audit gpt2 gpu cpu 20 64 2
    stage audit_dp_2ranks_gpu_cpu 90 bash tests/gpu/dp.sh --gpu
    stage audit_cnn_gpu_cpu 40 ./build/gpu_audit cnn gpu cpu 20
    stage bench_resnet50 90 python3 bench/torch_resnet.py --vtrain build/bench_gpu_cnn --device cuda --model resnet50 --width 64 --batch 64 --steps 3 --rounds 2
else
    echo "NO GPU: $(head -n 1 "$out/probe.log")"
    echo "   nothing below is a GPU measurement: the emulator's checks only"
    echo "no_gpu $(head -n 1 "$out/probe.log")" >> "$out/summary.txt"
    stage test_cuda 120 ./build/test_cuda
    stage audit_mlp_emu_cpu 60 ./build/gpu_audit mlp emu cpu 10
    stage audit_mlp_cpu_emu 60 ./build/gpu_audit mlp cpu emu 10
    # (the char GPT on the emulator takes minutes: test_cuda trains a smaller one)
    stage bench_gpu_step 60 ./build/bench_gpu_step --emu --small
    stage bench_torch 60 python3 bench/gpt2_torch.py --device cpu --vocab 100 --layers 2 --width 64 --heads 4 --T 32 --B 2 --warmup 1 --steps 2
    stage audit_dp_2ranks_emu_cpu 120 bash tests/gpu/dp.sh --emu
    stage audit_cnn_emu_cpu 60 ./build/gpu_audit cnn emu cpu 3
    stage bench_resnet50 90 python3 bench/torch_resnet.py --vtrain build/bench_gpu_cnn --device emu --model resnet50 --width 2 --batch 2 --steps 2 --rounds 1
fi

# the ratios: verified vtrain against PyTorch eager on this GPU
res=$(grep -h '^RESULT' "$out/bench_gpu_step.log" "$out/bench_torch.log" 2>/dev/null | sed 's/^RESULT //' | tr '\n' ' ')
get() { echo "$res" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
v=$(get verified_ms); ro=$(get round_only_ms); f64=$(get fp64_ms); nat=$(get native_ms)
t32=$(get torch_float32_ms); t64=$(get torch_float64_ms)
for k in v ro f64 nat; do [ "${!k:-}" = "0.00" ] && printf -v "$k" '%s' "not run"; done
dev=$(sed -n 's/^device: //p' "$out/bench_gpu_step.log" 2>/dev/null | head -n 1)
{
    if [ "$gpu" -ne 0 ]; then
        echo "NO GPU on this machine ($(head -n 1 "$out/probe.log"))."
        echo
        echo "### DRY RUN, $(date +%Y-%m-%d): a tiny GPT on the emulator and on the CPU, not GPU numbers"
    else
        echo "### GPT-2 124M training step, B=8, T=1024 — $(date +%Y-%m-%d), ${dev:-unknown GPU}"
    fi
    echo
    echo "| | ms per step |"
    echo "|---|---|"
    echo "| vtrain verified (binary64, rounding points, log) | ${v:-?} |"
    echo "| vtrain round-only | ${ro:-?} |"
    echo "| vtrain fp64 | ${f64:-?} |"
    echo "| vtrain native (binary32, SGEMM) | ${nat:-?} |"
    echo "| PyTorch eager binary32 (TF32 off) | ${t32:-skipped} |"
    echo "| PyTorch eager binary64 | ${t64:-skipped} |"
    if [ -n "${v:-}" ] && [ -n "${t32:-}" ]; then
        echo
        echo "verified / PyTorch binary32 = $(awk -v a="$v" -v b="$t32" 'BEGIN { printf "%.2f", a / b }');" \
             "verified / PyTorch binary64 = $(awk -v a="$v" -v b="${t64:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "?" }')"
    fi
    echo
    grep -h -E '^(model|parameters|verified|round_only|fp64|native|rounding points|state digest)' "$out/bench_gpu_step.log" 2>/dev/null | sed 's/^/    /'
    echo
    echo "ResNet-50 (CIFAR form) training step, vtrain beside PyTorch on the same device:"
    echo
    grep -h '^RESULT' "$out/bench_resnet50.log" 2>/dev/null | sed 's/^RESULT /    /'
    echo
    echo "Audits (every step's state digest and log chunk hash, trainer against auditor):"
    echo
    for f in "$out"/audit_*.log; do [ -f "$f" ] && tail -n 1 "$f" | sed 's/^/    /'; done
} > "$out/results.md"
cat "$out/results.md"
if [ "$gpu" -ne 0 ]; then
    echo "== NO GPU: dry run done in $(( $(date +%s) - t0 )) s, $fails emulator stage(s) failed; logs in $out"
    echo "   on a machine with an NVIDIA GPU: bash tests/gpu/run.sh OUTDIR"
    [ "$fails" -eq 0 ]
    exit
fi
echo "== done in $(( $(date +%s) - t0 )) s, $fails stage(s) failed; logs in $out"
[ "$fails" -eq 0 ]
