"""JSON text read strictly: Python's json module also reads NaN, Infinity and 1e999 (as inf), which
no engine and no JSON parser downstream reads. Shared by the constraint checks and the export (which
stays free of torch, so it cannot import playground.constraints)."""
import json
import math


def loads(text: str):
    """json.loads, with ValueError for NaN, Infinity and numbers too large to be finite."""
    return json.loads(text, parse_constant=_not_a_number, parse_float=_finite)


def _not_a_number(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: valid JSON, infinite in every engine
        raise ValueError(f"{text[:40]} is too large for a number any engine reads")
    return value
