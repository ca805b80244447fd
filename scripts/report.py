#!/usr/bin/env python3
"""Turn shardaccum_bench Google Benchmark JSON into reports/NAME/README.md with PNG plots.

    python scripts/report.py RUN.json [MORE.json ...] --name NAME [--out-dir reports]

Needs matplotlib, numpy (scipy only for compare.py). See --help; the logic is in shardaccum_report/.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shardaccum_report.deps import require  # noqa: E402

require("report.py", ('numpy', 'matplotlib'))

from shardaccum_report.cli import report_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(report_main())
