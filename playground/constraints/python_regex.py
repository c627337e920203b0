"""Where a regex's Python meaning (the output's checker reads it with Python's syntax) is written in a way
a backend reads otherwise: each backend rewrites these in its own words (xgr.python_meaning,
llg.llguidance_meaning)."""
import re

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
