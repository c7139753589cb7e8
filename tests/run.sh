#!/usr/bin/env bash
# Runs every test program given on the command line and counts the compile
# checks (one file each in build/cc: "ok NAME", "fail NAME", "skip GROUP WHY"),
# then prints the total as the last line: "N passed, M failed", with
# ", K skipped" added when K groups could not run on this machine (each was
# named with its reason when it was skipped; they are listed again here).
# A program's own last line may carry ", K skipped" too (tests/mpi_run.sh
# without Open MPI). GPU-device runs that find no GPU are not counted: the
# CUDA tests run on the emulator either way and say so.
#
#   tests/run.sh [-j N] PROG... [--serial PROG...]
#
# Programs before --serial run N at a time (default: the number of cores;
# each writes only its own files, and their results do not depend on
# timing); programs after it run alone, one after another, because they
# have deadlines (BTARD's peers, processes killed mid-run) that a loaded
# core could miss. Outputs are printed in the order given.
set -u
jobs=$(nproc 2>/dev/null || echo 1)
case "${1:-}" in -j) jobs=$2; shift 2 ;; -j[0-9]*) jobs=${1#-j}; shift ;; esac
par=(); ser=(); into=par
for a in "$@"; do
  if [ "$a" = "--serial" ]; then into=ser; continue; fi
  if [ $into = par ]; then par+=("$a"); else ser+=("$a"); fi
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# run program $2 as number $1: its output to $tmp/$1.out, then its exit
# status and seconds to $tmp/$1.rc ($2 may carry arguments after the
# program, split at spaces: "tests/examples_golden.sh --part rest")
one() {
  local t0=$SECONDS rc cmd
  read -r -a cmd <<< "$2"
  "${cmd[@]}" > "$tmp/$1.out" 2>&1; rc=$?
  echo "$rc $((SECONDS - t0))" > "$tmp/$1.rc"
}

pass=0; fail=0; skip=0; skipped=(); times=()
# print and count program number $1 (named $2) once it has finished
count() {
  local out rc secs last
  out=$(cat "$tmp/$1.out"); read -r rc secs < "$tmp/$1.rc"
  echo "== $2"
  echo "$out"
  times+=("$secs s  $2")
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
    pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
    if [ -n "${BASH_REMATCH[4]}" ]; then
      skip=$((skip + BASH_REMATCH[4]))
      skipped+=("$2: $(printf '%s\n' "$out" | grep -m1 '^skipped: ' | sed 's/^skipped: //')")
    fi
    if [ "$rc" -ne 0 ] && [ "${BASH_REMATCH[2]}" = 0 ]; then fail=$((fail + 1)); echo "FAIL $2 exited $rc"; fi
  else
    fail=$((fail + 1)); echo "FAIL $2: crashed or printed no summary (exit $rc)"
  fi
}

# print, in order, the programs that have finished so far
i=0
flush() { while [ $i -lt ${#par[@]} ] && [ -f "$tmp/$i.rc" ]; do count $i "${par[$i]}"; i=$((i + 1)); done; }
t0=$SECONDS
n=0
for prog in "${par[@]+"${par[@]}"}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; flush; done
  one $n "$prog" &
  n=$((n + 1))
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n; flush; done
wait; flush
for prog in "${ser[@]+"${ser[@]}"}"; do one $i "$prog"; count $i "$prog"; i=$((i + 1)); done

for f in build/cc/*; do
  [ -f "$f" ] || continue
  read -r status name why < "$f"
  case "$status" in
    ok) pass=$((pass + 1)) ;;
    skip) skip=$((skip + 1)); skipped+=("$name: $why") ;;
    *) fail=$((fail + 1)); echo "FAIL compile check: $name" ;;
  esac
done
echo "time per program (wall clock; ${#par[@]} programs $jobs at a time, then ${#ser[@]} alone; $((SECONDS - t0)) s in all):"
for t in "${times[@]+"${times[@]}"}"; do echo "  $t"; done
for s in "${skipped[@]+"${skipped[@]}"}"; do echo "skipped: $s"; done
if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
