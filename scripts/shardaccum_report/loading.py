"""Reading and validating shardaccum_bench's Google Benchmark JSON into runs, cases and repetitions.

Input: files written by ``shardaccum_bench --benchmark_out=FILE --benchmark_out_format=json``.
Every problem with a file raises InputError naming the file; missing counters are not errors (a
case simply has no value for them, and the report says so).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from . import strict_json
from .case import CaseKey, Group, parse_case_name
from .counters import CEILING_KEYS, CORRECT, MAX_REL_ERR, SIGNED_COUNTERS
from .errors import InputError
from .real import RealKey, is_real_name, parse_real_name
from .registry import Registry

# Google Benchmark's own numeric fields of an entry: everything else numeric is a counter.
_STANDARD_FIELDS = frozenset({
    "family_index", "per_family_instance_index", "repetitions", "repetition_index", "threads",
    "iterations", "real_time", "cpu_time",
})
# The case's K and world size, written in every entry (bench/bench_cases.cpp): identity, not
# counters; checked against the name, which the key is read from.
_CASE_FIELDS = frozenset({"k", "world_size"})
_TIME_UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
_HOW_TO_MAKE = "shardaccum_bench --benchmark_out=FILE --benchmark_out_format=json"
# A label's "host threads N (the rank's share)" (bench/case_matrix.cpp host_threads_setting since
# 2026-12-06): --host-threads 0 on a machine whose share is N.
RANK_SHARE = re.compile(r"^host threads \d+ \(the rank's share\)$")


@dataclass
class RunContext:
    """The 'context' object of one file: Google Benchmark's keys plus shardaccum's custom strings."""

    raw: dict

    def get(self, key: str) -> str | None:
        """A context value as a string, or None when absent or empty."""
        value = self.raw.get(key)
        return None if value is None or value == "" else str(value)

    @property
    def backend(self) -> str | None:
        """'host' or 'cuda' (None when the file does not say)."""
        return self.get("backend")

    @property
    def is_host(self) -> bool:
        return self.backend == "host"

    @property
    def time_label(self) -> str:
        """How to name the run's times in titles and axis labels."""
        if self.is_host:
            return "host wall-clock, not GPU time"
        return self.get("time_domain") or ("GPU events" if self.backend == "cuda" else "time domain unknown")

    @property
    def ceilings(self) -> dict[str, float]:
        """Measured ceilings in GB/s by context key (ceiling_*_gbps); absent or unparsable ones left out."""
        found = {}
        for key in CEILING_KEYS:
            try:
                value = float(self.raw[key])
            except (KeyError, TypeError, ValueError):
                continue
            if math.isfinite(value) and 0 < value <= strict_json.MAX_MAGNITUDE:
                found[key] = value
        return found


@dataclass
class Repetition:
    """One iteration entry: the counters of one repetition of a case (times in ms, bytes in bytes)."""

    index: int
    counters: dict[str, float]
    real_time_ms: float | None = None
    cpu_time_ms: float | None = None
    error: str | None = None
    label: str = ""  # Google Benchmark's label: "...; bound by <term>" names the case's bound

    def get(self, metric: str) -> float | None:
        """A counter, or real_time/cpu_time in ms; None when absent."""
        if metric == "real_time":
            return self.real_time_ms
        if metric == "cpu_time":
            return self.cpu_time_ms
        return self.counters.get(metric)


@dataclass
class Case:
    """All repetitions of one case from one file, and Google Benchmark's aggregates of them. `key` is a
    CaseKey for a suite case, a RealKey for a real system's (nothing below depends on which)."""

    key: CaseKey | RealKey
    source: str
    repetitions: list[Repetition] = field(default_factory=list)
    aggregates: dict[str, dict[str, float]] = field(default_factory=dict)
    aggregate_error: str | None = None
    # The repetitions an aggregate entry says it summarises (its "repetitions"); None without one.
    aggregate_repetitions: int | None = None

    @property
    def aggregates_only(self) -> bool:
        """Google Benchmark aggregates without the repetitions (--benchmark_report_aggregates_only):
        medians and means, no per-repetition value, so no spread and no largest max_rel_err."""
        return not self.repetitions and bool(self.aggregates)

    @property
    def ok_repetitions(self) -> list[Repetition]:
        return [r for r in self.repetitions if r.error is None]

    @property
    def error(self) -> str | None:
        """The first error message of any repetition (Google Benchmark's SkipWithError), or None."""
        for r in self.repetitions:
            if r.error is not None:
                return r.error
        return self.aggregate_error

    def samples(self, metric: str) -> list[float]:
        """Finite per-repetition values of a counter (repetitions without an error), in file order."""
        values = (r.get(metric) for r in self.ok_repetitions)
        return [v for v in values if v is not None and math.isfinite(v)]

    def has(self, metric: str) -> bool:
        """Whether any repetition or aggregate carries the counter."""
        return any(r.get(metric) is not None for r in self.ok_repetitions) or any(
            metric in agg for agg in self.aggregates.values())

    def value(self, metric: str) -> float | None:
        """The median over repetitions of a counter; Google Benchmark's median (or mean) aggregate
        when the file has aggregates only; None when no repetition has a finite value."""
        samples = self.samples(metric)
        if samples:
            return statistics.median(samples)
        if not self.ok_repetitions:
            for name in ("median", "mean"):
                value = self.aggregates.get(name, {}).get(metric)
                if value is not None and math.isfinite(value):
                    return value
        return None

    @property
    def unnamed_settings(self) -> str:
        """What the case ran under that its name leaves out when defaulted, from the label: its
        'lookahead V', 'device add grid G', 'comm priority P', (where spent) 'hook host N us' and (offload
        cpu-add-pageable) 'host threads N' segments (bench/bench_cases.cpp), '; '-joined, e.g. 'lookahead unbounded; device add grid torch'; ''
        when no repetition's label has them. 'host threads N (the rank's share)' reads as 'host threads
        rank's share', as labels said before 2026-12-06: the setting is --host-threads 0 whatever the
        machine's share (which the context's host_add_threads gives). A label with a device add grid but no
        comm priority is from between the two flags (2026-12-05/06), when every comm stream ran at the
        device's greatest: it reads 'comm priority greatest'."""
        for r in self.ok_repetitions:
            parts = [RANK_SHARE.sub("host threads rank's share", p.strip()) for p in r.label.split(";")]
            found = [p for p in parts
                     if p.startswith(("lookahead ", "device add grid ", "comm priority ", "hook host ",
                                      "host threads "))]
            if any(p.startswith("device add grid ") for p in found) and \
                    not any(p.startswith("comm priority ") for p in found):
                at = next(i for i, p in enumerate(found) if p.startswith("device add grid ")) + 1
                found.insert(at, "comm priority greatest")
            if found:
                return "; ".join(found)
        return ""

    @property
    def bound_by(self) -> str | None:
        """The term that sets bound_ms (docs/DESIGN.md §6), from the label's 'bound by <term>'; None
        when no repetition's label names one."""
        for r in self.ok_repetitions:
            m = re.search(r"(?:^|; )bound by ([^;]+)", r.label)
            if m:
                return m.group(1).strip()
        return None

    @property
    def correct(self) -> bool | None:
        """False when any repetition has correct == 0, True when all that have it are 1, else None."""
        values = [r.counters[CORRECT] for r in self.ok_repetitions if CORRECT in r.counters]
        if not values and not self.ok_repetitions:
            mean = self.aggregates.get("mean", {}).get(CORRECT)
            values = [] if mean is None else [mean]
        if not values:
            return None
        return all(v >= 0.999 for v in values)

    @property
    def max_rel_err(self) -> float | None:
        """The largest max_rel_err over repetitions; NaN or inf when any repetition had one. For
        aggregates only, the mean aggregate's (Google Benchmark writes no max): the report says so."""
        values = [r.counters[MAX_REL_ERR] for r in self.ok_repetitions if MAX_REL_ERR in r.counters]
        if not values and not self.ok_repetitions:
            worst = self.aggregates.get("mean", {}).get(MAX_REL_ERR)
            values = [] if worst is None else [worst]
        if not values:
            return None
        if any(math.isnan(v) for v in values):
            return math.nan
        return max(values)

    @property
    def status(self) -> str:
        """'error', 'wrong', 'correct' or 'unknown' (no correct counter)."""
        if self.error is not None:
            return "error"
        correct = self.correct
        return "unknown" if correct is None else ("correct" if correct else "wrong")

    @property
    def repetition_count(self) -> int:
        """The repetitions without an error; for aggregates only, the count their entries give."""
        if self.aggregates_only:
            return self.aggregate_repetitions or 0
        return len(self.ok_repetitions)


@dataclass
class RunFile:
    """One benchmark JSON file: its context, its cases and what was noticed while reading it."""

    path: str
    context: RunContext
    cases: dict[CaseKey, Case]
    registry: Registry
    notes: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """'real' for a run of bench/real/run.py (cases named real/...), else 'suite'."""
        return "real" if any(isinstance(k, RealKey) for k in self.cases) else "suite"


@dataclass
class Run:
    """The cases of one or more files of the same backend, each case from exactly one file."""

    files: list[RunFile]
    cases: list[Case]
    notes: list[str] = field(default_factory=list)

    @property
    def registry(self) -> Registry:
        """The registry the report orders and names by: the first file's (each case keeps its own)."""
        return self.files[0].registry

    @property
    def kind(self) -> str:
        """'real' (bench/real/run.py's cases, keyed by RealKey) or 'suite' (CaseKey); never mixed."""
        return self.files[0].kind if self.files else "suite"

    @property
    def backend(self) -> str | None:
        backends = {f.context.backend for f in self.files if f.context.backend}
        return backends.pop() if len(backends) == 1 else None

    @property
    def is_host(self) -> bool:
        return any(f.context.is_host for f in self.files)

    @property
    def time_label(self) -> str:
        """The time domain for titles and labels ('host wall-clock, not GPU time' on the host backend)."""
        labels = {f.context.time_label for f in self.files}
        if self.is_host:
            return "host wall-clock, not GPU time"
        return labels.pop() if len(labels) == 1 else "time domain unknown"

    def groups(self) -> dict[Group, list[Case]]:
        """Cases by group (model, world, K, dtype), groups and cases in report order."""
        by_group: dict[Group, list[Case]] = {}
        for case in sorted(self.cases, key=lambda c: c.key.sort_key):
            by_group.setdefault(case.key.group, []).append(case)
        return dict(sorted(by_group.items(), key=lambda item: item[0].sort_key))

    def by_key(self) -> dict[CaseKey, Case]:
        return {c.key: c for c in self.cases}


def _read_json(path: Path) -> object:
    strict_json.refuse_special_file(path, "Google Benchmark JSON")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, expected a JSON file") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "is not UTF-8 text, expected Google Benchmark JSON") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None
    if not text.strip():
        raise InputError(str(path), f"empty file, expected Google Benchmark JSON (write it with {_HOW_TO_MAKE})")
    return strict_json.loads(text, str(path), "Google Benchmark JSON")


def _number(entry: dict, key: str, where: str, i: int) -> float | None:
    """A counter's value; None when null or not a number (missing). InputError when out of range:
    beyond strict_json.MAX_MAGNITUDE, or below 0 (every figure the suite writes is a time, a size, a
    count, a rate, an error or a verdict: none is negative), except the differences of SIGNED_COUNTERS."""
    try:
        value = strict_json.number(entry.get(key))
    except ValueError as e:
        raise InputError(where, f"benchmarks[{i}] ({entry.get('name')}): '{key}' = {e}") from None
    if value is not None and value < 0 and key not in SIGNED_COUNTERS:
        raise InputError(where, f"benchmarks[{i}] ({entry.get('name')}): '{key}' = {value:g} is negative; no figure "
                                "the suite writes is")
    return value


def _entry_times_ms(entry: dict, where: str, i: int) -> tuple[float | None, float | None]:
    scale = _TIME_UNIT_TO_MS.get(str(entry.get("time_unit", "ms")))
    if scale is None:
        return None, None
    real, cpu = (_number(entry, k, where, i) for k in ("real_time", "cpu_time"))
    return (None if real is None else real * scale), (None if cpu is None else cpu * scale)


# The suite's counters by their names' endings (bench/counters.cpp): a number or null, never text.
_NUMERIC_COUNTER = re.compile(r"(_ms|_bytes|_gbps|_tflops|_ratio|_frac\w*|_err|_bound|_calls|_fraction|_gelems)"
                              r"(_rank\d+)?$|^correct$")


def _counters(entry: dict, where: str, i: int) -> dict[str, float]:
    """The entry's counters; a null one (Google Benchmark's NaN, written as null) is left out.

    Raises InputError naming the case and the field when one of the suite's counters (by its name,
    _NUMERIC_COUNTER) holds text, a boolean, a list or an object: the file was edited or is not the
    suite's, and reading the counter as missing would draw, say, a step's spread without its step."""
    found = {}
    for key in entry:
        raw = entry[key]
        if isinstance(raw, (str, bool, list, dict)) and _NUMERIC_COUNTER.search(key):
            shown = json.dumps(raw)[:40]
            raise InputError(where, f"benchmarks[{i}] ({entry.get('name')}): '{key}' = {shown} is not a number; "
                                    "the suite writes every counter as a number (or null)")
        number = _number(entry, key, where, i)
        if number is not None and key not in _STANDARD_FIELDS and key not in _CASE_FIELDS:
            found[key] = number
    return found


def _check_case_fields(entry: dict, key: CaseKey, where: str, i: int) -> None:
    """An entry's 'k' and 'world_size' (absent in files of older binaries) must be its name's: a run
    of several K or world sizes is grouped by them, so a mismatch is an inconsistent file."""
    for field_name, expected in (("k", key.k), ("world_size", key.world)):
        value = _number(entry, field_name, where, i)
        if value is not None and value != expected:
            raise InputError(where, f"benchmarks[{i}] ({entry.get('name')}): '{field_name}' = {value:g} but the "
                                    f"name says {expected} (K is the schedule's length, world size its "
                                    "world: part): the file is inconsistent")


def load_run_file(path: str | Path) -> RunFile:
    """Reads one benchmark JSON file.

    Entries whose name does not start with 'accum/' or 'real/' (other benchmark families) are skipped
    with a note; 'real/' names (bench/real/run.py) are keyed by RealKey, not checked against the registry.
    Raises InputError naming the file when it cannot be read, is empty, is not valid JSON, is not a
    Google Benchmark object, has no or an empty 'benchmarks' list, has an entry without a name or with
    a malformed 'accum/' or 'real/' name, mixes the two, or has no accumulation case at all.
    """
    path = Path(path)
    where = str(path)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise InputError(where, f"top level is a JSON {strict_json.json_type_name(data)}, expected an object with "
                                "'context' and 'benchmarks' (Google Benchmark JSON)")
    if "benchmarks" not in data:
        raise InputError(where, f"no 'benchmarks' list: not Google Benchmark JSON output ({_HOW_TO_MAKE})")
    entries = data["benchmarks"]
    if not isinstance(entries, list):
        raise InputError(where, f"'benchmarks' is a JSON {strict_json.json_type_name(entries)}, expected an array")
    if not entries:
        raise InputError(where, "'benchmarks' is empty: the run recorded no case "
                                "(did --benchmark_filter match nothing, or did the run stop early?)")
    context = data.get("context", {})
    if not isinstance(context, dict):
        raise InputError(where, f"'context' is a JSON {strict_json.json_type_name(context)}, expected an object")
    try:
        # Names are read by the registry the run carries (older JSON: the committed one).
        registry = Registry.from_context(context)
    except ValueError as e:
        raise InputError(where, f"context 'registry': {e}") from None
    run_file = RunFile(where, RunContext(context), {}, registry)
    if "context" not in data:
        run_file.notes.append(f"{where}: no 'context': machine, backend and command are unknown")

    skipped = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InputError(where, f"benchmarks[{i}] has no 'name' string")
        run_type = entry.get("run_type", "iteration")
        name = entry.get("run_name") if isinstance(entry.get("run_name"), str) else entry["name"]
        if run_type == "aggregate" and name == entry["name"] and entry.get("aggregate_name"):
            name = name.removesuffix("_" + str(entry["aggregate_name"]))
        try:
            # A real system's case is not a registry strategy: its name is read without the registry.
            key = parse_real_name(name) if is_real_name(name) else parse_case_name(name, registry)
        except ValueError as e:
            raise InputError(where, f"benchmarks[{i}]: {e}") from None
        if key is None:
            skipped += 1
            continue
        if run_file.cases and isinstance(key, RealKey) != (run_file.kind == "real"):
            raise InputError(where, f"benchmarks[{i}] ({name}): the file mixes real-system cases (real/...) with "
                                    "suite cases (accum/...); bench/real/run.py and shardaccum_bench each write "
                                    "their own file")
        # The binary that wrote the names listed its values beside them (a real case has none).
        if "registry" in context and not isinstance(key, RealKey):
            for axis in ("binding", "offload", "mode", "division"):
                value = getattr(key.strategy, axis)
                if value not in registry.axis(axis).names:
                    raise InputError(where, f"benchmarks[{i}]: {axis} {value!r} in {name!r} is not among "
                                            f"the values of the run's own registry "
                                            f"({', '.join(registry.axis(axis).names)}): the file is inconsistent")
        case = run_file.cases.setdefault(key, Case(key, where))
        error = str(entry.get("error_message") or "error without a message") if entry.get(
            "error_occurred") else None
        if run_type == "aggregate":
            if error is not None:
                case.aggregate_error = case.aggregate_error or error
            else:
                case.aggregates[str(entry.get("aggregate_name", "mean"))] = _counters(entry, where, i)
            reps = entry.get("repetitions")
            if isinstance(reps, int) and not isinstance(reps, bool) and reps > 0:
                case.aggregate_repetitions = reps
            continue
        if isinstance(key, CaseKey):
            _check_case_fields(entry, key, where, i)
        real_ms, cpu_ms = _entry_times_ms(entry, where, i)
        index = entry.get("repetition_index")
        index = index if isinstance(index, int) else len(case.repetitions)
        case.repetitions.append(Repetition(index, _counters(entry, where, i), real_ms, cpu_ms, error,
                                           str(entry.get("label") or "")))

    if not run_file.cases:
        raise InputError(where, f"none of the {len(entries)} benchmarks is an accumulation case "
                                "(a name starting 'accum/', or 'real/' for bench/real/run.py)")
    if skipped:
        run_file.notes.append(f"{where}: {skipped} benchmark entries that are not accumulation cases "
                              "(name not starting 'accum/' or 'real/') were left out")
    return run_file


def load_runs(paths: list[str | Path]) -> Run:
    """Reads one or more files into one Run (e.g. world size 2 and 4 from two runs).

    Raises InputError when a file is bad (see load_run_file), when the files mix suite and real-system
    runs (report.py reads both through load_inputs), when they mix backends (host wall-clock and GPU
    times cannot share an axis), or when one case appears in two files.
    """
    if not paths:
        raise InputError("", "no input file given")
    files = [load_run_file(p) for p in paths]
    kinds = {f.path: f.kind for f in files}
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{p}: {k}" for p, k in kinds.items())
        raise InputError("", f"the files mix suite runs (shardaccum_bench) and real-system runs (bench/real/run.py): "
                             f"{listed}; give one kind here (report.py puts the two side by side)")
    return join_files(files)


def load_inputs(paths: list[str | Path]) -> tuple[Run | None, Run | None]:
    """Reads suite and real-system runs given together, in any order: (suite run, real run), None for a
    kind not given. Raises InputError as load_runs does within each kind, and when no file is given."""
    if not paths:
        raise InputError("", "no input file given")
    files = [load_run_file(p) for p in paths]
    suite = [f for f in files if f.kind == "suite"]
    real = [f for f in files if f.kind == "real"]
    return (join_files(suite) if suite else None), (join_files(real) if real else None)


def join_files(files: list[RunFile]) -> Run:
    """The cases of files of one kind as one Run. Raises InputError when they mix backends or share a case."""
    backends = {f.path: f.context.backend for f in files if f.context.backend}
    if len(set(backends.values())) > 1:
        listed = ", ".join(f"{p}: {b}" for p, b in backends.items())
        raise InputError("", f"the files mix backends ({listed}); host wall-clock and GPU times cannot "
                             "share an axis: make one report per backend")
    seen: dict[CaseKey, str] = {}
    cases: list[Case] = []
    for f in files:
        for key, case in f.cases.items():
            if key in seen:
                raise InputError(f.path, f"case {key.name} is also in {seen[key]}: a report joins runs of "
                                         "different cases (e.g. world 2 and world 4); to weigh two runs of "
                                         "the same cases against each other use compare.py")
            seen[key] = f.path
            cases.append(case)
    notes = [n for f in files for n in f.notes]
    for f in files[1:]:
        if f.registry != files[0].registry:  # e.g. a preset that means another strategy
            notes.append(f"{f.path} and {files[0].path} carry different registries (values, descriptions "
                         f"or presets differ): the report names and orders cases by {files[0].path}'s")
    return Run(files, sorted(cases, key=lambda c: c.key.sort_key), notes)
