#!/usr/bin/env python3
"""Compare two shardaccum_bench runs case by case; exit 1 when a case regressed, so CI can gate on it.

    python scripts/compare.py BASE.json CAND.json [--threshold 0.05] [--metric step_ms] [--out FILE.md]

Needs scipy (Mann-Whitney U). See --help; the logic is in shardaccum_report/.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# A missing package is a setup problem, not a bug in the tool: say how to fix it (exit 2).
for _module in ('numpy', 'scipy'):
    try:
        __import__(_module)
    except ModuleNotFoundError:
        print(f"compare.py: error: Python package '{_module}' is missing for {sys.executable}: run "
                 "scripts/install_deps.sh and use .venv/bin/python (or a python3 that has "
                 "scripts/requirements.txt installed)", file=sys.stderr)
        sys.exit(2)

from shardaccum_report.cli import compare_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(compare_main())
