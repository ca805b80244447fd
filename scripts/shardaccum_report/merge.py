"""Joins the slices of one run (shardaccum_bench --part I/N, one file per slice) into one run JSON.

    python scripts/merge.py PART1.json PART2.json ... --out MERGED.json

The parts must be parts 1..N of one N, each exactly once, of the same run: every context key must be
equal except those that are measured or named per process (PER_RUN_KEYS, PER_RUN_PREFIXES) and
`command`, which is compared without its --part, --benchmark_out* and --trace arguments. A case name
may appear in one part only. The merged file is strict JSON (a NaN or infinity becomes null) written
atomically; its context is part 1's with `part: "merged 1..N of N"`, `part_dates` (each part's date,
in part order), `merged_from` (the files) and model/world_size/k joined over the parts. Exit status:
0 written, 2 refused or bad input (the message names the key and the files), 3 internal error.

Runs of bench/real/run.py (cases real/...) are refused, alone or among suite parts: they are not
slices of a --part split (one process per system, each its own context), and report.py and
compare.py read them as they are (report.py takes several at once).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import sys
from pathlib import Path

from .errors import InputError
from .real import is_real_name
from .registry import Registry
from . import strict_json

# Keys that differ between the processes of one run by nature: when and under what load each ran,
# the run's own id, what each slice holds (joined below), and what the cuda backend measures or
# sizes for the cases of its slice (ceilings, pinned arena).
PER_RUN_KEYS = frozenset({"date", "load_avg", "mhz_per_cpu", "run_id", "part", "command", "model", "world_size",
                          "k", "accumulate_kernel_gbps", "accumulate_kernel_frac_device_copy"})
PER_RUN_PREFIXES = ("ceiling_", "pinned_")
JOINED_KEYS = ("model", "world_size", "k")  # comma-separated distinct values, first seen first
_PART = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")
# Arguments of the command that name a slice or its output files; the value is the next argument
# for the flags in _WITH_VALUE.
_WITH_VALUE = ("--part", "--trace", "--benchmark_out", "--benchmark_out_format")


def _words(command: str) -> list[str]:
    """The command's arguments as a shell splits them (shardaccum_bench shell-quotes each,
    bench/cli_values.hpp shell_quote), or split on spaces when no shell could split it (an older
    run's, which joined them unquoted)."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split(" ")


def comparable_command(command: str) -> str:
    """The command without argv[0], --part, --trace and --benchmark_out* (with their values), shell-quoted
    again: what must be equal for slices of one run."""
    args = _words(command)[1:]
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in _WITH_VALUE:
            skip = True
            continue
        if any(a.startswith(flag + "=") for flag in _WITH_VALUE):
            continue
        out.append(a)
    return shlex.join(out)


def _strict(value):
    """A copy of a JSON value with NaN and infinities replaced by None (strict JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_strict(v) for v in value]
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    return value


def _load(path: Path) -> dict:
    # NaN allowed: a part may hold it (Google Benchmark's JSON writer prints a counter it cannot
    # compute so), which the merge turns into null rather than refuse. Huge numbers are refused here:
    # the merge copies values on without reading them field by field as report.py does.
    what = "the output of shardaccum_bench --part I/N --benchmark_out=FILE --benchmark_out_format=json"
    strict_json.refuse_special_file(path, what)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text ({e.reason} at byte {e.start}); give {what}") from None
    doc = strict_json.loads(text, str(path), what, allow_nan=True, refuse_huge=True)
    if not isinstance(doc, dict) or not isinstance(doc.get("context"), dict) or \
            not isinstance(doc.get("benchmarks"), list):
        raise InputError(str(path), "not a Google Benchmark JSON result (needs 'context' and 'benchmarks')")
    if not all(isinstance(e, dict) for e in doc["benchmarks"]):
        raise InputError(str(path), "'benchmarks' holds an entry that is not an object")
    return doc


def _registry_difference(a, b) -> str:
    """The first path at which two registries (JSON strings or objects) differ, e.g.
    ' (at axes[1].values[2].description)', so the message is not two 9 KB strings."""
    def parse(x):
        try:
            return json.loads(x) if isinstance(x, str) else x
        except (ValueError, RecursionError):
            return x

    def first(x, y, path):
        if type(x) is not type(y):
            return path or "the top level"
        if isinstance(x, dict):
            for k in sorted(set(x) | set(y)):
                if k not in x or k not in y:
                    return f"{path}.{k}".lstrip(".")
                found = first(x[k], y[k], f"{path}.{k}")
                if found:
                    return found.lstrip(".")
            return ""
        if isinstance(x, list):
            if len(x) != len(y):
                return f"{path} (length {len(x)} against {len(y)})".lstrip(".")
            for j, (u, v) in enumerate(zip(x, y)):
                found = first(u, v, f"{path}[{j}]")
                if found:
                    return found
            return ""
        return "" if x == y else (path or "the top level")

    if a is None or b is None:
        return " (one has none)"
    where = first(parse(a), parse(b), "")
    return f" (at {where})" if where else " (only in formatting)"


def _part_of(path: Path, context: dict) -> tuple[int, int]:
    text = context.get("part")
    m = _PART.match(str(text)) if text is not None else None
    if not m or int(m.group(1)) > int(m.group(2)):
        raise InputError(str(path), f"context 'part' is {text!r}, not I/N: give the JSON of a run of "
                                    "shardaccum_bench --part I/N (a merged file cannot be merged again)")
    return int(m.group(1)), int(m.group(2))


def _case_name(entry: dict) -> str:
    return str(entry.get("run_name") or entry.get("name"))


def _joined(key: str, values: list, paths: list[Path]) -> str:
    """The parts' comma lists of context `key` joined, each element once. Raises InputError naming the
    file and key when a value is neither text nor a whole number (Google Benchmark writes text)."""
    seen: list[str] = []
    for v, p in zip(values, paths):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (str, int))):
            raise InputError(str(p), f"context '{key}' is {json.dumps(v)}: expected text such as \"2\"")
        for x in ("" if v is None else str(v)).split(","):
            if x and x not in seen:
                seen.append(x)
    return ",".join(seen)


def _check_slice_size(path: Path, context: dict, i: int, n: int, cases: int) -> None:
    """A part holds its whole slice: cases [floor((i-1)M/N), floor(iM/N)) of the M of `matrix_cases`
    (bench/case_matrix.hpp part_range), fewer only under a --benchmark_filter, and never none.
    Raises InputError naming the file: a part cut short would silently lose its cases."""
    if cases == 0:
        raise InputError(str(path), f"part {i}/{n} holds no case; rerun that part")
    try:
        m = int(str(context.get("matrix_cases", "")))
    except ValueError:
        return  # older files without the count: nothing to compare with
    want = i * m // n - (i - 1) * m // n
    filtered = "--benchmark_filter" in str(context.get("command", ""))
    if cases > want or (cases < want and not filtered):
        raise InputError(str(path), f"part {i}/{n} holds {cases} case(s), but its slice of the {m}-case matrix has "
                                    f"{want}; rerun that part")


def merge_docs(paths: list[Path]) -> dict:
    """The merged run of the slice files `paths` (any order). Raises InputError (exit 2) for an unreadable
    file, a context that differs (naming the key and the two files), a part missing, given twice or
    of another N, and a case found in two parts."""
    if not paths:
        raise InputError("", "no input: give the JSON of every part, e.g. p1.json p2.json")
    docs = [(Path(p), _load(p)) for p in paths]
    real = [str(p) for p, doc in docs if any(is_real_name(_case_name(e)) for e in doc["benchmarks"])]
    if real and len(real) < len(docs):
        suite = [str(p) for p, _ in docs if str(p) not in real]
        what = "is a real-system run" if len(real) == 1 else "are real-system runs"
        raise InputError("", f"{', '.join(real)} {what} "
                             f"(bench/real/run.py) and {', '.join(suite)} of shardaccum_bench: different kinds are "
                             "never merged; give both to report.py, which puts real cases beside their presets")
    if real:
        raise InputError("", f"{', '.join(real)}: real-system runs (bench/real/run.py) are not --part slices and "
                             "need no merge: report.py reads several at once (e.g. report.py RUN.json "
                             "REAL-fsdp2.json REAL-fsdp1.json), compare.py one real run against another")
    loaded = []
    for p, doc in docs:
        try:  # a part whose registry is unreadable would merge into a file no tool reads
            Registry.from_context(doc["context"])
        except ValueError as e:
            raise InputError(str(p), f"context 'registry': {e}") from None
        loaded.append((_part_of(p, doc["context"]), Path(p), doc))
    counts = {n for (_, n), _, _ in loaded}
    if len(counts) > 1:
        listing = ", ".join(f"{p} ({i}/{n})" for (i, n), p, _ in loaded)
        raise InputError("", f"the parts are slices of different N: {listing}; merge the parts of one --part I/N split")
    n = counts.pop()
    by_index: dict[int, Path] = {}
    for (i, _), p, _ in loaded:
        if i in by_index:
            raise InputError("", f"part {i}/{n} is given twice: {by_index[i]} and {p}")
        by_index[i] = p
    missing = [i for i in range(1, n + 1) if i not in by_index]
    if missing:
        raise InputError("", f"part{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{n}' for i in missing)} "
                             f"missing: every part 1..{n} must be given once (have {', '.join(map(str, sorted(by_index)))})")
    loaded.sort(key=lambda t: t[0][0])

    _, first_path, first = loaded[0]
    ref_ctx = first["context"]
    for _, p, doc in loaded[1:]:
        ctx = doc["context"]
        for key in sorted(set(ref_ctx) | set(ctx)):
            if key in PER_RUN_KEYS or key.startswith(PER_RUN_PREFIXES):
                continue
            if key == "registry" and ref_ctx.get(key) != ctx.get(key):
                raise InputError("", f"context 'registry' differs between {first_path} and {p}"
                                     f"{_registry_difference(ref_ctx.get(key), ctx.get(key))}: parts of one "
                                     "run need the same binary")
            if ref_ctx.get(key) != ctx.get(key):
                raise InputError("", f"context '{key}' differs: {ref_ctx.get(key)!r} in {first_path}, "
                                     f"{ctx.get(key)!r} in {p}: parts of one run need the same binary, commit, "
                                     "machine and settings")
        a, b = comparable_command(str(ref_ctx.get("command", ""))), comparable_command(str(ctx.get("command", "")))
        if a != b:
            raise InputError("", f"context 'command' differs beyond --part/--trace/--benchmark_out: {a!r} in "
                                 f"{first_path}, {b!r} in {p}")

    owner: dict[str, Path] = {}
    benchmarks = []
    family_offset = 0
    for (i, _), p, doc in loaded:
        names = {_case_name(e) for e in doc["benchmarks"]}
        for name in sorted(names):
            if name in owner:
                raise InputError("", f"case {name} is in two parts: {owner[name]} and {p}")
            owner[name] = p
        _check_slice_size(p, doc["context"], i, n, len(names))
        # Google Benchmark numbers families per process: shift them so they stay distinct.
        top = -1
        for e in doc["benchmarks"]:
            e = dict(e)
            if isinstance(e.get("family_index"), int):
                top = max(top, e["family_index"])
                e["family_index"] += family_offset
            benchmarks.append(e)
        family_offset += top + 1

    context = dict(ref_ctx)
    for key in JOINED_KEYS:
        if any(key in doc["context"] for _, _, doc in loaded):
            context[key] = _joined(key, [doc["context"].get(key) for _, _, doc in loaded],
                                   [p for _, p, _ in loaded])
    if "command" in ref_ctx:
        words = _words(str(ref_ctx["command"]))
        argv0 = shlex.quote(words[0]) if words else ""
        context["command"] = f"{argv0} {comparable_command(str(ref_ctx['command']))}".strip()
    context["part"] = f"merged 1..{n} of {n}"
    context["part_dates"] = [str(doc["context"].get("date", "")) for _, _, doc in loaded]
    context["merged_from"] = [str(p) for _, p, _ in loaded]
    return _strict({"context": context, "benchmarks": benchmarks})


def merge_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="merge.py", description="Join the JSON of shardaccum_bench --part 1/N .. N/N into one run.",
        epilog="exit status: 0 written, 2 refused or bad input, 3 internal error.")
    p.add_argument("parts", nargs="+", type=Path, metavar="PART.json", help="every part's --benchmark_out JSON")
    p.add_argument("--out", required=True, type=Path, metavar="MERGED.json",
                   help="the merged run (written through a temporary file and a rename)")
    return p


def merge_main(argv: list[str] | None = None) -> int:
    """scripts/merge.py: writes --out and prints its path."""
    args = merge_parser().parse_args(argv)

    def body() -> int:
        from .atomic import write_text_atomic
        out = args.out.resolve()
        if out.is_dir():
            raise InputError(str(args.out), "--out is a directory; give a file name such as merged.json")
        for p in args.parts:
            if p.resolve() == out:
                raise InputError(str(args.out), "--out names one of the inputs; give another file")
        doc = merge_docs(args.parts)
        write_text_atomic(args.out, json.dumps(doc, indent=2, allow_nan=False) + "\n")
        print(args.out)
        return 0

    from .cli import guard
    return guard("merge.py", body)


if __name__ == "__main__":
    sys.exit(merge_main())
