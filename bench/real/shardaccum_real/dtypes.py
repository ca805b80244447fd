"""The dtype triple grad-reduce-accum (common/dtype.hpp) and its mapping onto the systems'
mixed-precision settings.

Mapping (both systems): the model is stored in the accum dtype (FSDP2 casts the reduce-scatter output
to the sharded parameter's original dtype, torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py
foreach_reduce; FSDP1 keeps the sharded gradient in the full-precision parameter dtype); the grad dtype
is the compute (param) dtype: FSDP2 MixedPrecisionPolicy(param_dtype) / FSDP1 MixedPrecision(param_dtype),
None when it equals the accum dtype; the reduce dtype is reduce_dtype, None when it equals the grad dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPES = ("fp32", "bf16")
CODES = {"fp32": 0, "bf16": 1}  # the C ABI's dtype codes (capi/shardaccum_gen.h)
# What the suite's generator and oracle support, in report order (common/dtype.hpp kDtypeTriples).
SUITE_TRIPLES = ("fp32-fp32-fp32", "bf16-bf16-fp32", "bf16-bf16-bf16", "bf16-fp32-fp32")


@dataclass(frozen=True)
class Triple:
    grad: str
    reduce: str
    accum: str

    @property
    def name(self) -> str:
        return f"{self.grad}-{self.reduce}-{self.accum}"


@dataclass(frozen=True)
class Plan:
    """A triple on one system: storage = the model's dtype; param_dtype / reduce_dtype as passed to
    the system's policy (None = not set); all strings of DTYPES."""
    storage: str
    param_dtype: str | None
    reduce_dtype: str | None


class Refused(Exception):
    """The system cannot run this triple as the suite defines it; the message says why."""


def parse(text: str) -> Triple:
    """'grad-reduce-accum' with each of fp32/bf16; ValueError naming --dtype otherwise."""
    parts = text.split("-")
    if len(parts) != 3 or any(p not in DTYPES for p in parts):
        raise ValueError(f"--dtype '{text[:80]}': give grad-reduce-accum with each of fp32/bf16, e.g. "
                         f"fp32-fp32-fp32 (the suite's: {', '.join(SUITE_TRIPLES)}) or all")
    return Triple(*parts)


def parse_list(values: list[str]) -> list[Triple]:
    """--dtype's list: `all` (alone) is SUITE_TRIPLES."""
    if "all" in values:
        if len(values) != 1:
            raise ValueError("--dtype: 'all' must be alone (all,X could mean all or a typo)")
        values = list(SUITE_TRIPLES)
    out: list[Triple] = []
    for v in values:
        t = parse(v)
        if t not in out:
            out.append(t)
    return out


def plan(system: str, t: Triple) -> Plan:
    """The mapping of the module docstring, or Refused with the reason."""
    if system != "fsdp2" and t.grad != t.reduce:
        # The suite's grad != reduce triple is FSDP2's (--copy-in chunk-cat): the cast in the reduce-scatter's
        # copy-in, no-sync gradients held in the reduce dtype (_fsdp_param.py to_accumulated_grad_if_needed).
        # FSDP1 accumulates no-sync gradients in the param dtype and casts them at the sync instead.
        raise Refused(f"{system} cannot run {t.name} as the suite defines it: grad != reduce is FSDP2's "
                      "(no-sync gradients held in the reduce dtype, the cast in the copy-in, --copy-in chunk-cat)")
    if system in ("zero3", "zero2") and t.name != "fp32-fp32-fp32":
        # DeepSpeed's bf16 ({"bf16": {"enabled": true}}) accumulates in its own dtypes (data_types.grad_accum_dtype,
        # the optimizer's fp32 partitions): that mapping onto grad-reduce-accum is not built or validated yet.
        raise Refused(f"{system} runs fp32-fp32-fp32 only: the mapping of DeepSpeed's bf16 config onto {t.name} "
                      "is not built (bench/real/README.md)")
    if t.name not in SUITE_TRIPLES:
        raise Refused(f"{t.name} is not a triple of the suite's generator and oracle "
                      f"({', '.join(SUITE_TRIPLES)}; common/dtype.hpp)")
    return Plan(storage=t.accum, param_dtype=None if t.grad == t.accum else t.grad,
                reduce_dtype=None if t.reduce == t.grad else t.reduce)


def mapping_text() -> str:
    """The mapping as one line for the JSON context's dtype_mapping."""
    return ("grad-reduce-accum: model stored in accum; param_dtype = grad (None when = accum); reduce_dtype "
            "= reduce (None when = grad); FSDP2 MixedPrecisionPolicy / FSDP1 MixedPrecision; grad != reduce "
            "(bf16-fp32-fp32) on fsdp2 only (param_dtype bf16, reduce_dtype fp32: the suite's --copy-in "
            "chunk-cat); zero3/zero2: fp32-fp32-fp32 only (no bf16 or "
            "fp16 section in the DeepSpeed config)")
