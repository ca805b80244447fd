"""Report and compare tools for shardaccum's Google Benchmark JSON (docs/DESIGN.md §6, §7).

Modules, one concept each:
  errors    InputError: a problem with a user's input file, reported with exit status 2
  strict_json  strict JSON in and out: NaN tokens, too deep nesting, out-of-range numbers are InputError
  registry  the binary's axis values, presets and canonical schedules (a run's context or registry.json)
  case      a case's identity: the key:value parts of a benchmark name, strategies (by the registry)
  counters  the counter vocabulary: phases, measured/predicted pairs, ceiling fractions, units
  loading   reading and validating benchmark JSON into runs, cases and repetitions
  trace     reading the Perfetto/Chrome trace of shardaccum_bench --trace: one step per case
  tables    Markdown tables of cases
  plots/    one PNG per view (phases, timeline, memory, traffic, Pareto, correctness, ceilings, scaling)
  report    assembling reports/NAME/README.md
  compare   baseline against candidate: ratios, Mann-Whitney U, regressions
  merge     joining the slices of one run (shardaccum_bench --part I/N) into one run JSON
  atomic    writes that never leave a half-written file or report
  overwrite an output that would replace an input is refused
  identity  a trace is drawn only beside the run whose run_id it carries
  trace_check  scripts/check_trace.py: a trace's GPU steps against CUPTI + host tasks and step_ms
  nsys_times   scripts/profile.sh's time check: nsys' sqlite export against the suite's counters
  cli       the command lines of scripts/report.py and scripts/compare.py
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
