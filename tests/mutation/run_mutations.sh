#!/usr/bin/env bash
# Mutation check of the oracle's verdict rules (issue 11 item 16; not run in CI: a few builds).
# Applies each mutation to strategies/step_driver.cpp in place, builds the host tests
# (incremental: one file and the links), runs them, and prints the tests that failed. Every
# mutation must fail at least one test. The original file is restored on exit, on error and on
# Ctrl-C (a copy is kept in a temporary folder until then).
# Usage: tests/mutation/run_mutations.sh [BUILD_DIR]   (default build-host, preset host)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-host}
target=strategies/step_driver.cpp
[[ -f $build/CMakeCache.txt ]] || { echo "run_mutations: no build in $build (cmake --preset host first)" >&2; exit 2; }
tmp=$(mktemp -d)
cp -p "$target" "$tmp/original"
restore() { cp -p "$tmp/original" "$target"; touch "$target"; rm -rf "$tmp"; }
trap restore EXIT
trap 'exit 130' INT TERM

# name | sed expression (each must change the file)
mutations=(
  "oracle_resolves -> true|/^bool oracle_resolves(/a\\  return true;  // MUTATION"
  "sums_exact -> true|/^bool sums_exact(/a\\  return true;  // MUTATION"
  "bound x 10|s/return 2\\.0 \\* roundings;/return 20.0 * roundings;  \\/\\/ MUTATION/"
  "dyadic_range -> 4|/^uint8_t dyadic_range(/a\\  return 4;  // MUTATION"
  "padding ignored by the verdict|s/r\\.bad_padding == 0 \\&\\& /\\/* MUTATION *\\/ /"
)

status=0
for m in "${mutations[@]}"; do
  name=${m%%|*}
  expr=${m#*|}
  cp -p "$tmp/original" "$target"
  sed -i "$expr" "$target"
  if cmp -s "$tmp/original" "$target"; then
    echo "MUTATION '$name': the sed expression changed nothing (the code moved?)"; status=1; continue
  fi
  echo "=== mutation: $name"
  { diff -u "$tmp/original" "$target" || true; } | sed -n '/^[-+][^-+]/p' | sed 's/^/    /'
  if ! cmake --build "$build" --target shardaccum_tests -j2 >"$tmp/build.log" 2>&1; then
    echo "    build failed (counts as killed):"; tail -5 "$tmp/build.log" | sed 's/^/    /'; continue
  fi
  "$build/tests/shardaccum_tests" --gtest_brief=1 >"$tmp/test.log" 2>&1 || true
  failed=$(sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_/.]*\).*/\1/p' "$tmp/test.log" | sort -u)
  count=$(printf '%s' "$failed" | grep -c . || true)
  if [[ $count -ge 1 ]]; then
    echo "    killed: $count test(s) failed:"; printf '%s\n' "$failed" | sed 's/^/      /'
  else
    echo "    SURVIVED: no test failed"; status=1
  fi
done
restore
trap - EXIT
echo "restored $target; rebuilding the unmutated tests"
cmake --build "$build" --target shardaccum_tests -j2 >/dev/null
exit $status
