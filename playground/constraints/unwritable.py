"""What a backend cannot write of a valid schema, left to the check after the run instead of refusing it.

llguidance 1.9.1 refuses a whole schema, misreads it, or crashes for these, where xgrammar writes them:
- A bound past 2^53. It reads a schema's numbers as 64-bit floats (2^53 + 1 rounds, so a maximum of
  9007199254740993 refused itself), clamps an integer's to 64 bits (a uint64's maximum refused every
  value from 2^63; `minimum: 1e19` allowed only 2^63 - 1, which the check refuses), refuses a range from
  past about 2^63 ("Failed to generate regex for integer range": an int64 field's `minimum:
  -9223372036854775808`, JSONSchemaBench's Github_hard o90912; -1e30; a number's 1e300), and crashes
  the process for an integer range with both ends below about -2^63 (a review). Such bounds are dropped
  without asking it.
- Most minProperties and maxProperties on an object that lists a property it does not require ("only
  supported when all keys listed in properties are required"; it writes a closed object's minProperties
  1 or maxProperties 1 alone). Asked leniently, as the product asks, it compiles past them with that
  warning, and called `{"minProperties": 2, "additionalProperties": false, "properties": <3 optional>}`
  unsatisfiable (Github_medium o8454, valid).
Here llguidance's copy of the schema goes without them: every bound past 2^53; an object's counts it
cannot write beside its properties (asked of its object keywords alone; one kept where it writes that
one), unless they contradict them on their own, which it says rightly.
Its mask then lets through a number past them (20 digits or more) or another number of properties,
which the check after the run refuses, as the note says.

xgrammar 0.2.8 refuses a whole schema for an integer's bound past 64 bits ("Integer exceeds maximum limit
due to precision loss at 64-bit boundary": a uint64's maximum, Snowplow's 9223372036854776000, -1e30);
it writes a number's. `without_past_int64` takes those from its copy, named the same way.

Both backends: a patternProperties entry whose schema is `false` (a name it matches refused). xgrammar
refuses `false` anywhere ("Schema 'false' cannot accept any value"); llguidance refuses it beside another
pattern that may match the same name ("patternProperty regexes /.*/ and /additionalProperties/ are not
disjoint": JSONSchemaBench Github_hard o27790, valid), and beside an open object let a name it matches
begin and never end (`{"patternProperties": {"^x": false}}` took `{"xab` and refused every `"` after it).
`without_false_patterns` takes them from a copy; the names they refuse are left to the check."""
import copy
import json

import llguidance

from playground.constraints.schema_keywords import INT64, subschemas

BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
COUNTS = ("minProperties", "maxProperties")
EXACT = 2 ** 53  # within it llguidance writes every range as written (a 64-bit float holds each whole number)
NAMED = 4  # dropped bounds named by value (a schema of thousands of them: a note of a line)
SHOWN = 40  # characters of a dropped pattern named (a pattern may have 2,000)


def without_unwritable(schema) -> tuple[object, list[str]]:
    """-> (the schema without what llguidance cannot write: a copy where there is any, the schema as it
    is where there is none; what was dropped, as 'minimum -1e+30' or 'minProperties', the first NAMED
    bounds by value and the others counted)."""
    schema, refused = without_false_patterns(schema)
    if not any(_far(node.get(key)) for node in subschemas(schema) for key in BOUNDS) and not any(
            set(COUNTS) & node.keys() for node in subschemas(schema)):
        return schema, refused
    schema, bounds, counts, tried = copy.deepcopy(schema), {}, set(), {}
    for node in list(subschemas(schema)):
        _drop_bounds(node, bounds, _far if _numeric(node) else None)
        if set(COUNTS) & node.keys() and not _contradictory(node):
            counts |= _unwritable_counts(node, tried)
    return schema, _named(bounds) + sorted(counts) + refused


def without_false_patterns(schema) -> tuple[object, list[str]]:
    """-> (the schema without its patternProperties entries of schema `false`: a copy where there is any;
    what was dropped, as 'patternProperties "^x": false', the first NAMED by pattern and the others counted)."""
    if not any(_false_patterns(node) for node in subschemas(schema)):
        return schema, []
    schema, dropped = copy.deepcopy(schema), {}
    for node in list(subschemas(schema)):
        for pattern in _false_patterns(node):
            del node["patternProperties"][pattern]
            shown = pattern if len(pattern) <= SHOWN else pattern[:SHOWN] + "…"
            dropped[f"patternProperties {json.dumps(shown, ensure_ascii=False)}: false"] = True
    return schema, _named(dropped, "patterns")


def _false_patterns(node: dict) -> list[str]:
    patterns = node.get("patternProperties")
    return [pattern for pattern, sub in patterns.items() if sub is False] if isinstance(patterns, dict) else []


def without_past_int64(schema) -> list[str]:
    """Take from the schema (xgrammar's own copy, changed in place) each integer's bound past 64 bits ->
    what was dropped, named as without_unwritable names it."""
    bounds = {}
    for node in list(subschemas(schema)):
        _drop_bounds(node, bounds, _past_int64 if _integer(node) else None)
    return _named(bounds)


def _drop_bounds(node: dict, dropped: dict, unwritable) -> None:
    """Take from the node each bound `unwritable` says of, named into `dropped` ('minimum -1e+30')."""
    for key in [key for key in BOUNDS if unwritable(node.get(key), key)] if unwritable else []:
        dropped[f"{key} {node.pop(key)}"] = True


def _named(bounds: dict, what: str = "bounds") -> list[str]:
    """The first NAMED bounds (or patterns) dropped by value, the others counted."""
    return list(bounds)[:NAMED] + ([f"more {what} like them: {len(bounds) - NAMED}"] if len(bounds) > NAMED else [])


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _far(value, key: str = "") -> bool:
    return _number(value) and abs(value) > EXACT


def _past_int64(value, key: str) -> bool:
    """Whether xgrammar refuses an integer's bound: past 64 bits, a float at +-2^63 (it refused
    -9.223372036854776e18, 2^63 as a float), or an exclusive one whose first value is past them
    ("exclusiveMinimum would cause integer overflow"; from a review)."""
    if not _number(value):
        return False
    low, high = INT64
    if isinstance(value, float):
        return not low < value < high + 1  # (compared exactly: the floats inside are whole numbers within int64)
    return not (low + (key == "exclusiveMaximum") <= value <= high - (key == "exclusiveMinimum"))


def _integer(node: dict) -> bool:
    types = node.get("type")
    return types == "integer" or isinstance(types, list) and "integer" in types


def _numeric(node: dict) -> bool:
    """Whether the node allows a number (its bounds apply to one)."""
    types = node.get("type", "number")
    return bool({"integer", "number"} & set([types] if isinstance(types, str) else types if isinstance(types, list) else []))


def _unwritable_counts(node: dict, tried: dict) -> set[str]:
    """Take from the node the counts llguidance cannot write: none, one (a closed object's minProperties 1
    beside a maxProperties 2 it cannot write keeps the first), or both -> their names."""
    present = [key for key in COUNTS if key in node]
    if _counts_writable(node, tried):
        return set()
    for dropped in (present if len(present) == 2 else []):
        if _counts_writable({key: value for key, value in node.items() if key != dropped}, tried):
            del node[dropped]
            return {dropped}
    for key in present:
        del node[key]
    return set(present)


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
    listed = {name: sub for name, sub in listed.items() if sub is not False} if isinstance(listed, dict) else {}
    required = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    least, most = (int(node[key]) if _whole(node.get(key)) else None for key in COUNTS)
    closed = node.get("additionalProperties") is False and not node.get("patternProperties")
    return ((closed and least is not None and least > len(listed)) or (most is not None and most < len(required))
            or (None not in (least, most) and least > most))


def _whole(value) -> bool:
    """A count as JSON Schema reads one: 3 or 3.0."""
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
