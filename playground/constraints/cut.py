"""Where a JSON output was cut when max new tokens ran out, and what would have let it end. A small
model can loop inside whatever the schema leaves open (an array with no maxItems, a string with no
maxLength, an integer with no maximum): the fix is in the schema, or more tokens. Where the schema
already bounds the open value, the hint says so instead: the bound was not enforced while writing
(the constraint's notes say which), or the tokens ran out first; and a deep cut in a schema that
refers to itself is the recursion's doing."""
import json
import re


from playground.constraints.safety import NameMatcher, resolve

FIXES = {  # kind of the open value -> (why it may not end, the bound that would end it)
    "string": ("the schema sets no maxLength (or enum, or pattern of bounded length) that would make it end",
               "maxLength"),
    "key": ("a property name with no bound on its length can go on with characters (how many names an object has is "
            "another bound)", "propertyNames with a maxLength"),  # ('additionalProperties: false' was asked of a
    # labels map cut inside one endless name: it would forbid every label; a review)
    "number": ("a number with no maximum can go on with digits", "maximum"),
    "array": ("an array with no maxItems can go on with items", "maxItems"),
    "object": ("the object allows more properties (additionalProperties) and the model kept adding them",
               "additionalProperties: false"),
    "literal": ("the model was writing true, false or null", None),
}
BOUNDED = {  # kind -> whether a subschema holding the open value already bounds it
    "string": lambda s: any(k in s for k in ("maxLength", "enum", "const")) or _bounded_pattern(s.get("pattern")),
    "key": lambda s: _bounded_names(s),
    "number": lambda s: any(k in s for k in ("maximum", "exclusiveMaximum", "enum", "const")),
    "array": lambda s: "maxItems" in s or ("prefixItems" in s and s.get("items", True) is False),
    "object": lambda s: s.get("additionalProperties", True) is False or "maxProperties" in s,
}
BOUND_WORDS = {"maxLength", "maxItems", "maximum", "exclusiveMaximum", "additionalProperties", "maxProperties", "enum",
               "const", "propertyNames"}  # (a name's bound is its propertyNames: a note naming it was not matched)
DEEP = 6  # containers open at the cut from which a self-referring schema is the likely cause
MAX_HELD = 256  # subschemas followed a step (a schema of anyOf [$ref "#" x 8] multiplies them at each)


def truncation_hint(text: str, schema=None, notes: tuple[str, ...] = ()) -> str:
    """' (cut inside the array at /items after 37 items: ...; add ... or allow more tokens)', or ''.
    schema (in draft 2020-12 words): the hint looks at what it says about the open value."""
    where = open_at(text)
    if where is None:
        return ""
    kind, path, count = where
    pointer = _pointer(path)
    if kind == "value":
        place = f"cut before the value at {pointer}"
    else:
        place = f"cut inside the {'property name' if kind == 'key' else kind} at {pointer}"
    items = f" after {count} item{'' if count == 1 else 's'}" if kind == "array" else ""
    return f" ({place}{items}: {_why(kind, path, count, schema, notes)})"


def _pointer(path: list) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path) if path else "the top level"


def _why(kind: str, path: list, count: int, schema, notes: tuple[str, ...]) -> str:
    held, recursed = holding(schema, path) if schema is not None else ([], False)
    if len(path) >= DEEP and recursed:
        return (f"the output is nested in {len(path)} containers and the schema refers to itself, so each level "
                "may open another; unroll the recursion to a fixed depth in the schema (the last level without "
                "the property that recurses) or allow more new tokens")
    short = _items_due_above(schema, path) if schema is not None else ""
    advice = _open_value_advice(kind, count, held, notes)
    if short and "add " in advice:  # the open value too could go on: both (a string running away in item 3)
        return f"{short}; besides, {advice}"
    return short or advice


def _open_value_advice(kind: str, count: int, held: list[dict], notes: tuple[str, ...]) -> str:
    """What would have let the open value itself end: a bound to add, or more tokens."""
    if kind == "value" or (kind in ("object", "array") and count <= _members_due(kind, held)):
        return "the tokens ran out before it was complete; allow more new tokens"
    bounds = [s for s in held if BOUNDED.get(kind, lambda _: False)(s)]
    if bounds:
        dropped = any(word in note for note in notes for s in bounds for word in s if word in BOUND_WORDS)
        why = ("the schema bounds it, but that bound was not enforced while writing (see the notes: the other "
               "backend may enforce it)" if dropped else "the schema bounds it, but the tokens ran out first")
        return f"{why}; allow more new tokens"
    why, bound = FIXES[kind]
    if kind == "number" and not any(k in s for s in held for k in ("minimum", "exclusiveMinimum")):
        why, bound = "a number with no maximum or minimum can go on with digits", "maximum and minimum"
    if kind == "key" and any(s.get("additionalProperties", True) is False for s in held):  # (it had that already)
        why, bound = "a name its patternProperties allow can go on with characters", "propertyNames with a maxLength"
    return f"{why}; " + (f"add {bound} to the schema or allow more new tokens" if bound else "allow more new tokens")


def _items_due_above(schema, path: list) -> str:
    """Where an array on the way to the cut asks for more items than it had: the tokens, not the open value,
    were the limit (a number cut in item 6 of an array of minItems 200 was told to add maximum and minimum,
    which could not have let it end; a CLI review). '' where none does."""
    for depth, step in enumerate(path):
        if isinstance(step, int):  # (minItems alone: prefixItems ask for no item, a review)
            least = max([0] + [s["minItems"] for s in holding(schema, path[:depth])[0] if isinstance(s.get("minItems"), int)])
            if least > step + 1:
                return (f"the array at {_pointer(path[:depth])} asks for at least {least} items and had {step + 1}; "
                        "allow more new tokens")
    return ""


def _members_due(kind: str, held: list[dict]) -> int:
    """How many members the schema asks of an object (the properties it names) or an array (minItems,
    prefixItems): a container cut with no more than these was cut on its way, not looping on extra ones
    (`{"a": 1,` with b required was told to add additionalProperties: false; a review)."""
    if kind == "object":
        return len({name for s in held if isinstance(s.get("properties"), dict) for name in s["properties"]})
    return max([0] + [s["minItems"] for s in held if isinstance(s.get("minItems"), int)]
               + [len(s["prefixItems"]) for s in held if isinstance(s.get("prefixItems"), list)])


def _bounded_names(schema: dict) -> bool:
    """Whether an object's property names are bounded in length: no additional ones and every
    patternProperties pattern bounded, or propertyNames bounding them. (maxProperties bounds how many,
    not how long; patternProperties ^[A-Z_][A-Z0-9_]*$ beside additionalProperties: false was said to
    bound a name: an audit.)"""
    names = schema.get("propertyNames")
    if isinstance(names, dict) and BOUNDED["string"](names):
        return True
    return schema.get("additionalProperties", True) is False and all(
        _bounded_pattern(pattern) for pattern in schema.get("patternProperties") or {})


def _bounded_pattern(pattern) -> bool:
    """Whether a string pattern bounds the length of what it matches: anchored at both ends, no * or +
    or {n,} outside character classes and escapes (a rough reading; unsure counts as unbounded)."""
    if not isinstance(pattern, str) or not (pattern.startswith("^") and pattern.endswith("$")) or pattern.endswith("\\$"):
        return False
    plain = re.sub(r"\\.|\[(?:\\.|[^\]\\])*\]", "x", pattern)  # escapes and classes: one character each
    return not re.search(r"[*+]|\{\d*,\}", plain)


def holding(schema, path: list) -> tuple[list[dict], bool]:
    """The subschemas that may hold the value at `path` (properties, patternProperties, items and
    prefixItems followed; $ref, allOf, anyOf and oneOf opened), and whether the walk met a subschema
    it had met at an earlier step (the path goes through recursion). Best effort, bounded: only for
    the hint, at most MAX_HELD subschemas a step."""
    names, met = NameMatcher(), set()
    nodes = _opened([schema], schema)
    recursed = False
    for step in path:
        met |= {id(n) for n in nodes}
        nodes = _opened([_child(n, step, names) for n in nodes], schema)
        recursed = recursed or any(id(n) in met for n in nodes)
    return nodes, recursed


def _child(node: dict, step, names: NameMatcher):
    if isinstance(step, int):
        prefix = node.get("prefixItems", [])
        return prefix[step] if isinstance(prefix, list) and step < len(prefix) else node.get("items", True)
    properties = node.get("properties", {})
    if isinstance(properties, dict) and step in properties:
        return properties[step]
    patterns = node.get("patternProperties", {})
    for pattern, sub in patterns.items() if isinstance(patterns, dict) else ():
        if names(pattern, step):
            return sub
    return node.get("additionalProperties", True)


def _opened(starts: list, root) -> list[dict]:
    """These subschemas and every one they open ($ref, allOf, anyOf, oneOf), each once."""
    out, seen, todo = [], set(), list(starts)
    while todo and len(out) < MAX_HELD:
        node = todo.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        if isinstance(node.get("$ref"), str):
            try:
                todo.append(resolve(node["$ref"], root))
            except Exception:  # a hint never fails the report
                pass
        for key in ("allOf", "anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                todo.extend(node[key])
    return out


def open_at(text: str) -> tuple[str, list, int] | None:
    """The innermost unfinished value of a cut JSON text: (kind, path, items so far), kind one of
    string, key, number, array, object, or value (a key read, its value not begun); None when nothing is open."""
    stack: list[list] = []  # per open container: [kind, key (object; None while a key is due) or index (array),
    # values so far, whether a key was read and its value is due]
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = _string_end(text, i)
            if end is None:
                return ("key" if _key_due(stack) else "string"), _path(stack), 0
            if _key_due(stack):
                stack[-1][1], stack[-1][3] = json.loads(text[i:end + 1]), True
            else:
                _value_done(stack)
            i = end
        elif char in "{[":
            stack.append(["object", None, 0, False] if char == "{" else ["array", 0, 0, False])
        elif char in "}]" and stack:
            stack.pop()
            _value_done(stack)
        elif char == "," and stack:
            stack[-1][1] = stack[-1][1] + 1 if stack[-1][0] == "array" else None
        elif char in "-0123456789" or char.isalpha():
            end = i
            while end < n and (text[end] in "-+.0123456789" or text[end].isalpha()):
                end += 1
            if end == n:
                return ("number" if char in "-0123456789" else "literal"), _path(stack), 0
            _value_done(stack)
            i = end - 1
        i += 1
    if stack and stack[-1][3]:  # `{"a":` : the value of a is due
        return "value", _path(stack), 0
    return (stack[-1][0], _path(stack[:-1]), stack[-1][2]) if stack else None


def _key_due(stack: list) -> bool:
    return bool(stack) and stack[-1][0] == "object" and stack[-1][1] is None


def _string_end(text: str, start: int) -> int | None:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i
        else:
            i += 1
    return None


def _value_done(stack: list) -> None:
    if stack:
        stack[-1][2] += 1
        stack[-1][3] = False


def _path(stack: list) -> list:
    return [entry[1] for entry in stack if entry[1] is not None]
