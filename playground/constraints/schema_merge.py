"""Two JSON Schemas as one node: what `allOf [a, b]` means (draft 2020-12), where one node can say
it. Used to give xgrammar, which reads a node's anyOf/oneOf/allOf branches and nothing beside them,
each branch with the keywords beside it merged in (xgr_reads.py).

Merged: `type` and `enum` (what both allow), `required` (both lists), bounds (the tighter), `properties`
name by name, `items` (each element both), and every keyword one side alone has. Anything else
both sides give differently raises Apart, as do the keywords whose meaning depends on what is
beside them in a node, where the merged node would change it: additionalProperties,
patternProperties and unevaluatedProperties (a name the other side adds would escape them),
prefixItems with items or contains, and unevaluated* on a side that is not the outer one. Values
compare as JSON does (1 is not true). $refs are followed into a copy that is never rewritten, so
nothing merged can hold the node it is merged into."""
from playground.constraints.safety import resolve

ANNOTATIONS = {"$defs", "definitions", "$comment", "title", "description", "default", "examples", "$id",
               "$schema", "$anchor", "$dynamicAnchor", "deprecated", "readOnly", "writeOnly", "nullable"}
LOWER_BOUNDS = {"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"}
UPPER_BOUNDS = {"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"}
ARRAY_SHAPE = ("prefixItems", "items", "contains", "minContains", "maxContains", "unevaluatedItems")
NAME_LIMITS = ("additionalProperties", "patternProperties", "unevaluatedProperties")
REF_HOPS = 8
NEVER = object()  # a property schema nothing satisfies
MERGES = 10_000  # merges one rewrite may do (shared $refs merged name by name can double at each level)


class Apart(Exception):
    """Two schemas whose meeting is not said in one node here."""


class Merging:
    """Merges over one schema: `pristine` is a copy its $refs are followed in, never changed."""

    def __init__(self, pristine, choice_of=None):
        self.pristine, self.left = pristine, MERGES
        self.choice_of = choice_of  # node -> {key: branches} for a node rewritten to be read by its branches alone

    def merged(self, a, b, outer: bool = False) -> dict | None:
        """What allOf [a, b] means, as one new node; None where nothing satisfies both. `outer`: a is
        the keywords of the node holding b (its unevaluated* see b's names, as in one node)."""
        self.left -= 1
        if self.left < 0:
            raise Apart
        a, b = self.resolved(a), self.resolved(b)
        if a is None or b is None:
            return None
        if (not outer and _unevaluated(a)) or _unevaluated(b):
            raise Apart  # what they see would change
        if not (outer and _sees_through(a) and not any(k in b for k in NAME_LIMITS)):  # (b's names are a's
            _names_kept(a, b)  # evaluated ones there: the whole merge was abandoned, a review)
        _names_kept(b, a)
        shapes = [{k: side[k] for k in ARRAY_SHAPE if k in side} for side in (a, b)]
        if all(shapes) and not same(*shapes) and not set(shapes[0]) == set(shapes[1]) == {"items"}:
            raise Apart  # items after prefixItems (or beside contains) means something else than items alone
        out = dict(a)
        for key, value in b.items():
            if key in out and not same(out[key], value):
                if key == "type" and not _types_met(out[key], value) or key == "enum" and not _enum_met(out[key], value):
                    return None  # no type, or no value, both allow
                value = self._met(key, out[key], value)
            out[key] = value
        never = [name for name, sub in out.get("properties", {}).items() if sub is NEVER]
        if never and set(never) & set(out.get("required", [])):
            return None  # a name it requires that nothing allows
        if never:
            raise Apart  # (a name never present: not said in one node here)
        return out

    def resolved(self, schema, hops: int = REF_HOPS) -> dict | None:
        """A schema with its $ref followed (the node it names merged with the keywords beside it:
        draft 2020-12 applies both) -> a new node without one, annotations left out; None for false."""
        if schema is True:
            return {}
        if schema is False:
            return None
        if not isinstance(schema, dict):
            raise Apart
        if self.choice_of and self.choice_of(schema):
            schema = self.choice_of(schema)
        bare = {k: v for k, v in schema.items() if k not in ANNOTATIONS and k != "$ref" and not k.startswith("x-")}
        if "$ref" not in schema:
            return bare
        if not hops or not isinstance(schema["$ref"], str):
            raise Apart
        target = self.resolved(resolve(schema["$ref"], self.pristine), hops - 1)
        return self.merged(target, bare) if bare else target

    def _met(self, key: str, a, b):
        """Two different values of one keyword -> the value meaning both."""
        if key == "type":
            return _types_met(a, b)
        if key == "enum" and isinstance(a, list) and isinstance(b, list):
            return _enum_met(a, b)
        if key == "required" and isinstance(a, list) and isinstance(b, list):
            return list(dict.fromkeys(a + b))
        if key in LOWER_BOUNDS | UPPER_BOUNDS and _number(a) and _number(b):
            return max(a, b) if key in LOWER_BOUNDS else min(a, b)
        if key == "properties" and isinstance(a, dict) and isinstance(b, dict):
            return a | {name: self._property(a[name], sub) if name in a else sub for name, sub in b.items()}
        if key == "items" and isinstance(a, (dict, bool)) and isinstance(b, (dict, bool)):
            if (items := self.merged(a, b)) is None:
                raise Apart  # (an empty array only: not said here)
            return items
        raise Apart

    def _property(self, a, b):
        if same(a, b):
            return a
        met = self.merged(a, b)
        return NEVER if met is None else met


def same(a, b) -> bool:
    """Equal as JSON values (Python's == has 1 == True and 0 == False)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    return type(a) in (int, float) and type(b) in (int, float) and a == b or type(a) is type(b) and a == b


def _unevaluated(node: dict) -> bool:
    return any(node.get(k, True) not in (True, {}) for k in ("unevaluatedProperties", "unevaluatedItems"))


def _sees_through(node: dict) -> bool:
    """Whether the node limits other names by unevaluatedProperties alone, which sees the names the
    schemas of its allOf evaluate (additionalProperties and patternProperties do not)."""
    return "unevaluatedProperties" in node and not any(node.get(k, True) not in (True, {}) for k in NAME_LIMITS[:2])


def _names_kept(side: dict, other: dict) -> None:
    """Where one side limits an object's other names (additionalProperties, patternProperties,
    unevaluatedProperties), the merged node must name the same: the other side's properties among
    its own, and no other limits (a pattern of the other side would free names it forbids)."""
    if not any(k in side and side[k] not in (True, {}) for k in NAME_LIMITS):
        return
    if not set(other.get("properties", {})) <= set(side.get("properties", {})):
        raise Apart
    if any(k in other and not same(other[k], side.get(k)) for k in NAME_LIMITS):
        raise Apart


def _types_met(a, b) -> list | str:
    """Two `type` values -> the types both allow ("integer" is among the numbers); [] for none."""
    a, b = ([t] if isinstance(t, str) else list(t) for t in (a, b))
    met = [t for t in a if t in b or (t == "integer" and "number" in b)]
    met += [t for t in b if t == "integer" and "number" in a and t not in met]
    return met[0] if len(met) == 1 else met


def _enum_met(a, b) -> list:
    """Two `enum` lists -> the values both hold, in the first's order; [] for none (lists not given: Apart)."""
    if not isinstance(a, list) or not isinstance(b, list):
        raise Apart
    return [v for v in a if any(same(v, w) for w in b)]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

