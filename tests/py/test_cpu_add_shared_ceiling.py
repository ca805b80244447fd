"""The CPU add against the host memory it shared (bench/counters.hpp cpu_add_frac_shared_ceiling, issue 17):
the report shows it beside the CPU add's fraction of the host add ceiling alone, in the table and the
ceilings heat map, where a run carries it; runs from before the counter show no such column."""

from __future__ import annotations

import json

from conftest import ROOT

from shardaccum_report import tables
from shardaccum_report.loading import load_runs
from shardaccum_report.counters import CEILING_FRACTIONS
from shardaccum_report.plots.ceilings import column_label, plot_ceilings

LIMIT_RUN = ROOT / "reports" / "h200-limit-1204e" / "run-synthetic.json"


def _with_shared(tmp_path, value: float = 0.8321):
    doc = json.loads(LIMIT_RUN.read_text(encoding="utf-8"))
    for b in doc["benchmarks"]:
        if "cpu_add_frac_ceiling" in b:
            b["cpu_add_frac_shared_ceiling"] = value
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return load_runs([path])


def test_the_fraction_table_has_the_shared_column_only_where_runs_carry_it(tmp_path):
    cases = [c for c in _with_shared(tmp_path).cases if "uniform" in c.key.model]
    text = tables.fraction_table(cases)
    assert "| CPU add (% of ceiling) | CPU add (shared) (% of ceiling) |" in text
    assert "83.2%" in text  # the shared fraction, on the CPU-add cases
    old = [c for c in load_runs([LIMIT_RUN]).cases if "uniform" in c.key.model]
    assert "shared" not in tables.fraction_table(old)


def test_the_heat_map_names_both_ceilings_of_the_shared_column(tmp_path):
    shared = next(f for f in CEILING_FRACTIONS if f.counter == "cpu_add_frac_shared_ceiling")
    alone = next(f for f in CEILING_FRACTIONS if f.counter == "cpu_add_frac_ceiling")
    ceilings = {"ceiling_host_add_gbps": 154.2, "ceiling_host_add_during_d2h_gbps": 126.3}
    assert column_label(shared, ceilings) == "CPU add (shared)\n154 alone,\n126 beside D2H GB/s"
    assert column_label(alone, ceilings) == "CPU add\n154 GB/s"
    cases = [c for c in _with_shared(tmp_path).cases if "uniform" in c.key.model]
    path = plot_ceilings(cases, ceilings, tmp_path / "c.png", "t")
    assert path is not None and path.stat().st_size > 0
