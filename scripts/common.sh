# shellcheck shell=bash
# Shared helpers of scripts/run.sh, scripts/test.sh and scripts/install_deps.sh. Source it; it sets
# SA_ROOT (the repository root), exports the NCCL settings every run needs, and defines the helpers
# below. It changes no directory and installs nothing by itself.

SA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SA_PRESET=default                      # the CMake preset sa_build configures and builds
SA_BUILD_DIR="$SA_ROOT/build"          # binaryDir of the CMake preset `default`
# shellcheck disable=SC2034  # used by run.sh
SA_BENCH="$SA_BUILD_DIR/bench/shardaccum_bench"
SA_VENV="$SA_ROOT/.venv"
SA_REQUIREMENTS="$SA_ROOT/scripts/requirements.txt"
SA_VENV_STAMP="$SA_VENV/.shardaccum-requirements.sha256"

# Mandatory on the GPU machines, for every run (NVLink multicast / NVLS must stay off).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

sa_say() { printf '%s: %s\n' "${SA_PROG:-shardaccum}" "$*"; }
sa_warn() { printf '%s: warning: %s\n' "${SA_PROG:-shardaccum}" "$*" >&2; }
sa_die() { printf '%s: error: %s\n' "${SA_PROG:-shardaccum}" "$*" >&2; exit "${SA_DIE_CODE:-1}"; }

# A loud multi-line notice on stderr: sa_banner LINE...
sa_banner() {
  local bar='!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
  {
    printf '%s\n' "$bar"
    local line
    for line in "$@"; do printf '!!! %s\n' "$line"; done
    printf '%s\n' "$bar"
  } >&2
}

# Seconds since $1 (a $SECONDS value), as "1m 05s".
sa_elapsed() { local s=$((SECONDS - $1)); printf '%dm %02ds' $((s / 60)) $((s % 60)); }

# Number of GPUs nvidia-smi lists (0 when there is no nvidia-smi or it fails).
sa_gpu_count() {
  command -v nvidia-smi >/dev/null 2>&1 || { echo 0; return; }
  local n
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  echo "${n:-0}"
}

# True when this machine shows an NVIDIA GPU: nvidia-smi lists one, or the device node $SA_NVIDIA_DEV
# (default /dev/nvidia0; the tests point it elsewhere) exists. It decides whether CUDA is built.
sa_gpu_visible() {
  (( $(sa_gpu_count) > 0 )) || [[ -e "${SA_NVIDIA_DEV:-/dev/nvidia0}" ]]
}

# --- Python -----------------------------------------------------------------------------------------
# The report tool needs matplotlib, numpy and scipy; the Python tests also need pytest.
sa_py_modules() {
  if [[ "${1:-run}" == test ]]; then echo "matplotlib numpy scipy pytest"; else echo "matplotlib numpy scipy"; fi
}

# sa_py_has PYTHON MODULE... : true when PYTHON runs and imports every module.
sa_py_has() {
  local py=$1; shift
  local mods; mods=$(IFS=,; echo "$*")
  "$py" -c "import ${mods}" >/dev/null 2>&1
}

sa_requirements_hash() { sha256sum "$SA_REQUIREMENTS" | cut -d' ' -f1; }

# True when .venv was made from the current scripts/requirements.txt and imports what PURPOSE needs.
sa_venv_ready() {
  local purpose=${1:-test}
  [[ -x "$SA_VENV/bin/python" && -f "$SA_VENV_STAMP" ]] || return 1
  [[ "$(cat "$SA_VENV_STAMP")" == "$(sa_requirements_hash)" ]] || return 1
  # shellcheck disable=SC2046
  sa_py_has "$SA_VENV/bin/python" $(sa_py_modules "$purpose")
}

# sa_python [run|test] [--strict]
# Prints the Python that runs the tools for PURPOSE (run: the report tool; test: also pytest):
# $SHARDACCUM_PYTHON when set, else .venv when it is ready, else a system python3 that already has the
# packages (the GPU machines, which have no network). Returns 1 when there is none: run
# scripts/install_deps.sh.
sa_python() {
  local purpose=${1:-test}
  # SHARDACCUM_PYTHON names it outright (tests, a machine with its own environment); not with --strict.
  if [[ -n "${SHARDACCUM_PYTHON:-}" && "${2:-}" != --strict ]]; then
    # shellcheck disable=SC2046
    sa_py_has "$SHARDACCUM_PYTHON" $(sa_py_modules "$purpose") && { echo "$SHARDACCUM_PYTHON"; return 0; }
    return 1
  fi
  if sa_venv_ready "$purpose"; then echo "$SA_VENV/bin/python"; return 0; fi
  local sys_py
  sys_py=$(command -v python3 2>/dev/null) || return 1
  # shellcheck disable=SC2046
  if sa_py_has "$sys_py" $(sa_py_modules "$purpose"); then echo "$sys_py"; return 0; fi
  # A venv that could not be refreshed (no network) but still has what is needed; not with --strict,
  # which install_deps.sh uses to decide whether .venv needs (re)installing.
  # shellcheck disable=SC2046
  if [[ "${2:-}" != --strict && -x "$SA_VENV/bin/python" ]] \
       && sa_py_has "$SA_VENV/bin/python" $(sa_py_modules "$purpose"); then
    echo "$SA_VENV/bin/python"; return 0
  fi
  return 1
}

# --- Build ------------------------------------------------------------------------------------------
# sa_use_preset PRESET: build with CMakePresets.json's PRESET (default: build/, host: build-host/, no
# CUDA; debug: build-debug/) from now on; sets SA_PRESET, SA_BUILD_DIR and SA_BENCH. Exit 2 otherwise.
sa_use_preset() {
  case "$1" in
    default) SA_BUILD_DIR="$SA_ROOT/build" ;;
    host) SA_BUILD_DIR="$SA_ROOT/build-host" ;;
    debug) SA_BUILD_DIR="$SA_ROOT/build-debug" ;;
    *) SA_DIE_CODE=2 sa_die "SHARDACCUM_PRESET='$1': expected default, host or debug (CMakePresets.json)" ;;
  esac
  SA_PRESET=$1
  # shellcheck disable=SC2034  # used by run.sh
  SA_BENCH="$SA_BUILD_DIR/bench/shardaccum_bench"
}

# sa_pick_preset CUDA_ASKED: picks the preset run.sh and test.sh build (then sa_use_preset) and says
# why: $SHARDACCUM_PRESET when set; else `default` (build/, with the nvcc pass) when CUDA_ASKED is 1
# (--cuda) or a GPU is visible; else `host` (build-host/): with no GPU to run them, compiling the CUDA
# sources only costs minutes. --cuda with SHARDACCUM_PRESET other than default: exit 2.
sa_pick_preset() {
  local asked=${1:-0}
  if [[ -n "${SHARDACCUM_PRESET:-}" ]]; then
    [[ "$asked" == 1 && "$SHARDACCUM_PRESET" != default ]] \
      && SA_DIE_CODE=2 sa_die "--cuda needs the preset default, not SHARDACCUM_PRESET=$SHARDACCUM_PRESET"
    sa_use_preset "$SHARDACCUM_PRESET"
    sa_say "preset $SA_PRESET (SHARDACCUM_PRESET)"
  elif [[ "$asked" == 1 ]]; then
    sa_use_preset default
    sa_say "preset default (--cuda): build/, CUDA backend when nvcc is found"
  elif sa_gpu_visible; then
    sa_use_preset default
    sa_say "preset default (a GPU is visible): build/, CUDA backend when nvcc is found"
  else
    sa_use_preset host
    sa_say "preset host (no GPU visible): build-host/, no CUDA compile; --cuda builds it (build/)"
  fi
}

# sa_build [TARGET...]: configures the preset $SA_PRESET (`default`: build/, CUDA when nvcc is found;
# see sa_use_preset) when it has not been configured yet, then builds TARGETs (everything when none).
# Set SHARDACCUM_JOBS to limit parallel jobs (default: ninja's).
sa_build() {
  local t0=$SECONDS
  local dir=${SA_BUILD_DIR#"$SA_ROOT/"}
  # Two runs building one folder at once (two `run.sh --part` started together on a fresh clone)
  # broke each other's objects ("ar: ... No such file"): the second waits for the first. The lock
  # is released when this function returns (the fd is closed) or the script exits.
  local lock_fd=""
  if command -v flock >/dev/null 2>&1 && mkdir -p "$SA_BUILD_DIR"; then
    exec {lock_fd}>"$SA_BUILD_DIR/.shardaccum-build.lock"
    if ! flock -n "$lock_fd"; then
      sa_say "another build of $dir/ is running: waiting for it to finish"
      flock "$lock_fd"
    fi
  fi
  if [[ ! -f "$SA_BUILD_DIR/build.ninja" ]]; then
    local cuda=""
    [[ "$SA_PRESET" == default ]] && cuda=", CUDA backend when nvcc is found"
    sa_say "configuring (cmake --preset $SA_PRESET: $dir/$cuda)"
    if ! (cd "$SA_ROOT" && cmake --preset "$SA_PRESET"); then
      sa_die "cmake --preset $SA_PRESET failed (see above). If $dir/ was made by another generator or" \
             "source tree, remove it (rm -rf $dir) and try again."
    fi
  fi
  local args=(--build --preset "$SA_PRESET")
  [[ -n "${SHARDACCUM_JOBS:-}" ]] && args+=(-j "$SHARDACCUM_JOBS")
  local t
  for t in "$@"; do args+=(--target "$t"); done
  sa_say "building${*:+ $*} (cmake --build --preset $SA_PRESET${SHARDACCUM_JOBS:+ -j $SHARDACCUM_JOBS})"
  (cd "$SA_ROOT" && cmake "${args[@]}") || sa_die "the build failed (see the compiler output above)"
  sa_say "build done in $(sa_elapsed "$t0")"
  [[ -n "$lock_fd" ]] && exec {lock_fd}>&-
  return 0
}
