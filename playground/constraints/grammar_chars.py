"""A grammar's characters outside its strings, classes, regexes and comments: its syntax, ASCII under both
backends (a name is letters, digits, _ and -). A byte-order mark before `root ::= "a"` (a file saved with
one) or a bidi control in a rule's name made xgrammar raise UnicodeDecodeError (its message cut inside
the character), refused as "compiling this constraint failed" under both backends; and xgrammar stopped
reading at a NUL, anywhere (`root ::= "yes"<NUL> | "no"` allowed "yes" alone, unsaid; a fuzzing review)."""
from playground.constraints.grammar_size import TOKEN_REFERENCE, TOKENS
from playground.errors import PlaygroundError

LITERALS = ("string", "klass", "regex", "comment")  # where any character may stand
ALLOWED = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"\t", "\n", "\r"}


def check_grammar_characters(text: str, gbnf: bool) -> None:
    """Refuses a NUL anywhere, and a character outside ALLOWED outside the grammar's literals, naming it."""
    if "\0" in text:
        _refuse(text, text.index("\0"), "a NUL (U+0000), where xgrammar stops reading the grammar; write it as \\x00")
    named = [m.span() for m in TOKEN_REFERENCE.finditer(text)]  # (a token's own name: DeepSeek's <｜end▁of▁sentence｜>)
    for m in TOKENS[gbnf].finditer(text):
        if m.lastgroup not in LITERALS and (odd := next((i for i, c in enumerate(m.group()) if c not in ALLOWED and not any(
                start <= m.start() + i < end for start, end in named)), None)) is not None:
            at = m.start() + odd
            what = "a byte-order mark (U+FEFF): delete it" if text[at] == "\ufeff" else \
                f"{_named(text[at])}, outside a string, class or regex, where the grammar's syntax is ASCII"
            _refuse(text, at, what)


def _named(char: str) -> str:
    return f"U+{ord(char):04X} {char!r}" if char.isprintable() else f"U+{ord(char):04X}"


def _refuse(text: str, at: int, what: str):
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    raise PlaygroundError(f"the grammar holds {what} (line {line}, column {column})")
