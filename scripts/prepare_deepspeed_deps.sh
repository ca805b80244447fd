#!/usr/bin/env bash
# Prepares .deps/deepspeed/ (git-ignored) for the GPU machines, which have torch but no DeepSpeed and
# no network: DeepSpeed 0.19.8 built here from its sdist as a pure-Python wheel (DS_BUILD_OPS=0: no
# CUDA ops compiled; PyPI has no 0.19.8 wheel) and the wheels of its missing dependencies for the GPU
# machines' Python, all unpacked into .deps/deepspeed/site for PYTHONPATH (their python3 may lack pip,
# and Ubuntu 24.04 refuses plain installs). Run it here, carry .deps/deepspeed to the device;
# scripts/run_real.sh puts the site folder on PYTHONPATH when that python3 cannot import deepspeed.
# torch and numpy are the machine's own. Needs pip and PyPI (about 6 MB).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py_version=${SHARDACCUM_DEVICE_PYTHON_VERSION:-3.12}   # the GPU machines' python3 (Ubuntu 24.04)
version=${SHARDACCUM_DEEPSPEED_VERSION:-0.19.8}
# Requires-Dist of deepspeed 0.19.8 less torch and numpy (there already); packaging for safety.
deps=(hjson py-cpuinfo msgpack einops pydantic psutil tqdm ninja packaging)
dir="$root/.deps/deepspeed"
rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/wheels" "$dir.tmp/site"
t=$SECONDS
DS_BUILD_OPS=0 python3 -m pip wheel -q --no-deps "deepspeed==$version" -w "$dir.tmp/wheels"
python3 -m pip download -q --only-binary=:all: --python-version "$py_version" \
  --platform manylinux2014_x86_64 -d "$dir.tmp/wheels" "${deps[@]}"
for w in "$dir.tmp"/wheels/*.whl; do python3 -m zipfile -e "$w" "$dir.tmp/site"; done
# Only site/ travels (a carry holds 64 MiB in all): the wheels' names stay as the manifest.
(cd "$dir.tmp/wheels" && ls ./*.whl | sed 's|^\./||') >"$dir.tmp/MANIFEST" && rm -rf "$dir.tmp/wheels"
rm -rf "$dir" && mv "$dir.tmp" "$dir"
echo "prepare_deepspeed_deps.sh: deepspeed $version and ${#deps[@]} dependencies for Python $py_version in" \
  "${dir#"$root/"}/site ($(du -sh "$dir/site" | cut -f1), $((SECONDS - t)) s); carry .deps/deepspeed"
