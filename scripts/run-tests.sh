#!/usr/bin/env bash
# run-tests.sh: runs each unit test binary, prints its Check summary, and
# ends with one line "N passed, N failed". Exit status is non-zero if any
# binary failed or crashed.
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
  out=$(CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120} "$t" 2>&1); rc=$?
  summary=$(printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks:' | tail -n 1)
  checks=$(printf '%s' "$summary" | sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p')
  if [ -n "$checks" ]; then
    read -r n f1 e1 <<<"$checks"
    f=$(( f1 + e1 ))
    pass=$(( pass + n - f )); fail=$(( fail + f ))
  fi
  if [ $rc -ne 0 ]; then
    [ -z "$checks" ] && fail=$(( fail + 1 ))
    failed+=("$t")
    printf '%s\n' "$out" | grep -v -E '^[0-9]+%: Checks:' | tail -n 40
    # The test's own lines last (not the daemons' logs nor stacks that it
    # dumps): what it saw before it failed, where a short excerpt shows it.
    echo "---- $t: its own last lines"
    printf '%s\n' "$out" | grep -v -E '^[0-9]+%: Checks:|^  \||^#|^Thread|^----' | tail -n 25
    echo "FAIL $t (exit $rc) ${summary}"
  else
    echo "ok   $t  ${summary}"
  fi
done
echo
echo "$pass passed, $fail failed"
[ ${#failed[@]} -eq 0 ]
