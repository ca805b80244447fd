#!/usr/bin/env python3
"""The layer rule of docs/DESIGN.md §8: a project header may be included only from its own layer or
from a layer above it, never from below. Layers, bottom to top:

  common/ -> profiling/ -> strategies/backend/ -> strategies/ (the rest) -> bench/ -> tests/

capi/ (libshardaccum_gen) sits beside bench/, on the same level: both may include what is below
them, neither the other. Every .h/.hpp/.cpp/.cu/.cuh under those folders is read and each `#include "..."` is resolved as the
compiler does for quoted includes (beside the including file first, then from the repository root,
the one include directory of every target). An include that resolves to no file of the tree is not a
project header and is ignored. Stdlib only: CI runs it before anything is installed.
"""

import argparse
import re
import sys
from pathlib import Path

# (folder prefix, layer name, level), bottom to top; the longest matching prefix decides a file's
# layer. Layers of one level are siblings: an include from one into another is a violation too.
LAYERS = [
    ("common/", "common", 0),
    ("profiling/", "profiling", 1),
    ("strategies/backend/", "strategies/backend", 2),
    ("strategies/", "strategies", 3),
    ("bench/", "bench", 4),
    ("capi/", "capi", 4),
    ("tests/", "tests", 5),
]
SUFFIXES = {".h", ".hpp", ".cpp", ".cu", ".cuh"}

# Quoted includes only: <...> names system and third-party headers. A trailing comment is allowed.
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def chain():
    """The layers bottom to top as the help and the summary print them: the first layer of each
    level in the chain, its siblings named after it."""
    first = {}  # level -> the name of its first layer
    for _, name, level in LAYERS:
        first.setdefault(level, name)
    text = " -> ".join(first.values())
    siblings = [f"{name} beside {first[level]}" for _, name, level in LAYERS if first[level] != name]
    return text + (f" ({', '.join(siblings)})" if siblings else "")


def layer_of(rel):
    """Index into LAYERS of a path relative to the root (posix string), or None outside every layer."""
    best = None
    for i, (prefix, _, _) in enumerate(LAYERS):
        if rel.startswith(prefix) and (best is None or len(prefix) > len(LAYERS[best][0])):
            best = i
    return best


def resolve(root, including, target):
    """The included file's path relative to root (posix), or None when it is not a file of the tree."""
    for base in (including.parent, root):
        candidate = (base / target).resolve()
        try:
            rel = candidate.relative_to(root)
        except ValueError:
            continue  # points outside the repository: not a project header
        if candidate.is_file():
            return rel.as_posix()
    return None


def sources(root):
    """Every C++/CUDA file under the layer folders, sorted, as absolute paths."""
    top = sorted({prefix.split("/")[0] for prefix, _, _ in LAYERS})
    files = []
    for folder in top:
        base = root / folder
        if base.is_dir():
            files.extend(p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    return sorted(files)


def violations(root):
    """(checked file count, list of violation lines 'FILE:LINE: <layer> includes <header> (<layer>)')."""
    root = root.resolve()
    found = []
    files = sources(root)
    for path in files:
        rel = path.relative_to(root).as_posix()
        own = layer_of(rel)
        if own is None:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                header = resolve(root, path, m.group(1))
                if header is None:
                    continue
                theirs = layer_of(header)
                # up the levels, or sideways into a sibling layer of the same level
                if theirs is not None and theirs != own and LAYERS[theirs][2] >= LAYERS[own][2]:
                    found.append(f"{rel}:{lineno}: {LAYERS[own][1]} includes {header} "
                                 f"({LAYERS[theirs][1]})")
    return len(files), found


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="scripts/check_layers.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fails on an include that points up the layers (docs/DESIGN.md §8), bottom to top:\n  "
        + chain() + "\nA file may include project headers of its own "
        "layer or below, not of a sibling\n(quoted includes, resolved beside the file, then from the root).",
        epilog="exit status: 0 no upward include; 1 one or more, each printed as\n"
        "  FILE:LINE: <layer> includes <header> (<layer above>)\n2 bad arguments.")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="repository root (default: the one this script is in)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root}: not a directory")
    count, found = violations(args.root)
    if count == 0:  # a root without the layer folders would pass vacuously
        parser.error(f"--root {args.root}: none of the layer folders ({', '.join(name for _, name, _ in LAYERS)}) "
                     "holds a C++ file; give the repository root")
    for v in found:
        print(v)
    if found:
        print(f"check_layers: {len(found)} upward include(s) in {count} files", file=sys.stderr)
        return 1
    print(f"check_layers: {count} files, no upward include "
          f"({chain()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
