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
- a required name missing from properties was not required (`{}` passed).
- an enum's values, and a const, are written whatever else the node says: they are filtered by the rest.
- a $ref naming an anchor (`#name`) was any value ("URI should either be '#' or start with '#/'"):
  it names the anchored node by its JSON pointer.
- a propertyNames schema naming no type let a name be any value (`{false: null}`): it is a string; it
  was not applied to the names in properties: those it refuses are left out.
- a property whose schema is false (a field removed) made xgrammar refuse the whole schema ("Schema
  'false' cannot accept any value"): beside additionalProperties false or none, it is left out of
  properties (and no other name is written, as xgrammar's strict mode does).
- an empty patternProperties allowed no name at all (`{}` alone): it is left out.
- an integer's bound that is no whole number (`maximum: 2.5`, valid) made it refuse the whole schema
  ("Integer constraint must be a whole number"): it is rounded inward, the same integers allowed.
- a $ref's pointer %-encoded or ~-escaped (`#/$defs/List%5Bint%5D`, `#/$defs/a~1b`) was looked for as a
  field of that very name ("Cannot find field"): it is written with the names as they are."""
import json
import math

from jsonschema import Draft202012Validator

from playground.constraints.safety import INDEX, NameMatcher, Needs, end_anchors
from playground.constraints.schema_keywords import (SUBSCHEMA, SUBSCHEMA_LISTS, SUBSCHEMA_MAPS, fresh_name, pointer_names,
                                                    subschemas, with_pointers)
from playground.constraints.schema_merge import ANNOTATIONS, Apart, Merging, same
from playground.constraints.unwritable import BOUNDS
from playground.constraints.validate import checker
from playground.errors import PlaygroundError

NOT_CONSTRAINTS = ANNOTATIONS | {"$ref"}
ALL_TYPES = ["null", "boolean", "object", "array", "number", "string"]  # "integer" is among the numbers
KIND_GIVEN = {"type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "properties", "items", "prefixItems"}
# (what xgrammar reads a node's kind from; a node with none of them is any JSON value to it, its other keywords dropped)
DEFINITIONS = ("$defs", "definitions")  # where a schema's name means nothing
COMBINED = ("anyOf", "oneOf", "allOf")  # in the order xgrammar looks for them
PUSHED_DOWN = "x-playground-pushed-down"  # a node whose keywords sit in each of its branches now (x- keys: ignored)
BESIDE_CHOICE = "keywords beside anyOf, oneOf or allOf"  # where they could not be merged into the branches
NAMED_TWICE = "a name in properties that a patternProperties pattern matches"  # xgrammar: either schema, not both
NO_ENUM_VALUE = "x-playground-no-enum-value"  # an enum none of whose values the rest of its node allows
NO_VALUE = "x-playground-no-value"  # a node no value satisfies (xgr_no_value.py)
ENUM_REFUSED = "an enum or const whose every value its node's other keywords refuse"  # (xgrammar has no way to say "no value")
MERGE_DEPTH = 8  # branches of branches pushed down in one node
PUSH_ROUNDS = 3


def as_xgrammar_reads(schema):
    """The schema rewritten for xgrammar (a copy; the original keeps its meaning for the check after the run)."""
    schema = unmarked(json.loads(json.dumps(schema)))  # (a marker the user wrote means nothing)
    _anchors_as_pointers(schema)
    _names_as_strings(schema)
    text = json.dumps(schema)
    budget = [len(text) + 10_000]  # characters of JSON the merging may add: xgrammar writes a grammar for
    # each copy (JsonSchemaStore helm-testsuite's, unbounded: 44 KB -> 393 KB), and compiles it in full
    nodes = list(subschemas(schema))
    for _ in range(PUSH_ROUNDS):  # again over what the merging brought in from the nodes $refs name
        merging = Merging(json.loads(text), choice_of=_read_alone)  # $refs followed in a copy never rewritten
        todo = [node for node in reversed(nodes) if _to_push(node)]  # branches before the nodes holding them
        for node in todo:
            _push_down(node, merging, budget, MERGE_DEPTH)
        nodes = read_nodes(schema)
    needs, patterns_read = Needs(schema), {}  # id of a patternProperties map rewritten -> {pattern: as rewritten}
    for node in read_nodes(schema):
        if not node.get(PUSHED_DOWN):
            try:
                _read_as_meant(node, needs, patterns_read)
            except (TypeError, AttributeError, ValueError):  # not a schema: a $ref into a non-keyword place
                pass  # brought it here; xgrammar refuses it or reads it as before
    for node in read_nodes(schema):  # (parents come first: their branches are marked by now)
        no_value_left_out(node)
    _pointers_as_read(schema, patterns_read)  # last: the steps above follow $refs as JSON Schema writes them
    return schema


def _anchors_as_pointers(schema) -> None:
    """Each `"$ref": "#name"` -> the JSON pointer of the first node declaring anchor `name` ($anchor
    or $dynamicAnchor), in the order safety.resolve finds it (the anchors of other resources are
    refused before: ref_reading)."""
    anchored: dict[str, str] = {}
    for pointer, node in with_pointers(schema):
        for name in (node.get("$anchor"), node.get("$dynamicAnchor")):  # (a $ref reads a dynamic one as plain)
            if isinstance(name, str):
                anchored.setdefault(name, pointer.replace("%", "%25"))  # (a fragment is read %-decoded)
    for _, node in with_pointers(schema):
        if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#") and node["$ref"][1:] in anchored:
            node["$ref"] = "#" + anchored[node["$ref"][1:]]


def _pointers_as_read(schema, patterns_read: dict) -> None:
    """Each local $ref's JSON pointer written as xgrammar reads one: its names as they are, neither
    %-decoded nor ~-unescaped (it looked for a field "List%5Bint%5D" or "a~1b" and refused the schema),
    a patternProperties pattern as rewritten to be matched whole (JsonSchemaStore opspec-io; `patterns_read`,
    so a pattern written as another's rewriting is not taken for it)
    A name holding "/", which xgrammar splits on, is renamed where a name means nothing ($defs,
    definitions); a pointer through any other such name is left as written (xgrammar refuses it, saying so)."""
    renamed: dict[int, dict[str, str]] = dict(patterns_read)  # id of a $defs or patternProperties map -> its names renamed
    seen = set()
    for _, node in list(with_pointers(schema)):  # (a listing: the walk's own maps are renamed in)
        ref = node.get("$ref")
        if id(node) in seen or not isinstance(ref, str) or not ref.startswith("#/"):
            continue
        seen.add(id(node))
        names = list(pointer_names(ref))
        names = _plain_names(schema, names, renamed)
        if names is not None:
            node["$ref"] = "#/" + "/".join(names)


def _plain_names(schema, names: list[str], renamed: dict) -> list[str] | None:
    """The pointer's names with each "/"-holding definition name renamed (in the schema too), or None
    where it goes through another such name or points to nothing."""
    out, at, parent = [], schema, None
    for name in names:
        if isinstance(at, dict) and name in renamed.get(id(at), {}):
            name = renamed[id(at)][name]
        elif isinstance(at, dict) and parent in DEFINITIONS and "/" in name and name in at:
            new = fresh_name(at, name.replace("/", "_"))
            renamed.setdefault(id(at), {})[name], at[new] = new, at.pop(name)
            name = new
        if "/" in name or not (isinstance(at, dict) and name in at or isinstance(at, list) and INDEX.fullmatch(name) is not None
                               and int(name) < len(at)):
            return None
        out.append(name)
        parent, at = name, at[name] if isinstance(at, dict) else at[int(name)]
    return out


def _names_as_strings(schema) -> None:
    """Each propertyNames schema -> {"type": "string", "allOf": [it]}: xgrammar writes a name by that
    schema as it would a value, and one naming no type (`{"pattern": "^[a-c]+$"}`, or a $ref to
    such a node), given every type as any node naming no kind is, wrote `{false: null}`: no JSON."""
    named = [node for _, node in with_pointers(schema) if isinstance(node.get("propertyNames"), dict)]
    for node in named:
        if node["propertyNames"].get("type") != "string":
            node["propertyNames"] = {"type": "string", "allOf": [node["propertyNames"]]}


def _whole_bounds(node: dict) -> None:
    """An integer's bound that is no whole number: where the node's only numbers are integers, rounded
    inward (the same integers allowed: maximum 2.5 -> 2, exclusiveMinimum 2.5 -> 2); beside "number" in
    its types, "integer" left out (every integer is a number there)."""
    types = node.get("type")
    inexact = [key for key in BOUNDS if isinstance(node.get(key), float) and not node[key].is_integer()]
    if not inexact or not (types == "integer" or isinstance(types, list) and "integer" in types):
        return
    if isinstance(types, list) and "number" in types:
        node["type"] = [name for name in types if name != "integer"]
        return
    for key in inexact:
        node[key] = math.ceil(node[key]) if key in ("minimum", "exclusiveMaximum") else math.floor(node[key])


def _read_as_meant(node: dict, needs: Needs, patterns_read: dict) -> None:
    """One node rewritten where xgrammar reads it otherwise (new values only: a node's values can be
    shared with other nodes since the merging; the node itself is rewritten once)."""
    if not KIND_GIVEN & set(node) and set(node) - NOT_CONSTRAINTS:
        node["type"] = ALL_TYPES
        # items and additionalProperties as JSON Schema's defaults (beside other keywords, xgrammar's
        # strict mode would allow only [] and {}), not where they would mark every item or name evaluated
        if "unevaluatedItems" not in node:
            node.setdefault("items", {})
        if "unevaluatedProperties" not in node:
            node.setdefault("additionalProperties", {})
    if "const" in node and "enum" not in node and set(node) - NOT_CONSTRAINTS - {"const"}:
        node["enum"] = [node.pop("const")]  # (xgrammar wrote a const beside `"type": "null"` too: an enum of one)
    if isinstance(node.get("enum"), list) and set(node) - NOT_CONSTRAINTS - {"enum"}:
        node["enum"] = _enum_held(node)
    _false_properties_left_out(node)
    _names_refused_left_out(node)
    for name, (held, _) in zip(node.get("required", []), needs.names(node)):
        if name not in node.get("properties", {}):  # held: its patternProperties entries
            extra = node.get("additionalProperties", node.get("unevaluatedProperties", True))
            if held or extra is not False:  # (a required name nothing allows: left to the check)
                node["properties"] = {**node.get("properties", {}), name: (
                    held[0] if len(held) == 1 else {"allOf": held} if held else extra if isinstance(extra, dict) else {})}
    _whole_bounds(node)
    if node.get("patternProperties") == {}:
        del node["patternProperties"]  # (xgrammar read an empty one as no name allowed: `{}` alone)
    if node.get("patternProperties"):
        read = {pattern: _searched(pattern) for pattern in node["patternProperties"]}
        node["patternProperties"] = {read[p]: sub for p, sub in node["patternProperties"].items()}
        patterns_read[id(node["patternProperties"])] = read
        node["additionalProperties"] = False  # xgrammar let a name a pattern matches take this schema
        # instead (beside properties; without them it drops it): fewer names, none wrong


def _false_properties_left_out(node: dict) -> None:
    if node.get("additionalProperties", False) is False and not node.get("patternProperties") and False in (
            node.get("properties") or {}).values():  # a name no value may take: additionalProperties refuses it
        node["properties"] = {name: sub for name, sub in node["properties"].items() if sub is not False}
        node["additionalProperties"] = False  # (where absent: as xgrammar's strict mode reads it, fewer names
        # written, none wrong; its compile without strict mode would have let the name removed through)


def _names_refused_left_out(node: dict) -> None:
    """xgrammar applies propertyNames only to names outside properties (`"properties": {"x": ...}` beside
    `"propertyNames": {"enum": ["a"]}` wrote {"x": null}; a fuzzing review): a listed name it refuses is
    left out of properties, where propertyNames holds it (a required one stays: the check refuses it)."""
    names, rule = node.get("properties"), node.get("propertyNames")
    if not isinstance(names, dict) or not isinstance(rule, dict) or (held := _held(list(names), rule)) is None:
        return
    node["properties"] = {name: sub for name, sub in names.items() if name in held or name in node.get("required", [])}


def no_value_left_out(node: dict) -> None:
    """An anyOf or oneOf branch, or a property not required, whose enum or const its node refuses, or that
    has no value at all (xgr_no_value.py), left out (JSON Schema never takes it; xgrammar would write the
    value: `{"anyOf": [{"type": "string", "const": 1}, {"type": "null"}]}` wrote 1, a fuzzing review; or
    refuse the schema); a required one, or every branch, is left noted."""
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list) and not all(map(_no_value, branches)):
            node[key] = [branch for branch in branches if not _no_value(branch)]
    required, extra = node.get("required", []), node.get("additionalProperties", False)
    if isinstance(node.get("properties"), dict) and isinstance(required, list) and extra is False and not node.get(
            "patternProperties"):  # (elsewhere the name would fall to another schema: left, noted)
        node["properties"] = {name: False if _no_value(sub) and name not in required else sub
                              for name, sub in node["properties"].items()}
        _false_properties_left_out(node)


def _no_value(node) -> bool:
    return isinstance(node, dict) and bool(node.get(NO_ENUM_VALUE) or node.get(NO_VALUE))


def _enum_held(node: dict) -> list:
    """xgrammar writes an enum's values whatever else the node says (`{"type": "string", "enum":
    ["a", 1]}` let 1 through, minLength beside was dropped): the values the rest allows (all of them
    where the rest names a $ref, or where none is left, marked NO_ENUM_VALUE: xgrammar refuses an
    empty enum and `false`, so it writes them and the check after the run refuses them)."""
    rest = {k: v for k, v in node.items() if k not in ("enum", "const") and not k.startswith("x-")}
    if (held := _held(node["enum"], rest)) is None:
        return node["enum"]
    if not held:
        node[NO_ENUM_VALUE] = True
    return held or node["enum"]


def _held(values: list, schema: dict) -> list | None:
    """The values the schema allows; None where it names a reference (not followed here) or the checker cannot
    read it (or a pattern of it is past its time)."""
    if any(f'"{ref}"' in json.dumps(schema) for ref in ("$ref", "$dynamicRef", "$recursiveRef")):
        return None
    try:
        validator = checker(schema, Draft202012Validator)
        return [value for value in values if validator.is_valid(value)]
    except Exception:  # noqa: BLE001 - as it was, then
        return None


def unmarked(schema):
    """The schema with every marker key taken out, wherever it is (a $ref can lead anywhere)."""
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for marker in (PUSHED_DOWN, NO_ENUM_VALUE, NO_VALUE):
                value.pop(marker, None)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
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
    return bool(present) and not node.get(PUSHED_DOWN) and (len(present) > 1 or "$ref" in node or bool(_beside(node)))


def _beside(node: dict) -> dict:
    """The node's own constraints beside anyOf/oneOf/allOf (its $ref aside)."""
    return {k: v for k, v in node.items() if k not in NOT_CONSTRAINTS | set(COMBINED) and not k.startswith("x-")}


def _choice(node: dict) -> str:
    return next(k for k in COMBINED if k in node)


def _read_alone(node: dict) -> dict | None:
    """A pushed-down node as xgrammar reads it: its branches (its own keywords are in each)."""
    return {_choice(node): node[_choice(node)]} if node.get(PUSHED_DOWN) else None


def _push_down(node: dict, merging: Merging, budget: list, depth: int) -> None:
    """A node with anyOf/oneOf (or allOf) and other keywords -> those keywords, its $ref and allOf's
    branches merged into each anyOf/oneOf branch (one anyOf branch for allOf alone), in place. The
    node's own keywords stay, for $refs into them; the marker says xgrammar reads the branches alone.
    Left as it is where the merge is not said in one node, or past the budget (noted then)."""
    if not _to_push(node) or depth <= 0:
        return
    choices = [k for k in ("anyOf", "oneOf") if k in node]
    try:
        if len(choices) > 1 or not all(isinstance(node[k], list) for k in COMBINED if k in node):
            raise Apart  # anyOf and oneOf both: a product of branches, not merged here
        base = _beside(node)
        for part in ([{"$ref": node["$ref"]}] if "$ref" in node else []) + node.get("allOf", []):
            base = merging.merged(base, part, outer=True)
        branches = [merging.merged(base, b, outer=True) for b in node[choices[0]]] if choices else [base]
        branches = [b for b in branches if b is not None]  # a branch nothing satisfies beside the rest: dropped
    except (Apart, PlaygroundError, RecursionError, TypeError, ValueError, AttributeError):
        return
    added = _size_within(branches, budget[0])
    if not branches or added is None:
        return
    budget[0] -= added
    node.pop("$ref", None)  # followed into the branches (a path never ends at one)
    node[choices[0] if choices and len(branches) > 1 else "anyOf"] = branches  # (oneOf of one: that one)
    node[PUSHED_DOWN] = True
    for branch in branches:  # new nodes; one that held anyOf/oneOf of its own now has keywords beside it
        _push_down(branch, merging, budget, depth - 1)


def _to_push(node) -> bool:
    return isinstance(node, dict) and (beside_choice(node) or (not node.get(PUSHED_DOWN) and _many(node.get("allOf"))))


def _many(value) -> bool:
    return isinstance(value, list) and len(value) > 1


def _size_within(value, limit: int) -> int | None:
    """About how many characters of JSON the value writes out (shared parts each time), None past limit."""
    size, stack = 0, [value]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            size += 2 + sum(len(k) + 4 for k in value)
            stack.extend(value.values())
        elif isinstance(value, list):
            size += 2 + len(value)
            stack.extend(value)
        else:
            size += len(str(value)) + 2
        if size > limit:
            return None
    return size


def named_twice(schema) -> bool:
    """Whether a name in some node's properties is also found by one of its patternProperties
    patterns (or cannot be told in time), with another schema: JSON Schema applies both, xgrammar
    lets the name take either alone (`"id"` took `^[a-z]+$`'s free string past its own pattern)."""
    matches = NameMatcher()
    return any(matches(pattern, name) is not False and not same(held, node["properties"][name])
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
