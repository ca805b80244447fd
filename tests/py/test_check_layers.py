"""scripts/check_layers.py: the layer rule of docs/DESIGN.md §8 (includes point down, never up)."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT, run_script


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def fake_tree(root: Path) -> None:
    """A tree that keeps the rule: each layer includes its own layer or the ones below."""
    write(root, "common/dtype.hpp", "#pragma once\n#include <cstddef>\n")
    write(root, "profiling/nvtx.hpp", '#pragma once\n#include "common/dtype.hpp"\n')
    write(root, "strategies/backend/backend.hpp", '#pragma once\n#include "profiling/nvtx.hpp"\n')
    write(root, "strategies/backend/cuda_check.hpp", "#pragma once\n")
    write(root, "strategies/backend/cuda_kernels.cu",
          '#include "cuda_check.hpp"\n#include "common/dtype.hpp"\n')
    write(root, "strategies/model.hpp", '#pragma once\n#include "strategies/backend/backend.hpp"\n')
    write(root, "bench/cli.cpp", '#include "strategies/model.hpp"\n#include "not_in_tree.hpp"\n')
    write(root, "tests/cpp/test_support.hpp", "#pragma once\n")
    write(root, "tests/cpp/test_cli.cpp", '#include "test_support.hpp"\n#include "bench/cli.cpp"\n')


def test_clean_fake_tree_passes(tmp_path: Path) -> None:
    fake_tree(tmp_path)
    r = run_script("check_layers.py", "--root", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("check_layers: 9 files, no upward include")


def test_upward_includes_fail_with_file_line_and_layers(tmp_path: Path) -> None:
    fake_tree(tmp_path)
    # common reaching up to strategies/backend (root-relative), and the backend reaching up to
    # strategies through a path relative to the including file.
    write(tmp_path, "common/buffer.hpp",
          '#pragma once\n#include "common/dtype.hpp"\n  #  include "strategies/backend/backend.hpp"\n')
    write(tmp_path, "strategies/backend/host_backend.cpp",
          '#include "backend.hpp"\n#include "../model.hpp" // why\n')
    r = run_script("check_layers.py", "--root", tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "common/buffer.hpp:3: common includes strategies/backend/backend.hpp (strategies/backend)",
        "strategies/backend/host_backend.cpp:2: strategies/backend includes strategies/model.hpp"
        " (strategies)",
    ]
    assert "2 upward include(s) in 11 files" in r.stderr


def test_system_includes_and_sideways_are_not_violations(tmp_path: Path) -> None:
    # <...> is never a project header, even when a file of that name exists in a higher layer.
    write(tmp_path, "common/a.hpp", '#include <bench/cli.hpp>\n#include "common/b.hpp"\n')
    write(tmp_path, "common/b.hpp", "#pragma once\n")
    write(tmp_path, "bench/cli.hpp", "#pragma once\n")
    r = run_script("check_layers.py", "--root", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_real_tree_passes() -> None:
    r = run_script("check_layers.py", "--root", ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no upward include" in r.stdout


def test_help() -> None:
    r = run_script("check_layers.py", "--help")
    assert r.returncode == 0
    assert "common -> profiling -> strategies/backend -> strategies -> bench -> tests" in r.stdout


def test_a_root_without_the_layer_folders_is_an_error_not_a_pass(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.cpp").write_text('#include "b.hpp"\n')
    proc = run_script("check_layers.py", "--root", tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "none of the layer folders" in proc.stderr


def test_capi_is_a_sibling_of_bench_neither_includes_the_other(tmp_path: Path) -> None:
    # capi/ (libshardaccum_gen) wraps strategies/ and is used by tests/; bench/ and capi/ stay apart.
    fake_tree(tmp_path)
    write(tmp_path, "capi/shardaccum_gen.h", "#pragma once\n#include <stdint.h>\n")
    write(tmp_path, "capi/gen_host.cpp", '#include "shardaccum_gen.h"\n#include "strategies/model.hpp"\n')
    write(tmp_path, "tests/cpp/test_gen.cpp", '#include "capi/shardaccum_gen.h"\n')
    r = run_script("check_layers.py", "--root", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(capi beside bench)" in r.stdout
    write(tmp_path, "bench/gen_use.cpp", '#include "capi/shardaccum_gen.h"\n')
    write(tmp_path, "capi/gen_cli.h", '#pragma once\n#include "bench/cli.cpp"\n')
    r = run_script("check_layers.py", "--root", tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "bench/gen_use.cpp:1: bench includes capi/shardaccum_gen.h (capi)",
        "capi/gen_cli.h:2: capi includes bench/cli.cpp (bench)",
    ]
