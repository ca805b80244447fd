"""scripts/merge.py: the slices of one run (shardaccum_bench --part I/N) join into one run, the same cases
as an unsplit run; slices of different runs, missing or repeated parts and repeated cases are refused."""

from __future__ import annotations

import json
import subprocess

import pytest

from bench_build import built_preset
from conftest import run_script

# 4 cases (2 schedules x 2 offloads), a step each: a second or so on the host backend.
TINY = ["--backend", "host", "--model", "uniform:2x1000", "--schedule", "sync,no-sync", "--offload", "none,copy",
        "--binding", "data", "--mode", "flag", "--steps", "1", "--warmup", "0"]


def _bench(exe, out, *extra):
    proc = subprocess.run([str(exe), *TINY, *extra, f"--benchmark_out={out}", "--benchmark_out_format=json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


def _strict_load(path):
    def refuse(name):
        raise AssertionError(f"{path}: non-strict JSON constant {name}")
    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Parts 1/2 and 2/2 and the unsplit run of the same tiny matrix, made by the real binary."""
    _, exe = built_preset()
    d = tmp_path_factory.mktemp("parts")
    return {"p1": _bench(exe, d / "p1.json", "--part", "1/2"), "p2": _bench(exe, d / "p2.json", "--part", "2/2"),
            "all": _bench(exe, d / "all.json"), "exe": exe, "dir": d}


def _names(doc):
    return [b["name"] for b in doc["benchmarks"]]


def _edited(runs, tmp_path, edit, name="p2x.json"):
    doc = json.loads(runs["p2"].read_text())
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_merged_parts_have_the_cases_of_the_unsplit_run_and_make_a_report(runs, tmp_path):
    p1, p2, unsplit = (_strict_load(runs[k]) for k in ("p1", "p2", "all"))
    assert p1["context"]["part"] == "1/2" and p2["context"]["part"] == "2/2"
    assert p1["context"]["matrix_cases"] == "4" and len(_names(p1)) == 2 and len(_names(p2)) == 2
    out = tmp_path / "merged.json"
    proc = run_script("merge.py", runs["p2"], runs["p1"], "--out", out)  # any order
    assert proc.returncode == 0, proc.stderr
    merged = _strict_load(out)
    assert _names(merged) == _names(unsplit)
    ctx = merged["context"]
    assert ctx["part"] == "merged 1..2 of 2"
    assert ctx["part_dates"] == [p1["context"]["date"], p2["context"]["date"]]
    assert "--part" not in ctx["command"] and "--benchmark_out" not in ctx["command"]
    assert [b["family_index"] for b in merged["benchmarks"]] == [0, 1, 2, 3]
    rep = run_script("report.py", out, "--name", "merged", "--out-dir", tmp_path / "reports")
    assert rep.returncode == 0, rep.stderr
    text = (tmp_path / "reports" / "merged" / "README.md").read_text()
    assert "4 cases in 1 group" in text


def test_a_slice_run_with_other_settings_is_refused_naming_the_key_and_files(runs, tmp_path):
    other = _bench(runs["exe"], tmp_path / "p2-seed.json", "--part", "2/2", "--seed", "7")
    proc = run_script("merge.py", runs["p1"], other, "--out", tmp_path / "m.json")
    assert proc.returncode == 2, proc.stderr
    assert "context 'seed' differs" in proc.stderr
    assert str(runs["p1"]) in proc.stderr and str(other) in proc.stderr
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("key", ["git_commit", "host_name", "executable", "measured_steps", "matrix_cases", "backend"])
def test_contexts_that_differ_in_binary_commit_machine_or_settings_are_refused(runs, tmp_path, key):
    path = _edited(runs, tmp_path, lambda d: d["context"].__setitem__(key, "other"))
    proc = run_script("merge.py", runs["p1"], path, "--out", tmp_path / "m.json")
    assert proc.returncode == 2, proc.stderr
    assert f"context '{key}' differs" in proc.stderr


def test_a_command_that_differs_beyond_part_and_outputs_is_refused(runs, tmp_path):
    path = _edited(runs, tmp_path, lambda d: d["context"].__setitem__("command", d["context"]["command"] + " --k 8"))
    proc = run_script("merge.py", runs["p1"], path, "--out", tmp_path / "m.json")
    assert proc.returncode == 2, proc.stderr
    assert "context 'command' differs" in proc.stderr


def test_missing_repeated_and_foreign_parts_are_refused(runs, tmp_path):
    out = tmp_path / "m.json"
    proc = run_script("merge.py", runs["p1"], "--out", out)
    assert proc.returncode == 2 and "part 2/2 missing" in proc.stderr, proc.stderr
    proc = run_script("merge.py", runs["p1"], runs["p1"], runs["p2"], "--out", out)
    assert proc.returncode == 2 and "part 1/2 is given twice" in proc.stderr, proc.stderr
    third = _edited(runs, tmp_path, lambda d: d["context"].__setitem__("part", "2/3"))
    proc = run_script("merge.py", runs["p1"], third, "--out", out)
    assert proc.returncode == 2 and "different N" in proc.stderr, proc.stderr
    proc = run_script("merge.py", runs["all"], "--out", runs["all"])
    assert proc.returncode == 2 and "--out names one of the inputs" in proc.stderr, proc.stderr
    assert not out.exists()


def test_a_case_in_two_parts_is_refused(runs, tmp_path):
    first = json.loads(runs["p1"].read_text())["benchmarks"][0]
    path = _edited(runs, tmp_path, lambda d: d["benchmarks"].append(dict(first)))
    proc = run_script("merge.py", runs["p1"], path, "--out", tmp_path / "m.json")
    assert proc.returncode == 2, proc.stderr
    assert f"case {first['run_name']} is in two parts" in proc.stderr


def test_nan_becomes_null_and_null_stays_null(runs, tmp_path):
    def plant(d):
        d["benchmarks"][0]["max_rel_err"] = float("nan")
        d["benchmarks"][1]["max_rel_err"] = None
    path = _edited(runs, tmp_path, plant)
    assert "NaN" in path.read_text()
    out = tmp_path / "m.json"
    proc = run_script("merge.py", runs["p1"], path, "--out", out)
    assert proc.returncode == 0, proc.stderr
    merged = _strict_load(out)
    assert [b["max_rel_err"] for b in merged["benchmarks"][2:4]] == [None, None]


@pytest.mark.parametrize("text, want", [
    (b'{"context": {}, "benchmarks": [', "a run that was killed leaves its JSON cut off"),
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b"[" * 100000 + b"]" * 100000, "nested too deep to read"),
    (b'{"n": 1' + b"0" * 5000 + b"}", "holds an integer of 5001 digits"),
    (b'{"n": 1' + b"0" * 400 + b"}", "holds an integer of 401 digits, beyond any value the suite writes"),
    (b'{"n": 1e400}', "holds the number 1e400, beyond any value the suite writes"),
])
def test_an_unreadable_part_is_refused_naming_the_file_and_what_to_give(runs, tmp_path, text, want):
    bad = tmp_path / "bad.json"
    bad.write_bytes(text)
    out = tmp_path / "m.json"
    proc = run_script("merge.py", runs["p1"], bad, "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert str(bad) in proc.stderr and want in proc.stderr, proc.stderr
    assert "--part I/N" in proc.stderr, proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("keep", [0, 1])
def test_a_part_without_its_whole_slice_is_refused(runs, tmp_path, keep):
    """Part 2/2 of the 4-case matrix holds 2 cases; with none or one left (a run cut short, edited),
    the merge would silently lose cases: refused, naming the file."""
    path = _edited(runs, tmp_path, lambda d: d.__setitem__("benchmarks", d["benchmarks"][:keep]))
    proc = run_script("merge.py", runs["p1"], path, "--out", tmp_path / "m.json")
    assert proc.returncode == 2, proc.stderr
    assert str(path) in proc.stderr
    assert ("holds no case" if keep == 0 else "holds 1 case(s), but its slice of the 4-case matrix has 2") in proc.stderr
    assert not (tmp_path / "m.json").exists()


def test_a_part_with_an_unreadable_registry_is_refused_naming_the_file(runs, tmp_path):
    path = _edited(runs, tmp_path, lambda d: d["context"].__setitem__("registry", "{not json"))
    proc = run_script("merge.py", runs["p1"], path, "--out", tmp_path / "m.json")
    assert proc.returncode == 2, proc.stderr
    assert "context 'registry'" in proc.stderr and str(path) in proc.stderr
    assert not (tmp_path / "m.json").exists()


def test_registries_that_differ_are_named_by_the_first_differing_field_not_dumped(runs, tmp_path):
    def edit(d):
        reg = json.loads(d["context"]["registry"])
        reg["axes"][1]["values"][2]["description"] = "changed"
        d["context"]["registry"] = json.dumps(reg)
    path = _edited(runs, tmp_path, edit)
    proc = run_script("merge.py", runs["p1"], path, "--out", tmp_path / "m.json")
    assert proc.returncode == 2, proc.stderr
    assert "context 'registry' differs" in proc.stderr
    assert "axes[1].values[2].description" in proc.stderr
    assert len(proc.stderr) < 1000, proc.stderr


def test_the_parts_of_a_run_written_under_a_path_with_a_space_merge(runs, tmp_path):
    # shardaccum_bench shell-quotes its command, so `--benchmark_out=... sp ace/...` stays one argument
    # and the parts differ only in what merge.py sets aside.
    folder = tmp_path / "sp ace"
    folder.mkdir()
    p1 = _bench(runs["exe"], folder / "s1.json", "--part", "1/2")
    p2 = _bench(runs["exe"], folder / "s2.json", "--part", "2/2")
    assert f"'--benchmark_out={folder / 's1.json'}'" in _strict_load(p1)["context"]["command"]
    out = tmp_path / "m.json"
    proc = run_script("merge.py", p1, p2, "--out", out)
    assert proc.returncode == 0, proc.stderr
    command = _strict_load(out)["context"]["command"]
    assert "sp ace" not in command and "--part" not in command and "--backend host" in command


@pytest.mark.parametrize("value", [2, True, [1], {"a": 1}])
def test_a_joined_context_value_that_is_not_text_is_refused_naming_the_key(runs, tmp_path, value):
    # Both parts alike (a hand-edited pair): merge.py joins world_size's values, and a whole number reads
    # as its text; anything else is bad input naming the key, not a crash.
    def edit(d):
        d["context"]["world_size"] = value
    first = json.loads(runs["p1"].read_text())
    edit(first)
    p1 = tmp_path / "p1x.json"
    p1.write_text(json.dumps(first))
    p2 = _edited(runs, tmp_path, edit)
    out = tmp_path / "m.json"
    proc = run_script("merge.py", p1, p2, "--out", out)
    assert "Traceback" not in proc.stderr, proc.stderr
    if value == 2:
        assert proc.returncode == 0, proc.stderr
        assert _strict_load(out)["context"]["world_size"] == "2"
        return
    assert proc.returncode == 2, proc.stderr
    assert "context 'world_size'" in proc.stderr and str(p1) in proc.stderr and not out.exists()


def test_the_context_holds_the_host_time_as_parsed(tmp_path):
    """--hook-host-us 0290 is 290: the context holds the number as parsed, as the case names do
    (/hook-host-us:290), so a report or a merge reads one setting, not the spelling."""
    _, exe = built_preset()
    for given, want in (("0290", "290"), ("-0", "0"), ("auto", "auto")):
        doc = _strict_load(_bench(exe, tmp_path / f"h{given}.json", "--hook-host-us", given))
        assert doc["context"]["hook_host_us"] == want, given
        names = [b["name"].split("/iterations")[0] for b in doc["benchmarks"]]
        assert all(n.endswith(f"/hook-host-us:{want}") if want != "auto" else "hook-host-us" not in n
                   for n in names), names
