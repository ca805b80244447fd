#!/usr/bin/env python3
"""Compare two shardaccum_bench runs case by case; exit 1 when a case regressed, so CI can gate on it.

    python scripts/compare.py BASE.json CAND.json [--threshold 0.05] [--metric step_ms] [--out FILE.md]

Needs scipy (Mann-Whitney U). See --help; the logic is in shardaccum_report/.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shardaccum_report.deps import require  # noqa: E402

require("compare.py", ('numpy', 'scipy'))

from shardaccum_report.cli import compare_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(compare_main())
