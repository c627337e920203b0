"""A grammar's size with its counted repetitions written out, through the rules it names, bounded
before a backend reads it. xgrammar takes `root ::= "ab"{4000000}` (25 characters), or
`root ::= x{1999}` with `x ::= "ab"{2000}`, and its matcher then spent 9-10 s on one step and left
the server 4-6 GB larger (a red-team pass; llguidance refused them, "Too many items"). A regex
terminal's size is its own (safety.written_out), so `/a{1000}/` counts 1,000.

The size: every string counts its characters, every character class, regex and rule reference its
own size once; a group or an item followed by a count {n}, {n,m}, {n,} or Lark's ~ n..m counts that
many times (the most it allows; an open one its minimum and one more, as a regex's); a rule counts the sum of its body, each
rule once however often it is named (a rule on its own path, recursion, counts 1: it is not written
out). Both dialects are read by their tokens alone (GBNF: `name ::=`, [...] a class, `.` any
character; Lark: `name:` or `name[attributes]:`, [...] an optional group, /.../ a regex, // and #
comments; xgrammar's Regex("...") a regex), loosely: the backends parse them properly afterwards. A
regex Python cannot parse (\\p{L}, (?<name>...)) is read loosely too, each character an item."""
import re

from playground.constraints.safety import written_out
from playground.errors import SATURATED, PlaygroundError
from playground.limits import MAX_GRAMMAR_SIZE, MAX_REPEAT_COUNT, at_most

_NAME_AND_COUNT = r"""
| (?P<count>\{\s*\d+\s*(?:,\s*\d*\s*)?\}|~\s*\d+(?:\s*\.\.\s*\d+)?)
| (?P<name>[A-Za-z_][\w.-]*)
| (?P<space>\s+)
| (?P<other>.)
"""
# A string or class left open runs to the end of the text as one token (its closing mark optional):
# where one was required, a scan that found none began again at the next opening mark: `root ::= [[[...`
# of 64,000 characters took 85 s of the server's time before the backends would have refused it (an audit)
TOKENS = {  # each dialect as the backends read it: GBNF (llama.cpp's; xgrammar's EBNF), Lark (llguidance's)
    True: re.compile(r"""(?P<comment>\#[^\n]*)
| (?P<string>"(?:\\.|[^"\\])*"?)
| (?P<klass>\[(?:\\.|[^\]\\])*\]?)
| (?P<define>::=)""" + _NAME_AND_COUNT, re.X | re.S),
    False: re.compile(r"""(?P<comment>(?://|\#)[^\n]*)
| (?P<string>"(?:\\.|[^"\\])*"?i?|'(?:\\.|[^'\\])*'?i?)
| (?P<regex>/(?!/)(?:\\.|[^/\\\n])+/[imslux]*)""" + _NAME_AND_COUNT, re.X | re.S),
}
REGEX_TOKENS = re.compile(r"""(?P<klass>\[\^?\]?(?:\\.|[^\]\\])*\])
| (?P<count>\{\s*\d+\s*(?:,\s*\d*\s*)?\})
| (?P<string>\\[pPkgNxuU]\{[^}]*\}|\\.|[^()|*+?{\[])
| (?P<other>.)""", re.X | re.S)  # a regex read as a grammar's body: each character an item
TOKEN_REFERENCE = re.compile(r"<\[|<[^\s<>\"']+>")  # a Lark grammar's token: <[id]>, <|special|>, <name>
OPEN, CLOSE = {"(", "["}, {")", "]"}
DIRECTIVES = {"import", "ignore", "declare", "override", "extend", "llguidance"}  # Lark's: end a rule's body
ITEMS = ("name", "string", "regex", "klass")


def grammar_rules(text: str, gbnf: bool) -> dict[str, list[tuple[str, str]]]:
    """The grammar's rules, read loosely: name -> its body's tokens, (kind, text) each."""
    return _rules(_tokens(text, gbnf), gbnf)


def check_grammar_size(text: str, gbnf: bool) -> None:
    """Refuses a grammar whose written-out size is past MAX_GRAMMAR_SIZE, or any of whose counts is
    past MAX_REPEAT_COUNT."""
    rules = grammar_rules(text, gbnf)
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
        if kind == "regex":  # (its x flag: verbose, `b{ 100 }` a count; without it, text)
            end = value.rindex("/")
            return _regex_size(("(?x)" if "x" in value[end:] else "") + value[1:end])
        return max(len(value.rstrip("i")) - 2, 1) if kind == "string" else 1  # (its characters, about: "<1,000 of
        # them>"{1000} counted 1,000, and a 16-token run of it took 8.5 s; a fuzzing review)

    try:
        largest = max(rules, key=rule_size, default=None)  # each rule holds what it names
    except RecursionError:  # (a chain of some 300 rules, or groups, each inside the last)
        raise PlaygroundError("the grammar nests its rules or groups too deeply to be sized here") from None
    if largest is not None:
        at_most(sizes.get(largest, 1), MAX_GRAMMAR_SIZE, "the size of the grammar with its counted repetitions "
                "written out (each count times what it repeats, through the rules it names)",
                f": rule {ascii(largest[:40])} is that large; fewer or smaller counts there, or * and + instead")


def _regex_size(pattern: str) -> int:
    """A regex terminal's size written out (safety.written_out); one Python cannot parse (the backends'
    own syntax, e.g. \\p{L}, \\x{1F600}: a character, not a count) read loosely: each count bounded,
    nested groups multiplied."""
    try:
        return written_out(pattern, "a regex in the grammar")
    except (re.error, RecursionError, OverflowError):
        pass
    tokens = [(m.lastgroup, m.group()) for m in REGEX_TOKENS.finditer(pattern)]
    try:
        return _body_size(tokens, 0, lambda kind, value: 1)[0]
    except RecursionError:
        raise PlaygroundError("a regex in the grammar nests its groups too deeply to be sized here") from None


def _tokens(text: str, gbnf: bool) -> list[tuple[str, str]]:
    """The grammar's tokens, spaces and comments left out; xgrammar's Regex("...") one regex token."""
    tokens = [(m.lastgroup, m.group()) for m in TOKENS[gbnf].finditer(text) if m.lastgroup not in ("space", "comment")]
    out, i = [], 0
    while i < len(tokens):
        if tokens[i] == ("name", "Regex") and [v for _, v in tokens[i + 1:i + 4:2]] == ["(", ")"] and \
                tokens[i + 2][0] == "string":
            out.append(("regex", "/" + tokens[i + 2][1][1:-1] + "/"))
            i += 4
        else:
            out.append(tokens[i])
            i += 1
    return out


def _rules(tokens: list[tuple[str, str]], gbnf: bool) -> dict[str, list[tuple[str, str]]]:
    """name -> its body's tokens (a name defined twice: its bodies joined, as alternatives are)."""
    closes = _next_closes(tokens)
    starts = [(i, body) for i in range(len(tokens) - 1) if tokens[i][0] == "name"
              and (body := _body_start(tokens, i, gbnf, closes)) is not None]
    rules: dict[str, list] = {}
    for (start, body_start), (end, _) in zip(starts, starts[1:] + [(len(tokens), 0)]):
        body = tokens[body_start:end]
        if not gbnf:  # a Lark directive (%import, %ignore...) after the body is not part of it (%json is)
            body = body[:next((j for j, (_, v) in enumerate(body[:-1]) if v == "%" and body[j + 1][1] in DIRECTIVES),
                              len(body))]
        name = tokens[start][1] if gbnf else tokens[start][1].split(".")[0]  # Lark's priority: name.2
        rules[name] = rules[name] + [("other", "|")] + body if name in rules else body  # (once more: another alternative)
    return rules


def _body_start(tokens, i: int, gbnf: bool, closes: list[int]) -> int | None:
    """Where the body of a rule named at i starts, None where no rule starts at i: GBNF's `name ::=`,
    Lark's `name:` or `name[max_tokens=9]:` (a colon is in no body)."""
    if gbnf:
        return i + 2 if tokens[i + 1][1] == "::=" else None
    j = i + 1
    if tokens[j][1] == "[":  # llguidance's attributes
        j = closes[j] + 1
    return j + 1 if j < len(tokens) and tokens[j][1] == ":" else None


def _next_closes(tokens) -> list[int]:
    """For each token, where the first "]" at or after it is (the last token where none is): found once,
    not scanned for after every `name[` (`start: a[a[a[...` took 28 s at 64,000 characters)."""
    closes, at = [0] * len(tokens), len(tokens) - 1
    for k in range(len(tokens) - 1, -1, -1):
        at = k if tokens[k][1] == "]" else at
        closes[k] = at
    return closes


def _body_size(tokens, i: int, item_size, depth: int = 0) -> tuple[int, int]:
    """The size of tokens[i:] up to the group's closing bracket -> (size, where it goes on). A closing
    bracket with no group open is passed over (the rest of the rule still counts)."""
    total = last = 0
    while i < len(tokens):
        kind, value = tokens[i]
        i += 1
        if value in CLOSE:
            if depth:
                break
            continue
        if value in OPEN:
            last, i = _body_size(tokens, i, item_size, depth + 1)
        elif kind == "count":
            times = _times(value)
            total = min(total + last * (times - 1), SATURATED)
            last = min(last * times, SATURATED)
            continue
        elif kind in ITEMS or value == ".":  # GBNF's any character
            last = item_size(kind, value)
        else:
            continue  # | * + ? and the rest
        total = min(total + last, SATURATED)
    return total, i


def _times(count: str) -> int:
    """'{3}' -> 3, '{2,5}' -> 5, '{2,}' -> 3 (its minimum and one more), '~ 2..5' -> 5."""
    numbers = [int(n) for n in re.findall(r"\d+", count)]
    for n in numbers:
        at_most(n, MAX_REPEAT_COUNT, "a repetition count in the grammar")
    open_ended = count.startswith("{") and re.search(r",\s*\}", count)
    return numbers[0] + 1 if open_ended else max(max(numbers), 1)
