"""Each local $ref read one way by the output's checker, both constraint engines and the checks here.

xgrammar and this project's own checks (safety.resolve) read every local reference against the
whole schema. The checker (jsonschema, by the schema's declared draft) reads one against the nearest
enclosing `$id` (`id` in draft-04), as llguidance does, and finds `#name` only among that resource's
anchors, declared as its draft declares them (`$anchor` from 2019-09, `"$id": "#name"` before).
Where the readings could differ the schema is refused in words; before, it compiled and every output
was reported "could not be checked: unresolvable reference", or xgrammar wrote by another node than
the one the output was checked against. None of JSONSchemaBench's 9,557 schemas is refused by this."""
import urllib.parse

import jsonschema
import referencing.exceptions

from playground.constraints.drafts import NAMES
from playground.constraints.safety import REF_KEYWORDS, anchored, resolve
from playground.constraints.schema_keywords import children
from playground.constraints.validate import checker
from playground.errors import PlaygroundError


def check_refs_read_alike(schema, draft: type) -> None:
    """Refuse a reference inside a subschema with an id of its own, an inner $id naming the whole
    schema, an anchor declared twice, and a `#name` the checker does not find where the engines do
    (references resolve inside the schema: checked before)."""
    if not isinstance(schema, dict):
        return
    key = "id" if draft is jsonschema.Draft4Validator else "$id"
    _check_no_inner_root(schema, draft)
    lookup = checker(schema, draft)._resolver.lookup  # (the checker's own resolver: the same reading, no copy of it)
    for node, inner in _nodes_with_resource(schema, key):
        for keyword in REF_KEYWORDS:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            if inner is not None:
                raise PlaygroundError(f"the {keyword} '{ref[:80]}' sits inside a subschema with an {key} of its own "
                                      f"({inner[:80]!r}): the output's checker and llguidance read it relative to that "
                                      f"{key}, xgrammar and the playground's own checks relative to the whole schema; "
                                      f"take the inner {key} out")
            if _names_an_anchor(ref) and len(anchored(schema, ref[1:])) > 1:
                # (which of them the checker took changed with the hash seed; the engines took the first)
                raise PlaygroundError(f"the anchor {ref[:80]!r} is declared more than once: name each anchor once")
            if keyword == "$ref" and _names_an_anchor(ref) and _found(lookup, ref) is not resolve(ref, schema):
                raise PlaygroundError(f"$ref '{ref[:80]}' names an anchor that the output's checker "
                                      f"({NAMES[draft]}) does not find there: declare it as that draft does "
                                      "($anchor from 2019-09, \"$id\": \"#name\" before), outside any subschema "
                                      "with an $id of its own")


def _check_no_inner_root(schema: dict, draft: type) -> None:
    """An inner `$id` naming the whole schema again ("", "#", or the whole schema's own): llguidance
    compiled that subschema as the whole schema, even one in unused $defs, and the checker refused
    what it wrote ({"type": "string", "$defs": {"x": {"$id": "", "type": "integer"}}} wrote 1).
    Drafts 6-7 read an `$id` that starts with "#" as an anchor, "#" too (an empty one, which the
    engines' form drops: drafts.to_2020_12)."""
    if draft is jsonschema.Draft4Validator:
        return  # (its id is `id`, which the engines do not read; its "$id" is no keyword, dropped for them)
    root = _base("", schema.get("$id"))
    fragment_ids = draft in (jsonschema.Draft6Validator, jsonschema.Draft7Validator)
    for node, _ in _nodes_with_resource(schema, "$id"):
        given = node.get("$id")
        named_fragment = given.startswith("#") and (len(given) > 1 or fragment_ids) if isinstance(given, str) else True
        if node is not schema and not named_fragment and _base(root, given) == root:
            raise PlaygroundError(f"the $id {given[:80]!r} inside the schema names the whole schema again: "
                                  "take it out (llguidance reads that subschema as the whole schema)")


def _nodes_with_resource(schema: dict, key: str):
    """(node, the id of the innermost subschema around it that starts a resource other than the
    whole schema's, or None) for every subschema."""
    root = _base("", schema.get(key))
    stack = [(schema, root, None)]
    while stack:
        node, base, inner = stack.pop()
        if not isinstance(node, dict):
            continue
        if node is not schema and isinstance(node.get(key), str) and _base(base, node[key]) != root:
            base, inner = _base(base, node[key]), node[key]
        yield node, inner
        stack.extend((child, base, inner) for child in children(node))


def _base(base: str, given) -> str:
    """The URI an id names, read against the one around it, without its fragment (`#name` is no resource)."""
    return urllib.parse.urldefrag(urllib.parse.urljoin(base, given))[0] if isinstance(given, str) else base


def _names_an_anchor(ref: str) -> bool:
    return ref.startswith("#") and len(ref) > 1 and not ref.startswith("#/")


def _found(lookup, ref: str):
    try:
        return lookup(ref).contents
    except referencing.exceptions.Unresolvable:
        return None
