#!/usr/bin/env python3
"""Turn shardaccum_bench Google Benchmark JSON into reports/NAME/README.md with PNG plots.

    python scripts/report.py RUN.json [MORE.json ...] --name NAME [--out-dir reports]

Needs matplotlib, numpy (scipy only for compare.py). See --help; the logic is in shardaccum_report/.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# A missing package is a setup problem, not a bug in the tool: say how to fix it (exit 2).
for _module in ('numpy', 'matplotlib'):
    try:
        __import__(_module)
    except ModuleNotFoundError:
        print(f"report.py: error: Python package '{_module}' is missing for {sys.executable}: run "
                 "scripts/install_deps.sh and use .venv/bin/python (or a python3 that has "
                 "scripts/requirements.txt installed)", file=sys.stderr)
        sys.exit(2)

from shardaccum_report.cli import report_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(report_main())
