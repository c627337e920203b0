"""Where a regex's Python meaning (the output's checker reads it with Python's syntax) is written in a way
a backend reads otherwise: each backend rewrites these in its own words (xgr.python_meaning,
llg.llguidance_meaning), over one reading of its pieces (rewritten)."""
import re
from collections.abc import Callable

NO_LOWER_BOUND = re.compile(r"\{,(\d+)\}")  # x{,3}: Python's x{0,3}; a missing number to both backends


def octal_at(pattern: str, i: int) -> str:
    """The digits of Python's octal escape at pattern[i] (a backslash): \\0 and up to two more octal digits,
    or three octal digits; '' where there is none (\\1 is a back-reference)."""
    digits = ""
    while len(digits) < 3 and i + 1 + len(digits) < len(pattern) and pattern[i + 1 + len(digits)] in "01234567":
        digits += pattern[i + 1 + len(digits)]
    return digits if digits.startswith("0") or (len(digits) == 3 and digits[0] in "0123") else ""


def lower_bound_at(pattern: str, i: int) -> tuple[str, int] | None:
    """x{,3} at pattern[i] (outside a class) -> ('{0,3}', where the pattern goes on); None where it is not."""
    match = NO_LOWER_BOUND.match(pattern, i)
    return (f"{{0,{match.group(1)}}}", match.end()) if match else None


def rewritten(pattern: str, escape: Callable[[str, int, int | None], tuple[str, int]],
              member: Callable[[str, bool], str] = lambda c, first: c, other: Callable[[str], str] = lambda c: c) -> str:
    """The pattern piece by piece as Python reads it, each piece in a backend's words: `escape(pattern, i,
    class_start)` -> (its words, where the pattern goes on) for a backslash at i (class_start: where the open
    class's members begin, None outside one); `member(c, first)` for a character in a class; `other(c)` for one
    outside; x{,3} -> x{0,3} (a missing number to both backends). A class's opening [ or [^ is kept."""
    out, i, start = [], 0, None
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            words, i = escape(pattern, i, start)
            out.append(words)
            continue
        if start is not None:
            out.append(member(c, i == start))
            start = None if c == "]" and i != start else start  # (a ']' first in a class is itself)
        elif c == "[":
            start = i + 2 if pattern.startswith("[^", i) else i + 1
            out.append(pattern[i:start])
            i = start
            continue
        elif bound := lower_bound_at(pattern, i):
            out.append(bound[0])
            i = bound[1]
            continue
        else:
            out.append(other(c))
        i += 1
    return "".join(out)
