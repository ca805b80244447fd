"""``shardaccum_bench --describe-layout``: the document bench/real/ builds its modules from. For every shipped
config and a uniform layout, each unit's parameter shapes multiply out and sum to its numel at running offsets,
with the schema's keys; a missing or listed --model, or another run flag, is exit 2 naming the flag."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from bench_build import ROOT, built_preset

CONFIGS = sorted(p.stem for p in (ROOT / "bench" / "configs").glob("*.json"))
DOC_KEYS = ["schema", "model", "spec", "family", "total_numel", "units"]
UNIT_KEYS = ["index", "name", "numel", "params"]
PARAM_KEYS = ["name", "shape", "offset"]


def _describe(*args: str) -> subprocess.CompletedProcess:
    _, exe = built_preset()
    return subprocess.run([str(exe), "--describe-layout", *args], capture_output=True, text=True, timeout=60)


def test_every_shipped_config_is_there() -> None:
    assert {"gpt2", "gpt2-xl", "llama2-7b", "llama3.1-8b", "mistral-7b"} <= set(CONFIGS)


@pytest.mark.parametrize("model", CONFIGS + ["uniform:16x64M", "uniform:3x1000"])
def test_units_are_filled_by_their_params(model: str) -> None:
    r = _describe("--model", model)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert list(doc) == DOC_KEYS
    assert doc["schema"] == "shardaccum.layout/1"
    assert doc["spec"] == model
    assert doc["family"] in {"uniform", "list", "gpt2", "gpt_neox", "llama", "mistral", "mixtral", "qwen2",
                             "qwen3", "gemma2", "gemma3_text", "phi3"}
    names = set()
    for i, unit in enumerate(doc["units"]):
        assert list(unit) == UNIT_KEYS
        assert unit["index"] == i
        offset = 0
        for p in unit["params"]:
            assert list(p) == PARAM_KEYS
            assert p["offset"] == offset, (unit["name"], p["name"])
            assert p["shape"] and all(isinstance(d, int) and d >= 1 for d in p["shape"])
            offset += math.prod(p["shape"])
            assert p["name"] not in names, p["name"]
            names.add(p["name"])
        assert offset == unit["numel"], unit["name"]
    assert sum(u["numel"] for u in doc["units"]) == doc["total_numel"]


def test_known_shapes() -> None:
    def shapes(model: str) -> dict[str, list[int]]:
        doc = json.loads(_describe("--model", model).stdout)
        return {p["name"]: p["shape"] for u in doc["units"] for p in u["params"]}

    assert shapes("gpt2")["transformer.h.0.attn.c_attn.weight"] == [768, 2304]
    assert shapes("llama2-7b")["model.layers.0.mlp.gate_proj.weight"] == [11008, 4096]
    assert shapes("llama3.1-8b")["model.layers.0.self_attn.k_proj.weight"] == [1024, 4096]
    assert shapes("uniform:16x64M")["unit15.weight"] == [8192, 8192]
    assert shapes("uniform:3x1000")["unit0.weight"] == [1000]


@pytest.mark.parametrize("args, needle", [
    ([], "needs --model"),
    (["--model", "gpt2,gpt2-xl"], "exactly one value"),
    (["--model", "gpt2", "--model", "gpt2-xl"], "exactly one value"),
    (["--model", "gpt2", "--k", "4"], "--k would be ignored"),
    (["--model", "no-such-model"], "--model"),
])
def test_bad_use_is_exit_2_naming_the_flag(args: list[str], needle: str) -> None:
    r = _describe(*args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert r.stdout == ""
