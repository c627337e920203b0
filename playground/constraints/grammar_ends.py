"""Every rule a grammar reaches from its start can end: some alternative of it holds only items that
end (strings, classes, regexes, rules that end; an item under *, ?, {0,n} or Lark's [...] may be left
out). A rule that cannot (`r ::= "a" r`) forces text forever once it is entered: behind a choice
(`root ::= "y" r | "y" "z"`) both checks before a run pass, then xgrammar's jump-forward search
for the text it forces never returned and grew to 15 GB in 45 s (a fuzzing review); llguidance
stopped at run time ("Too many items"). Read with grammar_size's loose tokens: a name no rule
defines (an imported terminal, a template's parameter) is taken to end, so nothing that ends is refused."""
import re

from playground.constraints.grammar_size import CLOSE, OPEN, grammar_rules
from playground.errors import PlaygroundError

STARTS = {True: "root", False: "start"}  # GBNF's start rule, Lark's
LEFT_OUT = {"*", "?"}  # after an item: it may be written no times
MODIFIER = re.compile(r"(?m)^([ \t]*)[?!](?=[A-Za-z_])")  # Lark's ?rule and !rule: not the last rule's ? (its last item optional)
ALIAS = ("-", ">")  # Lark's `item -> name`: the tree's name for the alternative, no rule named


def check_rules_end(text: str, gbnf: bool) -> None:
    """Refuses a grammar with a rule, reached from its start, that no finite text completes."""
    rules = grammar_rules(text if gbnf else MODIFIER.sub(r"\1", text), gbnf)
    if STARTS[gbnf] not in rules:
        return
    users: dict[str, set[str]] = {}  # a rule -> the rules that name it
    for name, body in rules.items():
        for kind, value in body:
            if kind == "name":
                users.setdefault(value, set()).add(name)
    ending: set[str] = set()
    todo = set(rules)
    while todo:  # (a fixed point, in rounds: a rule is asked again once a rule it names ends; a chain of 8,129
        # rules, each asked again in every round, took 15.5 s; a fuzzing review)
        new = {name for name in todo if _ends(rules[name], 0, rules, ending)[0]}
        ending |= new
        todo = {user for name in new for user in users.get(name, ())} - ending
    never = [name for name in _reached(rules, STARTS[gbnf]) if name not in ending]
    if never:  # (the last reached is nearest the cause: root -> r, r ::= "a" r names r)
        needing = f" (nor can {', '.join(ascii(n[:40]) for n in never[:-1][:4])}, which need it)" if len(never) > 1 else ""
        raise PlaygroundError(
            f"no finite text completes rule {ascii(never[-1][:40])} of the grammar{needing}: each of its alternatives "
            "names a rule that never ends, so an output that enters it can never be finished; give it an alternative "
            "that stops (as r ::= \"a\" r | \"a\")")


def _ends(tokens, i: int, rules: dict, ending: set, depth: int = 0) -> tuple[bool, int]:
    """Whether some alternative of tokens[i:] (to its group's closing bracket) ends -> (it does, where it goes on)."""
    any_ends, this_ends, last = False, True, None  # last: whether the item just read ends (None: no item yet)
    while i < len(tokens):
        kind, value = tokens[i]
        i += 1
        if value in CLOSE:
            if depth:
                break
            continue
        if value == "|":
            any_ends, this_ends, last = any_ends or this_ends and last is not False, True, None
            continue
        if (value, tokens[i][1] if i < len(tokens) else "") == ALIAS:
            i += 2  # (the alias, and its name)
            continue
        if value in OPEN:
            inner, i = _ends(tokens, i, rules, ending, depth + 1)
            item = inner or value == "["  # (a Lark [...] group may be left out)
        elif kind == "count" and _may_be_none(value) or value in LEFT_OUT:
            last = True
            continue
        elif kind == "name":
            item = value not in rules or value in ending
        else:
            continue  # strings, classes, regexes end; + and other marks change nothing
        if last is False:
            this_ends = False
        last = item
    return any_ends or this_ends and last is not False, i


def _may_be_none(count: str) -> bool:
    """{0}, {0,n}, {,n}, ~ 0..n: the item before may be written no times ({01} must be once)."""
    least = count.strip("{}~ ").replace(" ", "").split(",")[0].split(".")[0]
    return not least or int(least) == 0


def _reached(rules: dict, start: str) -> list[str]:
    """The rules the start rule names, through the rules they name, the start first."""
    seen, todo = {start: None}, [start]  # (a dict: the order found, and a quick look-up)
    while todo:
        for kind, value in rules[todo.pop()]:
            if kind == "name" and value in rules and value not in seen:
                seen[value] = None
                todo.append(value)
    return list(seen)
