#!/usr/bin/env bash
# tests/gpu/dp.sh [--gpu | --emu] - two MPI ranks sharing one GPU (vtrain_dp.h,
# each rank on GPU 0 through the CUDA backend), S = 4, the character GPT;
# the transcript is audited on the CPU in one process, and its leaves are
# compared with a one-process CPU run. --emu: the same on the CUDA
# backend's emulator, with the MLP (the GPT is slow there). The last line
# says what matched. Needs mpicc and mpirun (Open MPI).
set -u
cd "$(dirname "$0")/../.."
how=${1:---gpu}
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "dp: no mpicc or mpirun on this machine: two ranks on one GPU are not run (apt-get install libopenmpi-dev openmpi-bin)"; exit 1
fi
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}; CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
make -s build/vtrain_cuda_ptx.h || { echo "dp: the PTX did not build"; exit 1; }
mpicc -std=c99 -O2 ${ARCH:--march=native} -ffp-contract=off -Wall -Wextra -Werror -DVTRAIN_CUDA -DVTRAIN_CUDA_EMU -I"$CUDA_INC" -Ibuild \
  tests/test_dp_mpi.c -o build/test_dp_mpi_gpu -lm -lpthread -ldl || { echo "dp: the build failed"; exit 1; }
args=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
  args+=(--oversubscribe --enable-recovery)
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
fi
P=build/test_dp_mpi_gpu
D=build/gpu_dp; rm -rf $D; mkdir -p $D
if [ "$how" = --emu ]; then model=mlp; steps=5; dev=--cuda; export VTRAIN_EMU_GIB=${VTRAIN_EMU_GIB:-1}; else model=gpt; steps=20; dev=--gpu; fi
echo "== 2 ranks ($dev), $model, S = 4, $steps steps"
mpirun "${args[@]}" -np 2 $P train $D/dev $model 4 $steps $dev 2>&1 | grep -v '^\['
echo "== 1 process on the CPU"
mpirun "${args[@]}" -np 1 $P train $D/cpu $model 4 $steps 2>&1 | grep -v '^\['
fails=0
$P same $D/cpu $D/dev || fails=$((fails + 1))
cmp $D/cpu/log.vtlog $D/dev/log.vtlog && echo "the same log bytes" || fails=$((fails + 1))
$P audit $D/dev $model || fails=$((fails + 1))
if [ $fails -eq 0 ]; then echo "dp: 2 ranks $dev = 1 CPU process, leaf for leaf; audited on the CPU"; else echo "dp: $fails check(s) FAILED"; fi
[ $fails -eq 0 ]
