"""Where the tests that run shardaccum_bench itself find it: the build that scripts/test.sh made
(build/, preset default) or, failing that, the host preset's (build-host/)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRESETS = (("default", ROOT / "build"), ("host", ROOT / "build-host"))


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
