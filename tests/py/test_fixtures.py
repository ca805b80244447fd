"""tests/fixtures/regenerate.sh: the committed host fixtures are its recorded output (the binary's
flags in their context), and a failed run replaces no fixture and leaves no temporary behind."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from conftest import FIXTURES, HOST_FIXTURE, HOST_K8_FIXTURE

SCRIPT = FIXTURES / "regenerate.sh"
# A stand-in binary: writes its arguments as the --benchmark_out JSON; FAIL_ON makes one output fail.
FAKE = """#!/usr/bin/env python3
import json, os, sys
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out="))
if os.environ.get("FAIL_ON") and os.environ["FAIL_ON"] in out:
    sys.exit("fake: failing on purpose")
open(out, "w").write(json.dumps(sys.argv[1:]))
"""


def _regenerate(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "fake_bench"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    out = tmp_path / "out"
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, SHARDACCUM_BENCH=str(fake), FIXTURES_OUT=str(out), **env))


def _leftovers() -> list[str]:
    return [p.name for p in FIXTURES.iterdir() if p.name.startswith(".regenerate.")]


def test_committed_fixtures_were_recorded_with_the_scripts_flags(tmp_path):
    proc = _regenerate(tmp_path)
    assert proc.returncode == 0, proc.stderr
    for fixture in (HOST_FIXTURE, HOST_K8_FIXTURE):
        args = json.loads((tmp_path / "out" / fixture.name).read_text())
        context = json.loads(fixture.read_text())["context"]
        assert shlex.split(context["command"])[1:] == args, fixture.name
        assert context["backend"] == "host" and context["seed"] == "1", fixture.name
    assert _leftovers() == []


def test_a_failed_run_replaces_no_fixture(tmp_path):
    proc = _regenerate(tmp_path, FAIL_ON="k8")  # the second run fails, after the first succeeded
    assert proc.returncode == 1
    assert "failing on purpose" in proc.stderr and "the fixtures are unchanged" in proc.stderr
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    assert _leftovers() == []
