"""A $ref's target outside every keyword, moved into the root's $defs for the engines.

JSON Schema lets a reference name any place of the document: `#/components/schemas/Id` (OpenAPI's
layout), `#/port` (a plain key used as a store). The engines and every walk here read keywords only
(schema_keywords.subschemas), so such a node was compiled but never read: a draft-04 `exclusiveMaximum:
true` there was no number to xgrammar and `items: [...]` no schema to either engine; xgrammar's misreadings
were not rewritten there (xgr_reads: `{"minLength": 3}` let "ab" through); a bound past 2^53 was not dropped
(llguidance clamped a uint64's maximum without a word); and drafts 4-7, which drop a $ref's siblings,
dropped the store a root `$ref` named ("does not point to a schema inside this schema").

The engines' copy gets each such node at `#/$defs/<its place's names joined by _>` (the shortest place
first: a store holding another moves with it), and every reference into it is rewritten there; the
place it left holds nothing, or the node still where a keyword's value holds it (`enum`, `default`).
Its ids and anchors are dropped: the checker never reads them there. Outputs are still checked against the schema as written. `in_user_words`
turns a message naming a moved place back into the place the user wrote."""
import copy
import re
import urllib.parse

from playground.constraints.safety import REF_KEYWORDS, at_names
from playground.errors import PlaygroundError
from playground.constraints.schema_keywords import (KEYWORD_NAMES, escaped, fresh_name, keyword_children, pointer_names,
                                                    subschemas, unescaped, with_pointers)

DEFS = "$defs"
ID_KEYS = ("$id", "id")  # ("id": draft-04's $id; a name to later drafts)
ANCHORS = ("$anchor", "$dynamicAnchor", "$recursiveAnchor")
CHECKER_ENTERS = ("contentSchema",)  # a keyword whose schema jsonschema's resolver walks into (an $id there is
# a base to it) and the engines do not read: a node there is left where it is, as before
NAME_CHARS = 60  # of a moved node's new name (a place's names may be long)
NAME_ENDS = r"(?=$|[/\s'\"`,;:)\]]|\.(?:\s|$))"  # after a pointer in a message: its next name, or none
POINTER_SAFE = "!$&'()*+,;=:@-._~"  # characters a rewritten pointer writes as they are (RFC 3986's sub-delims, unreserved)


def with_targets_in_defs(schema) -> tuple[object, dict[str, str]]:
    """-> (the schema with every referenced node outside a keyword moved into its $defs: a copy where
    any is, the schema itself where none is; {new pointer: the pointer the user wrote})."""
    if not isinstance(schema, dict) or not isinstance(schema.get(DEFS, {}), dict) or not _outside_targets(schema):
        return schema, {}  # (a $defs that is no object is refused where the engines read it)
    schema, moved, renamed = copy.deepcopy(schema), {}, {}  # new place -> as written; place moved -> new
    while places := _outside_targets(schema):  # (again for a place inside one moved, now under $defs)
        outermost = sorted(names for names in places if _longest_prefix(names[:-1], places) is None)
        keyword_places = set(_keyword_places(schema))
        for old in outermost:
            written = _as_written(old, moved)
            _check_no_base_around(schema, old, written)
            new = (DEFS, _fresh_name(schema, written))
            schema.setdefault(DEFS, {})[new[1]] = _without_identifiers(_taken_out(schema, old, keyword_places))
            renamed[old], moved[new] = new, written
        _rewrite_refs(schema, renamed)  # (all moves so far: a node moved now may refer to one moved before)
    return schema, {_pointer(new): _pointer(old) for new, old in moved.items()}


def in_user_words(message: str, moved: dict[str, str]) -> str:
    """A message naming a moved node's pointer ('#/$defs/port/properties/b') -> with the place the user
    wrote ('#/port/properties/b'); the longest new pointer first, each only where a name ends."""
    for new in sorted(moved, key=len, reverse=True):  # (a meta-schema error's place is written without "#/")
        for written, was in ((new, moved[new]), (new[2:], moved[new][2:])):
            message = re.sub(r"(?<![\w/$#])" * (written is not new) + re.escape(written) + NAME_ENDS,
                             lambda _, was=was: was, message)
    return message


def _refs(schema):
    """(node, keyword, names of its local pointer) for each `#/...` reference the schema's keywords hold."""
    for _, node in with_pointers(schema):
        for key in REF_KEYWORDS:
            if isinstance(node.get(key), str) and node[key].startswith("#/"):
                yield node, key, pointer_names(node[key])


def _outside_targets(schema) -> set[tuple]:
    """The places (tuples of names) of referenced schemas that no keyword holds."""
    inside = set(_keyword_places(schema))
    return {names for _, _, names in _refs(schema)
            if names not in inside and isinstance(at_names(schema, names), (dict, bool))}


def _keyword_places(schema, names: tuple = ()):
    """The place of the schema and of every schema its keywords hold, booleans included."""
    yield names
    if isinstance(schema, dict):
        for key, value in schema.items():
            for at, sub in keyword_children(key, value, "/" + escaped(key)):
                yield from _keyword_places(sub, names + tuple(unescaped(part) for part in at.split("/")[1:]))
            if key in CHECKER_ENTERS:
                yield from _keyword_places(value, names + (key,))


def _check_no_base_around(schema, names: tuple, written: tuple) -> None:
    """Refuse a referenced node outside every keyword inside a subschema with an `$id` of its own: the
    checker reads the references in it against that `$id`, the engines against the whole schema (a review:
    `#/$defs/K/components/X` under K's `$id` named K's definitions to the checker, the root's to both engines)."""
    node = schema
    for depth, name in enumerate(names[:-1]):
        node = at_names(node, (name,))
        base = next((node[key] for key in ID_KEYS if isinstance(node, dict) and isinstance(node.get(key), str)
                     and not node[key].startswith("#")), None)
        if base is not None:
            raise PlaygroundError(f"the $ref to '{_pointer(written)[:80]}' names a node outside every keyword inside a "
                                  f"subschema with an $id of its own ({base[:80]!r}, at '{_pointer(written[:depth + 1])[:80]}'): "
                                  "the output's checker reads its references against that $id, the constraint engines "
                                  "against the whole schema; move the node into $defs or take the $id out")


def _longest_prefix(names: tuple, places) -> tuple | None:
    """The longest of `places` that `names` starts with (or is), None for none. Only the lengths the places
    have are tried: a pointer of 200,000 names, each of its prefixes hashed, took 15 s (a review)."""
    lengths = sorted({len(place) for place in places if len(place) <= len(names)}, reverse=True)
    return next((names[:n] for n in lengths if names[:n] in places), None)


def _as_written(names: tuple, moved: dict[tuple, tuple]) -> tuple:
    """A place under a node moved in an earlier round -> the place the user wrote."""
    prefix = _longest_prefix(names, moved)
    return names if prefix is None else moved[prefix] + names[len(prefix):]


def _taken_out(schema, names: tuple, keyword_places: set[tuple]):
    """The node at `names`: copied where the way to it from the nearest schema goes through a keyword
    (`#/properties/a/default`, `#/properties/a/enum/0`: taking it would change that keyword's value),
    taken from a place that is no keyword's (`#/components/...`; a list's slot left null, so no index moves)."""
    schema_at = max((n for n in range(len(names)) if names[:n] in keyword_places), default=0)
    if names[schema_at] in KEYWORD_NAMES:
        return copy.deepcopy(at_names(schema, names))
    parent, last = at_names(schema, names[:-1]), names[-1]
    if isinstance(parent, dict):
        return parent.pop(last)
    node, parent[int(last)] = parent[int(last)], None
    return node


def _without_identifiers(node):
    """A moved node without its own id and without the anchors in it: the output's checker never reads them
    there (its pointer walk enters no `$id` outside the keywords, and its registry holds no anchor there); in
    $defs the engines would (a review: llguidance took a stored `"$id": ""` for a new root, a stored anchor for
    the one the checker reads in $defs). An `$id` further in stays: the checker enters it while validating, and
    a reference under it is refused as anywhere (spec.py checks the moved copy's references too)."""
    if isinstance(node, dict):
        for key in ID_KEYS:
            node.pop(key, None)
    for sub in subschemas(node):
        for key in ANCHORS:
            sub.pop(key, None)
        for key in ID_KEYS:
            if isinstance(sub.get(key), str) and sub[key].startswith("#"):
                del sub[key]  # (an anchor in drafts 4-7)
    return node


def _fresh_name(schema, names: tuple) -> str:
    held = schema.get(DEFS) if isinstance(schema.get(DEFS), dict) else {}
    return fresh_name(held, re.sub(r"[^A-Za-z0-9_.-]", "_", "_".join(names))[:NAME_CHARS] or "_")


def _rewrite_refs(schema, renamed: dict[tuple, tuple]) -> None:
    """Each reference to a renamed place or into it -> the same place under its new name (again where that
    lies in a place renamed later: `#/store/x/inner` -> `#/$defs/store_x/inner` -> `#/$defs/store_x_inner`)."""
    for node, key, names in list(_refs(schema)):
        start = names
        for _ in range(len(renamed)):
            prefix = _longest_prefix(names, renamed)
            if prefix is None:
                break
            names = renamed[prefix] + names[len(prefix):]
        if names != start:
            node[key] = _pointer(names)


def _pointer(names: tuple) -> str:
    return "#" + "".join("/" + urllib.parse.quote(escaped(name), safe=POINTER_SAFE) for name in names)

