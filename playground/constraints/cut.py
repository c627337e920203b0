"""Where a JSON output was cut when max new tokens ran out, and what would have let it end. A small
model can loop inside whatever the schema leaves open (an array with no maxItems, a string with no
maxLength, an integer with no maximum): the fix is in the schema, or more tokens."""
import json

FIXES = {  # kind of the open value -> (why it may not end, the bound that would end it)
    "string": ("the schema sets no maxLength (or enum, or pattern) that would make it end", "maxLength"),
    "key": ("the object allows more property names than the model stopped at (additionalProperties, patternProperties)",
            "additionalProperties: false"),
    "number": ("a number with no maximum (or minimum) can go on with digits", "maximum"),
    "array": ("an array with no maxItems can go on with items", "maxItems"),
    "object": ("the object allows more properties (additionalProperties) and the model kept adding them",
               "additionalProperties: false"),
    "literal": ("the model was writing true, false or null", None),
}


def truncation_hint(text: str) -> str:
    """' (cut inside the array at /items after 37 items: ...; add ... or allow more tokens)', or ''."""
    where = open_at(text)
    if where is None:
        return ""
    kind, path, count = where
    pointer = "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path) if path else "the top level"
    place = f"the {'property name' if kind == 'key' else kind} at {pointer}"
    items = f" after {count} items" if kind == "array" else ""
    why, bound = FIXES[kind]
    fix = f"add {bound} to the schema or allow more new tokens" if bound else "allow more new tokens"
    return f" (cut inside {place}{items}: {why}; {fix})"


def open_at(text: str) -> tuple[str, list, int] | None:
    """The innermost unfinished value of a cut JSON text: (kind, path, items so far), kind one of
    string, key, number, array, object; None when nothing is open."""
    stack: list[list] = []  # per open container: [kind, key (object; None while a key is due) or index (array), values so far]
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = _string_end(text, i)
            if end is None:
                return ("key" if _key_due(stack) else "string"), _path(stack), 0
            if _key_due(stack):
                stack[-1][1] = json.loads(text[i:end + 1])
            else:
                _value_done(stack)
            i = end
        elif char in "{[":
            stack.append(["object", None, 0] if char == "{" else ["array", 0, 0])
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


def _path(stack: list) -> list:
    return [entry[1] for entry in stack if entry[1] is not None]
