"""Strict JSON in and out: NaN/Infinity tokens, nesting too deep to parse and numbers that cannot be
computed with are input errors naming the file, never a crash (README, "bad input is exit 2").

shardaccum_bench writes strict JSON (a NaN of Google Benchmark becomes null); Python's json accepts
NaN and Infinity by default and raises RecursionError on deep nesting, so the tools read through here.
"""

from __future__ import annotations

import json
import os
import re
import stat

from .errors import InputError

# No quantity the suite writes comes near this (bytes < 2**64 ~ 1.8e19); below it the products of
# two values and sums of any count stay finite in float64 (sqrt of the largest float is ~1.3e154).
MAX_MAGNITUDE = 1e150

_TOKEN_AT = re.compile(r"[:\[,]\s*(NaN|-?Infinity)\b")


class _NonStandardToken(ValueError):
    def __init__(self, token: str):
        super().__init__(token)
        self.token = token


def _refuse_constant(token: str) -> None:
    raise _NonStandardToken(token)


# Refused before int() is asked: Python raises its own ValueError past 4300 digits, which would escape
# as a crash. Shorter integers beyond MAX_MAGNITUDE are refused where their field is known (number()).
_MAX_INT_DIGITS = 4000


class HugeInteger(ValueError):
    """An integer of more than _MAX_INT_DIGITS digits (bounded_int)."""

    def __init__(self, digits: int):
        super().__init__(digits)
        self.digits = digits


def bounded_int(text: str) -> int:
    """json.loads' parse_int: int(text), or HugeInteger (a ValueError) past _MAX_INT_DIGITS digits."""
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT_DIGITS:
        raise HugeInteger(digits)
    return int(text)


def _magnitude_int(text: str) -> int:
    """bounded_int, and HugeInteger beyond MAX_MAGNITUDE (loads' refuse_huge)."""
    value = bounded_int(text)
    if abs(value) > MAX_MAGNITUDE:
        raise HugeInteger(len(text.lstrip("-")))
    return value


class HugeNumber(ValueError):
    """A JSON number whose float is infinite or beyond MAX_MAGNITUDE (1e400 reads as inf)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def _magnitude_float(text: str) -> float:
    """json.loads' parse_float under loads' refuse_huge: float(text), or HugeNumber beyond MAX_MAGNITUDE
    (1e400 is inf in Python, which merge.py wrote on as null)."""
    value = float(text)
    if not abs(value) <= MAX_MAGNITUDE:
        raise HugeNumber(text)
    return value


class DuplicateKey(ValueError):
    """An object names one key twice: Python's json keeps the last value silently, other readers the first
    or refuse the file, so which value a tool used would depend on the tool."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list) -> dict:
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKey(key)
        seen[key] = value
    return seen


def json_type_name(value: object) -> str:
    """The JSON name of a parsed value's type (object, array, string, number, true/false, null) for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {dict: "object", list: "array", str: "string", int: "number", float: "number"}.get(
        type(value), type(value).__name__)


def _line_of(text: str, token: str) -> str:
    """' at line N' of the first value position holding `token`, or '' when it cannot be placed."""
    for m in _TOKEN_AT.finditer(text):
        if m.group(1) == token:
            return f" at line {text.count(chr(10), 0, m.start(1)) + 1}"
    return ""


def refuse_special_file(path, what: str) -> None:
    """Raises InputError naming `path` when it exists and is neither a regular file nor a directory (a
    device such as /dev/zero, a FIFO): reading it to the end could take all memory or never end. `what`
    names the expected content (e.g. "Google Benchmark JSON")."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing or unreadable: the read that follows says so
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(str(path), f"is not a regular file (a device or a pipe); give {what}")


def loads(text: str, where: str, what: str, allow_nan: bool = False, refuse_huge: bool = False) -> object:
    """Parses `text` (the content of file `where`) as strict JSON.

    Raises InputError naming `where` for invalid JSON, a key given twice in one object, a NaN/Infinity/-Infinity token (not JSON:
    the suite writes null for a missing value; read as a float where `allow_nan`, for merge.py,
    which turns it into null), or nesting too deep for Python's parser; where `refuse_huge`, also any
    number beyond MAX_MAGNITUDE (for a tool that copies values on unread: report.py and compare.py refuse
    them per field instead, naming the case and counter). `what` names the expected content in messages
    (e.g. "Google Benchmark JSON").
    """
    try:
        return json.loads(text, parse_constant=None if allow_nan else _refuse_constant,
                          parse_int=_magnitude_int if refuse_huge else bounded_int,
                          parse_float=_magnitude_float if refuse_huge else float,
                          object_pairs_hook=_unique_keys)
    except DuplicateKey as e:
        raise InputError(where, f"names the key {e.key!r} twice in one object; expected strict {what} "
                                "(which value a reader keeps would depend on the reader)") from None
    except _NonStandardToken as e:
        raise InputError(where, f"holds the token {e.token}{_line_of(text, e.token)}, which is not JSON; expected "
                                f"strict {what} (shardaccum_bench writes null for a value it cannot compute: "
                                "replace NaN, Infinity and -Infinity by null)") from None
    except HugeInteger as e:
        raise InputError(where, f"holds an integer of {e.digits} digits, beyond any value the suite writes "
                                f"(|x| <= {MAX_MAGNITUDE:g}); expected {what}") from None
    except HugeNumber as e:
        raise InputError(where, f"holds the number {e.text[:40]}, beyond any value the suite writes "
                                f"(|x| <= {MAX_MAGNITUDE:g}); expected {what}") from None
    except RecursionError:
        raise InputError(where, f"nested too deep to read (thousands of levels of [ or {{); {what} is a few "
                                "levels deep: not a file the suite wrote") from None
    except json.JSONDecodeError as e:
        # Only a file that ends too soon looks like a killed run's.
        ends_early = e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
        cut = "; a run that was killed leaves its JSON cut off" if ends_early else ""
        raise InputError(where, f"not valid JSON ({e.msg}: line {e.lineno}, column {e.colno}); expected {what}"
                                f"{cut}") from None


def number(value: object) -> float | None:
    """A JSON number as a float; None for null, strings, booleans and other non-numbers.

    Raises ValueError (with the value in words) when the number's magnitude exceeds MAX_MAGNITUDE:
    the callers turn it into an InputError naming the file and the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if abs(value) > MAX_MAGNITUDE:  # also an int too large for a float (float() would raise OverflowError)
        shown = f"{value:.3g}" if isinstance(value, float) else f"an integer of {len(str(abs(value)))} digits"
        raise ValueError(f"{shown} is beyond any value the suite writes (|x| <= {MAX_MAGNITUDE:g}); sums and "
                         "ratios of it overflow")
    return float(value)


def dumps(obj: object, **kwargs) -> str:
    """json.dumps that refuses NaN and infinities (ValueError): what the tools write is strict JSON."""
    return json.dumps(obj, allow_nan=False, **kwargs)
