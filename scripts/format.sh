#!/usr/bin/env bash
# Formats every tracked C++/CUDA file with clang-format-14 and the committed .clang-format. See --help.
set -euo pipefail

SA_PROG=format.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<'EOF'
usage: scripts/format.sh [--check] [FILE...]

Runs clang-format-14 -i (style: the committed .clang-format) on every tracked .h/.hpp/.cpp/.cu/.cuh
file (git ls-files), or on the FILEs given.

options:
  --check      change nothing; list each file clang-format would change and exit 1 if there is one
               (what CI runs, .ci/run stage "format")
  -h, --help   this text

environment: CLANG_FORMAT names another clang-format binary (default clang-format-14; another
version may format differently from CI's).

exit status: 0 formatted (or, with --check, nothing to change); 1 with --check, files need
formatting (listed; fix: scripts/format.sh); 2 bad arguments or clang-format missing.
EOF
}

check=0
files=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --check) check=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) SA_DIE_CODE=2 sa_die "unknown option '$1' (see --help)" ;;
    *) [[ -f "$1" ]] || SA_DIE_CODE=2 sa_die "'$1': no such file"
       [[ "$1" =~ \.(h|hpp|cpp|cu|cuh)$ ]] || SA_DIE_CODE=2 sa_die "'$1': not a C++/CUDA file (.h .hpp .cpp .cu .cuh)"
       files+=("$(realpath "$1")"); shift ;;  # from the caller's directory: the script cds to the root
  esac
done

cf=${CLANG_FORMAT:-clang-format-14}
command -v "$cf" >/dev/null 2>&1 ||
  SA_DIE_CODE=2 sa_die "$cf not found (scripts/install_deps.sh --for lint installs clang-format-14)"

cd "$SA_ROOT"
if (( ${#files[@]} == 0 )); then
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- '*.h' '*.hpp' '*.cpp' '*.cu' '*.cuh')
  else  # a source tarball: the layer folders
    mapfile -t files < <(find common profiling strategies bench capi tests -type f \
                           \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)
  fi
fi
(( ${#files[@]} )) || sa_die "no C++/CUDA file found"

if (( ! check )); then
  "$cf" -i --style="file:$SA_ROOT/.clang-format" "${files[@]}"
  sa_say "formatted ${#files[@]} files"
  exit 0
fi

# --dry-run --Werror fails on the first replacement; one call a file names exactly the files at fault.
bad=()
for f in "${files[@]}"; do
  "$cf" --dry-run --Werror --style="file:$SA_ROOT/.clang-format" "$f" >/dev/null 2>&1 || bad+=("$f")
done
if (( ${#bad[@]} )); then
  printf '%s\n' "${bad[@]}"
  sa_say "${#bad[@]} of ${#files[@]} files need formatting (listed above); run scripts/format.sh" >&2
  exit 1
fi
sa_say "${#files[@]} files formatted as .clang-format says"
