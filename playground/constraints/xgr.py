"""xgrammar backend (vLLM's and SGLang's default). It compiles silently past keywords it does not
enforce, so those are named here in the constraint's notes (the output is checked against them
after the run); its bounded strings can emit raw control characters (xgrammar issue 800), which the
grammar text is patched to exclude."""
import functools
import json
import operator
import re
from dataclasses import dataclass
from re import _constants as sre, _parser as sre_parse  # Python's own reading of a pattern (3.11+)
from types import SimpleNamespace

import torch
import xgrammar as xgr

from playground.constraints import satisfiable, worker
from playground.constraints.char_escapes import gbnf_bracket_escapes
from playground.constraints.grammar_size import TOKEN_REFERENCE, TOKENS
from playground.constraints.python_regex import octal_at, rewritten
from playground.constraints.schema_keywords import INT64, KEYWORD_NAMES, ONE_OF, literal_integers, unenforced_note
from playground.constraints.xgr_no_value import no_value_places_left_out
from playground.constraints.xgr_reads import (BESIDE_CHOICE, ENUM_REFUSED, NAMED_TWICE, NO_ENUM_VALUE, NOT_CONSTRAINTS,
                                                 PUSHED_DOWN, as_xgrammar_reads, beside_choice, named_twice, read_nodes,
                                                 unmarked)
from playground.constraints.unwritable import without_false_patterns, without_past_int64
from playground.constraints.spec import BYTE_END, BYTE_TOKENS, ConstraintSpec, Unreadable, parse_schema
from playground.errors import PlaygroundError

# Keywords xgrammar 0.2.8 compiles past without enforcing them (each tried with an output that
# breaks it); it does enforce propertyNames, multipleOf on integers and unevaluated*: false.
UNENFORCED = {"uniqueItems", "not", "if", "then", "else", "contains", "minContains", "maxContains",
              "dependentRequired", "dependentSchemas", "$recursiveRef", "$dynamicRef"}
NO_VALUE_REF = "a $ref to a schema no value satisfies"  # (where it may be left out: satisfiable.py)
BESIDE_REF = "keywords beside a $ref"  # xgrammar follows the $ref alone (draft 2020-12 applies both)
WRITTEN_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uri-reference",
                             "uuid", "uri-template", "json-pointer", "relative-json-pointer"})  # xgrammar 0.2.8's own: any
# other format (idn-email, iri, regex, an unknown one) it writes as any string, with no word (a review: idn-email wrote 🌱🌱🌱)
INEXACT_FORMATS = {"ipv4", "date", "date-time", "time"}  # leading zeros; a day the month lacks (2025-02-30); a 60th second at any minute
SEPARATORS = (", ", ": ")
FORCED_BYTES = 64  # forced text found at most: its first token is what a mask takes (guide.py), tokenized in context
SHORT_CLASS = re.compile(r"(?<!\\)(?:\\\\)*\\[dws]")  # an unescaped \d, \w or \s
ASCII_CLASSES = (r"xgrammar reads \d, \w and \s as ASCII (llguidance and the check after the run as Unicode): under it "
                 "they never write 你, é or ٤")
# xgrammar's class for characters of a length-bounded string, and the JSON-legal one to use instead
BOUNDED_CHAR, JSON_CHAR = r'[^\"\\\r\n]', r'[^\0-\x1f\"\\]'


class XGrammarBackend:
    name = "xgrammar"
    writes_surrogates = True  # its character classes let U+D800-U+DFFF through as UTF-8: whole_chars.py

    def __init__(self, tokenizer, vocab: int, eos_ids: frozenset[int]):
        self.eos_ids = eos_ids  # the tokens that end the output (the tokenizer's own where empty)
        self.info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab, stop_token_ids=sorted(eos_ids) or None)
        self.tokenizer = tokenizer

    @classmethod
    def over_bytes(cls) -> "XGrammarBackend":
        """The backend over spec.BYTE_TOKENS, not a model's tokenizer."""
        backend = cls.__new__(cls)
        backend.eos_ids, backend.tokenizer = frozenset({BYTE_END}), _bytes_of
        backend.info = xgr.TokenizerInfo(BYTE_TOKENS, stop_token_ids=[BYTE_END])
        return backend

    def compile(self, spec: ConstraintSpec) -> tuple["Compiled", list[str]]:
        """-> (the compiled grammar, notes on what it does not enforce)."""
        return _converted(spec, lambda read, text: _made(self.info, read, text))

    @staticmethod
    def read(spec: ConstraintSpec) -> list[str]:
        """What compile refuses before any tokenizer is involved (the page checks it as the user types):
        xgrammar's reading of the schema, regex or grammar text -> its notes (what it reads past). A
        grammar naming a token (<|endoftext|>, <[*]>) is read only with a tokenizer: Run's to check."""
        try:
            return _converted(spec, lambda read, text: READERS[read](text))[1]
        except Unreadable as exc:
            if "requires tokenizer_info" in str(exc):
                return []
            raise

    @staticmethod
    def dump(compiled: "Compiled"):
        """What a worker hands back: the text xgrammar compiled, not the compiled form, whose
        serialize_json is far larger than the form itself (JSONSchemaBench's Snowplow sp_367: 16 KB of
        grammar compiled in 3.4 s to 10 MB, serialized to 256 MB in 9.9 s with 3.4 GB more memory).
        Compiled in-process (no worker: not Linux, or a ZeroGPU task), the compiled grammar itself."""
        return compiled.source if worker.in_child() else compiled

    def load(self, payload) -> "Compiled":
        """dump's hand-back compiled again here, at a worker's low CPU priority: the work the worker
        finished within its bounds."""
        if isinstance(payload, Compiled):
            return payload
        try:
            return worker.yielding(_made, self.info, *payload)
        except (RuntimeError, MemoryError) as exc:  # (never seen: the worker compiled the same text)
            raise PlaygroundError(f"compiling this constraint again in the server failed: {type(exc).__name__} "
                                 f"{_clean(exc)[:300]}") from None

    @staticmethod
    def size(compiled: "Compiled") -> int:
        """Bytes it holds, about."""
        over_bytes = compiled.over_bytes.memory_size_bytes if compiled.over_bytes is not None else 0
        return compiled.compiled.memory_size_bytes + over_bytes + len(compiled.source[1])

    def matcher(self, compiled: "Compiled") -> "XGrammarMatcher":
        over_bytes = xgr.GrammarMatcher(compiled.over_bytes) if compiled.over_bytes is not None else None
        return XGrammarMatcher(xgr.GrammarMatcher(compiled.compiled), self.tokenizer, over_bytes, self._token_bytes())

    def _token_bytes(self) -> list[bytes]:
        """Each token's bytes, as xgrammar reads them (its decoded vocabulary; read once: 150k tokens)."""
        if getattr(self, "token_bytes", None) is None:
            self.token_bytes = self.info.decoded_vocab
        return self.token_bytes


@dataclass(frozen=True, slots=True)
class Compiled:
    source: tuple[str, str]  # how xgrammar read it (a key of READERS) and the text it read
    compiled: xgr.CompiledGrammar
    over_bytes: xgr.CompiledGrammar | None  # the same over spec.BYTE_TOKENS, for the text it forces (XGrammarMatcher);
    # None for a grammar naming a model's tokens, which no byte spells


def _made(info: xgr.TokenizerInfo, read: str, text: str) -> Compiled:
    return Compiled((read, text), _compiled(info, read, text), _over_bytes(read, text))


def _over_bytes(read: str, text: str) -> xgr.CompiledGrammar | None:
    """The grammar over the 256 bytes (10 ms and 0.5 MB for a 17 KB schema's grammar); None where it names tokens
    (a byte is no model's token: <[66]> was read as the byte "B" there, and forced what followed it; a review)."""
    if read != "regex" and TOKEN_REFERENCE.search(text):
        return None
    try:
        return _compiled(_byte_info(), read, text)
    except RuntimeError:
        return None


@functools.cache
def _byte_info() -> xgr.TokenizerInfo:
    return xgr.TokenizerInfo(BYTE_TOKENS, stop_token_ids=[BYTE_END])


READERS = {"ebnf": xgr.Grammar.from_ebnf, "lark": xgr.Grammar.from_lark, "regex": xgr.Grammar.from_regex}


def _compiled(info: xgr.TokenizerInfo, read: str, text: str) -> xgr.CompiledGrammar:
    compiler = xgr.GrammarCompiler(info, max_threads=2, cache_enabled=False)  # one compile: nothing to cache
    return {"ebnf": compiler.compile_grammar, "lark": compiler.compile_lark, "regex": compiler.compile_regex}[read](text)


def _converted(spec: ConstraintSpec, make) -> tuple:
    """xgrammar's conversion of the spec to a text it reads (_source), made (make(how it reads it, the
    text)), its refusals and its warnings watched -> (what make made, notes on what it does not enforce)."""
    log: list[str] = []
    try:
        with worker.stderr_lines(log):
            read, text, notes = _source(spec)
            made = make(read, text)
    except RuntimeError as exc:
        raise _refusal(spec, exc) from None
    except UnicodeDecodeError:  # (its message cut inside a character it did not expect: grammar_chars refuses those known)
        raise Unreadable(f"xgrammar cannot use this {spec.named}: it stopped at a character outside ASCII where it did "
                         "not expect one") from None
    return made, notes + _warned(log)  # the log is complete only once the block is left


def _source(spec: ConstraintSpec) -> tuple[str, str, list[str]]:
    """-> (how xgrammar reads the text: a key of READERS, the text, notes on what it does not enforce)."""
    if spec.kind == "json":
        return "ebnf", *_json_grammar(spec.engine_schema, bool(parse_schema(spec.text).no_value_refs))
    if spec.kind == "regex":
        return "regex", python_meaning(spec.text), [ASCII_CLASSES] if SHORT_CLASS.search(spec.text) else []
    if spec.gbnf:  # (its strings' and classes' \xHH read on past two digits: "\x41b" wrote U+041B; a fuzzing review)
        return "ebnf", _fixed_width_escapes(gbnf_bracket_escapes(spec.text, lambda code: f"\\u{code:04x}")), []
    return "lark", *_lark_regexes_as_python_reads(spec.text)  # Lark through xgrammar's own reader, as vLLM's


def _lark_regexes_as_python_reads(text: str) -> tuple[str, list[str]]:
    """A Lark grammar with each /regex/ terminal in words xgrammar reads as Lark (Python's re) does, as a regex
    constraint's are (python_meaning; its '.' is Python's already, and the s flag's): it wrote U+041B for /\x41b/,
    "fff" for /[\^a]{3}/, "xZ" for /x\Z/, each called valid (a fuzzing review). -> (the text, notes)."""
    out, at, notes = [], 0, []
    for m in TOKENS[False].finditer(text):
        if m.lastgroup == "regex":
            end = m.group().rindex("/")
            body = m.group()[1:end]
            _check_python_reads(body, m.group()[end + 1:])
            out += [text[at:m.start()], "/", python_meaning(body, dot="."), m.group()[end:]]
            at = m.end()
            notes += [ASCII_CLASSES] if SHORT_CLASS.search(body) and not notes else []
    return "".join(out) + text[at:], notes


def _refusal(spec: ConstraintSpec, exc: RuntimeError) -> Unreadable:
    return Unreadable(f"xgrammar cannot use this {spec.named}: {_clean(exc)}")


EDGES = (sre.AT_BEGINNING, sre.AT_END, sre.AT_BEGINNING_STRING, sre.AT_END_STRING)
LARK_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": re.UNICODE, "l": 0}


def _check_python_reads(body: str, flags: str) -> None:
    """A Lark regex Python's re (Lark's) cannot read, or with an edge's anchor (^ $, which xgrammar drops), refused:
    xgrammar read /[\\p{L}]+/ as p and braces, /\\x{e9}/ as "x{e9}", /a$b/ as "ab", each called valid (a fuzzing review)."""
    try:
        parsed = sre_parse.parse(body, functools.reduce(operator.or_, (LARK_FLAGS[f] for f in flags if f in LARK_FLAGS), 0))
    except (re.error, OverflowError, RecursionError) as exc:
        raise PlaygroundError(f"a regex of the grammar, /{body[:40]}/, is not one Python's re reads ({exc}): xgrammar reads "
                              "a Lark regex as Python's, and would write something else; use llguidance, or write it so") from None
    if _anchored(parsed):
        raise PlaygroundError(f"a regex of the grammar, /{body[:40]}/, holds an anchor (^, $, \\A or \\Z), which "
                              "xgrammar drops or reads as a letter (a terminal matches where the grammar puts it): leave it out, "
                              "or use llguidance")


def _anchored(parsed) -> bool:
    """Whether a parsed regex holds an anchor of an edge (^, $, \\A, \\Z) anywhere (walked with a stack: 500 nested
    groups ran past Python's recursion; a review)."""
    todo = [parsed]
    while todo:
        value = todo.pop()
        if isinstance(value, sre_parse.SubPattern):
            for op, av in value:
                if op is sre.AT and av in EDGES:
                    return True
                todo.append(av)
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
    return False


def python_meaning(pattern: str, dot: str = "[^\\n]") -> str:
    """A regex as the output's checker (Python's syntax) reads it, in words xgrammar 0.2.8 reads the
    same way: its '.' also matches a newline (Python's does not) -> `dot` (a Lark regex's is Python's); its \\xHH reads on past two
    digits ('a\\x41b' became 'a' + U+041B) and it has no octal escapes -> \\u00HH; a ']' first in a
    class -> \\]; a brace as Python reads it (python_regex.brace_at). What it reads otherwise and cannot be
    rewritten is refused: \\A and \\Z (literal letters to it), \\D \\W \\S and \\d \\w \\s in a negated
    class (ASCII to it, Unicode to Python), and a class opening with an escaped caret (negated by it)."""
    return rewritten(pattern, lambda p, i, start: _escape(p, i, start is not None and p[start - 1] == "^", i == start),
                     member=lambda c, first: "\\]" if c == "]" and first else c,  # (a ']' first in a class is itself)
                     other=lambda c: dot if c == "." else c)


def _escape(pattern: str, i: int, negated_class: bool, first_in_class: bool) -> tuple[str, int]:
    """The escape at pattern[i] ('\\') in xgrammar's words, and where the pattern goes on."""
    letter = pattern[i + 1]
    refuse = lambda why: PlaygroundError(f"xgrammar reads {pattern[i:i + 2]} {why}: use llguidance, or write it out")  # noqa: E731
    if letter in "AZ":
        raise refuse("as the letter itself (the whole output must match anyway: leave it out)")
    if letter in "DWS" or (negated_class and letter in "dws"):
        raise refuse("with ASCII classes, Python with Unicode ones (they disagree on letters like é and ٤)")
    if first_in_class and _code(pattern, i) == "^":
        raise PlaygroundError("xgrammar reads a class opening with an escaped caret as negated: put the ^ later")
    hex_digits = "0123456789abcdefABCDEF"
    if letter == "x" and len(pattern) >= i + 4 and all(h in hex_digits for h in pattern[i + 2:i + 4]):
        return "\\u00" + pattern[i + 2:i + 4], i + 4
    octal = octal_at(pattern, i)
    if octal:
        return f"\\u{int(octal, 8):04x}", i + 1 + len(octal)
    return pattern[i:i + 2], i + 2


def _code(pattern: str, i: int) -> str:
    """The character an escape at pattern[i] stands for where it is a literal (\\^, \\x5e, \\u005e), else ''."""
    if pattern[i + 1] in "xu":
        size = 2 if pattern[i + 1] == "x" else 4
        try:
            return chr(int(pattern[i + 2:i + 2 + size], 16))
        except ValueError:
            return ""
    return pattern[i + 1]


def _json_grammar(schema, no_value_refs: bool = False) -> tuple[str, list[str]]:
    """no_value_refs: some $ref names a node no value satisfies, in a place that may be left out
    (xgrammar refuses `false` there, and writes such a node as it reads it)."""
    names = [NAMED_TWICE] if named_twice(schema) else []
    schema, refused = without_false_patterns(schema)  # (before the rewriting: the patterns as the user wrote them)
    names += refused
    schema = as_xgrammar_reads(schema)
    names += without_past_int64(schema)  # (after the merging: a bound merged into an integer's node)
    if no_value_refs and no_value_places_left_out(schema):
        no_value_refs = bool(satisfiable.no_value_refs(unmarked(json.loads(json.dumps(schema)))))  # (one where it
        # could not be left out; a marker beside a $ref changes how llguidance reads it)
    names += [NO_VALUE_REF] if no_value_refs else []
    try:
        grammar = _schema_grammar(schema)
    except RuntimeError:  # a place with no value that may be left out: JSON Schema leaves it, xgrammar refuses
        if not no_value_places_left_out(schema):
            raise
        grammar = _schema_grammar(schema)
    nodes = read_nodes(schema)
    for node in nodes:  # (a pushed-down node's keywords are read in its branches)
        names += [BESIDE_CHOICE] if beside_choice(node) else []
        names += [ENUM_REFUSED] if node.get(NO_ENUM_VALUE) else []
        names += [] if node.get(PUSHED_DOWN) else [BESIDE_REF if k == "$ref" else k for k, v in node.items()
                                                   if _unenforced(k, v, node)]
    ebnf = _shortest_fractions(_fixed_width_escapes(str(grammar).replace(BOUNDED_CHAR, JSON_CHAR)))
    return ebnf, unenforced_note(names + _inexact_formats(nodes)) + _as_floats(schema)


def _schema_grammar(schema) -> xgr.Grammar:
    try:
        return xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS)
    except RuntimeError as exc:  # strict mode (no properties or items beyond those named) left too few
        if "not allowed" not in str(exc) and "aren't allowed" not in str(exc):
            raise
        return xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS,
                                            strict_mode=False)


HEX_ESCAPE = re.compile(r"\\(\\|x([0-9A-Fa-f]{2}))")  # an escaped backslash (skipped whole), or \xHH


def _fixed_width_escapes(ebnf: str) -> str:
    r"""xgrammar 0.2.8 writes a character from U+0080 to U+00FF of a schema's literal (const, enum, a property's
    name, a pattern) as \xHH, and its reader reads \x on past two digits: "café2" was forced as "caf" + U+0E92,
    "Größe" as "Grö" + U+0DFE (a review) -> \u00HH, which it reads as four digits."""
    return HEX_ESCAPE.sub(lambda m: m[0] if m[1] == "\\" else "\\u00" + m[2], ebnf)


LITERAL_OR_CLASS = re.compile(r'"((?:[^"\\]|\\.)*)"|\[(?:[^\]\\]|\\.)*\]', re.DOTALL)  # EBNF: a string or a class
LONG_FRACTION = re.compile(r"\d[.e]?\d{15}")  # 17 significant digits, the way xgrammar writes a fraction
JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
EBNF_ESCAPE = re.compile(r"\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)


def _shortest_fractions(ebnf: str) -> str:
    """xgrammar 0.2.8 writes a fraction in a const or an enum with 17 digits: {"const": 0.1} was forced as
    0.10000000000000001, refused by the check every time (a fuzzing review) -> each JSON number of a literal
    (outside the JSON strings in it) written as Python writes that float: the shortest that reads back to it."""
    return LITERAL_OR_CLASS.sub(lambda m: m[0] if m[1] is None or not LONG_FRACTION.search(m[1])
                                else f'"{_literal_fractions(m[1])}"', ebnf)


def _literal_fractions(body: str) -> str:
    """An EBNF literal's body (its escapes as written) with its JSON numbers shortened; a JSON string's
    quote in it is written \\", a backslash \\\\."""
    out, i, in_string, escaping = [], 0, False, False  # escaping: after one of the JSON's own backslashes (\\)
    while i < len(body):
        if escape := EBNF_ESCAPE.match(body, i):  # (a quote: a JSON string's edge, unless the JSON escapes it)
            in_string = not in_string if escape[0] == '\\"' and not escaping else in_string
            escaping = escape[0] == "\\\\" and not escaping
            out.append(escape[0])
            i = escape.end()
        elif not in_string and (number := JSON_NUMBER.match(body, i)):
            text = number[0]
            short = repr(float(text)) if set(text) & set(".eE") else text
            out.append(short if len(short) < len(text) and float(short) == float(text) else text)
            i = number.end()
        else:
            out.append(body[i])
            escaping, i = False, i + 1
    return "".join(out)


def _as_floats(schema) -> list[str]:
    """xgrammar 0.2.8 writes a const or enum integer past 64 bits as a float ({"const": 12345678901234567891}
    wrote 1.2345678901234567e+19, refused by the check with no word why; a review)."""
    big = [n for n in literal_integers(schema) if not INT64[0] <= n <= INT64[1]]
    return [f"xgrammar writes integers past 64 bits as floats: {big[0]} (const or enum) is written {float(big[0]):.17g}, "
            "which the check refuses (llguidance rounds it too)"] if big else []


def _only_byte(words: list[int]) -> int | None:
    """The one token a mask over the bytes (9 words of 32 bits, signed) allows, None where it allows another."""
    held = [(i, word & 0xFFFFFFFF) for i, word in enumerate(words) if word]
    if len(held) != 1 or held[0][1] & (held[0][1] - 1):
        return None
    return held[0][0] * 32 + held[0][1].bit_length() - 1


def _bytes_of(text: str, add_special_tokens: bool = False) -> SimpleNamespace:
    """A text's tokens over spec.BYTE_TOKENS, as a Hugging Face tokenizer's call gives them."""
    return SimpleNamespace(input_ids=list(text.encode()))


class XGrammarMatcher:
    """xgrammar's matcher, and the same grammar's over bytes (`over_bytes`, fed each consumed token's bytes) to find
    the text it forces, FORCED_BYTES at most: xgrammar's own search (find_jump_forward_string) follows a forced
    character for ever where nothing ends it (`root ::= "y" r | "y" "z"` with `r ::= "a" r`, the regex
    `b|a+[^\\x00-\\U0010ffff]`, a schema's pattern `^(b|a+[^\\s\\S])$`: 15 GB in 45 s, then std::bad_alloc; a
    fuzzing review)."""

    def __init__(self, matcher: xgr.GrammarMatcher, tokenizer, over_bytes: xgr.GrammarMatcher | None = None,
                 token_bytes: list[bytes] | None = None):
        self.m, self.tokenizer = matcher, tokenizer
        self.over_bytes, self.token_bytes = over_bytes, token_bytes
        self.lengths: list[int] = []  # each consumed token's bytes, as many (over_bytes' rollback)
        self.byte_row = torch.empty((1, (BYTE_END + 32) // 32), dtype=torch.int32)  # a mask over the bytes and the end

    def fill_bitmask(self, row: torch.Tensor) -> None:
        self.m.fill_next_token_bitmask(row[None])

    def consume(self, token: int) -> bool:
        if not self.m.accept_token(token):
            return False
        if self.over_bytes is not None:
            spelled = self.token_bytes[token] if token < len(self.token_bytes) else b""
            if all(self.over_bytes.accept_token(byte) for byte in spelled):
                self.lengths.append(len(spelled))
            else:  # (never seen: out of step with the tokens; nothing is forced from here on, a rollback too)
                self.over_bytes = None
        return True

    def fork(self) -> "XGrammarMatcher":
        """A copy of the state to look ahead with (unique_keys: its masks, never its forced text: none is found)."""
        return XGrammarMatcher(self.m.fork(), self.tokenizer)

    def rollback(self, n: int) -> None:
        if n:
            self.m.rollback(n)
            if self.over_bytes is not None:
                self.over_bytes.rollback(sum(self.lengths[-n:]))
                del self.lengths[-n:]

    def forced_tokens(self) -> list[int]:
        """The forced text, tokenized, without its last token (which could merge with what follows); none
        where the grammar refuses its first token: a text tokenized alone can start otherwise than in context
        (a SentencePiece tokenizer writes '▁"name"' for '"name"')."""
        text = self._forced_text()
        if not text:
            return []
        ids = self.tokenizer(text, add_special_tokens=False).input_ids[:-1]
        return ids if ids and self._allows(ids[0]) else []

    def _forced_text(self) -> str:
        """The bytes the grammar forces from here, one at a time (one byte allowed, and no end), at most
        FORCED_BYTES, cut to whole characters (a forced prefix can end inside one: [😀-🙏])."""
        if self.over_bytes is None:
            return ""
        shadow, forced = self.over_bytes, bytearray()  # (accepted, then rolled back: a fork copied its whole history,
        while len(forced) < FORCED_BYTES and not shadow.is_completed():  # 7x the time of a mask fill; a review)
            shadow.fill_next_token_bitmask(self.byte_row)
            byte = _only_byte(self.byte_row[0].tolist())
            if byte is None or byte == BYTE_END or not shadow.accept_token(byte):
                break
            forced.append(byte)
        if forced:
            shadow.rollback(len(forced))
        for end in range(len(forced), max(len(forced) - 4, 0), -1):  # (a character is at most 4 bytes)
            try:
                return forced[:end].decode()
            except UnicodeDecodeError:
                continue
        return ""

    def _allows(self, token: int) -> bool:
        if not self.m.accept_token(token):
            return False
        self.m.rollback(1)
        return True

    def accepting(self) -> bool:
        return self.m.is_completed()

    def error(self) -> str | None:
        return None  # xgrammar has no error state: a refused token just returns False


def _unenforced(key: str, value, node: dict) -> bool:
    if key in ("unevaluatedProperties", "unevaluatedItems"):
        return value is not False  # false is xgrammar's strict mode; a schema here is not enforced
    if key == "multipleOf":  # (on an integer, xgrammar drops one that is no whole number: 0.5)
        return node.get("type") != "integer" or not (isinstance(value, (int, float)) and float(value).is_integer())
    if key == "$ref":  # annotations, and keys no draft names (x-..., a store of definitions), are no loss beside it
        return any(k in KEYWORD_NAMES and k not in NOT_CONSTRAINTS for k in node)
    return key in UNENFORCED or (key == "allOf" and len(value) > 1)


def _warned(log: list[str]) -> list[str]:
    """xgrammar's own warnings while converting ('... Warning: oneOf with overlapping ... branches
    ...; falling back to anyOf semantics') -> notes, once each."""
    notes = []
    for line in log:
        warning = line.split("Warning: ", 1)[1].strip() if "Warning: " in line else None
        if warning is None or warning.startswith(NAMED_ALREADY) or AN_EDGE_ANCHOR.search(warning):
            continue  # (said in _json_grammar's note, in its words; or nothing lost)
        notes.append(ONE_OF if warning.startswith("oneOf with overlapping") else f"xgrammar: {warning[:200]}")
    return sorted(set(notes))


NAMED_ALREADY = ("Support for allOf", "format combined with minLength/maxLength", "pattern combined with minLength/maxLength",
                 "multipleOf for type:integer", "multipleOf is not supported")  # xgrammar's warnings the not-enforced
# note names (each was said twice, once in xgrammar's own words; a review)
AN_EDGE_ANCHOR = re.compile(r"^Regex parsing warning at position \d+: '[$^]' should be at the (start|end) of the regex")
# (xgrammar drops a ^ or $ not first or last in the text; one that changes what matches, `a$b`, was refused
# before (python_regex.misplaced_anchor): this one stands where no text can come before or after it, a no-op)


def _inexact_formats(nodes: list[dict]) -> list[str]:
    """xgrammar drops minLength/maxLength on a string that also has a format or a pattern, a pattern beside a
    format, writes any string for a
    format not its own (WRITTEN_FORMATS), its ipv4 format lets
    leading zeros through (JSON Schema's ipv4 does not), its date and date-time read any day 01-31
    in any month (2025-04-31), and its time and date-time a 60th second at any minute (12:00:60)."""
    found = []
    for sub in nodes:
        if sub.get("format") in INEXACT_FORMATS or _unwritten_format(sub):
            found.append(f"format {sub['format']}")
        for beside in ("format", "pattern"):
            if beside in sub and {"minLength", "maxLength"} & set(sub):
                found.append(f"minLength/maxLength together with {beside}")
        if "format" in sub and "pattern" in sub:  # (it wrote "d12fd297-..." for a uuid that must start with 0)
            found.append("pattern together with format")
    return sorted(set(found))


def _unwritten_format(node: dict) -> bool:
    """A string's format xgrammar does not write (a format of another type is an annotation alone)."""
    fmt, kind = node.get("format"), node.get("type", "string")
    return isinstance(fmt, str) and fmt not in WRITTEN_FORMATS and (kind == "string" or isinstance(kind, list) and "string" in kind)


SOURCE_PLACE = re.compile(r"\[\d\d:\d\d:\d\d\] \S+?:\d+: ")  # "[21:02:57] /project/cpp/regex_converter.cc:83: "
CHECK_FAILED = re.compile(r"Check failed: \(.*?\) is false: ")


def _clean(exc: Exception) -> str:
    """xgrammar's errors hold '[time] file.cc:line: ' at their start and where they wrap another
    (a Lark grammar's regex), and a failed check's own code ('Check failed: (false) is false: '):
    the message without them, the same on every run."""
    return CHECK_FAILED.sub("", SOURCE_PLACE.sub("", str(exc).strip().splitlines()[0]))
