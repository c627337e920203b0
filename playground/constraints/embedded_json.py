"""The JSON schemas a Lark grammar embeds with llguidance's `%json {...}`: each one compiled as a schema
given alone is, so each must pass the same checks (sizes, depth, local references, pattern counts); read
as plain text, `%json {"type": "string", "pattern": "^a{8000000}$"}` held xgrammar 13 s and 900 MB."""
import re

from playground.limits import at_most

MAX_EMBEDDED = 8  # %json schemas in one grammar, each checked in its own bounded worker call


def embedded_schemas(grammar: str) -> list[str]:
    """The text of each `{...}` after a `%json` (braces matched outside JSON strings; one never closed runs
    to the grammar's end, which the schema's parse refuses)."""
    starts = [m.end() for m in re.finditer(r"%json\s*(?=\{)", grammar)]
    at_most(len(starts), MAX_EMBEDDED, "the number of %json schemas in the grammar")
    return [grammar[start:_closing(grammar, start)] for start in starts]


def _closing(text: str, start: int) -> int:
    """One past the brace closing the object opened at text[start] (len(text) where none does)."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), (escaped or char != '"')  # a quote ends it unescaped
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)
