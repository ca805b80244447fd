"""The layouts, from `shardaccum_bench --describe-layout --model M` (schema shardaccum.layout/1): the
runner builds its modules from these documents and never re-implements a layout."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

SCHEMA = "shardaccum.layout/1"
BUILD_HINT = "build it with: cmake --preset default && cmake --build --preset default --target shardaccum_bench"


class LayoutError(Exception):
    """A layout could not be had or its document breaks the schema; the message says which and how."""


@dataclass(frozen=True)
class Param:
    name: str    # the Hugging Face name, e.g. transformer.h.0.attn.c_attn.weight
    shape: tuple
    offset: int  # first element in the unit's flat buffer (row-major)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Unit:
    index: int
    name: str
    numel: int
    params: tuple


@dataclass(frozen=True)
class Layout:
    model: str
    spec: str
    family: str
    total_numel: int
    units: tuple


def _need(d: dict, key: str, kind, where: str):
    if key not in d or not isinstance(d[key], kind) or isinstance(d[key], bool):
        raise LayoutError(f"{where}: '{key}' missing or not {getattr(kind, '__name__', kind)}")
    return d[key]


def parse(doc: dict) -> Layout:
    """Validates and converts a document: units indexed 0.., offsets the running sum of the shapes'
    products, which sum to each unit's numel, and units' numel to total_numel. Raises LayoutError."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise LayoutError(f"not a {SCHEMA} document (schema {doc.get('schema') if isinstance(doc, dict) else doc!r})")
    units = []
    for i, u in enumerate(_need(doc, "units", list, "layout")):
        where = f"layout unit {i}"
        if _need(u, "index", int, where) != i:
            raise LayoutError(f"{where}: index {u['index']}, expected {i}")
        numel, offset, params = _need(u, "numel", int, where), 0, []
        for j, p in enumerate(_need(u, "params", list, where)):
            pw = f"{where} param {j}"
            shape = tuple(_need(p, "shape", list, pw))
            if not shape or any(not isinstance(s, int) or isinstance(s, bool) or s < 1 for s in shape):
                raise LayoutError(f"{pw}: shape {list(shape)} must be positive integers")
            if _need(p, "offset", int, pw) != offset:
                raise LayoutError(f"{pw}: offset {p['offset']}, expected the running sum {offset}")
            params.append(Param(_need(p, "name", str, pw), shape, offset))
            offset += math.prod(shape)
        if not params or offset != numel:
            raise LayoutError(f"{where}: parameter shapes sum to {offset}, numel is {numel}")
        units.append(Unit(i, _need(u, "name", str, where), numel, tuple(params)))
    if not units:
        raise LayoutError("layout has no units")
    total = _need(doc, "total_numel", int, "layout")
    if total != sum(u.numel for u in units):
        raise LayoutError(f"layout: total_numel {total} != the units' sum {sum(u.numel for u in units)}")
    return Layout(_need(doc, "model", str, "layout"), _need(doc, "spec", str, "layout"),
                  _need(doc, "family", str, "layout"), total, tuple(units))


def describe(bench: str, model: str) -> Layout:
    """Runs `bench --describe-layout --model model` and parses its stdout; LayoutError with the tool's
    message when it fails, or how to build it when it is absent."""
    if not Path(bench).is_file():
        raise LayoutError(f"--bench {bench}: no such file; {BUILD_HINT}, or pass --layout-json FILE")
    try:
        r = subprocess.run([bench, "--describe-layout", "--model", model], capture_output=True, text=True,
                           timeout=120)
    except OSError as e:
        raise LayoutError(f"--bench {bench}: cannot run it ({e})") from None
    if r.returncode != 0:
        raise LayoutError(f"--model {model}: {bench} --describe-layout exited {r.returncode}: "
                          f"{r.stderr.strip()[-500:]}")
    try:
        return parse(json.loads(r.stdout))
    except ValueError as e:
        raise LayoutError(f"{bench} --describe-layout --model {model}: not JSON ({e})") from None


def load_file(path: str) -> Layout:
    """A saved describe-layout document (--layout-json). Raises LayoutError naming the flag and the file
    for one that cannot be read, is not JSON, is nested too deep to parse or is not a layout."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except RecursionError:
        raise LayoutError(f"--layout-json {path}: nested too deep to read; give the JSON that "
                          "shardaccum_bench --describe-layout --model M writes") from None
    except (OSError, ValueError) as e:
        raise LayoutError(f"--layout-json {path}: {e}") from None
    try:
        return parse(doc)
    except LayoutError as e:
        raise LayoutError(f"--layout-json {path}: {e}; give the JSON that shardaccum_bench --describe-layout "
                          "--model M writes") from None
