"""Where a regex's Python meaning (the output's checker reads it with Python's syntax) is written in a way
a backend reads otherwise: each backend rewrites these in its own words (xgr.python_meaning,
llg.llguidance_meaning), over one reading of its pieces (rewritten)."""
import re
import unicodedata
from collections.abc import Callable
from re import _constants as sre, _parser as sre_parse  # Python's own reading of a pattern (3.11+)

ANCHORED = "the whole output must match the pattern, so ^ and $ may stand only at its ends, where they change nothing"
COUNT = re.compile(r"\{(\d*)(,?)(\d*)\}")  # a '{' starts a count only where one is written so (Python's parser)
NAMED = re.compile(r"\\N\{([^}]*)\}")  # \N{GREEK SMALL LETTER ALPHA}: Python's character by its name
METACHARACTERS = frozenset("\\.^$*+?()[]{}|-")  # escaped where \N{...} names one (re.escape escaped a space too, and
# xgrammar then noted an escape the user never typed)


def octal_at(pattern: str, i: int) -> str:
    """The digits of Python's octal escape at pattern[i] (a backslash): \\0 and up to two more octal digits,
    or three octal digits; '' where there is none (\\1 is a back-reference)."""
    digits = ""
    while len(digits) < 3 and i + 1 + len(digits) < len(pattern) and pattern[i + 1 + len(digits)] in "01234567":
        digits += pattern[i + 1 + len(digits)]
    return digits if digits.startswith("0") or (len(digits) == 3 and digits[0] in "0123") else ""


def brace_at(pattern: str, i: int) -> tuple[str, int]:
    """The '{' at pattern[i] (outside a class) as Python reads it -> (its words, where the pattern goes on):
    a count where its digits are written there ({,3} -> {0,3} and {,} -> {0,}: a missing number to both
    backends), else the brace itself, escaped: in a{b}, a{} or a lone {, which both backends refused, and in
    a{\\N{DIGIT TWO}}, where Python reads the braces as typed and both backends had read a count of two."""
    count = COUNT.match(pattern, i)
    if not count or count[0] == "{}":
        return "\\{", i + 1
    low, comma, high = count.groups()
    return f"{{{low or 0}{comma}{high}}}", count.end()


def rewritten(pattern: str, escape: Callable[[str, int, int | None], tuple[str, int]],
              member: Callable[[str, bool], str] = lambda c, first: c, other: Callable[[str], str] = lambda c: c,
              class_operators: str = "", class_end: Callable[[str], str] = lambda written: "") -> str:
    """The pattern piece by piece as Python reads it, each piece in a backend's words: `escape(pattern, i,
    class_start)` -> (its words, where the pattern goes on) for a backslash at i (class_start: where the open
    class's members begin, None outside one); `member(c, first)` for a character in a class; `other(c)` for one
    outside; a '{' as Python reads it (brace_at); a comment (?#...) left out. A class's opening [ or [^ is kept. \\N{NAME}
    becomes its character, read on as if typed: escaped where a metacharacter, or in a class one of
    `class_operators` (llguidance's && and ~~ there are set operations). `class_end(written)` -> members added
    before a class's closing ], given the class as written."""
    out, i, start, opened = [], 0, None, 0
    while i < len(pattern):
        c = pattern[i]
        if (named := NAMED.match(pattern, i)) and (char := _named(named[1])):  # (no backend reads it: llguidance said
            escaped = char in METACHARACTERS or (start is not None and char in class_operators)  # "an escape it does not
            pattern = pattern[:i] + "\\" * escaped + char + pattern[named.end():]  # know, such as Python's \Z", xgrammar
            continue  # "Invalid repetition count"; a review) -> the character itself, read on as if typed so
        if c == "\\" and i + 1 < len(pattern):
            words, i = escape(pattern, i, start)
            out.append(words)
            continue
        if start is not None:
            closing = c == "]" and i != start  # (a ']' first in a class is itself)
            if closing and (extra := class_end(pattern[opened:i + 1])):
                out.insert(len(out) - (out[-1] == "-"), extra)  # (before a last '-', which stays itself)
            out.append(member(c, i == start))
            start = None if closing else start
        elif pattern.startswith("(?#", i):  # a comment, to its first ')' (both backends refused it as a group)
            i = pattern.index(")", i) + 1
            continue
        elif c == "[":
            opened, start = i, i + 2 if pattern.startswith("[^", i) else i + 1
            out.append(pattern[i:start])
            i = start
            continue
        elif c == "{":
            words, i = brace_at(pattern, i)
            out.append(words)
            continue
        else:
            out.append(other(c))
        i += 1
    return "".join(out)


def _named(name: str) -> str:
    """The character Python's \\N{name} stands for; '' where it names none (Python's reading refuses it)."""
    try:
        return unicodedata.lookup(name)
    except KeyError:
        return ""


STARTS = {sre.AT_BEGINNING: "^", sre.AT_BEGINNING_STRING: "\\A"}
ENDS = {sre.AT_END: "$", sre.AT_END_STRING: "\\Z"}
REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def misplaced_anchor(pattern: str) -> str | None:
    """A ^ (or \\A) where something may be written before it, or a $ (\\Z) where something may follow it,
    named: the whole output must match, so there it matches nothing (`a$b` matches no text). llguidance
    refused `a$b`; xgrammar drops the $ and wrote "ab", which the check refused. None where each anchor stands
    at an edge (`(^a|b)$`, `(^a)?b`). Under (?m) a line's own anchors mean more: left to the backends."""
    parsed = sre_parse.parse(pattern)
    if parsed.state.flags & re.MULTILINE:
        return None
    return _off_edge(parsed, STARTS, False) or _off_edge(parsed, ENDS, True)


def _off_edge(items: sre_parse.SubPattern, anchors: dict, backwards: bool, clean: bool = True) -> str | None:
    """The first of `anchors` in `items` (walked from the end when `backwards`) that text may come before
    (after); clean: nothing can have been written before (after) `items`."""
    for op, av in (reversed(items.data) if backwards else items.data):
        if op is sre.AT and av in anchors and not clean:
            return anchors[av]
        inner = clean and (op not in REPEATS or av[1] <= 1)  # a repetition's body may follow itself
        for child in nested(av):
            if found := _off_edge(child, anchors, backwards, inner):
                return found
        clean = clean and sre_parse.SubPattern(items.state, [(op, av)]).getwidth()[1] == 0
    return None


def nested(av) -> list:
    """The patterns nested in a parsed item's argument: a group's, an alternation's branches, a look-around's."""
    parts = av if isinstance(av, tuple) else (av,)
    found = [part for part in parts if isinstance(part, sre_parse.SubPattern)]
    return found + [p for part in parts if isinstance(part, list) for p in part if isinstance(p, sre_parse.SubPattern)]
