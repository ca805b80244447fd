"""The registry (schema 1, scripts/shardaccum_report/registry.py): strict parsing, schedules,
presets, names with `unless_default` axes, order and plot styles from the registry's values."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, write_doc
from shardaccum_report.case import CaseKey, Strategy, parse_case_name
from shardaccum_report.errors import InputError
from shardaccum_report.loading import load_runs
from shardaccum_report.plots import style
from shardaccum_report.registry import COMMITTED, Registry

GPU_RUN = ROOT / "reports" / "h200x2-llama2-7b" / "run.json"
NAME = "accum/model:m/world:2/schedule:nSnS/binding:data/offload:cpu-add/mode:flag/dtype:fp32-fp32-fp32"


def committed_json() -> dict:
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


def with_new_values() -> dict:
    """The committed registry plus a division value 'each' and an offload value 'pipelined'."""
    doc = committed_json()
    axes = {a["axis"]: a for a in doc["axes"]}
    axes["division"]["values"].append({"name": "each", "description": "divide every shard", "follows": "x",
                                       "properties": {"backward_ahead": 0}})
    axes["offload"]["values"].append({"name": "pipelined", "description": "d", "follows": "",
                                      "properties": {"offloaded": True, "backward_ahead": 1}})
    return doc


def test_committed_registry_reads_every_name_of_a_real_gpu_run_and_writes_it_back():
    doc = json.loads(GPU_RUN.read_text())
    assert "registry" not in doc["context"]  # predates it: the committed copy is what reads it
    registry = Registry.from_context(doc["context"])
    assert registry == Registry.committed()
    names = {e["run_name"] for e in doc["benchmarks"]}
    for name in names:
        key = parse_case_name(name, registry)
        assert name == key.name + "/iterations:3/manual_time", name
    assert len({parse_case_name(n, registry).strategy for n in names}) == len(
        [1 for _ in registry.axis("binding").default_matrix for _ in registry.axis("offload").default_matrix
         for _ in registry.axis("mode").default_matrix])


def test_canonical_schedules_follow_the_head_and_tail_rules():
    r = Registry.committed()
    for s in r.canonical_schedules:
        assert r.canonical_schedule(s.name, 4) == s.example_k4
        for k in (3, 5, 8):
            built = r.canonical_schedule(s.name, k)
            assert len(built) == k and built.endswith(s.tail) and r.schedule_family(built) == s.name
    assert r.canonical_schedule("interleaved-nosync-last", 5) == "SnSnS"
    with pytest.raises(ValueError, match="needs K >= 3"):
        r.canonical_schedule("sync", 2)
    with pytest.raises(ValueError, match="unknown canonical schedule 'zigzag'"):
        r.canonical_schedule("zigzag", 4)
    assert r.schedule_sort_key("nnnS") < r.schedule_sort_key("SSSS") < r.schedule_sort_key("nnSnS")


def test_a_division_left_out_of_a_name_is_its_default_and_a_new_one_is_named():
    r = Registry.from_json(with_new_values())
    plain = parse_case_name(NAME, r)
    spelled = parse_case_name(NAME.replace("/dtype:", "/division:end/dtype:"), r)
    assert plain == spelled and plain.strategy.division == "end"
    assert spelled.name == NAME  # unless_default: left out at its default
    each = parse_case_name(NAME.replace("/dtype:", "/division:each/dtype:"), r)
    assert each != plain and each.strategy.division == "each" and each.extra == ()
    assert each.name == NAME.replace("/dtype:", "/division:each/dtype:")
    assert each.strategy.label == "data/cpu-add/flag/each"
    no_dtype = parse_case_name(NAME.removesuffix("/dtype:fp32-fp32-fp32"), r)
    assert no_dtype == plain


def test_presets_and_report_order_come_from_the_registry():
    r = Registry.from_json(with_new_values())
    fsdp2 = Strategy("data-free", "cpu-add-pageable", "flag", "collective", copy_in="chunk-cat")
    assert r.preset_of(fsdp2) == "fsdp2"
    # The same four axes with the gradient itself as the reduce-scatter's input are not FSDP2.
    assert r.preset_of(Strategy("data-free", "cpu-add-pageable", "flag", "collective")) is None
    assert r.preset_of(Strategy("data-free", "cpu-add", "flag", "end")) is None
    # From a case name: the copy-in is an extra part of the key, and it makes the case FSDP2's.
    base = ("accum/model:uniform:2x4/world:2/schedule:SSSS/binding:data-free/offload:cpu-add-pageable/"
            "mode:flag/division:collective/")
    named = parse_case_name(base + "copy-in:chunk-cat/dtype:fp32-fp32-fp32", r)
    assert named.strategy.preset == "fsdp2" and named.extra == (("copy-in", "chunk-cat"),)
    plain = parse_case_name(base + "dtype:fp32-fp32-fp32", r)
    assert plain.strategy.preset is None
    # One group of plots for both, told apart by the strategy (its label names the copy-in).
    assert named.group == plain.group and named.strategy != plain.strategy
    assert named.strategy.label == "data-free/cpu-add-pageable/flag/collective/chunk-cat"
    assert parse_case_name(base + "copy-in:none/dtype:fp32-fp32-fp32", r).strategy == plain.strategy
    assert r.preset_of(Strategy("data-free", "cpu-add", "flag", "each")) is None
    assert [p.name for p in r.presets] == ["fairscale", "fsdp1", "fsdp2", "zero3", "ideal"]
    ordered = sorted([Strategy("data", "zzz", "flag", registry=r), Strategy("data", "pipelined", "flag", registry=r),
                      Strategy("data", "none", "shape", registry=r), Strategy("data-free", "none", "flag", registry=r),
                      Strategy("data", "aaa", "flag", registry=r), Strategy("data", "copy", "flag", registry=r)],
                     key=lambda s: s.sort_key)
    offloads = [s.offload for s in ordered]
    assert offloads == ["none", "none", "copy", "pipelined", "aaa", "zzz"]
    assert [s.binding for s in ordered[:2]] == ["data", "data-free"]  # within an offload: binding order


def test_a_run_carrying_a_registry_is_read_and_ordered_by_it(tmp_path, host_doc):
    doc = copy.deepcopy(host_doc)
    reg = committed_json()
    offload = next(a for a in reg["axes"] if a["axis"] == "offload")
    before = [v["name"] for v in offload["values"]]
    offload["values"].reverse()  # copy first of the host run's values in this run's report order
    doc["context"]["registry"] = reg
    run = load_runs([write_doc(doc, tmp_path / "r.json")])
    assert run.registry.axis("offload").names == tuple(reversed(before))
    assert run.cases[0].key.strategy.offload == "copy" and run.cases[-1].key.strategy.offload == "none"
    assert len(run.cases) == len(load_runs([write_doc(host_doc, tmp_path / "plain.json")]).cases)


def test_a_malformed_registry_in_a_run_is_bad_input_naming_the_file_and_key(tmp_path, host_doc):
    doc = copy.deepcopy(host_doc)
    doc["context"]["registry"] = committed_json()
    del doc["context"]["registry"]["presets"][2]["axes"]
    path = write_doc(doc, tmp_path / "bad.json")
    with pytest.raises(InputError, match=r"context 'registry': registry: presets\[2\] has no key 'axes'") as e:
        load_runs([path])
    assert str(path) in str(e.value)


def _broken(edit) -> dict:
    doc = committed_json()
    edit(doc)
    return doc


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("max_k"), "registry has no key 'max_k'"),
    (lambda d: d.update(schema=2), "schema is 2"),
    (lambda d: d["axes"][0].update(named="sometimes"), r"axes\[0\] \(binding\).named is 'sometimes'"),
    (lambda d: d["axes"][1].update(default="disk"), r"axes\[1\] \(offload\).default names disk"),
    (lambda d: d["axes"][1]["values"][0].pop("properties"),
     r"axes\[1\] \(offload\).values\[0\] has no key 'properties'"),
    (lambda d: d["axes"].reverse(), "expected binding, offload, mode, division in this order"),
    (lambda d: d["presets"][0]["axes"].update(mode="guess"), r"presets\[0\].axes.mode = \"guess\" is not a registered"),
    (lambda d: d["canonical_schedules"][2].update(example_k4="SnSn"), r"canonical_schedules\[2\].example_k4"),
    (lambda d: d["canonical_schedules"][0]["head"].update(kind="random"), r"head.kind is 'random'"),
    (lambda d: d.update(max_k="4096"), r"registry.max_k is \"4096\", expected a int"),
    (lambda d: d["canonical_schedules"][0].update(min_k=True), r"min_k is true, expected a int"),
    (lambda d: d.update(default_dtype="fp64"), "default_dtype 'fp64' is not among dtypes"),
    (lambda d: d["name_parts"].remove("division"), "name_parts lacks division"),
    (lambda d: d.update(max_k=-1), "max_k is -1"),
    (lambda d: d["presets"].append(dict(d["presets"][0])), "a preset name appears twice"),
    (lambda d: d["axes"][2]["values"][-1].update(name="a/b"), "cannot appear in a case name"),
])
def test_malformed_registries_raise_value_error_naming_the_key(edit, message):
    with pytest.raises(ValueError, match=message):
        Registry.from_json(_broken(edit))


def test_styles_follow_the_registry_order_and_keep_todays_colours():
    r = Registry.committed()
    colors = {o: style.strategy_color(Strategy("data", o, "flag", registry=r)) for o in r.axis("offload").names}
    # Today's values keep the colours the committed reference PNGs were drawn with.
    today = {"none": "#4D4D4D", "gpu-add": "#0072B2", "cpu-add": "#009E73", "copy": "#E69F00"}
    assert {o: c for o, c in colors.items() if o in today} == today
    later = [c for o, c in colors.items() if o not in today]  # e.g. the -pipelined values
    assert len(set(later)) == len(later) and not set(later) & set(today.values())
    assert style.UNKNOWN_OFFLOAD not in later
    assert style.strategy_marker(Strategy("data-free", "none", "shape", registry=r)) == ("D", ":")
    new = Registry.from_json(with_new_values())
    pipelined = style.strategy_color(Strategy("data", "pipelined", "flag", registry=new))
    assert pipelined not in colors.values() and pipelined != style.UNKNOWN_OFFLOAD
    markers = {style.strategy_marker(Strategy(b, "none", m, d, registry=new))
               for b in new.axis("binding").names for m in new.axis("mode").names
               for d in new.axis("division").names}
    assert len(markers) == 8  # every binding/mode/division combination its own marker
    legend = style.strategy_legend([Strategy("data", "pipelined", "flag", "each", registry=new),
                                    Strategy("data", "none", "flag", registry=new)])
    assert [h.get_label() for h in legend] == ["offload none", "offload pipelined", "data / flag",
                                               "data / flag / each"]


def _fake_bench(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "fake_bench"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return exe


def _regenerate(tmp_path: Path, exe: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, REGISTRY_JSON=str(tmp_path / "registry.json"))
    return subprocess.run(["bash", str(ROOT / "scripts" / "regenerate_registry.sh"), str(exe)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_regenerate_registry_writes_the_binary_output(tmp_path):
    exe = _fake_bench(tmp_path, f'case "$1" in --help) echo "  --describe-registry";; '
                                f'--describe-registry) cat "{COMMITTED}";; *) exit 3;; esac\n')
    proc = _regenerate(tmp_path, exe)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "registry.json").read_bytes() == COMMITTED.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake_bench", "registry.json"]  # no temp left


@pytest.mark.parametrize("body, message", [
    ('echo "usage: no such flag"\n', "has no --describe-registry flag"),
    ('case "$1" in --help) echo "--describe-registry";; *) echo "{\\"schema\\": 1}";; esac\n',
     "wrote no valid registry"),
])
def test_regenerate_registry_fails_clearly_and_leaves_the_file(tmp_path, body, message):
    (tmp_path / "registry.json").write_text("old")
    proc = _regenerate(tmp_path, _fake_bench(tmp_path, body))
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert (tmp_path / "registry.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake_bench", "registry.json"]


def test_a_registry_string_nested_too_deep_is_a_value_error_not_a_crash():
    with pytest.raises(ValueError, match="nested too deep"):
        Registry.from_context({"registry": "[" * 100000 + "]" * 100000})


def test_a_name_whose_value_its_own_registry_lacks_is_bad_input(tmp_path, host_doc):
    doc = copy.deepcopy(host_doc)
    reg = committed_json()
    mode = next(a for a in reg["axes"] if a["axis"] == "mode")
    mode["values"] = [v for v in mode["values"] if v["name"] != "presence"]
    doc["context"]["registry"] = json.dumps(reg)
    for key in ("name", "run_name"):  # one case named with the value its registry no longer lists
        if key in doc["benchmarks"][0]:
            doc["benchmarks"][0][key] = doc["benchmarks"][0][key].replace("/mode:flag/", "/mode:presence/")
    path = write_doc(doc, tmp_path / "inconsistent.json")
    with pytest.raises(InputError, match=r"mode 'presence' .* is not among the values of the run's own registry") as e:
        load_runs([path])
    assert str(path) in str(e.value)


def test_runs_with_different_registries_are_joined_with_a_note(tmp_path, host_doc):
    a = copy.deepcopy(host_doc)
    a["context"]["registry"] = json.dumps(committed_json())
    b = copy.deepcopy(host_doc)
    reg = committed_json()
    reg["presets"][0]["description"] = "another binary's words"
    b["context"]["registry"] = json.dumps(reg)
    b["context"]["world_size"] = "4"
    for entry in b["benchmarks"]:  # other cases, so that the two files may share a report
        for key in ("name", "run_name"):
            if key in entry:
                entry[key] = entry[key].replace("/world:2/", "/world:4/")
    run = load_runs([write_doc(a, tmp_path / "a.json"), write_doc(b, tmp_path / "b.json")])
    assert any("carry different registries" in n for n in run.notes), run.notes
    same = load_runs([write_doc(a, tmp_path / "a2.json")])
    assert not any("carry different registries" in n for n in same.notes)


def test_a_chosen_lookahead_other_than_the_presets_is_not_that_preset():
    """zero3's axes at lookahead 0 are not what ZeRO-3 does: no '(zero3)' on them in the report."""
    from shardaccum_report.case import parse_case_name
    base = "accum/model:m/world:2/schedule:SSSS/binding:data-free/offload:gpu-add/mode:flag"
    assert parse_case_name(base).strategy.preset == "zero3"
    assert parse_case_name(base + "/lookahead:unbounded").strategy.preset == "zero3"
    assert parse_case_name(base + "/lookahead:0").strategy.preset is None
    assert parse_case_name(base + "/lookahead:0").strategy.display == "data-free/gpu-add/flag"
