"""A regex's or grammar's escapes that name no character, refused before a backend reads them:
past U+10FFFF (`\\U00110000`, `\\x{110000}`), or half of a UTF-16 surrogate pair standing alone
(`\\ud800`). xgrammar took `root ::= "\\U00110000"` and made the model write F4 90 80 80, bytes no
UTF-8 reader takes, and the run was called valid; llguidance refused it naming a position in its
own converted text, and pointed at xgrammar. (A pair, `\\ud83d\\ude00`, is one character in a Lark
string under both backends, and in a GBNF string under llguidance: left to them.)"""
import re

from playground.constraints.grammar_size import TOKENS
from playground.errors import PlaygroundError

# an escape whose backslash is not itself escaped (an even run of backslashes before it)
ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\(?:U(?P<long>[0-9A-Fa-f]{8})|u(?P<short>[0-9A-Fa-f]{4})"
                    r"|[xuU]\{(?P<braced>[0-9A-Fa-f]{1,12})\})")
LAST = 0x10FFFF
HIGH, LOW = range(0xD800, 0xDC00), range(0xDC00, 0xE000)


def check_escapes(text: str, named: str) -> None:
    """PlaygroundError naming the first escape of `text` (a `named`: "regex", "grammar") that is no character."""
    escapes = [(m, int(m["long"] or m["short"] or m["braced"], 16)) for m in ESCAPE.finditer(text)]
    paired = set()  # \uD83D\uDE00 written side by side: one character
    for i, ((m, point), (after, low)) in enumerate(zip(escapes, escapes[1:])):
        if point in HIGH and low in LOW and m["short"] and after["short"] and m.end() == after.start():
            paired |= {i, i + 1}
    for i, (m, point) in enumerate(escapes):
        written = m.group().lstrip("\\")
        if point > LAST:
            raise PlaygroundError(f"the {named}'s escape \\{written} is past U+10FFFF, the last character: no text "
                                  "holds it")
        if (point in HIGH or point in LOW) and i not in paired:
            raise PlaygroundError(f"the {named}'s escape \\{written} is half of a UTF-16 surrogate pair, not a character "
                                  "standing alone (write the character itself)")


BRACKET_ESCAPE = re.compile(r"\\([\\\[\]])")  # in a GBNF string: an escaped backslash (kept whole), \[ or \]


def gbnf_bracket_escapes(gbnf: str, written) -> str:
    """A GBNF grammar with each string's \\[ and \\] (llama.cpp's parse_char reads them; both backends refused
    the grammar: "lexer error", "Invalid escape sequence"; a fuzzing review) in a backend's words,
    `written(code)`: a class's stay as they are (both read those)."""
    out, at, before = [], 0, []
    for m in TOKENS[True].finditer(gbnf):
        if m.lastgroup in ("space", "comment"):
            continue
        in_regex, before = before[-2:] == ["Regex", "("], before[-1:] + [m.group()]  # (xgrammar's Regex("\\[x\\]"):
        if m.lastgroup == "string" and "\\" in m.group() and not in_regex:  # a regex's escapes, its own)
            out += [gbnf[at:m.start()], BRACKET_ESCAPE.sub(lambda e: e[0] if e[1] == "\\" else written(ord(e[1])), m.group())]
            at = m.end()
    return "".join(out) + gbnf[at:]
