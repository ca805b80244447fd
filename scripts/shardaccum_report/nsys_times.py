"""profile.sh's time check: per case, figures from an `nsys export --type sqlite` database against
the suite's counters of the same run (NAME.bench.json). Standard library only: profile.sh runs it
with the GPU machine's python3.

Figures, per case, step and rank (then the mean over the case's steps and the max over ranks, as
the suite's counters are; docs/DESIGN.md §7), each the union (GPU or host projection) of:
  nccl      kernels and memcpys launched inside `reduce_scatter` ranges (at world 1 NCCL's
            reduce-scatter is a device-to-device memcpy, not a kernel)           vs nccl_ms
  backward  kernels launched inside `backward` ranges (generator, GEMMs)        vs backward_ms
  h2d, d2h  memcpys of that kind launched in the step                            vs h2d_ms, d2h_ms
  cpu_add   the host's `cpu_add` ranges in the step                              vs cpu_add_ms
  step      the `step N CASE` range joined with the GPU work launched in it and its host tasks
            (cpu_add and finalize ranges on the workers): first start to last end vs step_ms
"Launched in" a range: the CUDA API call (runtime or driver) that made the work started inside it
on the range's thread. The host tasks' worker threads (threads without step ranges) count for the
step of their process whose range started last before them, until the process's next step range
after that step's end (whatever thread runs it: a later case may run on new rank threads).
At world > 1 in one process the workers of all ranks count for each rank (their ops run together).
NVTX ranges are those of domain `shardaccum` (all ranges when the database names no such domain).
The suite's gate and stamp kernels (names containing GATE_KERNELS) count in no figure.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

H2D, D2H = 1, 2  # CUPTI_ACTIVITY_MEMCPY_KIND_HTOD / DTOH (nsys' copyKind)
GATE_KERNELS = ("shardaccum_nccl_gate", "shardaccum_nccl_stamp")
PUSH_POP, START_END, DOMAIN_CREATE = 59, 60, 75  # NVTX_EVENTS.eventType
TID_BITS = 1 << 24  # nsys' globalTid = globalPid + tid
FIGURES = {"nccl": "nccl_ms", "backward": "backward_ms", "h2d": "h2d_ms", "d2h": "d2h_ms",
           "cpu_add": "cpu_add_ms", "step": "step_ms"}
REL_TOLERANCE = 0.05
ABS_TOLERANCE_MS = 0.2
_GB_SUFFIX = re.compile(r"(/(iterations|repeats|threads|min_time|min_warmup_time):[^/]*|/manual_time|/real_time)+$")
_STEP = re.compile(r"step (\d+) (.+)$")


@dataclass(frozen=True)
class Range:
    """An NVTX range (ns)."""

    name: str
    start: int
    end: int
    tid: int


@dataclass(frozen=True)
class Work:
    """A kernel or memcpy (ns) and the API call that launched it (its thread and start)."""

    kind: str        # "kernel" or "memcpy"
    name: str
    copy_kind: int | None
    start: int
    end: int
    call_tid: int | None
    call_start: int | None


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def read_ranges(con: sqlite3.Connection) -> list[Range]:
    """The push/pop and start/end ranges of domain shardaccum (names from text or StringIds)."""
    tables = _tables(con)
    if "NVTX_EVENTS" not in tables:
        return []
    cols = _columns(con, "NVTX_EVENTS")
    text = "n.text"
    if "StringIds" in tables and "textId" in cols:
        text = "COALESCE(n.text, (SELECT value FROM StringIds WHERE id = n.textId))"
    where = f"n.eventType IN ({PUSH_POP}, {START_END}) AND n.end IS NOT NULL"
    if "domainId" in cols:
        ids = [r[0] for r in con.execute(
            f"SELECT n.domainId FROM NVTX_EVENTS n WHERE n.eventType = {DOMAIN_CREATE} AND {text} = 'shardaccum'")]
        if ids:
            where += " AND n.domainId IN (%s)" % ",".join(str(int(i)) for i in ids)
    return [Range(str(name or ""), int(s), int(e), int(t)) for name, s, e, t in con.execute(
        f"SELECT {text}, n.start, n.end, n.globalTid FROM NVTX_EVENTS n WHERE {where}")]


def read_work(con: sqlite3.Connection) -> list[Work]:
    """Kernels and memcpys with their launching call (None when no API table has it)."""
    tables = _tables(con)
    api = [t for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER") if t in tables]
    calls = " UNION ALL ".join(f"SELECT correlationId, globalTid, start FROM {t}" for t in api)
    found: list[Work] = []
    for table, kind in (("CUPTI_ACTIVITY_KIND_KERNEL", "kernel"), ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy")):
        if table not in tables:
            continue
        cols = _columns(con, table)
        if kind == "kernel":
            name_col = next((c for c in ("demangledName", "shortName", "mangledName") if c in cols), None)
            name = (f"(SELECT value FROM StringIds WHERE id = w.{name_col})"
                    if name_col and "StringIds" in tables else "''")
            copy_kind = "NULL"
        else:
            name, copy_kind = "''", "w.copyKind"
        # Correlation ids are per process: match the call's process where the table names it.
        same_pid = f" AND c.globalTid - (c.globalTid % {TID_BITS}) = w.globalPid" if "globalPid" in cols else ""
        join = f"LEFT JOIN ({calls}) c ON c.correlationId = w.correlationId{same_pid}" if api else ""
        call_cols = "c.globalTid, c.start" if api else "NULL, NULL"
        for n, ck, s, e, ct, cs in con.execute(
                f"SELECT {name}, {copy_kind}, w.start, w.end, {call_cols} FROM {table} w {join}"):
            found.append(Work(kind, str(n or ""), ck, int(s), int(e), ct, cs))
    return [w for w in found if not any(g in w.name for g in GATE_KERNELS)]


def _union_ms(spans: list[tuple[int, int]]) -> float:
    """The length of a union of [start, end) ns intervals, in ms."""
    total, reach = 0, None
    for s, e in sorted(spans):
        if reach is None or s > reach:
            total += e - s
            reach = e
        elif e > reach:
            total += e - reach
            reach = e
    return total / 1e6


def _inside(t: int | None, ranges: list[Range]) -> bool:
    return t is not None and any(r.start <= t < r.end for r in ranges)


def step_figures(ranges: list[Range], work: list[Work]) -> dict[str, dict[int, dict[str, list[float]]]]:
    """{case: {rank thread: {figure: [ms per step]}}} from the step ranges and what they launched."""
    steps = sorted((r for r in ranges if _STEP.match(r.name)), key=lambda r: r.start)
    step_tids = {r.tid for r in steps}
    by_tid: dict[int, list[Range]] = {}
    for r in ranges:
        by_tid.setdefault(r.tid, []).append(r)
    found: dict[str, dict[int, dict[str, list[float]]]] = {}
    for i, s in enumerate(steps):
        case = _STEP.match(s.name).group(2)
        pid = s.tid - s.tid % TID_BITS
        # Until the process's next step begins (any rank thread: a case may run on new threads,
        # and a later case's host tasks must not count here), not only this thread's next step.
        later = [r.start for r in steps[i + 1:] if r.tid - r.tid % TID_BITS == pid and r.start >= s.end]
        until = later[0] if later else float("inf")

        def worker(tid: int | None, t: int | None) -> bool:
            return (tid is not None and tid not in step_tids and tid - tid % TID_BITS == pid
                    and t is not None and s.start <= t < until)

        own = [r for r in by_tid.get(s.tid, []) if s.start <= r.start < s.end]
        launched = [w for w in work if (w.call_tid == s.tid and s.start <= (w.call_start or -1) < s.end)
                    or worker(w.call_tid, w.call_start)]
        cpu = [r for r in ranges if r.name == "cpu_add" and (r in own or worker(r.tid, r.start))]
        # The step's other host tasks (the host division of an offloaded shard: finalize ranges on
        # the workers) end the step as the suite's step_ms does.
        tasks = cpu + [r for r in ranges if r.name == "finalize" and worker(r.tid, r.start)]

        def within(name: str) -> list[Work]:
            rs = [r for r in own if r.name == name]
            return [w for w in launched if w.call_tid == s.tid and _inside(w.call_start, rs)]
        spans = [(s.start, s.end)] + [(w.start, w.end) for w in launched] + [(r.start, r.end) for r in tasks]
        fig = {
            "nccl": _union_ms([(w.start, w.end) for w in within("reduce_scatter")]),
            "backward": _union_ms([(w.start, w.end) for w in within("backward") if w.kind == "kernel"]),
            "h2d": _union_ms([(w.start, w.end) for w in launched if w.kind == "memcpy" and w.copy_kind == H2D]),
            "d2h": _union_ms([(w.start, w.end) for w in launched if w.kind == "memcpy" and w.copy_kind == D2H]),
            "cpu_add": _union_ms([(r.start, r.end) for r in cpu]),
            "step": (max(e for _, e in spans) - min(b for b, _ in spans)) / 1e6,
        }
        per = found.setdefault(case, {}).setdefault(s.tid, {})
        for k, v in fig.items():
            per.setdefault(k, []).append(v)
    return found


def suite_figures(bench_path: str | Path) -> dict[str, dict[str, float | None]]:
    """{case name: {figure: the suite's counter (ms per step, max over ranks)}} of NAME.bench.json's
    iteration entries without an error (the first repetition of each case)."""
    doc = json.loads(Path(bench_path).read_text(encoding="utf-8"))
    found: dict[str, dict[str, float | None]] = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        case = _GB_SUFFIX.sub("", str(b.get("run_name") or b.get("name", "")))
        if case not in found:
            found[case] = {fig: (float(b[c]) if isinstance(b.get(c), (int, float)) else None)
                           for fig, c in FIGURES.items()}
    return found


def agrees(nsys_ms: float, suite_ms: float | None) -> bool:
    """Within REL_TOLERANCE of the suite's figure, or ABS_TOLERANCE_MS for small ones."""
    return suite_ms is not None and abs(nsys_ms - suite_ms) <= max(REL_TOLERANCE * suite_ms, ABS_TOLERANCE_MS)


def compare(db_path: str | Path, bench_path: str | Path) -> list[dict]:
    """The rows of NAME.times.json: {case, figure, nsys_ms, suite_ms, ok} for every case of the bench
    JSON that nsys saw a step of, in the bench JSON's order, FIGURES' order within a case."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        nsys = step_figures(read_ranges(con), read_work(con))
    finally:
        con.close()
    rows = []
    for case, suite in suite_figures(bench_path).items():
        if case not in nsys:
            continue
        for fig in FIGURES:
            # Per rank the mean over its steps; the max over ranks, as the suite's counters.
            value = max(sum(per[fig]) / len(per[fig]) for per in nsys[case].values())
            rows.append({"case": case, "figure": fig, "nsys_ms": round(value, 4),
                         "suite_ms": suite[fig], "ok": agrees(value, suite[fig])})
    return rows


def table(rows: list[dict]) -> str:
    """The rows as a plain-text table."""
    def ms(v):
        return "–" if v is None else f"{v:.3f}"
    width = max([len(r["case"]) for r in rows] + [4])
    lines = [f"{'case':<{width}}  {'figure':<8}  {'nsys ms':>10}  {'suite ms':>10}  check"]
    for r in rows:
        lines.append(f"{r['case']:<{width}}  {r['figure']:<8}  {ms(r['nsys_ms']):>10}  {ms(r['suite_ms']):>10}  "
                     f"{'ok' if r['ok'] else 'OFF'}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """`python -m shardaccum_report.nsys_times DB BENCH.json OUT.times.json`: writes OUT, prints the
    table; 0 every figure agrees, 4 one is off, 1 no case of the bench JSON was seen by nsys."""
    db_path, bench_path, out_path = argv
    rows = compare(db_path, bench_path)
    Path(out_path).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    if not rows:
        print(f"no step range of any case of {bench_path} in {db_path}: no time to compare")
        return 1
    print(table(rows))
    off = [r for r in rows if not r["ok"]]
    print(f"times: {len(rows) - len(off)} of {len(rows)} figures within {100 * REL_TOLERANCE:g}% "
          f"(or {ABS_TOLERANCE_MS:g} ms) -> {'MATCH' if not off else 'MISMATCH'}")
    return 4 if off else 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
