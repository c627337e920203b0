"""What llguidance cannot write of a valid schema, left to the check after the run instead of refusing it.

llguidance 1.9.1 refuses a whole schema for either of these, where xgrammar writes them:
- A bound past about 2^63. It reads a schema's numbers as 64-bit floats and writes each bounded integer
  or number as a regex of its range, which then fails: an int64 field's `minimum: -9223372036854775808`
  ("Failed to generate regex for integer range"; JSONSchemaBench's Github_hard o90912), a sentinel
  `minimum: -1e30`, a number's `maximum: 1e300`, an integer's `minimum: 9.2e18`.
- Most minProperties and maxProperties on an object that lists a property it does not require ("only
  supported when all keys listed in properties are required"; it writes a closed object's minProperties
  1 or maxProperties 1 alone). Asked leniently, as the product asks, it compiles past them with that
  warning, and called `{"minProperties": 2, "additionalProperties": false, "properties": <3 optional>}`
  unsatisfiable (Github_medium o8454, valid).
Here llguidance's copy of the schema goes without them: a node's bounds past 2^53 that it cannot write
on their own, one at a time until it can; an object's counts it cannot write beside its properties
(asked of its object keywords alone), unless they contradict them on their own, which it says rightly.
Its mask then lets through a number past them (20 digits or more) or another number of properties,
which the check after the run refuses, as the note says."""
import copy
import json

import llguidance

from playground.constraints.schema_keywords import subschemas

BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
COUNTS = ("minProperties", "maxProperties")
EXACT = 2 ** 53  # within it llguidance writes every range (a 64-bit float holds each whole number)
NUMERIC = ("integer", "number")
NAMED = 4  # dropped bounds named by value (a schema of thousands of them: a note of a line)


def without_unwritable(schema) -> tuple[object, list[str]]:
    """-> (the schema without what llguidance cannot write: a copy where there is any, the schema as it
    is where there is none; what was dropped, as 'minimum -1e+30' or 'minProperties', the first NAMED
    bounds by value and the others counted)."""
    if not any(_far(node.get(key)) for node in subschemas(schema) for key in BOUNDS) and not any(
            set(COUNTS) & node.keys() for node in subschemas(schema)):
        return schema, []
    schema, bounds, counts, tried = copy.deepcopy(schema), {}, set(), {}
    for node in list(subschemas(schema)):
        for key in [key for key in BOUNDS if _far(node.get(key))]:
            if _writable(node, tried):
                break
            bounds[f"{key} {node.pop(key)}"] = True
        if set(COUNTS) & node.keys() and not _contradictory(node) and not _counts_writable(node, tried):
            counts |= {key for key in COUNTS if node.pop(key, None) is not None}
    named = list(bounds)[:NAMED] + ([f"{len(bounds) - NAMED} more bounds like them"] if len(bounds) > NAMED else [])
    return schema, named + sorted(counts)


def _far(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > EXACT


def _writable(node: dict, tried: dict) -> bool:
    """Whether llguidance writes the node's numbers as bounded (its numeric keywords alone; `tried`
    holds the answers so far, by those keywords: about 0.35 ms each where it writes them)."""
    types = node.get("type", list(NUMERIC))
    numeric = [t for t in ([types] if isinstance(types, str) else types if isinstance(types, list) else []) if t in NUMERIC]
    if not numeric:  # (the bounds apply to no value the node allows)
        return True
    try:
        alone = json.dumps({"type": numeric, **{key: node[key] for key in (*BOUNDS, "multipleOf") if key in node}},
                           allow_nan=False)
    except ValueError:  # (infinity: never written)
        return False
    if alone not in tried:
        grammar = llguidance.grammar_from("json_schema", alone)
        tried[alone] = not llguidance.LLMatcher.validate_grammar_with_warnings(grammar)[0]
    return tried[alone]


def _counts_writable(node: dict, tried: dict) -> bool:
    """Whether llguidance writes the node's property counts (asked strictly of its object keywords alone,
    each property any value; a node it cannot read at all is left as it is)."""
    listed, extra = node.get("properties"), node.get("additionalProperties")
    alone = {"type": "object", "properties": dict.fromkeys(listed if isinstance(listed, dict) else {}, {}),
             **{key: node[key] for key in ("required", *COUNTS) if key in node},
             **({"additionalProperties": extra} if isinstance(extra, bool) else {}),
             **({"patternProperties": dict.fromkeys(node["patternProperties"], {})}
                if isinstance(node.get("patternProperties"), dict) else {})}
    key = json.dumps(alone, sort_keys=True)
    if key not in tried:
        try:
            tried[key] = not llguidance.LLMatcher.validate_grammar_with_warnings(
                llguidance.LLMatcher.grammar_from_json_schema(key))[0]
        except (ValueError, TypeError, RuntimeError):
            tried[key] = True
    return tried[key]


def _contradictory(node: dict) -> bool:
    """Property counts no object of the node meets, whatever its properties hold."""
    listed, required = node.get("properties"), node.get("required")
    listed = listed if isinstance(listed, dict) else {}
    required = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    least, most = (node.get(key) if _whole(node.get(key)) else None for key in COUNTS)
    closed = node.get("additionalProperties") is False and not node.get("patternProperties")
    return ((closed and least is not None and least > len(listed)) or (most is not None and most < len(required))
            or (None not in (least, most) and least > most))


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
