"""A schema means what its declared draft says ($schema; draft 2020-12 when it declares none or one
this library does not know). It is checked and its outputs validated by that draft's rules, and the
constraint engines, which read draft 2020-12, are given the same meaning in 2020-12 words:

    draft-04 exclusiveMaximum: true, maximum: m  ->  exclusiveMaximum: m   (and the same for minimum)
    drafts 4-2019-09 items: [a, b], additionalItems: c  ->  prefixItems: [a, b], items: c
    drafts 4-7 dependencies: {p: [q]} / {p: {...}}  ->  dependentRequired / dependentSchemas
    drafts 4-7 {$ref: r, ...siblings}  ->  {$ref: r} (siblings of $ref are ignored there), keeping
               $defs/definitions that other references may point into
    drafts 4-7 {"id": "#a"} ($id from draft 6)  ->  {"$anchor": "a"}; draft 4's "$id" (no keyword there) dropped
    drafts 4-2019-09 prefixItems (a later draft's)  ->  dropped, as that draft's checker ignores it
    draft 2019-09 $recursiveRef: r, $recursiveAnchor  ->  $ref: r (a reference inside an inner $id is
               refused, ref_reading: the schema is one resource, whose root `#` names either way)
    any draft: an inner $schema  ->  its subschema read by that draft's rules, as the checker reads it
               (jsonschema's validator takes a subschema's own $schema), then dropped: llguidance read
               `{"$schema": draft-04, "id": "a"}` inside a 2020-12 schema as a new base
               (JSONSchemaBench o91126: "Resource ... is not present")"""
import re

import jsonschema
from jsonschema.validators import validator_for

from playground.constraints.schema_keywords import SUBSCHEMA, SUBSCHEMA_LISTS, SUBSCHEMA_MAPS
from playground.errors import PlaygroundError

LATEST = jsonschema.Draft202012Validator
ANCHOR_NAME = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*")  # draft 2020-12's $anchor
BEFORE_2019 = (jsonschema.Draft4Validator, jsonschema.Draft6Validator, jsonschema.Draft7Validator)
ARRAY_ITEMS = BEFORE_2019 + (jsonschema.Draft201909Validator,)
NAMES = {jsonschema.Draft4Validator: "draft-04", jsonschema.Draft6Validator: "draft-06",
         jsonschema.Draft7Validator: "draft-07", jsonschema.Draft201909Validator: "draft 2019-09", LATEST: "draft 2020-12"}


def declared(schema) -> type:
    """The jsonschema validator class of the draft the schema declares."""
    cls = validator_for(schema, default=LATEST) if isinstance(schema, dict) else LATEST
    if cls is jsonschema.Draft3Validator:
        raise PlaygroundError("the schema declares draft-03, whose rules the constraint engines do not follow: "
                              "declare draft-04 or later (required became a list of names in draft-04)")
    return cls


def to_2020_12(schema, cls: type):
    """The schema in draft 2020-12 words (a new value; the input is not changed), and its $schema saying so:
    left naming draft-07, llguidance read the prefixItems made of `items: [{...}]` as no keyword and the
    `items: false` made of `additionalItems: false` as forbidding every item (an audit: a draft-07 tuple
    with minItems 1 was refused as unsatisfiable)."""
    if not isinstance(schema, dict):
        return schema
    node = _node(schema, cls, inner=False)
    if "$schema" in node and cls is not LATEST:
        node["$schema"] = LATEST.META_SCHEMA["$id"]
    return node


def _node(node, cls: type, inner: bool = True):
    if not isinstance(node, dict):
        return node
    if inner and "$schema" in node:
        cls = _draft_of(node, cls)
        node = {key: value for key, value in node.items() if key != "$schema"}
    # prefixItems written under an earlier draft: its checker ignores it, and to the engines it would
    # change what items means ({"$schema": draft-04, "items": {"enum": [1]}, "prefixItems": [{"enum":
    # [2]}]}: they wrote [2], the check refused it). Other later keywords only make the engines
    # stricter than the checker (const under draft 4): kept, as their author meant them.
    node = {key: _children(key, value, cls) for key, value in node.items() if key != "prefixItems" or cls is LATEST}
    if cls is jsonschema.Draft4Validator:
        node.pop("$id", None)  # (no keyword there: to the engines it moved the base of the $refs inside it)
    if cls in BEFORE_2019:
        _fragment_id_as_anchor(node, "id" if cls is jsonschema.Draft4Validator else "$id")
    if cls in BEFORE_2019 and "$ref" in node:
        node = {key: value for key, value in node.items() if key in ("$ref", "definitions", "$defs")}
    if cls is jsonschema.Draft4Validator:
        _exclusive_bounds(node)
    if cls is jsonschema.Draft201909Validator:
        _recursive_as_ref(node)
    if cls in ARRAY_ITEMS and isinstance(node.get("items"), list):
        node["prefixItems"] = node.pop("items")
        if "additionalItems" in node:
            node["items"] = node.pop("additionalItems")
    if cls in BEFORE_2019 and isinstance(node.get("dependencies"), dict):
        _split_dependencies(node)
    return node


def _draft_of(node: dict, around: type) -> type:
    """The draft a subschema's own $schema names (one not known: the draft around it)."""
    cls = validator_for(node, default=around)
    if cls is jsonschema.Draft3Validator:
        return declared(node)  # (refused in words)
    return cls


def _children(key: str, value, cls: type):
    if key in SUBSCHEMA_LISTS + ("items",) and isinstance(value, list):
        return [_node(v, cls) for v in value]
    if key in SUBSCHEMA_MAPS + ("dependencies",) and isinstance(value, dict):
        return {name: _node(v, cls) for name, v in value.items()}
    return _node(value, cls) if key in SUBSCHEMA else value


def _fragment_id_as_anchor(node: dict, key: str) -> None:
    """drafts 4-7 name an anchor with an id that is a fragment: {"id": "#a"} -> {"$anchor": "a"}. A
    fragment no anchor can be named by (`#/definitions/a`, which some generators write beside each
    definition; `#a!b`) is no anchor of draft 2020-12: dropped (a $ref names that node by its pointer)."""
    if isinstance(node.get(key), str) and node[key].startswith("#"):
        name = node.pop(key)[1:]
        if ANCHOR_NAME.fullmatch(name):
            node["$anchor"] = name


def _recursive_as_ref(node: dict) -> None:
    """draft 2019-09: $recursiveRef -> $ref (in an allOf beside a $ref of its own), $recursiveAnchor
    dropped (draft 2020-12's meta-schema wants a name there: `true` was refused)."""
    node.pop("$recursiveAnchor", None)
    if isinstance(node.get("$recursiveRef"), str):
        ref = {"$ref": node.pop("$recursiveRef")}
        if "$ref" in node:
            node["allOf"] = [*node.get("allOf", []), ref] if isinstance(node.get("allOf", []), list) else [ref]
        else:
            node.update(ref)


def _exclusive_bounds(node: dict) -> None:
    """draft-04: exclusiveMinimum/Maximum are booleans that make minimum/maximum strict."""
    for bound, flag in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(node.get(flag), bool):
            if node.pop(flag) and bound in node:
                node[flag] = node.pop(bound)


def _split_dependencies(node: dict) -> None:
    """dependencies: a list of names is dependentRequired, a schema is dependentSchemas."""
    dependencies = node.pop("dependencies")
    required = {k: v for k, v in dependencies.items() if isinstance(v, list)}
    schemas = {k: v for k, v in dependencies.items() if not isinstance(v, list)}
    if required:
        node["dependentRequired"] = required
    if schemas:
        node["dependentSchemas"] = schemas
