#!/usr/bin/env bash
# Runs clang-tidy-14 (checks: the committed .clang-tidy) over the host build's C++ sources. See --help.
set -euo pipefail

SA_PROG=tidy.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<'EOF'
usage: scripts/tidy.sh [--fix] [-j N] [REGEX...]

Runs run-clang-tidy-14 with the committed .clang-tidy over every translation unit of the host
preset's compile_commands.json (build-host/, configured first when it is missing: cmake --preset
host), and over the project headers they include. The host preset has no CUDA: .cu files (clang 14
cannot parse CUDA 13) and the sources built only with CUDA (strategies/backend/cuda_*,
profiling/cupti_*) are not checked. Every finding is an error (WarningsAsErrors: '*').

  REGEX...     check only the translation units whose path matches one (run-clang-tidy's files)

options:
  --fix        apply clang-tidy's fixes where a check has one (then review the diff and run
               scripts/format.sh)
  -j N         parallel clang-tidy processes (default: the number of cores)
  -h, --help   this text

exit status: 0 no finding; 1 findings (printed as FILE:LINE:COL: error: ... [check]) or clang-tidy
failed; 2 bad arguments or a tool missing (scripts/install_deps.sh --for lint installs them).
EOF
}

fix=()
jobs=$(nproc 2>/dev/null || echo 2)
files=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --fix) fix=(-fix); shift ;;
    -j) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || SA_DIE_CODE=2 sa_die "-j takes a positive integer"
        jobs=$2; shift 2 ;;
    -j[1-9]*) [[ "${1#-j}" =~ ^[0-9]+$ ]] || SA_DIE_CODE=2 sa_die "-j takes a positive integer"
              jobs=${1#-j}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) SA_DIE_CODE=2 sa_die "unknown option '$1' (see --help)" ;;
    *) files+=("$1"); shift ;;
  esac
done

for tool in clang-tidy-14 run-clang-tidy-14; do
  command -v "$tool" >/dev/null 2>&1 ||
    SA_DIE_CODE=2 sa_die "$tool not found (scripts/install_deps.sh --for lint installs clang-tidy-14)"
done

cd "$SA_ROOT"
build=build-host
if [[ ! -f "$build/compile_commands.json" ]]; then
  sa_say "configuring the host preset for its compile_commands.json (cmake --preset host)"
  cmake --preset host --log-level=WARNING >/dev/null
fi

if (( ${#files[@]} )); then  # a REGEX that matches no unit would pass having checked nothing
  matched=$(python3 - "$build/compile_commands.json" "${files[@]}" <<'PY'
import json, re, sys
try:
    pats = [re.compile(p) for p in sys.argv[2:]]
except re.error as e:
    print(f"bad REGEX: {e}", file=sys.stderr)
    sys.exit(2)
units = {e["file"] for e in json.load(open(sys.argv[1]))}
print(sum(1 for u in units if any(p.search(u) for p in pats)))
PY
) || SA_DIE_CODE=2 sa_die "a REGEX is not a valid regular expression (see above)"
  (( matched > 0 )) || SA_DIE_CODE=2 sa_die "no translation unit of $build/compile_commands.json matches ${files[*]}"
  sa_say "checking $matched translation unit(s)"
fi

t0=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
run-clang-tidy-14 -p "$build" -clang-tidy-binary "$(command -v clang-tidy-14)" -j "$jobs" -quiet \
  "${fix[@]}" ${files[@]+"${files[@]}"} >"$log" 2>&1 || rc=$?   # no REGEX: every unit
# A header's finding is printed once per translation unit including it: print each once.
# run-clang-tidy colours its output even into a file: strip the escapes first.
sed -i 's/\x1b\[[0-9;]*m//g' "$log"
findings=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (error|warning): ' "$log" | sed "s|^$SA_ROOT/||" | sort -u || true)
if (( rc != 0 )); then
  if [[ -n "$findings" ]]; then
    printf '%s\n' "$findings"
    n=$(printf '%s\n' "$findings" | wc -l)
    sa_say "$n finding(s) (listed above) in $(sa_elapsed "$t0"); per check:" >&2
    printf '%s\n' "$findings" | sed -n 's/.*\[\([^]]*\)\]$/\1/p' | sed 's/,-warnings-as-errors//' |
      sort | uniq -c | sort -rn >&2
  else
    cat "$log"   # clang-tidy itself failed (a compile error?): show all it said
    sa_say "run-clang-tidy-14 failed (exit $rc, see above)" >&2
  fi
  exit 1
fi
sa_say "no finding ($(sa_elapsed "$t0"), checks from .clang-tidy)"
