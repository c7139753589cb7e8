#!/usr/bin/env bash
# Runs every test program given on the command line and the compile checks,
# then prints the total as the last line: "N passed, M failed".
set -u
pass=0; fail=0
for prog in "$@"; do
  echo "== $prog"
  out=$("$prog" 2>&1); rc=$?
  echo "$out"
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
    if [ $rc -ne 0 ] && [ "${BASH_REMATCH[2]}" = 0 ]; then fail=$((fail + 1)); echo "FAIL $prog exited $rc"; fi
  else
    fail=$((fail + 1)); echo "FAIL $prog: crashed or printed no summary (exit $rc)"
  fi
done
if [ -f build/compile_checks.txt ]; then
  while read -r status name; do
    if [ "$status" = ok ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL compile check: $name"; fi
  done < build/compile_checks.txt
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
