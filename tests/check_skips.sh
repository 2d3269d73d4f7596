#!/usr/bin/env bash
# A test that skips is reported as skipped, not passed (docs/testing.md,
# "Skipped tests"): every CTest entry of the build has SKIP_RETURN_CODE 77,
# and example_digits without its data set exits 77.
#   check_skips.sh BUILD
set -euo pipefail
cd "$1"
json=$(ctest --show-only=json-v1)
n=$({ grep -o '"name" *: *"SKIP_RETURN_CODE"' <<<"$json" || true; } | wc -l)
total=$(grep -o '"properties" *:' <<<"$json" | wc -l)
[ "$n" -eq "$total" ] || { echo "FAIL $n of $total tests have SKIP_RETURN_CODE"; exit 1; }
bad=$(tr -d ' \n' <<<"$json" | grep -o '"name":"SKIP_RETURN_CODE","value":[^}]*' | grep -vc '"value":77' || true)
[ "$bad" -eq 0 ] || { echo "FAIL $bad tests have a SKIP_RETURN_CODE other than 77"; exit 1; }
echo "ok $total tests: exit 77 is a skip"
if [ -x ./example_digits ]; then
  rc=0; ./example_digits 1 /nonexistent/digits.csv.gz >/dev/null || rc=$?
  [ $rc -eq 77 ] || { echo "FAIL example_digits without its data exits $rc, not 77"; exit 1; }
  echo "ok example_digits without its data: skipped (77)"
fi
