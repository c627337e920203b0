"""Places of a schema that may be left out and whose schema no value satisfies, left out for xgrammar
0.2.8: JSON Schema never takes such a place; xgrammar refuses the whole schema over one written in
place (`{"properties": {"a": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1}}}`:
"Invalid range: minimum greater than maximum", where `{}` satisfies it) and writes one a $ref names
as it reads it (`{"a": {}}`, refused by the check after the run). Asked of llguidance's schema
compiler (satisfiable.py), a bounded number of times, only where xgrammar refused the schema or a
reference to a node with no value was found."""
import json

from playground.constraints.satisfiable import has_no_value
from playground.constraints.schema_keywords import subschemas
from playground.constraints.xgr_reads import DEFINITIONS, NO_VALUE, no_value_left_out, read_nodes

PLACES_ASKED = 64  # llguidance compiles, about a millisecond each
FOLLOWED = ("#/$defs/", "#/definitions/")  # references a place is asked with: into the root's definitions
UNFOLLOWED = ('"$dynamicRef"', '"$recursiveRef"', '"$id"')  # (a place holding one is not asked)


def no_value_places_left_out(schema) -> bool:
    """In place, in a schema rewritten for xgrammar: each anyOf/oneOf branch and optional property whose
    schema has no value left out (as an enum with no value left is), prefixItems past maxItems or from
    the first optional one with no value cut (maxItems with them), an items or additionalProperties
    schema with no value made false. -> whether anything changed (worth asking xgrammar again)."""
    asking, changed = _Asking(schema), False
    for node in read_nodes(schema):
        changed |= _prefix_cut(node, asking)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict) and asking.no_value(node[key]):
                node[key], changed = False, True
        for sub in _optional_places(node):
            if not sub.get(NO_VALUE) and asking.no_value(sub):
                sub[NO_VALUE], changed = True, True
        no_value_left_out(node)  # (a place marked where it cannot be left out: xgrammar refuses it again)
    return changed


class _Asking:
    """llguidance asked whether a place has no value, with the root's definitions beside it for its
    references (only where every reference there stays in them: `#` would name the question itself)."""

    def __init__(self, schema):
        self.asked = 0
        self.definitions = {key: schema[key] for key in DEFINITIONS if isinstance(schema, dict) and key in schema}
        self.closed = all(_stays(node.get("$ref")) for value in self.definitions.values() if isinstance(value, dict)
                          for sub in value.values() for node in subschemas(sub))

    def no_value(self, sub: dict) -> bool:
        """Whether llguidance finds no value for this schema (one it cannot be asked of, or past the bound: no)."""
        text = json.dumps(sub)
        if self.asked >= PLACES_ASKED or any(key in text for key in UNFOLLOWED):
            return False
        if '"$ref"' in text:
            if not self.closed or any(key in sub for key in DEFINITIONS) or not all(
                    _stays(node.get("$ref")) for node in subschemas(sub)):
                return False
            sub = {**self.definitions, **sub}
        self.asked += 1
        return has_no_value(sub)


def _stays(ref) -> bool:
    return ref is None or isinstance(ref, str) and ref.startswith(FOLLOWED)


def _optional_places(node: dict) -> list[dict]:
    """The branches of an anyOf/oneOf with more than one, and the properties not required."""
    places = [b for key in ("anyOf", "oneOf") if isinstance(node.get(key), list) and len(node[key]) > 1
              for b in node[key] if isinstance(b, dict)]
    required = node.get("required") if isinstance(node.get("required"), list) else []
    if isinstance(node.get("properties"), dict):
        places += [sub for name, sub in node["properties"].items() if name not in required and isinstance(sub, dict)]
    return places


def _prefix_cut(node: dict, asking: _Asking) -> bool:
    """prefixItems [a, b, c] with maxItems 1 -> [a] (xgrammar: "maxItems is less than the number of
    prefixItems"); one with no value at or past minItems ends the array before it (maxItems its index)."""
    items, least = node.get("prefixItems"), node.get("minItems", 0)
    if not isinstance(items, list) or not isinstance(least, int):
        return False
    most = node.get("maxItems") if isinstance(node.get("maxItems"), int) else len(items)
    end = min(most, len(items))
    end = next((i for i in range(least, end) if isinstance(items[i], dict) and asking.no_value(items[i])), end)
    if end == len(items):
        return False
    node["prefixItems"], node["maxItems"] = items[:end], min(most, end)
    return True
