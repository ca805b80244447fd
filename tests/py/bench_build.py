"""Where the tests that run shardaccum_bench itself find it: the build of the preset named by
$SHARDACCUM_PRESET (scripts/test.sh sets it to the one it built), else the first built of build/
(preset default) and build-host/ (preset host)."""

from __future__ import annotations

from pathlib import Path

import os

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"default": ROOT / "build", "host": ROOT / "build-host", "debug": ROOT / "build-debug"}
# A stale build/ must not stand in for the build-host/ that scripts/test.sh just made on a machine
# with no GPU: the preset it names comes alone.
_named = os.environ.get("SHARDACCUM_PRESET", "")
PRESETS = (((_named, FOLDERS[_named]),) if _named in FOLDERS
           else (("default", FOLDERS["default"]), ("host", FOLDERS["host"])))


def built_preset() -> tuple[str, Path]:
    """(CMake preset, its shardaccum_bench) of the first configured build that has the binary; skips the
    test when there is none (build first: scripts/test.sh, or cmake --preset host && cmake --build --preset host)."""
    for preset, folder in PRESETS:
        exe = folder / "bench" / "shardaccum_bench"
        if (folder / "build.ninja").is_file() and exe.is_file():
            return preset, exe
    pytest.skip("no built shardaccum_bench in build/ or build-host/ (run scripts/test.sh or build the host preset)")


GEN_LIB = Path("capi") / "libshardaccum_gen.so"
REAL = ROOT / "bench" / "real"


def built_gen_lib() -> Path:
    """libshardaccum_gen.so of the first build that has it (build/, then build-host/); skips the test
    when there is none (cmake --build --preset host builds it with everything else)."""
    for _, folder in PRESETS:
        if (folder / GEN_LIB).is_file():
            return folder / GEN_LIB
    pytest.skip("no libshardaccum_gen.so in build/capi/ or build-host/capi/ (build the host preset)")
