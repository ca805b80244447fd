"""The report's overlap table (tables.overlap_table) on the committed one-H200 overlap run."""

from __future__ import annotations

import json
import statistics

from conftest import ROOT

from shardaccum_report import tables
from shardaccum_report.loading import load_runs

OVERLAP_RUN = ROOT / "reports" / "h200-overlap" / "run-gemm.json"


def test_each_row_is_the_json_medians_and_the_sum_of_backward_and_reduce_scatter():
    run = load_runs([OVERLAP_RUN])
    table = tables.overlap_table(run.cases)
    assert table is not None
    entries = [e for e in json.loads(OVERLAP_RUN.read_text())["benchmarks"] if e.get("run_type") == "iteration"]
    assert len(entries) == 3
    for e in entries:
        bw, rs = e["compute_ms"], e["nccl_ms"]
        row = f"| {statistics.median([e['step_ms']]):.3f} | {bw:.3f} | {rs:.3f} | {bw + rs:.3f} | " \
              f"{e['exposed_comm_ms']:.3f} | {100 * e['overlap_fraction']:.1f}% |"
        assert row in table, (row, table)


def test_no_table_without_the_overlap_counters():
    run = load_runs([ROOT / "reports" / "h200x2-llama2-7b" / "run.json"])  # before issue 15
    assert tables.overlap_table(run.cases) is None
