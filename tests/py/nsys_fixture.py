"""A hand-built `nsys export --type sqlite` database: the subset of nsys' schema nsys_times.py reads
(NVTX_EVENTS, StringIds, CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _RUNTIME; no TARGET_INFO_* tables),
with one profiled step of one world-1 case laid out in ms so that every figure is known."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

CASE = ("accum/model:uniform:16x64M/world:1/schedule:nnnS/binding:data/offload:cpu-add/mode:flag/"
        "dtype:fp32-fp32-fp32")
PID = 4242 << 24               # nsys' globalPid; a thread's globalTid is globalPid + tid
RANK, WORKER = PID + 1, PID + 2
H2D, D2H, D2D = 1, 2, 8
# The figures the layout below gives, in ms per step.
EXPECTED = {"nccl": 2.0, "backward": 3.0, "h2d": 1.0, "d2h": 2.0, "cpu_add": 2.0, "step": 10.5}

SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,
  shortName INTEGER, mangledName INTEGER, gridX INTEGER, blockX INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
"""


def ns(ms: float) -> int:
    return round(ms * 1e6)


class Db:
    """Builds the database row by row (times in ms)."""

    def __init__(self, path: Path):
        self.path = path
        path.unlink(missing_ok=True)
        self.con = sqlite3.connect(path)
        self.con.executescript(SCHEMA)
        self.strings: dict[str, int] = {}
        self.corr = 0

    def string(self, value: str) -> int:
        if value not in self.strings:
            self.strings[value] = len(self.strings) + 1
            self.con.execute("INSERT INTO StringIds VALUES (?, ?)", (self.strings[value], value))
        return self.strings[value]

    def domain(self, name: str, domain_id: int) -> None:
        self.con.execute("INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (0, 75, ?, ?, ?)",
                         (name, RANK, domain_id))

    def range(self, name: str, start: float, end: float, tid: int = RANK, domain_id: int = 1,
              registered: bool = False) -> None:
        text, text_id = (None, self.string(name)) if registered else (name, None)
        self.con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId) "
                         "VALUES (?, ?, 59, ?, ?, ?, ?)", (ns(start), ns(end), text, tid, text_id, domain_id))

    def _call(self, at: float, tid: int, api: str) -> int:
        self.corr += 1
        self.con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, 0)",
                         (ns(at), ns(at) + 1000, tid, self.corr, self.string(api)))
        return self.corr

    def kernel(self, name: str, launched: float, start: float, end: float, tid: int = RANK) -> None:
        corr = self._call(launched, tid, "cudaLaunchKernel")
        sid = self.string(name)
        self.con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 7, ?, ?, ?, ?, ?, 1, 1)",
                         (ns(start), ns(end), corr, PID, sid, sid, sid))

    def memcpy(self, kind: int, launched: float, start: float, end: float, tid: int = RANK) -> None:
        corr = self._call(launched, tid, "cudaMemcpyAsync")
        self.con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, 9, ?, ?, 1024, ?, 0, 0)",
                         (ns(start), ns(end), corr, PID, kind))

    def close(self) -> Path:
        self.con.commit()
        self.con.close()
        return self.path


def one_step(path: Path, registered: bool = False) -> Db:
    """The step of CASE: generator kernel 3 ms (in backward), the reduce-scatter a 2 ms D2D memcpy
    (world 1) and a stamp kernel (excluded), a 2 ms D2H, a 2 ms cpu_add on the host task's worker
    thread after the host's step range ended and a 1 ms H2D that waited for it; NCCL set-up before and the oracle's read-back
    after, neither in the step. The step: 1.0 ms (range start) to 11.5 ms (the H2D's end)."""
    db = Db(path)
    db.domain("shardaccum", 1)
    db.domain("other", 2)
    db.range("reduce_scatter", 1.95, 2.05, domain_id=2)  # another domain's range: around the D2H's launch
    db.kernel("ncclDevKernel_Init", 0.5, 0.5, 0.8)
    db.range(f"step 1 {CASE}", 1.0, 3.0, registered=registered)
    db.range("backward", 1.1, 1.5, registered=registered)
    db.kernel("shardaccum_generate_kernel", 1.2, 1.3, 4.3)
    db.range("reduce_scatter", 1.6, 1.9, registered=registered)
    db.kernel("void shardaccum_nccl_stamp(unsigned long*)", 1.65, 4.3, 4.31)
    db.memcpy(D2D, 1.7, 4.31, 6.31)
    db.kernel("void shardaccum_nccl_gate(unsigned int*)", 1.8, 11.6, 13.0)  # would widen nccl and step
    db.memcpy(D2H, 2.0, 6.31, 8.31)
    db.range("cpu_add", 8.4, 10.4, tid=WORKER, registered=registered)
    db.memcpy(H2D, 2.1, 10.5, 11.5)  # enqueued in the step range, held back until the CPU add is done
    db.memcpy(D2H, 20.0, 20.0, 25.0)  # the oracle's read-back: after the step range, on the rank thread
    return db


def bench_json(path: Path, **suite_ms: float) -> Path:
    """NAME.bench.json with CASE's counters at EXPECTED unless given (figure=ms)."""
    counters = {"nccl_ms": "nccl", "backward_ms": "backward", "h2d_ms": "h2d", "d2h_ms": "d2h",
                "cpu_add_ms": "cpu_add", "step_ms": "step"}
    entry = {"name": CASE + "/iterations:1/manual_time", "run_name": CASE + "/iterations:1/manual_time",
             "run_type": "iteration", "iterations": 1}
    for counter, fig in counters.items():
        entry[counter] = suite_ms.get(fig, EXPECTED[fig])
    path.write_text(json.dumps({"context": {"backend": "cuda"}, "benchmarks": [entry]}))
    return path
