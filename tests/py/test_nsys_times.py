"""scripts/shardaccum_report/nsys_times.py (profile.sh's time check) on a hand-built nsys database."""

from __future__ import annotations

import json

import pytest
from nsys_fixture import CASE, EXPECTED, bench_json, one_step

from shardaccum_report import nsys_times


def _rows(tmp_path, registered=False, **suite):
    db = one_step(tmp_path / "p.sqlite", registered=registered).close()
    return nsys_times.compare(db, bench_json(tmp_path / "p.bench.json", **suite)), db


@pytest.mark.parametrize("registered", [False, True], ids=["text", "registered-strings"])
def test_every_figure_from_the_step_and_what_it_launched(tmp_path, registered):
    rows, _ = _rows(tmp_path, registered)
    assert [r["figure"] for r in rows] == list(nsys_times.FIGURES)
    assert {r["figure"]: r["nsys_ms"] for r in rows} == pytest.approx(EXPECTED, abs=1e-9)
    assert all(r["ok"] and r["case"] == CASE for r in rows)


def test_a_figure_6_percent_off_fails_and_main_exits_4(tmp_path, capsys):
    rows, db = _rows(tmp_path, step=EXPECTED["step"] * 1.06)
    assert [r["figure"] for r in rows if not r["ok"]] == ["step"]
    out = tmp_path / "p.times.json"
    assert nsys_times.main([str(db), str(tmp_path / "p.bench.json"), str(out)]) == 4
    written = json.loads(out.read_text())
    assert written == rows and {"case", "figure", "nsys_ms", "suite_ms", "ok"} <= set(written[0])
    assert "MISMATCH" in capsys.readouterr().out


def test_small_figures_pass_within_the_absolute_floor(tmp_path):
    rows, _ = _rows(tmp_path, h2d=EXPECTED["h2d"] + 0.15)  # 15% but 0.15 ms < 0.2 ms
    assert all(r["ok"] for r in rows)
    rows, _ = _rows(tmp_path, h2d=EXPECTED["h2d"] + 0.25)
    assert [r["figure"] for r in rows if not r["ok"]] == ["h2d"]


def test_missing_counter_is_not_ok(tmp_path):
    db = one_step(tmp_path / "p.sqlite").close()
    bench = bench_json(tmp_path / "p.bench.json")
    doc = json.loads(bench.read_text())
    del doc["benchmarks"][0]["cpu_add_ms"]
    bench.write_text(json.dumps(doc))
    rows = nsys_times.compare(db, bench)
    assert [r["figure"] for r in rows if not r["ok"]] == ["cpu_add"]


def test_database_without_kernel_table_still_gives_the_copies(tmp_path):
    db = one_step(tmp_path / "p.sqlite")
    db.con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    db.close()
    rows = nsys_times.compare(tmp_path / "p.sqlite", bench_json(tmp_path / "p.bench.json"))
    got = {r["figure"]: r["nsys_ms"] for r in rows}
    assert got["backward"] == 0 and got["d2h"] == pytest.approx(2.0) and got["nccl"] == pytest.approx(2.0)


def test_no_step_of_the_case_exits_1(tmp_path):
    db = one_step(tmp_path / "p.sqlite")
    db.con.execute("DELETE FROM NVTX_EVENTS WHERE text LIKE 'step %' OR textId IS NOT NULL")
    db.close()
    out = tmp_path / "t.json"
    assert nsys_times.main([str(tmp_path / "p.sqlite"), str(bench_json(tmp_path / "b.json")), str(out)]) == 1
    assert json.loads(out.read_text()) == []


def test_a_later_case_on_new_threads_does_not_lend_its_host_tasks(tmp_path):
    """Each case may run on new rank threads: the CPU adds of a later case (another thread, after
    this step's end and the later step's start) are not this case's, and a finalize host task
    (the host division) before the next step ends this step as the suite's step_ms does."""
    from nsys_fixture import PID, WORKER
    db = one_step(tmp_path / "p.sqlite")
    db.range("finalize", 11.5, 12.0, tid=WORKER)  # the host scale of the offloaded shard
    later_rank, later_worker = PID + 7, PID + 8
    db.range("step 1 accum/model:x/later", 30.0, 31.0, tid=later_rank)
    db.range("cpu_add", 32.0, 40.0, tid=later_worker)
    rows = nsys_times.compare(db.close(), bench_json(tmp_path / "p.bench.json", step=11.0))
    got = {r["figure"]: r["nsys_ms"] for r in rows if r["case"] == CASE}
    assert got["cpu_add"] == pytest.approx(EXPECTED["cpu_add"])
    assert got["step"] == pytest.approx(11.0)  # 1.0 ms to the finalize's 12.0 ms
