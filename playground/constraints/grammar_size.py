"""A grammar's size with its counted repetitions written out, through the rules it names, bounded
before a backend reads it. xgrammar takes `root ::= "ab"{4000000}` (25 characters), or
`root ::= x{1999}` with `x ::= "ab"{2000}`, and its matcher then spent 9-10 s on one step and left
the server 4-6 GB larger (a red-team pass; llguidance refused them, "Too many items"). A regex
terminal's size is its own (safety.written_out), so `/a{1000}/` counts 1,000.

The size: every string, character class, regex and rule reference counts its own size once; a group
or an item followed by a count {n}, {n,m}, {n,} or Lark's ~ n..m counts that many times (the most it
allows; an open one its minimum and one more, as a regex's); a rule counts the sum of its body, each
rule once however often it is named (a rule on its own path, recursion, counts 1: it is not written
out). Both dialects are read by their tokens alone (GBNF: `name ::=`, [...] a class; Lark: `name:`,
[...] an optional group, /.../ a regex), loosely: the backends parse them properly afterwards."""
import re
from collections.abc import Callable

from playground.errors import PlaygroundError
from playground.limits import MAX_GRAMMAR_SIZE, MAX_REPEAT_COUNT, at_most

_COMMON = r"""
  (?P<space>\s+)
| (?P<string>"(?:\\.|[^"\\])*"i?|'(?:\\.|[^'\\])*'i?)
| (?P<count>\{\s*\d+\s*(?:,\s*\d*\s*)?\}|~\s*\d+(?:\s*\.\.\s*\d+)?)
| (?P<name>[A-Za-z_][\w.-]*)
"""
TOKENS = {
    True: re.compile(r"(?P<comment>\#[^\n]*)" r"| (?P<klass>\[(?:\\.|[^\]\\])*\])" r"| (?P<define>::=)|" + _COMMON
                     + r"| (?P<other>.)", re.X | re.S),  # GBNF
    False: re.compile(r"(?P<comment>//[^\n]*)" r"| (?P<regex>/(?!/)(?:\\.|[^/\\\n])+/[imslux]*)|" + _COMMON
                      + r"| (?P<other>.)", re.X | re.S),  # Lark
}
OPEN, CLOSE = {"(": ")", "[": "]"}, {")", "]"}


def check_grammar_size(text: str, gbnf: bool, regex_size: Callable[[str], int]) -> None:
    """Refuses a grammar whose written-out size is past MAX_GRAMMAR_SIZE, or any of whose counts is
    past MAX_REPEAT_COUNT. regex_size(pattern) -> a regex terminal's written-out size."""
    rules = _rules(_tokens(text, gbnf), gbnf)
    sizes: dict[str, int] = {}
    on_path: set[str] = set()

    def rule_size(name: str) -> int:
        if name in sizes or name in on_path or name not in rules:  # known; recursion; a terminal imported
            return sizes.get(name, 1)
        on_path.add(name)
        sizes[name] = _body_size(rules[name], 0, item_size)[0]
        on_path.discard(name)
        return sizes[name]

    def item_size(kind: str, value: str) -> int:
        if kind == "name":
            return rule_size(value)
        if kind == "regex":
            return regex_size(value[1:value.rindex("/")])
        return 1

    try:
        largest = max(map(rule_size, rules), default=0)  # each rule holds what it names
    except RecursionError:  # (a chain of some 300 rules, or groups, each inside the last)
        raise PlaygroundError("the grammar nests its rules or groups too deeply to be sized here") from None
    at_most(largest, MAX_GRAMMAR_SIZE, "the size of the grammar with its counted repetitions written out (each "
            "count times what it repeats, through the rules it names)")


def _tokens(text: str, gbnf: bool) -> list[tuple[str, str]]:
    return [(m.lastgroup, m.group()) for m in TOKENS[gbnf].finditer(text) if m.lastgroup not in ("space", "comment")]


def _rules(tokens: list[tuple[str, str]], gbnf: bool) -> dict[str, list[tuple[str, str]]]:
    """name -> its body's tokens (a name defined twice: its bodies joined, as alternatives are)."""
    starts = [i for i in range(len(tokens) - 1) if tokens[i][0] == "name" and _defines(tokens, i, gbnf)]
    rules: dict[str, list] = {}
    for start, end in zip(starts, starts[1:] + [len(tokens)]):
        body = tokens[start + 2:end]
        if not gbnf:  # a Lark directive (%import, %ignore...) after the body is not part of it
            body = body[:next((j for j, (_, v) in enumerate(body) if v == "%"), len(body))]
        rules.setdefault(_rule_name(tokens, start), []).extend(body)
    return rules


def _defines(tokens, i: int, gbnf: bool) -> bool:
    """Whether the name at i starts a rule: GBNF's `name ::=`, Lark's `name:` (a colon is in no body)."""
    return tokens[i + 1][1] == ("::=" if gbnf else ":")


def _rule_name(tokens, start: int) -> str:
    return tokens[start][1].split(".")[0]  # Lark's priority: name.2


def _body_size(tokens, i: int, item_size) -> tuple[int, int]:
    """The size of tokens[i:] up to the group's closing bracket -> (size, where it goes on)."""
    total = last = 0
    while i < len(tokens):
        kind, value = tokens[i]
        i += 1
        if value in CLOSE:
            break
        if value in OPEN:
            last, i = _body_size(tokens, i, item_size)
        elif kind == "count":
            times = _times(value)
            total += last * (times - 1)
            last *= times
            continue
        elif kind in ("name", "string", "regex", "klass"):
            last = item_size(kind, value)
        else:
            continue  # | * + ? and the rest
        total += last
    return total, i


def _times(count: str) -> int:
    """'{3}' -> 3, '{2,5}' -> 5, '{2,}' -> 3 (its minimum and one more), '~ 2..5' -> 5."""
    numbers = [int(n) for n in re.findall(r"\d+", count)]
    for n in numbers:
        at_most(n, MAX_REPEAT_COUNT, "a repetition count in the grammar")
    open_ended = count.startswith("{") and re.search(r",\s*\}", count)
    return numbers[0] + 1 if open_ended else max(max(numbers), 1)
