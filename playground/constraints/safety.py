"""Checks that make a schema or a pattern safe to compile and to check, whatever its author meant:
bounded in size, never reaching outside the document, and with a finite instance to write.

- `$ref` must point inside the schema (`#...`): a remote or file reference would make a validator
  fetch a URL or read a file (jsonschema's legacy resolver does both).
- A schema whose every instance must contain itself (a required property referring back to its
  parent, say) has no finite instance; xgrammar grows without bound trying to build it.
- A pattern must mean the same to the constraint engine and to the checker: nested character sets
  and set operations (`[[:alpha:]&&[x]]`) are read one way by llguidance and another by Python,
  whose backtracking then never finishes on the output the engine allowed."""
import itertools
import re
from time import monotonic  # (a module's own name for it: a test replacing time.monotonic froze the test server's event loop)
import urllib.parse
import warnings
from re import _constants as sre, _parser as sre_parse  # Python's own reading of a pattern (3.11+)

import regex

from playground.constraints.python_regex import nested
from playground.constraints.schema_keywords import patterns, subschemas, unescaped, with_pointers
from playground.constraints.validate import compiled_pattern
from playground.errors import SATURATED, PlaygroundError
from playground.limits import (CHECK_SECONDS, MAX_PATTERN_SIZE, MAX_PROPERTIES, MAX_REGEX_CHARS, MAX_REPEAT_COUNT,
                               MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, at_most)

REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
INDEX = re.compile(r"[0-9]+")  # an array index in a JSON pointer
SCALARS = {"string", "number", "integer", "boolean", "null"}
ANY_TYPE = ("null", "boolean", "integer", "number", "string", "array", "object")  # (in an order no hash seed changes)
REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def check_sizes_first(schema) -> None:
    """The sizes the meta-schema check would meet unbounded, checked before it: it visits every
    subschema (85,000 took 15 s before their count was refused) and compiles every pattern with
    Python's re (30 KB of case-insensitive classes, 58 s)."""
    count = sum(1 for _ in itertools.islice(subschemas(schema), MAX_SCHEMA_NODES + 1))
    at_most(count, MAX_SCHEMA_NODES, "the number of subschemas")
    for where, pattern in patterns(schema):
        at_most(len(pattern), MAX_REGEX_CHARS, f"the length of the schema pattern at {where}")


def check_schema_safe(schema) -> None:
    """Size bounds, local references only, and a finite instance (depth() is checked first, by the caller)."""
    if schema is False:
        raise PlaygroundError("the schema `false` allows no value at all: nothing could ever be written")
    nodes = reachable(schema)  # (every reference it meets must resolve inside the schema)
    at_most(len(nodes), MAX_SCHEMA_NODES, "the number of subschemas")
    for node in nodes:
        at_most(len(node.get("properties") or {}), MAX_PROPERTIES, "the number of properties of one object")
        for pattern in _patterns(node):
            check_pattern(pattern, "a schema pattern")
    if not has_finite_instance(schema, nodes):
        raise PlaygroundError(_no_instance_reason(schema, nodes))


def depth(value) -> int:
    """Nesting of JSON objects and arrays, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            if level > MAX_SCHEMA_DEPTH:
                raise PlaygroundError(f"the schema's JSON is nested more than {MAX_SCHEMA_DEPTH} objects and arrays deep (a "
                                      "nested property takes two: `properties`, then its schema); move deep parts "
                                      "into $defs and refer to them with $ref")
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _patterns(node: dict) -> list[str]:
    found = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
    return found + list(node.get("patternProperties") or {})


def reachable(schema) -> list[dict]:
    """The schema's subschemas, and those of every node a reference reaches, even one that sits
    outside any keyword (`#/port`, a plain key used as a store of definitions)."""
    return list(_walk_references(schema)[0].values())


def referenced(schema) -> list[tuple[str, dict]]:
    """(reference, the node it names) for every reference reachable from the schema, in the order met."""
    return _walk_references(schema)[1]


def _walk_references(schema) -> tuple[dict[int, dict], list[tuple[str, dict]]]:
    """Each node's subtree walked once: a target already found or queued is not queued again
    (1,990 references to `#` walked the whole schema 1,990 times)."""
    found, named, queue, queued = {}, [], [schema], {id(schema)}
    while queue and len(found) <= MAX_SCHEMA_NODES:
        for node in subschemas(queue.pop()):
            if id(node) in found:
                continue
            found[id(node)] = node
            for key in REF_KEYWORDS:
                if isinstance(node.get(key), str) and isinstance(target := resolve(node[key], schema, key), dict):
                    named.append((node[key], target))
                    if id(target) not in queued:
                        queued.add(id(target))
                        queue.append(target)
    return found, named


def _bundled_at(root, ref: str) -> str | None:
    """The pointer ('#/$defs/a') of a schema inside `root` whose $id the reference names (whole, or by its
    last path segment: 'address.json' for 'https://example.com/address.json'), None for none."""
    last = ref.rstrip("/").rsplit("/", 1)[-1]
    return next(("#" + pointer for pointer, node in with_pointers(root) if pointer and last
                 and isinstance(node.get("$id"), str) and node["$id"].rstrip("/").rsplit("/", 1)[-1] == last), None)


def resolve(ref: str, root, keyword: str = "$ref"):
    """A local reference ('#', '#/$defs/a', '#name' for an anchor) -> the schema it names. Only
    references the schema's keywords reach count (`{"default": {"$ref": "http://..."}}` is a value)."""
    if not ref.startswith("#"):
        if (place := _bundled_at(root, ref)) is not None:  # (a review: a bundle was told its ref pointed outside it)
            raise PlaygroundError(f"{keyword} '{ref[:80]}' names the schema bundled at '{place[:80]}' by its $id, and "
                                  f"references by $id are not resolved here: write it as '{place[:80]}'")
        raise PlaygroundError(f"{keyword} '{ref[:80]}' points outside the schema: only local references ('#/...') "
                              "are allowed (nothing is ever fetched or read from files)")
    fragment = urllib.parse.unquote(ref[1:])
    target = _anchor(root, fragment) if fragment and not fragment.startswith("/") else at_pointer(root, fragment)
    if not isinstance(target, (dict, bool)):
        raise PlaygroundError(f"{keyword} '{ref[:80]}' does not point to a schema inside this schema")
    return target


def at_pointer(root, pointer: str):
    """The value at a JSON pointer ('/a/0', ~0 and ~1 escaped), or None."""
    return at_names(root, [unescaped(part) for part in pointer.split("/")[1:]])


def at_names(root, names):
    """The value at a pointer's names (['a', '0']), or None. An index is ASCII digits: "²".isdigit() is
    true, and int() refused it (a $ref to `#/list/²` ended the parse with a ValueError; a review)."""
    node = root
    for name in names:
        if isinstance(node, dict) and name in node:
            node = node[name]
        elif isinstance(node, list) and INDEX.fullmatch(name) and int(name) < len(node):
            node = node[int(name)]
        else:
            return None
    return node


def _anchor(root, name: str):
    return next(iter(anchored(root, name)), None)


def anchored(root, name: str) -> list[dict]:
    """The nodes declaring anchor `name`: `$anchor` or `$dynamicAnchor` (2019-09 on), or an id that
    is a fragment (`$id` in drafts 6-7, `id` in draft 4; what the declared draft reads is
    ref_reading's to check)."""
    return [node for node in subschemas(root) if name in (node.get("$anchor"), node.get("$dynamicAnchor"))
            or f"#{name}" in (node.get("$id"), node.get("id"))]


FIXPOINT_SECONDS = 5 * CHECK_SECONDS  # past this the check refuses the schema instead of going on


def has_finite_instance(schema, nodes: list[dict]) -> bool:
    """Least fixpoint: a schema has a finite instance if some type it allows can be written with
    subschemas already known to have one. Recursion that every instance must take never gets known.
    What each node needs is worked out once (references resolved, names matched against patterns);
    each pass only looks it up. A long chain of references takes one pass per link, so the passes
    are bounded in time too."""
    known: set[int] = set()
    needs = Needs(schema)
    deadline = monotonic() + FIXPOINT_SECONDS
    changed = True
    while changed:
        changed = False
        if monotonic() > deadline:
            raise PlaygroundError(f"the schema is too complex to check here (its finiteness check ran past "
                                  f"{FIXPOINT_SECONDS:g} s): fewer references in a chain, patterns or required names")
        for node in nodes:
            if id(node) not in known and _finite_given(node, known, needs):
                known.add(id(node))
                changed = True
    return _is_known(schema, known)


def _is_known(node, known: set[int]) -> bool:
    return node if isinstance(node, bool) else id(node) in known


def _finite_given(node: dict, known: set[int], needs: "Needs") -> bool:
    sub = lambda s: _is_known(s, known)  # noqa: E731
    if "$ref" in node and isinstance(node["$ref"], str) and not sub(needs.ref(node)):
        return False
    if not all(map(sub, node.get("allOf", []))):
        return False
    if any(key in node and not any(map(sub, node[key])) for key in ("anyOf", "oneOf")):
        return False
    if "const" in node or "enum" in node:
        return True
    types = node.get("type", ANY_TYPE)
    types = [types] if isinstance(types, str) else types
    return any(t in SCALARS or (t == "object" and _object_finite(needs.names(node), node, sub))
               or (t == "array" and _array_finite(node, sub)) for t in types)


def _no_instance_reason(schema, nodes: list[dict]) -> str:
    """Why no value can be written: a required name no entry allows (the common slip), or one given the
    schema false, an array that may hold fewer items than it needs (it was called recursion), else recursion."""
    needs = Needs(schema)
    for node in nodes:
        refused = [name for name, (held, _) in zip(node.get("required", []), needs.names(node))
                   if any(sub is False for sub in held)]
        if refused:
            return (f"no value can satisfy this schema: the required property {refused[0][:60]!r} has the schema "
                    "false (in properties, or a patternProperties pattern matches it), which no value satisfies; "
                    "drop it from required")
        forbidden = [name for name, (held, open_) in zip(node.get("required", []), needs.names(node))
                     if not open_ and node.get("additionalProperties", True) is False]
        if forbidden:
            return (f"no value can satisfy this schema: the required property {forbidden[0][:60]!r} is not allowed "
                    "where it is required (additionalProperties is false and neither properties nor "
                    "patternProperties names it); add it to properties or drop it from required")
        prefix = node.get("prefixItems", [])
        if node.get("items", True) is False and isinstance(prefix, list) and node.get("minItems", 0) > len(prefix):
            need = node["minItems"]
            return (f"no value can satisfy this schema: an array asks for at least {need} item{'s' * (need != 1)} (minItems) "
                    f"where items is false after its {len(prefix)} prefixItems; lower minItems or allow more items")
    return ("this schema has no finite instance: a required property (or a minimum of items) refers back to a "
            "schema that contains it, so the output could never end; make the recursion optional")


def _object_finite(names: list[tuple[list, bool]], node: dict, sub) -> bool:
    """Every required property can be written (Needs.names says what holds each)."""
    extra = node.get("additionalProperties", True)
    return all(all(map(sub, held)) and (open_ or sub(extra)) for held, open_ in names)


class Needs:
    """What each node of one schema needs, worked out once: the node its $ref names, and for each
    required property the subschemas that hold it (its `properties` entry and every
    `patternProperties` entry its name matches) and whether it is open (held by one of those, or by
    a pattern that cannot be told in time, which never refuses a name) or falls to
    `additionalProperties`."""

    def __init__(self, root):
        self.root, self.matches = root, NameMatcher()
        self._refs: dict[int, object] = {}
        self._names: dict[int, list[tuple[list, bool]]] = {}

    def ref(self, node: dict):
        if id(node) not in self._refs:
            self._refs[id(node)] = resolve(node["$ref"], self.root)
        return self._refs[id(node)]

    def names(self, node: dict) -> list[tuple[list, bool]]:
        if id(node) not in self._names:
            props, patterns = node.get("properties", {}), node.get("patternProperties", {})
            plan = []
            for name in node.get("required", []):
                found = [(self.matches(pattern, name), schema) for pattern, schema in patterns.items()]
                held = ([props[name]] if name in props else []) + [schema for hit, schema in found if hit]
                plan.append((held, bool(held) or any(hit is None for hit, _ in found)))
            self._names[id(node)] = plan
        return self._names[id(node)]


class NameMatcher:
    """Whether a pattern finds a property name: True, False, or None when it cannot be told. All
    the matching of one check shares CHECK_SECONDS (a schema of n patterns and m required names
    would otherwise take up to n x m timeouts, again on every pass of the fixpoint), and each pair
    is matched once."""

    def __init__(self, seconds: float = CHECK_SECONDS):
        self.deadline = monotonic() + seconds
        self.seen: dict[tuple[str, str], bool | None] = {}

    def __call__(self, pattern: str, name: str) -> bool | None:
        if (pattern, name) not in self.seen:
            self.seen[pattern, name] = self._search(pattern, name)
        return self.seen[pattern, name]

    def _search(self, pattern: str, name: str) -> bool | None:
        left = self.deadline - monotonic()
        if left <= 0:
            return None
        try:
            return compiled_pattern(pattern).search(name, timeout=left) is not None
        except (regex.error, TimeoutError):
            return None  # cannot tell


def _array_finite(node: dict, sub) -> bool:
    need, prefix = node.get("minItems", 0), node.get("prefixItems", [])
    if need == 0:
        return True
    return all(map(sub, prefix[:need])) and (need <= len(prefix) or sub(node.get("items", True)))


def unicode_class_hint(pattern: str) -> str:
    """Words for a \\p{...} class, which Python's re refuses as a bad escape (the user blamed, no way on)."""
    if not re.search(r"\\[pP]\{", pattern):
        return ""
    return (r"; a \p{...} class is not read here (patterns are read as Python's re reads them, which has none, nor "
            r"has xgrammar): write its ranges, such as [\u4e00-\u9fff] for Han")  # ("Python's re, which checks the
    # output": untrue, the output's check (the regex module) reads them; an audit)


def check_pattern(pattern: str, what: str = "the regex") -> None:
    """Bounded, valid for Python, and read the same way by the constraint engines and the checker."""
    at_most(len(pattern), MAX_REGEX_CHARS, f"the length of {what}")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # Python warns where its reading will change
        re.purge()  # a cached pattern would compile without its warning
        try:
            re.compile(pattern)
        except FutureWarning:
            raise PlaygroundError(f"{what} uses nested character sets or set operations ([[...]], &&, --, ~~, ||), "
                                  "which the constraint engine and Python read differently: write the class "
                                  "out (e.g. [a-zA-Z] instead of [[:alpha:]])") from None
        except (re.error, RecursionError, OverflowError) as exc:
            raise PlaygroundError(f"{what} is not a valid regular expression: {exc}{unicode_class_hint(pattern)}") from None
    at_most(written_out(pattern, what), MAX_PATTERN_SIZE, f"the size of {what} with its counted repetitions written out")
    possessive_refused(sre_parse.parse(pattern), what)
    try:
        compiled_pattern(pattern)  # (bounded above; the output's checker: `(?i)[^\s\S]` failed there alone, an
    except Exception as exc:  # noqa: BLE001 - AttributeError in the middle of a run, from the `regex` module)
        raise PlaygroundError(f"{what} is one the output's checker (the `regex` module) fails to read "
                              f"({type(exc).__name__}: {str(exc)[:120]}): write it another way") from None


def possessive_refused(parsed: sre_parse.SubPattern, what: str) -> None:
    """A possessive repetition (Python 3.11's a*+, a?+, a{1,3}+) refused by name: llguidance read `a?+` as
    `(a?)+` and wrote "aaaa" (a fuzzing review), xgrammar refused "two consecutive repetition modifiers"."""
    stack = [parsed]
    while stack:
        for op, av in stack.pop():
            if op is sre.POSSESSIVE_REPEAT:
                raise PlaygroundError(f"{what} has a possessive repetition (*+, ++, ?+ or {{m,n}}+), which neither "
                                      "constraint engine reads as Python does: write an ordinary repetition")
            stack.extend(nested(av))


def written_out(pattern: str, what: str) -> int:
    """The pattern's size (characters, anchors, a class by its ranges...) with every counted repetition
    written out, as the `regex` module compiles it: ((a{1000}){1000}){1000} is 10^9 and took 23 GB; 99 x
    100 copies of a 600-range class took 786 MB (an unbounded repetition counts its minimum and one
    more). Each count is bounded too. Walked without recursion. Verbose mode is refused: Python reads
    `a{ 10 }` there as text, the `regex` module as a repetition."""
    parsed = sre_parse.parse(pattern)
    size, stack = 0, [(parsed, 1)]
    verbose = bool(parsed.state.flags & re.VERBOSE)
    while stack:
        items, times = stack.pop()
        for op, av in items:
            verbose = verbose or (op is sre.SUBPATTERN and bool(av[1] & re.VERBOSE))
            if op in REPEATS:
                low, high, sub = av
                for count in (low, high):
                    if count != sre.MAXREPEAT:
                        at_most(count, MAX_REPEAT_COUNT, f"a repetition count in {what}")
                stack.append((sub, min(times * (low + 1 if high == sre.MAXREPEAT else max(high, 1)), SATURATED)))
            elif children := nested(av):
                stack.extend((child, times) for child in children)
            else:
                size = min(size + times * (len(av) if op is sre.IN else 1), SATURATED)
    if verbose:
        raise PlaygroundError(f"{what} uses verbose mode ((?x)), where Python and the output's checker read "
                              "spaces differently (a{ 10 }: text for one, a repetition for the other): write it without")
    return size


def end_anchors(pattern: str) -> tuple[bool, bool] | None:
    """Whether a pattern is anchored at its start (a leading ^) and at its end (a trailing $), where
    those are its only anchors; None where it has another (`^a|b`, `(^a)`, `\\b`) or Python cannot read it."""
    try:
        items = list(sre_parse.parse(pattern))
    except (re.error, RecursionError, OverflowError):
        return None
    starts = pattern.startswith("^") and items[:1] == [(sre.AT, sre.AT_BEGINNING)]
    ends = pattern.endswith("$") and items[-1:] == [(sre.AT, sre.AT_END)] and len(pattern) > starts
    anchors, stack = 0, [items]
    while stack:
        for op, av in stack.pop():
            anchors += op is sre.AT
            stack.extend(nested(av))
    return (starts, ends) if anchors == starts + ends else None
