#!/usr/bin/env python3
"""Join the JSON of shardaccum_bench --part 1/N .. N/N (one file per slice) into one run.

    python scripts/merge.py PART1.json PART2.json ... --out MERGED.json

Refuses parts of different runs (context: binary, commit, machine, settings), missing or repeated
parts and cases in two parts (exit 2). See --help; the logic is in shardaccum_report/merge.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shardaccum_report.merge import merge_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(merge_main())
