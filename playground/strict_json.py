"""JSON text read strictly: Python's json module also reads NaN, Infinity, 1e999 (as inf) and
integers past a float's range, which no engine and no JSON parser downstream reads (llguidance
failed on one with "number out of range", xgrammar with an IndexError). Shared by the constraint checks and the export (which
stays free of torch, so it cannot import playground.constraints)."""
import json
import math
import sys


def loads(text: str, **hooks):
    """json.loads, with ValueError for NaN, Infinity and numbers too large to be a finite float (`hooks`:
    json.loads' others, object_pairs_hook)."""
    return json.loads(text, parse_constant=_not_a_number, parse_float=_finite, parse_int=_finite_int, **hooks)


def where_wrong(exc: json.JSONDecodeError) -> str:
    """What a JSON reader refused and where: "Expecting ',' delimiter at line 1, column 9" (Python's own
    message of an unterminated string ends in "starting at", which made "starting at at line 1")."""
    return f"{exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno}"


def _not_a_number(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: valid JSON, infinite in every engine
        raise ValueError(f"{text[:40]} is too large for a number any engine reads")
    return value


def _finite_int(text: str) -> int:
    """An integer literal, refused past a float's range (about 1.8e308: any of 310 digits, before
    int() reads it; int() itself refuses 4,301)."""
    digits = len(text.lstrip("-"))
    if digits > 309 or abs(value := int(text)) > sys.float_info.max:
        raise ValueError(f"{text[:40]}... ({digits} digits) is too large for a number any engine reads")
    return value


def keys_said_twice(text: str) -> list[str]:
    """The keys an object of this (valid) JSON text gives more than once, each named once, in order
    (json.loads keeps the last: what a key said twice means is up to each reader)."""
    twice: dict[str, None] = {}

    def pairs_of(pairs: list) -> dict:
        seen = set()
        for key, _ in pairs:
            if key in seen:
                twice[key] = None
            seen.add(key)
        return dict(pairs)
    loads(text, object_pairs_hook=pairs_of)
    return list(twice)
