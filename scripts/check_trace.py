#!/usr/bin/env python3
"""Check a trace's GPU steps against an independent clock and the run's step_ms. See --help; the
logic is in shardaccum_report/trace_check.py."""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shardaccum_report import trace_check  # noqa: E402
from shardaccum_report.cli import guard  # noqa: E402

DESCRIPTION = f"""\
For each case and traced step of TRACE.json (shardaccum_bench --trace, with --cupti kernels), the
traced `gpu step` span (cat "gpu step": first to last of the step's GPU ops and host tasks) is
compared with
  (a) an independent clock: the step's CUPTI records (cat memcpy/kernel, args case and step) from
      the first start to the last end, joined with its `host tasks` events (CPU adds count), per rank;
  (b) the suite's step_ms: the gpu step's own args.step_ms, and RUN.json's step_ms of the case (the
      span must lie in [step_ms_min, step_ms_max] of its measured steps; step_ms without them).
The span of a step is the max over ranks, as step_ms is. A figure differs when it is off by more than
{100 * trace_check.TOLERANCE:g}% of the reference, with an absolute floor of {trace_check.FLOOR_MS:g} ms
for tiny steps (the clocks' resolution). A table of every step is printed.

exit status: 0 every step agrees; 1 a step differs (the case is named on stderr); 2 bad input: a
missing or unreadable file, not a trace or not a Google Benchmark JSON, the trace's otherData run_id
not RUN.json's context run_id, a trace without `gpu step` events, or without CUPTI kernel records
(the independent clock is missing: rerun with --cupti kernels); 3 a crash of this tool (a bug), with
its traceback.
"""


def main() -> int:
    parser = argparse.ArgumentParser(prog="check_trace.py", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", metavar="RUN.json", help="the run's Google Benchmark JSON (--benchmark_out)")
    parser.add_argument("trace", metavar="TRACE.json", help="the same run's --trace file")
    args = parser.parse_args()
    # Bad input exits 2 and a crash 3 (never 1, which says a step differs), as the other tools.
    return guard("check_trace.py", lambda: _check(args.run, args.trace))


def _check(run: str, trace: str) -> int:
    checks = trace_check.check(run, trace)
    print(trace_check.table(checks))
    bad = [c for c in checks if not c.ok]
    for c in bad:
        print(f"check_trace.py: {c.case} step {c.step} differs: {'; '.join(c.problems)}", file=sys.stderr)
    untraced = trace_check.untraced(run, checks)
    if untraced:
        print(f"note: {len(untraced)} case(s) of RUN.json have no traced step (not checked): {', '.join(untraced)}")
    print(f"{len(checks) - len(bad)} of {len(checks)} traced steps agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
