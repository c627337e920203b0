"""The JSON tab's text: a JSON Schema run's answer indented, each string and number as the model wrote
it. Its tree view (gr.JSON) read numbers as the browser's: 9007199254740993 showed as
9007199254740992 beside the valid badge, and 1e999 or an integer past 64 bits emptied it."""
import json
import re

TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+')  # a string, a mark, or a number or literal
OPENS, CLOSES = ("{", "["), ("}", "]")
DEEPEST = 32  # indentation stops growing past this depth (a bounded output nested 1,000 deep: 1 MB of spaces)


def indented(text: str) -> str | None:
    """text indented two spaces a level, its tokens as written; None where it is not one whole JSON value."""
    try:
        json.loads(text, parse_int=len)  # (whether it is JSON: int() refuses 4,301 digits)
    except (ValueError, RecursionError):  # (RecursionError: nested past Python's parser)
        return None
    out, depth, last = [], 0, ""
    for token in TOKENS.findall(text):
        if token in CLOSES:
            depth -= 1
            out.append(token if last in OPENS else _line(depth) + token)  # an empty one stays "{}"
        elif token == ",":
            out.append("," + _line(depth))
        elif token == ":":
            out.append(": ")
        else:
            out.append(_line(depth) + token if last in OPENS else token)
            depth += token in OPENS
        last = token
    return "".join(out)


def _line(depth: int) -> str:
    return "\n" + "  " * min(depth, DEEPEST)
