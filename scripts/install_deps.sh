#!/usr/bin/env bash
# Installs what shardaccum needs and is missing; silent when nothing is missing. See --help.
set -euo pipefail

SA_PROG=install_deps.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<'EOF'
usage: scripts/install_deps.sh [--for run|test|sanitize|lint] [--check]

Installs what is missing, and only that; prints nothing when nothing is missing.

  C++ build (Debian/Ubuntu packages, through apt-get; apt-get update runs first, only when something
  is missing): cmake (>= 3.25) ninja-build g++ libbenchmark-dev libgtest-dev libcli11-dev
  nlohmann-json3-dev; for --for test also libbenchmark-tools (Google Benchmark's compare.py, which
  tests/py/test_gbench_compare.py runs on the suite's JSON). A tool or library already present (on PATH, or its headers and CMake package
  under /usr, /usr/local, $CMAKE_PREFIX_PATH or $CONDA_PREFIX) is taken as it is.

  Python (the report tool and the Python tests): a virtual environment .venv made from
  scripts/requirements.txt (python3 -m venv; pip install -r), refreshed when that file changes.
  When .venv is not ready but the system python3 already imports matplotlib, numpy and scipy
  (and pytest, for --for test), that python3 is used and nothing is installed: the GPU machines,
  which have no network, work that way.

options:
  --for run    only what scripts/run.sh needs (the report tool, not pytest)
  --for test   everything, pytest included (default)
  --for sanitize  the C++ build and what CI's sanitizer stages need (.ci/run): clang, its sanitizer
               runtimes (libclang-rt-N-dev) and LLVM's OpenMP with Archer (libomp-dev); no Python
  --for lint   the C++ build (clang-tidy reads its compile_commands.json) and the repository rules'
               tools (.ci/run stages layers, format, tidy): clang-format-14, clang-tidy-14 (with
               run-clang-tidy-14), python3; no Python packages
  --check      install nothing; list what is missing and exit 1 if anything is
  -h, --help   this text

The CUDA toolkit and NCCL are not installed here: with nvcc at /usr/local/cuda/bin/nvcc (or on PATH)
the CUDA backend is built, without it the host backend only.

exit status: 0 everything present, 1 something is missing and could not be installed (the message
says what and why).
EOF
}

purpose="test"
check_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --for) [[ $# -ge 2 && ( "$2" == run || "$2" == test || "$2" == sanitize || "$2" == lint ) ]] ||
             sa_die "--for takes run, test, sanitize or lint"; purpose=$2; shift 2 ;;
    --for=run|--for=test|--for=sanitize|--for=lint) purpose=${1#--for=}; shift ;;
    --check) check_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) SA_DIE_CODE=2 sa_die "unknown argument '$1' (see --help)" ;;
  esac
done

# --- C++ build dependencies -------------------------------------------------------------------------
have_cmd() { command -v "$1" >/dev/null 2>&1; }

dpkg_has() {
  have_cmd dpkg-query || return 1
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

cmake_ok() {
  have_cmd cmake || return 1
  local v
  v=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [[ -n "$v" ]] || return 1
  read -r major minor <<<"$v"
  (( major > 3 || (major == 3 && minor >= 25) ))
}

# Install prefixes searched for headers and CMake packages of libraries not installed by dpkg.
prefixes() {
  local p
  echo /usr; echo /usr/local
  [[ -n "${CONDA_PREFIX:-}" ]] && echo "$CONDA_PREFIX"
  for p in ${CMAKE_PREFIX_PATH:+${CMAKE_PREFIX_PATH//:/ }}; do echo "$p"; done
}

# lib_present HEADER CMAKE_PACKAGE: the header and the CMake package config are both found.
lib_present() {
  local header=$1 pkg=$2 lower p f found_h=0 found_c=0
  lower=$(echo "$pkg" | tr '[:upper:]' '[:lower:]')
  while read -r p; do
    [[ -f "$p/include/$header" ]] && found_h=1
    for f in "$p"/{lib,lib64,lib/*-linux-gnu,share}/cmake/"$pkg"*/{"$pkg"Config.cmake,"$lower"-config.cmake} \
             "$p"/share/"$lower"/cmake/{"$pkg"Config.cmake,"$lower"-config.cmake}; do
      [[ -f "$f" ]] && { found_c=1; break; }
    done
  done < <(prefixes)
  (( found_h && found_c ))
}

missing_pkgs=()
need() { missing_pkgs+=("$1"); }

cmake_ok || need cmake
have_cmd ninja || need ninja-build
have_cmd g++ || need g++
dpkg_has libbenchmark-dev || lib_present benchmark/benchmark.h benchmark || need libbenchmark-dev
dpkg_has libgtest-dev || lib_present gtest/gtest.h GTest || need libgtest-dev
dpkg_has libcli11-dev || lib_present CLI/CLI.hpp CLI11 || need libcli11-dev
dpkg_has nlohmann-json3-dev || lib_present nlohmann/json.hpp nlohmann_json || need nlohmann-json3-dev
# Google Benchmark's own compare.py reads the suite's JSON in a test (the JSON must stay strict).
[[ "$purpose" != test ]] || dpkg_has libbenchmark-tools || [[ -f /usr/share/benchmark/compare.py ]] ||
  need libbenchmark-tools

# --- Sanitizers (CI) --------------------------------------------------------------------------------
# TSan needs clang: gcc's libgomp is not TSan-aware (false positives), LLVM's libomp with its Archer
# tool is. libclang-rt-N-dev (the sanitizer runtimes) is only a Recommends of clang-N: name it.
if [[ "$purpose" == sanitize ]]; then
  if have_cmd clang++; then
    clang_major=$(clang++ -dumpversion 2>/dev/null | cut -d. -f1)
    resource_dir=$(clang++ -print-resource-dir 2>/dev/null || true)
    # clang <= 14: lib/linux/libclang_rt.tsan-x86_64.a; newer: lib/<triple>/libclang_rt.tsan.a
    compgen -G "$resource_dir/lib/*/libclang_rt.tsan*.a" >/dev/null || need "libclang-rt-$clang_major-dev"
    # libomp and libarcher live in LLVM's lib folder, two levels above the resource dir.
    [[ -f "$resource_dir/../../libomp.so" && -f "$resource_dir/../../libarcher.so" ]] || need "libomp-$clang_major-dev"
  else
    need clang; need libclang-rt-dev; need libomp-dev   # Debian's default LLVM (14 on Debian 12)
  fi
fi

# --- Repository rules (CI) -------------------------------------------------------------------------
# Version 14 exactly: another clang-format formats differently, another clang-tidy has other checks.
if [[ "$purpose" == lint ]]; then
  have_cmd clang-format-14 || need clang-format-14
  have_cmd clang-tidy-14 && have_cmd run-clang-tidy-14 || need clang-tidy-14
  have_cmd python3 || need python3   # scripts/check_layers.py (stdlib only)
fi

# --- Python -----------------------------------------------------------------------------------------
need_venv=0
if [[ "$purpose" == sanitize || "$purpose" == lint ]]; then
  :   # the sanitizer builds and the repository rules need no Python packages
elif ! sa_python "$purpose" --strict >/dev/null; then
  need_venv=1
  if ! have_cmd python3; then
    need python3; need python3-venv
  elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    need python3-venv   # Debian/Ubuntu split ensurepip out of python3
  fi
fi

if (( check_only )); then
  status=0
  if (( ${#missing_pkgs[@]} )); then sa_say "missing packages: ${missing_pkgs[*]}"; status=1; fi
  if (( need_venv )); then
    sa_say "Python environment: .venv is missing or older than scripts/requirements.txt, and the system python3 lacks one of: $(sa_py_modules "$purpose")"
    status=1
  fi
  exit "$status"
fi

# --- Install ----------------------------------------------------------------------------------------
if (( ${#missing_pkgs[@]} )); then
  have_cmd apt-get || sa_die "missing: ${missing_pkgs[*]}; this is not a Debian/Ubuntu system (no apt-get):" \
                             "install them with the system's package manager"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    have_cmd sudo || sa_die "missing: ${missing_pkgs[*]}; installing needs root (run as root, or install sudo)"
    sudo=(sudo)
  fi
  sa_say "installing missing packages: ${missing_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get update -qq; then
    sa_die "apt-get update failed (no network or no package mirror reachable?); still missing: ${missing_pkgs[*]}"
  fi
  if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" >/dev/null; then
    sa_die "apt-get install ${missing_pkgs[*]} failed (see above)"
  fi
  cmake_ok || sa_die "cmake >= 3.25 is needed (CMakePresets.json version 6); found: $(cmake --version 2>/dev/null | head -1 || echo none)"
fi

if (( need_venv )); then
  sys_py=$(command -v python3)
  if [[ -e "$SA_VENV" ]] && ! "$SA_VENV/bin/python" -c '' >/dev/null 2>&1; then
    sa_say "recreating .venv (its python does not run: made on another machine?)"
    rm -rf "$SA_VENV"
  fi
  if [[ ! -e "$SA_VENV" ]]; then
    sa_say "creating .venv with $sys_py ($("$sys_py" --version 2>&1))"
    "$sys_py" -m venv "$SA_VENV" || sa_die "python3 -m venv .venv failed (see above)"
  fi
  sa_say "installing Python packages into .venv (scripts/requirements.txt; about a minute the first time)"
  rm -f "$SA_VENV_STAMP"
  if "$SA_VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$SA_REQUIREMENTS"; then
    # shellcheck disable=SC2046
    sa_py_has "$SA_VENV/bin/python" $(sa_py_modules test) \
      || sa_die "pip installed scripts/requirements.txt, but .venv/bin/python cannot import $(sa_py_modules test)"
    sa_requirements_hash >"$SA_VENV_STAMP"
  else
    # No network: fall back to whatever already has the packages, else say what is missing.
    if py=$(sa_python "$purpose"); then
      sa_warn "could not install scripts/requirements.txt into .venv (no network?); using $py, which has $(sa_py_modules "$purpose")"
    elif [[ "$purpose" == test ]] && py=$(sa_python run); then
      sa_die "pytest is missing and could not be installed (pip failed: no network?). $py has the report" \
             "tool's packages but not pytest; install pytest for it (e.g. apt-get install python3-pytest) or" \
             "give this machine network access to PyPI."
    else
      sa_die "pip install -r scripts/requirements.txt failed (see above: no network?), and no python3 here" \
             "imports $(sa_py_modules "$purpose")"
    fi
  fi
fi
exit 0
