"""Values as a person types them, one reading for links, sweep values, the CLI's token ids and a host's
switches. Numbers: ASCII digits only (int() and float() also read '1_0', Arabic-Indic digits, 'nan' and
'inf'), and a whole number of at most MAX_DIGITS digits after its leading zeros (int() refuses past
4,300 digits, in Python's words; no setting is that large). Switches: the usual on and off words."""
import re

WHOLE = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # (with "[0-9]+\.?[0-9]*" a
# 16,000-digit value ending in a letter took 5.5 s to refuse: two ways to split the digits, tried in full)
MAX_DIGITS = 30


class TooLong(ValueError):
    """A whole number of more than MAX_DIGITS digits: out of any setting's range."""


def whole(text: str) -> int:
    """'-0042' -> -42; ValueError for anything else, TooLong past MAX_DIGITS digits (the words of both
    follow "... is")."""
    if not WHOLE.fullmatch(text):
        raise ValueError("not a whole number in ASCII digits")
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > MAX_DIGITS:
        raise TooLong(f"a number of more than {MAX_DIGITS} digits")
    value = int(digits or "0")
    return -value if text.startswith("-") else value


def decimal(text: str) -> float:
    """'0.7', '1e-3', '.5' -> a float; ValueError for anything else (a number too large is inf)."""
    if not DECIMAL.fullmatch(text):
        raise ValueError("not a number in ASCII digits")
    value = float(text) + 0.0  # (-0 read as 0: a temperature sweep showed "-0", its CSV -0.0000)
    if value == 0 and re.search("[1-9]", re.split("[eE]", text)[0]):  # 1e-400: sampling asked, greedy run
        raise ValueError("too small to be told from 0 (below 5e-324)")
    return value


ON, OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def switch(text: str) -> bool:
    """'on', 'True', '1' -> True; 'off', 'No', '0' -> False (case and spaces around ignored); ValueError else."""
    word = text.strip().lower()
    if word not in ON + OFF:
        raise ValueError("not one of 1, 0, true, false, yes, no, on, off")
    return word in ON


def listed(text: str, separators: str = ",") -> list[str]:
    """'1, 2,4,' -> ['1', '2', '4']: the items between commas, stripped, a trailing comma allowed; an
    empty one elsewhere is a ValueError (`--k 2,,4` ran 2 and 4 without a word: a value left out?)."""
    for sep in separators[1:]:
        text = text.replace(sep, separators[0])
    items = [item.strip() for item in text.split(separators[0])]
    while items and not items[-1]:
        items.pop()
    if "" in items:
        raise ValueError("an empty value between commas (a value left out?)")
    return items
