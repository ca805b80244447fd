#!/usr/bin/env bash
# Prepares .deps/ (git-ignored) with what the GPU machines lack and cannot download (they have no
# network): pytest, for the real systems' GPU tests (tests/py_gpu), unpacked into .deps/pytest/site for
# PYTHONPATH. Run it here, then carry .deps/pytest to the device; scripts/gpu_reference_run.sh uses it
# when the machine's python3 cannot import pytest. Needs pip and PyPI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py_version=${SHARDACCUM_DEVICE_PYTHON_VERSION:-3.12}   # the GPU machines' python3 (Ubuntu 24.04)
dir="$root/.deps/pytest"
rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/wheels" "$dir.tmp/site"
python3 -m pip download -q pytest --only-binary=:all: --python-version "$py_version" \
  --platform manylinux2014_x86_64 -d "$dir.tmp/wheels"
for w in "$dir.tmp"/wheels/*.whl; do python3 -m zipfile -e "$w" "$dir.tmp/site"; done
rm -rf "$dir" && mv "$dir.tmp" "$dir"
echo "prepare_device_deps.sh: pytest for Python $py_version in ${dir#"$root/"}/site ($(du -sh "$dir/site" | cut -f1)); carry .deps/pytest"
