"""Schedules of one optimizer step as the suite spells them (strategies/schedule.cpp): the canonical
names for K >= 3 and literal strings of n/S ending in S (a literal's length is its K)."""

from __future__ import annotations

CANONICAL_MIN_K = 3
MAX_MICRO_BATCHES = 4096  # strategies/schedule.hpp kMaxMicroBatches
# (name, head letter, alternating head) in report order, as strategies/schedule.hpp kCanonicalSchedules.
CANONICAL = (("no-sync", "n", False), ("sync", "S", False),
             ("interleaved-nosync-last", "n", True), ("interleaved-sync-last", "S", True))
NAMES = ", ".join(c[0] for c in CANONICAL)


def canonical(name: str, k: int) -> str:
    """The letters of canonical schedule `name` for K = k (K=4: nnnS, SSSS, nSnS, SnSS). Raises
    ValueError naming --schedule for an unknown name and --k for k < 3."""
    for cname, letter, alternating in CANONICAL:
        if cname == name:
            break
    else:
        raise ValueError(f"--schedule '{name[:80]}': not a canonical name ({NAMES}) nor a string of n/S "
                         "ending in S")
    if k < CANONICAL_MIN_K:
        examples = "'S'" if k <= 1 else f"'{'n' * (k - 1)}S' or '{'S' * k}'"
        raise ValueError(f"--schedule {name} needs --k >= 3 (got {k}); give a literal schedule of K letters "
                         f"ending in S instead, such as {examples}")
    other = "S" if letter == "n" else "n"
    head = "".join(letter if not alternating or (k - 2 - i) % 2 == 0 else other for i in range(k - 1))
    return head + "S"


def parse(text: str, k: int) -> str:
    """One --schedule value: a canonical name (expanded for k) or a literal n/S string ending in S."""
    if not text:
        raise ValueError(f"--schedule is empty: give n/S letters ending in S (e.g. nnnS) or a canonical name "
                         f"({NAMES})")
    if set(text) - {"n", "S"}:
        return canonical(text, k)
    if len(text) > MAX_MICRO_BATCHES:
        raise ValueError(f"--schedule has {len(text)} micro-batches, above the limit of {MAX_MICRO_BATCHES}")
    if text[-1] != "S":
        raise ValueError(f"--schedule '{text[:80]}' must end in S: the last micro-batch of a step has to "
                         f"reduce-scatter (e.g. '{text[:80]}S')")
    return text


def parse_list(values: list[str], k: int) -> list[str]:
    """--schedule's list: `all` (alone) is the four canonical schedules for k; duplicates dropped."""
    if "all" in values:
        if len(values) != 1:
            raise ValueError("--schedule: 'all' must be alone (all,X could mean all or a typo)")
        values = [c[0] for c in CANONICAL]
    out: list[str] = []
    for v in values:
        s = parse(v, k)
        if s not in out:
            out.append(s)
    return out
