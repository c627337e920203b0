"""A JSON Schema in words xgrammar 0.2.8 reads as JSON Schema does. Each misreading was found on
JSONSchemaBench and is shown with a mask test in tests/test_real_world_schemas.py:

- anyOf, oneOf and allOf: xgrammar reads the first present of the three and nothing beside it
  (`{"type": "object", "required": ["a"], "anyOf": [...]}` dropped the required name; allOf of two
  was any value). The keywords beside them, and allOf's branches, are merged into each branch.
- a node naming no kind (no type, properties, items, enum...) is any JSON value to xgrammar, its
  keywords dropped (`{"minLength": 3}` let "ab" through): it gets every type named.
- a patternProperties pattern is searched for in a name by JSON Schema and matched whole by xgrammar
  (dropping a ^ or $ at either end); beside properties, a name a pattern matches could take
  additionalProperties' schema instead.
- a required name missing from properties was not required (`{}` passed)."""
import json

from playground.constraints.safety import NameMatcher, Needs, end_anchors, literal_of, resolve
from playground.constraints.schema_keywords import SUBSCHEMA, SUBSCHEMA_LISTS, SUBSCHEMA_MAPS, subschemas
from playground.errors import PlaygroundError

NOT_CONSTRAINTS = {"$ref", "$defs", "definitions", "$comment", "title", "description", "default", "examples",
                   "$id", "$schema", "$anchor", "$dynamicAnchor", "deprecated", "readOnly", "writeOnly", "nullable"}
ALL_TYPES = ["null", "boolean", "object", "array", "number", "string"]  # "integer" is among the numbers
KIND_GIVEN = {"type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "properties", "items", "prefixItems"}
# (what xgrammar reads a node's kind from; a node with none of them is any JSON value to it, its other keywords dropped)
COMBINED = ("anyOf", "oneOf", "allOf")  # in the order xgrammar looks for them
PUSHED_DOWN = "x-playground-pushed-down"  # a node whose keywords sit in each of its branches now (x- keys: ignored)
BESIDE_CHOICE = "keywords beside anyOf, oneOf or allOf"  # where they could not be merged into the branches
NAMED_TWICE = "a name in properties that a patternProperties pattern matches"  # xgrammar: either schema, not both
LOWER_BOUNDS = {"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"}
UPPER_BOUNDS = {"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"}
ARRAY_SHAPE = ("prefixItems", "items", "additionalItems", "unevaluatedItems")
REF_HOPS, MERGE_DEPTH = 8, 8


class _Apart(Exception):
    """Two schemas whose meeting is not said in one node here."""


def as_xgrammar_reads(schema):
    """The schema rewritten for xgrammar (a copy; the original keeps its meaning for the check after the run)."""
    schema = json.loads(json.dumps(schema))
    budget = [4 * len(json.dumps(schema)) + 100_000]  # characters of JSON the merging may add
    for node in reversed(list(subschemas(schema))):  # branches before the nodes holding them
        _push_down(node, schema, budget, MERGE_DEPTH)
    needs = Needs(schema)
    for node in read_nodes(schema):
        if node.get(PUSHED_DOWN):
            continue
        if not KIND_GIVEN & set(node) and set(node) - NOT_CONSTRAINTS:
            node.update(type=ALL_TYPES, additionalProperties=node.get("additionalProperties", {}), items={})
            # (items and additionalProperties as JSON Schema's defaults: beside other keywords, xgrammar's
            # strict mode would allow only [] and {})
        for name, (held, _) in zip(node.get("required", []), needs.names(node)):
            if name not in node.get("properties", {}):  # held: its patternProperties entries
                extra = node.get("additionalProperties", True)
                node.setdefault("properties", {})[name] = (held[0] if len(held) == 1 else {"allOf": held} if held
                                                           else extra if isinstance(extra, dict) else {})
        if node.get("patternProperties"):
            _as_properties(node)
        if node.get("patternProperties"):
            node["patternProperties"] = {_searched(p): sub for p, sub in node["patternProperties"].items()}
            node["additionalProperties"] = False  # xgrammar let a name a pattern matches take this schema
            # instead (beside properties; without them it drops it): fewer names, none wrong
    return schema


def read_nodes(schema) -> list[dict]:
    """Every node of the rewritten schema xgrammar reads, once each: of a pushed-down node, its
    branches and definitions (its own keywords are in each branch)."""
    seen, out, stack = set(), [], [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        keys = (_choice(node), "$defs", "definitions") if node.get(PUSHED_DOWN) else list(node)
        for key in keys:
            value = node.get(key)
            if key in SUBSCHEMA or key in SUBSCHEMA_LISTS:
                stack.extend(value if isinstance(value, list) else [value])
            elif key in SUBSCHEMA_MAPS and isinstance(value, dict):
                stack.extend(value.values())
    return out


def beside_choice(node: dict) -> bool:
    """Whether xgrammar drops some of this node's keywords: beside anyOf/oneOf/allOf, not merged in."""
    present = [k for k in COMBINED if k in node]
    return bool(present) and not node.get(PUSHED_DOWN) and (
        len(present) > 1 or any(k == "$ref" or k not in NOT_CONSTRAINTS | set(COMBINED) and not k.startswith("x-")
                                for k in node))


def _choice(node: dict) -> str:
    return next(k for k in COMBINED if k in node)


def _push_down(node: dict, root, budget: list, depth: int) -> None:
    """A node with anyOf/oneOf (or allOf) and other keywords -> those keywords, and allOf's branches,
    merged into each anyOf/oneOf branch (one anyOf branch for allOf alone), in place. The node's own
    keywords stay, for $refs into them; the marker says xgrammar reads the branches alone. Left as
    it is where the merge is not said in one node here, or past the budget (noted then)."""
    if not isinstance(node, dict) or not (beside_choice(node) or len(node.get("allOf", [])) > 1) or depth <= 0:
        return
    choices = [k for k in ("anyOf", "oneOf") if k in node]
    try:
        if len(choices) > 1:
            raise _Apart  # both must hold: a product of branches, not merged here
        base = {k: v for k, v in node.items() if k == "$ref" or k not in NOT_CONSTRAINTS | set(COMBINED)}
        for part in node.get("allOf", []):
            base = _merged(base, part, root)
        branches = [_merged(base, b, root) for b in node[choices[0]]] if choices else [base]
        branches = [b for b in branches if b is not None]  # a branch nothing satisfies beside the rest: dropped
        added = len(json.dumps(branches))
    except (_Apart, PlaygroundError, RecursionError, TypeError, ValueError):
        return
    if not branches or added > budget[0]:
        return
    budget[0] -= added
    node.pop("$ref", None)  # followed into the branches (a path never ends at one)
    node[choices[0] if choices and len(branches) > 1 else "anyOf"] = branches  # (oneOf of one: that one)
    node[PUSHED_DOWN] = True
    for branch in branches:  # a branch that held anyOf/oneOf of its own now has keywords beside it
        _push_down(branch, root, budget, depth - 1)


def _resolved(schema, root, hops: int = REF_HOPS) -> dict | None:
    """A schema with its $ref followed (the node it names merged with the keywords beside it: draft
    2020-12 applies both) -> a node without one, its annotations left out; None for `false`."""
    if schema is True:
        return {}
    if schema is False:
        return None
    if not isinstance(schema, dict):
        raise _Apart
    if schema.get(PUSHED_DOWN):
        schema = {_choice(schema): schema[_choice(schema)]}  # its other keywords are in each branch
    bare = {k: v for k, v in schema.items() if k not in NOT_CONSTRAINTS and not k.startswith("x-")}
    if "$ref" not in schema:
        return bare
    if not hops:
        raise _Apart
    return _merged(_resolved(resolve(schema["$ref"], root), root, hops - 1), bare, root)


def _merged(a, b, root) -> dict | None:
    """What allOf [a, b] means, as one node; None where nothing satisfies both; _Apart where it
    cannot be said in one node here. Neither input is changed (the result shares their values)."""
    a, b = _resolved(a, root), _resolved(b, root)
    if a is None or b is None:
        return None
    _names_kept(a, b)
    _names_kept(b, a)
    if "prefixItems" in a.keys() | b.keys() and any(k in a for k in ARRAY_SHAPE) and any(k in b for k in ARRAY_SHAPE) \
            and any(a.get(k) != b.get(k) for k in ARRAY_SHAPE):
        raise _Apart  # items after prefixItems means something else than items alone
    out = dict(a)
    for key, value in b.items():
        if key not in out or out[key] == value:
            out[key] = value
        elif key == "type":
            out[key] = _types_met(out[key], value)
            if not out[key]:
                return None
        elif key == "required":
            out[key] = list(dict.fromkeys(out[key] + value))
        elif key in LOWER_BOUNDS | UPPER_BOUNDS and _number(out[key]) and _number(value):
            out[key] = max(out[key], value) if key in LOWER_BOUNDS else min(out[key], value)
        elif key in ("properties", "items") and isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = _properties_met(out[key], value, root) if key == "properties" else _merged(out[key], value, root)
            if out[key] is None:
                raise _Apart  # (an empty array only: not said here)
        else:
            raise _Apart
    return out


def _names_kept(side: dict, other: dict) -> None:
    """Where one side limits an object's other names (additionalProperties, patternProperties,
    unevaluatedProperties), the merged node's properties must be that side's names: _Apart otherwise."""
    limits = {k: side[k] for k in ("additionalProperties", "patternProperties", "unevaluatedProperties")
              if k in side and side[k] not in (True, {})}
    if not limits:
        return
    if not set(other.get("properties", {})) <= set(side.get("properties", {})):
        raise _Apart
    if any(k in other and other[k] not in (True, {}) and other[k] != v for k, v in limits.items()):
        raise _Apart


def _types_met(a, b) -> list | str:
    """Two `type` values -> the types both allow ("integer" is among the numbers)."""
    a, b = ([t] if isinstance(t, str) else list(t) for t in (a, b))
    met = [t for t in a if t in b or (t == "integer" and "number" in b)]
    met += [t for t in b if t == "integer" and "number" in a and t not in met]
    return met[0] if len(met) == 1 else met


def _properties_met(a: dict, b: dict, root) -> dict:
    out = dict(a)
    for name, schema in b.items():
        out[name] = _merged(out[name], schema, root) if name in out and out[name] != schema else schema
        if out[name] is None:
            raise _Apart  # (the name never present: not said here)
    return out


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_properties(node: dict) -> None:
    """A pattern matching one name alone (`^data_type$`, as protobuf's generated schemas write each
    field's other spelling) -> that name in properties, where xgrammar keeps each name once and
    additionalProperties beside (a name in properties already keeps its pattern)."""
    for pattern, held in list(node["patternProperties"].items()):
        name = literal_of(pattern)
        if name is not None and name not in node.get("properties", {}):
            node.setdefault("properties", {})[name] = held
            del node["patternProperties"][pattern]
    if not node["patternProperties"]:
        del node["patternProperties"]


def named_twice(schema) -> bool:
    """Whether a name in some node's properties is also found by one of its patternProperties
    patterns (or cannot be told in time), with another schema: JSON Schema applies both, xgrammar
    lets the name take either alone (`"id"` took `^[a-z]+$`'s free string past its own pattern)."""
    matches = NameMatcher()
    return any(matches(pattern, name) is not False and held != node["properties"][name]
               for node in subschemas(schema)
               if isinstance(node.get("patternProperties"), dict) and isinstance(node.get("properties"), dict)
               for pattern, held in node["patternProperties"].items() for name in node["properties"])


def _searched(pattern: str) -> str:
    """A pattern searched for in a name -> one matched whole, as xgrammar matches it (dropping a ^ or $
    at either end): `.*` on each side not anchored (`^x-` -> `(?:x-).*`). One with another anchor
    (`^a|b`, `(^a)`) is left as it is."""
    anchored = end_anchors(pattern)
    if anchored is None:
        return pattern
    body = pattern[anchored[0]:len(pattern) - anchored[1]]
    return ("" if anchored[0] else ".*") + f"(?:{body})" + ("" if anchored[1] else ".*")
