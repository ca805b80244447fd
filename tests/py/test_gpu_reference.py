"""The report tool on the committed GPU run (reports/h200x2-llama2-7b/run.json, 2x H200): its tables
hold the JSON's values, every plot is written, it is labelled as GPU time, and the run itself
shows what docs/DESIGN.md §3 predicts (bytes equal to the model, the wrong cells wrong)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import ROOT, iteration_entries, run_script, section, table_row

GPU_RUN = ROOT / "reports" / "h200x2-llama2-7b" / "run.json"
ZERO3_SSSS = ("accum/model:llama2-7b/world:2/schedule:SSSS/binding:data-free/offload:gpu-add/mode:flag/"
              "dtype:fp32-fp32-fp32")


@pytest.fixture(scope="module")
def gpu_doc():
    return json.loads(GPU_RUN.read_text())


@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu")
    proc = run_script("report.py", GPU_RUN, "--name", "gpu", "--out-dir", out)
    assert proc.returncode == 0, proc.stderr
    readme = out / "gpu" / "README.md"
    return readme, readme.read_text()


def test_every_plot_is_written_and_linked(gpu_report):
    readme, text = gpu_report
    pngs = sorted(readme.parent.glob("*.png"))
    assert len(pngs) >= 6  # phases, memory, PCIe, Pareto, correctness, ceilings
    for png in pngs:
        assert png.stat().st_size > 10_000
        assert f"]({png.name})" in text


def test_gpu_times_are_not_labelled_host(gpu_report):
    _, text = gpu_report
    assert "host wall-clock" not in text
    assert "gpu events" in text
    assert "2x NVIDIA H200" in text


def test_traffic_table_holds_the_json_bytes(gpu_report, gpu_doc):
    _, text = gpu_report
    (entry,) = iteration_entries(gpu_doc, ZERO3_SSSS)
    row = table_row(section(text, "### PCIe traffic"), "SSSS", "data-free/gpu-add/flag (zero3)")
    assert row[2:4] == [f"{round(entry['h2d_bytes']):,}", f"{round(entry['model_h2d_bytes']):,}"]
    assert row[5:7] == [f"{round(entry['d2h_bytes']):,}", f"{round(entry['model_d2h_bytes']):,}"]
    # docs/DESIGN.md's hand-checked literal for llama2-7b, N=2, fp32, sync, gpu-add.
    assert row[2] == "40,430,493,696" and row[5] == "53,907,324,928"


def test_the_gpu_run_matches_the_design(gpu_doc):
    cases = [b for b in gpu_doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    assert len(cases) == 64 and gpu_doc["context"]["backend"] == "cuda"
    assert gpu_doc["context"]["bytes_source"] == "cupti"
    wrong = 0
    for b in cases:
        assert not b.get("error_occurred"), b["name"]
        assert b["h2d_bytes"] == b["model_h2d_bytes"] and b["d2h_bytes"] == b["model_d2h_bytes"], b["name"]
        assert b["peak_device_bytes"] == b["model_peak_device_bytes"], b["name"]
        if b["correct"] == 0:
            wrong += 1
            assert "offload:copy" in b["name"] or ("mode:shape" in b["name"] and "offload:none" not in b["name"])
            assert "schedule:nnnS" not in b["name"]
    assert wrong == 24
    (ctrl,) = iteration_entries(gpu_doc, ZERO3_SSSS.replace("offload:gpu-add/mode:flag", "offload:copy/mode:shape"))
    assert math.isclose(ctrl["max_rel_err"], math.sqrt(0.75), rel_tol=0.01)
