#!/usr/bin/env bash
# Every test of shardaccum: install what is missing, build, ctest (host; gpu on a GPU), pytest. See --help.
set -euo pipefail

SA_PROG=test.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<'EOF'
usage: scripts/test.sh [--no-install] [--cuda]

Runs every test of shardaccum, the second command to run on a fresh machine:
  1. installs what is missing (scripts/install_deps.sh; nothing when all is there),
  2. configures and builds everything: with a GPU visible (nvidia-smi lists one, or /dev/nvidia0)
     CMake preset `default`, folder build/, CUDA when nvcc is found; with no GPU visible preset
     `host`, folder build-host/, no nvcc pass (--cuda: `default`),
  3. the C++ tests: ctest --test-dir DIR --output-on-failure -L host (GoogleTest, host backend),
     and -L gpu when nvidia-smi lists a GPU (otherwise they are skipped, and this says so),
  4. the Python tests of the report and compare tools: python -m pytest tests/py -q, on up to 4
     workers with pytest-xdist when that Python has it (the tests
     that start shardaccum_bench use the build of step 2).
Every stage runs even when an earlier test stage failed; a summary closes the output.

options:
  --no-install   do not run scripts/install_deps.sh (also: SHARDACCUM_NO_INSTALL=1)
  --cuda         build the preset `default` (build/, CUDA when nvcc is found) with no GPU visible
                 (also: SHARDACCUM_PRESET=default)
  -h, --help     this text

environment: SHARDACCUM_JOBS=N limits parallel build and ctest jobs; SHARDACCUM_PRESET=default|host|debug
builds that preset whether or not a GPU is visible. NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are always exported.

exit status: 0 every stage passed; 1 a stage failed or could not run (pytest collecting no test
counts as a failure).
EOF
}

t_start=$SECONDS
install=1
cuda=0
[[ "${SHARDACCUM_NO_INSTALL:-0}" == 1 ]] && install=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-install) install=0; shift ;;
    --cuda) cuda=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) SA_DIE_CODE=2 sa_die "unknown argument '$1' (see --help)" ;;
  esac
done

results=()   # "stage: outcome" lines for the summary
failed=0
record() { results+=("$1"); }
fail() { results+=("$1"); failed=1; }

# 1. Dependencies: the build's and the report tool's are required; pytest may be impossible to get
# on a machine with no network (the GPU machines): then the C++ tests still run and pytest fails.
if (( install )); then
  "$SA_ROOT/scripts/install_deps.sh" --for run || sa_die "could not install what the build and the report tool need (see above)"
  # install_deps.sh installs only what is missing (half a second when nothing is): run it even where
  # pytest is there (run.sh's .venv has it), or Google Benchmark's compare.py, which one test runs on
  # the suite's JSON, stayed missing and that test skipped after every run.sh.
  if ! "$SA_ROOT/scripts/install_deps.sh" --for test; then
    if sa_python test >/dev/null; then
      sa_warn "Google Benchmark's compare.py (libbenchmark-tools) could not be installed: tests/py/test_gbench_compare.py is skipped"
    else
      sa_warn "pytest could not be installed: the Python tests will not run"
    fi
  fi
fi

# 2. Build everything (the library, shardaccum_bench, the test binaries).
sa_pick_preset "$cuda"
build_dir=${SA_BUILD_DIR#"$SA_ROOT/"}
# shellcheck disable=SC2119  # no target: build everything
sa_build
cd "$SA_ROOT"
jobs=${SHARDACCUM_JOBS:-$(nproc 2>/dev/null || echo 2)}

# 3. C++ tests.
t=$SECONDS
sa_say "C++ tests, label host: ctest --test-dir $build_dir --output-on-failure -L host -j $jobs"
if ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -L host -j "$jobs"; then
  record "C++ tests (host):   passed ($(sa_elapsed "$t"))"
else
  fail "C++ tests (host):   FAILED (see the ctest output above)"
fi

gpus=$(sa_gpu_count)
if (( gpus > 0 )); then
  t=$SECONDS
  sa_say "C++ tests, label gpu ($gpus GPU(s) visible): ctest --test-dir $build_dir --output-on-failure -L gpu"
  # One at a time: every gpu test uses the GPUs.
  if ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -L gpu; then
    record "C++ tests (gpu):    passed ($(sa_elapsed "$t"))"
  else
    fail "C++ tests (gpu):    FAILED (see above; 'No tests were found' means this build has no CUDA backend: nvcc missing at configure time)"
  fi
else
  sa_say "no GPU: gpu-labelled tests skipped"
  record "C++ tests (gpu):    skipped (no GPU: nvidia-smi lists none)"
fi

# 4. Python tests.
t=$SECONDS
if PY=$(sa_python test); then
  # pytest-xdist (scripts/requirements.txt) runs the tests on up to 4 workers: on 2 cores that halves
  # their time; a Python without it (the GPU machines' own, no network) runs them in one process.
  workers=()
  if "$PY" -c 'import xdist' 2>/dev/null; then
    n=$(nproc 2>/dev/null || echo 2); (( n > 4 )) && n=4
    workers=(-n "$n")
  fi
  sa_say "Python tests: $PY -m pytest tests/py -q ${workers[*]}"
  set +e
  # SHARDACCUM_PRESET: the tests that start shardaccum_bench take this build (tests/py/bench_build.py).
  MPLBACKEND=Agg SHARDACCUM_PRESET=$SA_PRESET "$PY" -m pytest tests/py -q "${workers[@]}"
  rc=$?
  set -e
  case $rc in
    0) record "Python tests:       passed ($(sa_elapsed "$t"))" ;;
    5) fail "Python tests:       FAILED: pytest collected no tests in tests/py (exit 5)" ;;
    *) fail "Python tests:       FAILED (pytest exit $rc, see above)" ;;
  esac
else
  fail "Python tests:       NOT RUN: no Python with $(sa_py_modules test) (run scripts/install_deps.sh; on a machine with no network, install pytest for python3)"
fi

echo
sa_say "summary ($(sa_elapsed "$t_start") in all)"
for r in "${results[@]}"; do echo "  $r"; done
if (( failed )); then
  sa_say "FAILED"
  exit 1
fi
sa_say "all tests passed"
