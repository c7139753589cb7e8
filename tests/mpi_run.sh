#!/usr/bin/env bash
# Builds tests/test_btard_mpi.c (vtrain.h, then vtrain_btard.h with its
# VTRAIN_MPI transport) with mpicc and runs it as real processes,
# `mpirun -np 4` (NP=... for more). The last line is "N passed, M failed".
# Needs Open MPI (Debian: apt-get install -y libopenmpi-dev openmpi-bin).
set -u
cd "$(dirname "$0")/.."
NP=${NP:-4}
fail() { echo "mpi_run: $1"; echo "0 passed, 1 failed"; exit 1; }
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "skipped: mpi: no mpicc or mpirun: BTARD peers as MPI ranks are not tested (Open MPI: apt-get install libopenmpi-dev openmpi-bin)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
if ! printf '#include <sodium.h>\nint main(void){return sodium_init() < 0;}' | ${CC:-cc} -x c - -lsodium -o /dev/null 2>/dev/null; then
  echo "skipped: mpi: no libsodium: BTARD signs every message (apt-get install libsodium-dev)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
# the Makefile's rule (mpicc -DVTRAIN_MPI -DVTRAIN_SODIUM, C99, -Wall -Wextra
# -Werror, -ffp-contract=off); make test has built it already
make -s build/test_btard_mpi > /dev/null || fail "build failed"
# vtrain_btard.h's MPI transport also compiles warning-free as C++ (counted as one more test)
cxx_pass=0; cxx_fail=0
if command -v mpicxx >/dev/null; then
  if mpicxx -x c++ -DVTRAIN_MPI -DVTRAIN_SODIUM ${ARCH:--march=native} -ffp-contract=off -Wall -Wextra -Werror -fsyntax-only \
       tests/test_btard_mpi.c; then cxx_pass=1; echo "mpicxx -x c++ (VTRAIN_MPI as C++)      ok"
  else cxx_fail=1; echo "FAIL mpicxx -x c++: VTRAIN_MPI does not compile as C++"; fi
fi
args=()
if mpirun --version 2>&1 | grep -q "Open MPI"; then
  # CI and containers run as root; 4 ranks on a 2-core machine need oversubscription
  [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
  args+=(--oversubscribe)
  # containers often forbid the cross-memory attach Open MPI uses between ranks
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
fi
out=$(timeout 600 mpirun "${args[@]}" -np "$NP" build/test_btard_mpi 2>&1); rc=$?
echo "$out"
# rank 0's summary; the MPI runtime may print notices after it
last=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  pass=$((BASH_REMATCH[1] + cxx_pass)); failed=$((BASH_REMATCH[2] + cxx_fail))
  if [ $rc -ne 0 ] && [ "$failed" = 0 ]; then echo "mpirun exited $rc"; failed=1; fi
  echo "$pass passed, $failed failed"
  [ "$failed" = 0 ]
else
  fail "mpirun exited $rc without a summary"
fi
