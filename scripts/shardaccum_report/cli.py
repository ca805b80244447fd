"""Command lines of scripts/report.py and scripts/compare.py.

Exit status: report 0 = written; compare 0 = no regression, 1 = a regression; both 2 = bad input or
usage (the message names the file), 3 = an internal error (a bug: please report it with the input).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import signal
import sys
import traceback
from pathlib import Path

from .errors import InputError

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

REPORT_EPILOG = """\
The report folder holds README.md (Markdown tables, readable on GitHub as it is) and PNG plots:
the fastest correct strategy within --device-gb/--pinned-gb, step time by phase with its spread,
each strategy's accumulation cost against n^(K-1)S without offload (ties where the spread holds 0),
peak device/pinned memory and PCIe/reduce-scatter bytes one bar a case (predicted marked where it
differs), memory against step time with the Pareto front, the correctness matrix against
err_bound, phases against measured ceilings
(cuda runs), scaling with K and world size when the inputs hold several, and a timeline of one step
per case from the trace (--trace, or trace.json beside a single input; scripts/run.sh writes one),
drawn only when the trace's run_id is the input's (a trace of another run is named, not drawn).
Host-backend runs are marked: their times are host wall-clock, not GPU time.

The folder is written in full beside its place and renamed into it, so a report is never half
written; an older report of the same name is replaced.

example:
  python scripts/report.py run.json --name h200x2-llama2-7b
  python scripts/report.py run.json --trace trace.json --name with-timeline
  python scripts/report.py w2.json w4.json --name scaling --out-dir /tmp/reports
  python scripts/report.py run.json --name fits-40g --device-gb 40 --pinned-gb 16

exit status: 0 written, 2 bad input (unreadable/empty/malformed JSON or trace, NaN/Infinity tokens,
nesting too deep, numbers beyond 1e150, no benchmarks, bad --name, a report folder holding an input
it would remove), 3 internal error."""

COMPARE_EPILOG = """\
Cases are matched by their name's axes. For each, ratio = candidate / baseline of the metric's median
over repetitions, and a two-sided Mann-Whitney U test on the per-repetition values (as Google
Benchmark's tools/compare.py; it needs >= 2 repetitions a side, and can reach p < 0.05 only from
about 4; with fewer, the ratio alone decides and the row says so). A case regresses when it is worse
by more than --threshold and the test does not call it noise, when `correct` went from 1 to 0, or
when it newly fails with an error. Missing data fails the gate too: a case of the baseline that the
candidate lacks, or a candidate case without the metric or `correct` (absent or null) that the
baseline has, is listed under "Missing in candidate". Cases only in the candidate are listed as new
and do not fail.

example:
  python scripts/compare.py main.json branch.json
  python scripts/compare.py main.json branch.json --threshold 0.10 --out compare.md

exit status: 0 no regression, 1 at least one regression or missing case/data (gate CI on it),
2 bad input or usage (also --out naming an input), 3 internal error."""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (give a fraction, e.g. 0.05 for 5%)") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number >= 0 (a fraction, e.g. 0.05 for 5%)")
    return value


def _alpha(text: str) -> float:
    value = _fraction(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must lie strictly between 0 and 1 (e.g. 0.05)")
    return value


def _gigabytes(text: str) -> float:
    """A budget in GB (1e9 bytes): a finite number >= 0; argparse names the flag in its error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GB (e.g. 80 or 0.5)") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of GB >= 0")
    return value


def _folder(text: str) -> Path:
    """--out-dir: a non-empty path (Path("") is ".", which wrote the report into the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give the folder the report folder goes into (default: reports)")
    return Path(text)


def report_parser() -> argparse.ArgumentParser:
    from .budget import DEFAULT_DEVICE_GB, DEFAULT_PINNED_GB
    p = argparse.ArgumentParser(
        prog="report.py", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=REPORT_EPILOG,
        description="Turn shardaccum_bench Google Benchmark JSON into reports/NAME/README.md with plots.")
    p.add_argument("runs", nargs="+", metavar="RUN.json",
                   help="output of shardaccum_bench --benchmark_out=RUN.json --benchmark_out_format=json; several "
                        "files of different cases (e.g. world 2 and world 4) join into one report")
    p.add_argument("--name", required=True, help="report folder name (letters, digits, '.', '_', '-')")
    p.add_argument("--out-dir", default=Path("reports"), type=_folder,
                   help="where the report folder goes (default: reports)")
    p.add_argument("--trace", action="append", metavar="TRACE.json",
                   help="a Perfetto/Chrome trace of the run (shardaccum_bench --trace TRACE.json): the report draws "
                        "one step per case from it as a timeline; repeat for several traces. Default: trace.json "
                        "beside the input when there is one input (scripts/run.sh writes it there)")
    p.add_argument("--device-gb", type=_gigabytes, default=DEFAULT_DEVICE_GB, metavar="X",
                   help="device memory per rank, in GB (1e9 bytes), of the table 'fastest correct strategy within X "
                        f"GB of device and Y GB of pinned memory' (default {DEFAULT_DEVICE_GB:g}: an 80 GB GPU)")
    p.add_argument("--pinned-gb", type=_gigabytes, default=DEFAULT_PINNED_GB, metavar="Y",
                   help=f"pinned host memory per rank, in GB, of the same table (default {DEFAULT_PINNED_GB:g})")
    return p


def compare_parser() -> argparse.ArgumentParser:
    from .compare import DEFAULT_ALPHA, DEFAULT_THRESHOLD
    p = argparse.ArgumentParser(
        prog="compare.py", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=COMPARE_EPILOG,
        description="Compare two shardaccum_bench runs (baseline, candidate) case by case; exit 1 on a regression.")
    p.add_argument("baseline", metavar="BASE.json", help="the reference run (Google Benchmark JSON)")
    p.add_argument("candidate", metavar="CAND.json", help="the run under test (Google Benchmark JSON)")
    p.add_argument("--threshold", type=_fraction, default=DEFAULT_THRESHOLD,
                   help="how much worse counts as a regression, as a fraction (default 0.05 = 5%%)")
    p.add_argument("--metric", default="step_ms",
                   help="counter to compare (default step_ms, ms per step; any counter, or real_time/cpu_time; "
                        "*_gbps and *_frac_ceiling count higher as better)")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA,
                   help="significance level of the Mann-Whitney U test (default 0.05)")
    p.add_argument("--out", type=Path, metavar="FILE.md",
                   help="write the Markdown comparison to FILE.md (atomically) instead of standard output")
    return p


def _fail(prog: str, message: str, code: int) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return code


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that what a tool was writing is cleaned up (atomic.py)
    as on Ctrl-C, instead of the process dying with a temporary folder left behind."""


def _on_sigterm(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    raise Terminated()


def guard(prog: str, body) -> int:
    """Runs body(); turns InputError and OSError into exit 2, Ctrl-C into 130, SIGTERM into 143 (each
    after the cleanups of what it was writing) and anything else into exit 3 with its traceback."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: no handler
        previous = None
    try:
        return body()
    except Terminated:
        return _fail(prog, "terminated", 143)
    except BrokenPipeError:
        # The reader went away (`compare.py ... | head`): not an error of the input. Quiet, as a shell
        # tool is, with stdout pointed at /dev/null so that the interpreter's final flush says nothing.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
        return 141
    except InputError as e:
        return _fail(prog, str(e), EXIT_BAD_INPUT)
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        return _fail(prog, f"{where}{e.strerror or e}", EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        return _fail(prog, "interrupted", 130)
    except Exception:  # noqa: BLE001 - never exit 1 on a crash: 1 means 'regression' to a gate
        traceback.print_exc()
        return _fail(prog, "internal error (a bug in the tool; please report it with the input files)",
                     EXIT_INTERNAL)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def report_main(argv: list[str] | None = None) -> int:
    """scripts/report.py: prints the path of the README.md it wrote."""
    args = report_parser().parse_args(argv)

    def body() -> int:
        from .report import build_report
        from .budget import Budget
        print(build_report(args.runs, args.name, args.out_dir, args.trace, Budget(args.device_gb, args.pinned_gb)))
        return EXIT_OK

    return guard("report.py", body)


def compare_main(argv: list[str] | None = None) -> int:
    """scripts/compare.py: prints the comparison (or a summary line and the file with --out)."""
    args = compare_parser().parse_args(argv)

    def body() -> int:
        from .atomic import write_text_atomic
        from .compare import compare_files, summary_line, to_markdown
        from .overwrite import refuse_output_over_inputs
        if args.out is not None:
            refuse_output_over_inputs(args.out, [args.baseline, args.candidate], "--out")
        result = compare_files(args.baseline, args.candidate, args.metric, args.threshold, args.alpha)
        text = to_markdown(result)
        if args.out is not None:
            write_text_atomic(args.out, text)
            print(summary_line(result))
            print(args.out)
        else:
            print(text)
        return EXIT_REGRESSION if result.gate_failed else EXIT_OK

    return guard("compare.py", body)
