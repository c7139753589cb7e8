#!/usr/bin/env bash
# Runs every test program given on the command line and counts the compile
# checks (build/compile_checks.txt: "ok NAME", "fail NAME", "skip GROUP WHY"),
# then prints the total as the last line: "N passed, M failed", with
# ", K skipped" added when K groups could not run on this machine (each was
# named with its reason when it was skipped; they are listed again here).
# A program's own last line may carry ", K skipped" too (tests/mpi_run.sh
# without Open MPI). GPU-device runs that find no GPU are not counted: the
# CUDA tests run on the emulator either way and say so.
set -u
pass=0; fail=0; skip=0; skipped=(); times=()
for prog in "$@"; do
  echo "== $prog"
  t0=$SECONDS
  out=$("$prog" 2>&1); rc=$?
  echo "$out"
  times+=("$((SECONDS - t0)) s  $prog")
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
    pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
    if [ -n "${BASH_REMATCH[4]}" ]; then
      skip=$((skip + BASH_REMATCH[4]))
      skipped+=("$prog: $(printf '%s\n' "$out" | grep -m1 '^skipped: ' | sed 's/^skipped: //')")
    fi
    if [ $rc -ne 0 ] && [ "${BASH_REMATCH[2]}" = 0 ]; then fail=$((fail + 1)); echo "FAIL $prog exited $rc"; fi
  else
    fail=$((fail + 1)); echo "FAIL $prog: crashed or printed no summary (exit $rc)"
  fi
done
if [ -f build/compile_checks.txt ]; then
  while read -r status name why; do
    case "$status" in
      ok) pass=$((pass + 1)) ;;
      skip) skip=$((skip + 1)); skipped+=("$name: $why") ;;
      *) fail=$((fail + 1)); echo "FAIL compile check: $name" ;;
    esac
  done < build/compile_checks.txt
fi
echo "time per program (wall clock):"; for t in "${times[@]+"${times[@]}"}"; do echo "  $t"; done
for s in "${skipped[@]+"${skipped[@]}"}"; do echo "skipped: $s"; done
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
