#!/usr/bin/env bash
# Writes scripts/shardaccum_report/registry.json, the registry the report tools read for JSON that
# predates the context's "registry" key, from `shardaccum_bench --describe-registry` (the binary's
# own lists, so the committed copy cannot drift from them).
# It is the registry of the binaries that wrote JSON without that key, and committed reports of
# theirs (reports/h200x2-llama2-7b/) are read through it: regenerate it only to fix what those
# binaries described, never for a value or preset added since (a run's own registry carries those).
#
#   scripts/regenerate_registry.sh [BINARY]     default: build-host/bench/shardaccum_bench
#
# The output is checked to be a registry the report tools parse before it replaces the file (a temp
# file in the same folder, then rename), so a failed run leaves the committed copy as it was.
set -euo pipefail
SA_PROG=regenerate_registry.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bench="${1:-$SA_ROOT/build-host/bench/shardaccum_bench}"
target="${REGISTRY_JSON:-$SA_ROOT/scripts/shardaccum_report/registry.json}"  # REGISTRY_JSON: for tests
python="${PYTHON:-$SA_VENV/bin/python}"
[[ -x "$python" ]] || python=python3

[[ -x "$bench" ]] || sa_die "$bench is not an executable; build it (cmake --preset host && cmake --build --preset host) or give the binary as \$1"
if ! "$bench" --help 2>/dev/null | grep -q -- '--describe-registry'; then
  sa_die "$bench has no --describe-registry flag (built from a tree before the registry?); rebuild it"
fi

tmp="$(mktemp "$target.tmp.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
"$bench" --describe-registry >"$tmp" || sa_die "$bench --describe-registry exited with status $?"
PYTHONPATH="$SA_ROOT/scripts" "$python" - "$tmp" <<'PY' || sa_die "$bench --describe-registry wrote no valid registry (see above); $target is unchanged"
import json, sys
from shardaccum_report.registry import Registry
with open(sys.argv[1], encoding="utf-8") as f:
    Registry.from_json(json.load(f))
PY
chmod 644 "$tmp"
mv -f "$tmp" "$target"
trap - EXIT
sa_say "wrote $target"
