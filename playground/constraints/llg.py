"""llguidance backend: compiles in about a millisecond. Keywords it cannot enforce while writing
(uniqueItems, not, unknown formats...) are compiled past and named in the constraint's notes; the
output is checked against them after the run (playground.constraints.validate)."""
import json
import re

import llguidance
import llguidance.hf
import torch

from playground.constraints.guide import DEAD_END
from playground.constraints.property_names import names_as_patterns
from playground.constraints.char_escapes import gbnf_bracket_escapes
from playground.constraints.python_regex import ANCHORED, octal_at, rewritten
from playground.constraints.satisfiable import made_false_at
from playground.constraints.schema_keywords import INT64, ONE_OF, keywords, literal_integers, unenforced_note
from playground.constraints.spec import BYTE_END, BYTE_TOKENS, ConstraintSpec, Unreadable, parse_schema
from playground.constraints.unwritable import without_unwritable
from playground.errors import PlaygroundError

# Compact JSON with a space after separators; whitespace is never free, so it cannot run away.
# A schema's own "x-guidance" options are dropped (their whitespace_pattern survived the overrides
# and let a schema write runs of newlines), then these are given as overrides.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": ", "lenient": True}
SILENT = {"dependentRequired"}  # compiled past by llguidance 1.9.1 without a warning (tried with an output that breaks it)
# formats whose masks in llguidance 1.9.1 let a value through that the check refuses (JSON Schema's checker
# takes neither): what each lets through
LEAP_FORMATS = {"date": "Feb 29 of any year (2025-02-29)", "time": "a 60th second at any minute (12:00:60)",
                "date-time": "Feb 29 of any year and a 60th second at any minute"}


def read_tokenizer(tokenizer, **options) -> llguidance.LLTokenizer:
    """llguidance's reading of a Hugging Face tokenizer (both backends' token bytes come from it); one it
    cannot read (no decoder in its tokenizer.json: a WordLevel vocabulary) is the user's error to see,
    not a bare ValueError (a fuzzer)."""
    try:
        return llguidance.hf.from_tokenizer(tokenizer, **options)
    except ValueError as exc:
        raise PlaygroundError(f"a constraint cannot be applied with this model's tokenizer: llguidance cannot read "
                              f"its tokens' bytes ({str(exc)[:200]})") from None


class LLGuidanceBackend:
    name = "llguidance"
    writes_surrogates = False  # it writes UTF-8 only

    def __init__(self, tokenizer, vocab: int, eos_ids: frozenset[int]):
        self.eos_ids = eos_ids  # the tokens that end the output (the tokenizer's own where empty)
        self.tokenizer = read_tokenizer(tokenizer, n_vocab=vocab, eos_token=sorted(eos_ids) or None)

    @classmethod
    def over_bytes(cls) -> "LLGuidanceBackend":
        """The backend over spec.BYTE_TOKENS, not a model's tokenizer."""
        backend = cls.__new__(cls)
        backend.eos_ids, backend.tokenizer = frozenset({BYTE_END}), llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Bytes()))
        return backend

    def compile(self, spec: ConstraintSpec) -> tuple[str, list[str]]:
        """-> (a checked llguidance grammar, notes on what it does not enforce); PlaygroundError
        names what is wrong."""
        grammar, messages = _checked(spec, self.tokenizer)
        return grammar, _spec_notes(spec, messages)

    @staticmethod
    def read(spec: ConstraintSpec) -> list[str]:
        """What compile refuses before any tokenizer is involved (the page checks it as the user types)
        -> the notes compile would give."""
        return _spec_notes(spec, _checked(spec, None)[1])

    def dump(self, grammar: str) -> str:
        return grammar

    def load(self, grammar: str) -> str:
        return grammar

    @staticmethod
    def size(grammar: str) -> int:
        """Bytes it holds, about."""
        return len(grammar)

    def matcher(self, grammar: str) -> "LLGuidanceMatcher":
        pristine = llguidance.LLMatcher(self.tokenizer, grammar, log_level=0)  # copied (microseconds), never used itself
        # (log_level 0: its errors are read from the matcher; a warning of its own went to the server's stderr raw)
        return LLGuidanceMatcher(pristine.deep_copy)


class _Bytes:
    """spec.BYTE_TOKENS as llguidance.TokenizerWrapper reads a tokenizer."""
    eos_token_id, bos_token_id, tokens, special_token_ids = BYTE_END, None, BYTE_TOKENS, [BYTE_END]

    def __call__(self, text: bytes) -> list[int]:
        return list(text)


def _spec_notes(spec: ConstraintSpec, messages: list[str]) -> list[str]:
    if spec.kind != "json":
        return _notes(messages, [])
    silent = [k for k, _ in keywords(spec.engine_schema) if k in SILENT] + without_unwritable(spec.engine_schema)[1]
    leaps = sorted({v for k, v in keywords(spec.engine_schema) if k == "format" and isinstance(v, str) and v in LEAP_FORMATS})
    return _notes(messages, silent) + [f"format {f}: the mask lets {LEAP_FORMATS[f]} through (checked after the run)"
                                       for f in leaps] + _rounded(spec.engine_schema)


EXACT = 2 ** 53  # the largest whole number a 64-bit float holds with every smaller one


def _rounded(schema) -> list[str]:
    """llguidance 1.9.1 reads a schema's numbers as 64-bit floats: a const or enum value past 2^53 is written
    rounded ({"const": 9007199254740993} wrote ...992, and every output failed the check; an audit)."""
    big = [n for n in literal_integers(schema) if abs(n) > EXACT]
    if not big:
        return []
    other = "writes it exactly" if INT64[0] <= big[0] <= INT64[1] else "writes it as a float too"
    return [f"llguidance reads numbers as 64-bit floats: {big[0]} (const or enum) is written rounded to "
            f"{int(float(big[0]))}, which the check refuses (xgrammar {other})"]


def _checked(spec: ConstraintSpec, tokenizer) -> tuple[str, list[str]]:
    """-> (the grammar, llguidance's warnings), checked against `tokenizer` (None: its text alone)."""
    grammar = _grammar(spec)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, tokenizer)
    if is_error:
        reason = _clean(messages[0])
        said = _regex_words(reason) if spec.kind == "regex" else reason
        raise Unreadable(f"llguidance cannot use this {spec.named}: {said}")
    return grammar, messages


REGEX_WORDS = (  # llguidance 1.9.1's reason for refusing a regex -> what it is in the pattern the user wrote
    (re.compile(r"lookarounds not supported yet; (Start|End) in regex"),
     f"^ or $ inside the pattern ({ANCHORED}): leave it out"),
    (re.compile(r"lookarounds not supported yet; (Start|End)C?R?LF in regex"),
     f"(?m) and its line anchors ({ANCHORED}): leave (?m) out"),
    (re.compile(r"lookarounds not supported yet; Word"), "\\b and \\B (word boundaries) are not supported: write the "
                                                         "characters on either side instead"),
    (re.compile(r"^unrecognized flag$"), "this (?...) group is not supported: a named back-reference (?P=name), an atomic "
                                         "group (?>...) or a flag other than i, m, s, u, x"),
    (re.compile(r"^unrecognized escape sequence$"), "an escape llguidance does not know, such as Python's \\Z (leave it "
                                                    "out: the whole output must match anyway)"),
)


def _regex_words(reason: str) -> str:
    """llguidance's reason for refusing a regex, in the pattern's words where it names its own parts
    ("lookarounds not supported yet; End" was a $ in the middle; "unrecognized flag" a (?P=name))."""
    return next((words for known, words in REGEX_WORDS if known.search(reason)), reason)


def _grammar(spec: ConstraintSpec) -> str:
    if spec.kind == "json":  # references to a node with no value made `false`, which they mean: llguidance
        # gave up on the whole schema where an optional place named one (satisfiable.py found them)
        return _json_grammar(made_false_at(spec.engine_schema, parse_schema(spec.text).no_value_refs))
    if spec.kind == "regex":
        return llguidance.LLMatcher.grammar_from_regex(llguidance_meaning(spec.text))
    if not spec.gbnf:
        return llguidance.LLMatcher.grammar_from_lark(spec.text)
    try:  # GBNF (llama.cpp's) converted to Lark, a text with a "start:" line kept as Lark: as vLLM and SGLang read it
        return llguidance.grammar_from("grammar", _unpadded_escapes(gbnf_bracket_escapes(spec.text, lambda code: f"\\x{code:02x}")))
    except ValueError as exc:  # GBNF the converter cannot read
        raise Unreadable(f"llguidance cannot use this grammar: {_clean(str(exc))}") from None


def llguidance_meaning(pattern: str) -> str:
    """A regex as the output's checker (Python's syntax) reads it, in words llguidance 1.9.1 reads the same
    way: an octal escape (\\101, \\0; a back-reference to it, refused) -> \\x{41}; a brace as Python
    reads it (python_regex.brace_at); a & or ~ in a class escaped (&& and ~~ there are its set operations:
    [&&] was "can never be satisfied"); \\< \\> and a class's \\b as Python reads them (_escape); İ and ı
    under (?i) in a negated class (_turkic_i)."""
    return rewritten(pattern, _escape, member=lambda c, first: "\\" + c if c in "&~" else c, class_operators="&~",
                     class_end=_turkic_i if IGNORING_CASE.search(pattern) else lambda written: "")


IGNORING_CASE = re.compile(r"\(\?[a-zA-Z]*i[a-zA-Z]*[:)]")  # (?i), (?mi), (?i:...)
TURKIC_I = "iIİı"  # one letter to Python's (?i) (İ lowers to i, ı is cased as i), two pairs to llguidance's


def _turkic_i(written: str) -> str:
    """Under (?i), a negated class that holds any of i, I, İ, ı refuses all four to Python, two to llguidance
    ((?i)[^a-z] wrote İ, which the check refused; a fuzzing review) -> the four added to it."""
    if not written.startswith("[^"):
        return ""
    try:
        held = re.compile("[" + written[2:])
    except re.error:
        return ""
    return TURKIC_I if any(held.fullmatch(letter) for letter in TURKIC_I) else ""


def _escape(pattern: str, i: int, class_start: int | None) -> tuple[str, int]:
    """The escape at pattern[i] in llguidance's words: an octal one in hex; \\< and \\> the characters (its word
    boundaries); \\b in a class a backspace (it refused it there)."""
    if octal := octal_at(pattern, i):
        return f"\\x{{{int(octal, 8):x}}}", i + 1 + len(octal)
    letter = pattern[i + 1]
    if letter in "<>":
        return letter, i + 2
    return ("\\x08" if letter == "b" and class_start is not None else pattern[i:i + 2]), i + 2


PADDED = re.compile(r"\\(?:u(0[0-9a-fA-F]{3})|U(0[0-9a-fA-F]{7}))|\\.", re.DOTALL)  # (an escaped backslash: itself)


def _unpadded_escapes(gbnf: str) -> str:
    """GBNF's \\u00e9 and \\U0001F600 as llguidance 1.9.1 reads them: its converter drops their leading zeros
    (\\u00e9 became Lark's "\\ue9", refused as a lexer error at a place in its own text). An ASCII one is
    written \\xHH (a quote or a bracket stays an escape), any other the character itself."""
    def written(match: re.Match) -> str:
        digits = match.group(1) or match.group(2)
        if digits is None or 0xD800 <= (code := int(digits, 16)) <= 0xDFFF or code > 0x10FFFF:
            return match.group(0)  # (not one, or no character: llguidance says so)
        return f"\\x{code:02x}" if code < 0x80 else chr(code)
    return PADDED.sub(written, gbnf)


def _json_grammar(schema) -> str:
    if isinstance(schema, dict):  # the engines' form is in draft 2020-12's words whatever it declared: its
        # $schema would only make llguidance look the draft up (it knows few URIs, e.g. not ".../schema#")
        schema = {key: value for key, value in schema.items() if key not in ("x-guidance", "$schema")}
    elif schema is True:
        schema = {}  # any JSON value (llguidance wants an object to apply its options to)
    schema = names_as_patterns(without_unwritable(schema)[0])
    return llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema), overrides=JSON_OPTIONS)


class LLGuidanceMatcher:
    """llguidance's matcher, never rolled back in place: in llguidance 1.9.1 a rollback past a state
    whose mask was computed can leave that mask's reading in effect. Seen on a real schema: masked
    inside `{"source": {"name": "`, rolled back to the key and fed `uri": "`, the mask allowed `",`
    (another key after `uri`, the last one) and the matcher then refused it, ending the run. A
    rollback instead copies a second matcher that only ever consumes kept tokens (`clean`: never
    masked, never rolled back, brought up to the kept tokens at each rollback). What the abandoned
    copy held goes with it: an error (a Lark rule nothing can complete, which llguidance keeps
    through a rollback), a rule llguidance cannot roll back at all (max_tokens= or stop=)."""

    def __init__(self, fresh):
        self.fresh = fresh  # () -> a new llguidance.LLMatcher of the same grammar
        self.m = fresh()  # the one masked and fed guesses
        self.consumed: list[int] = []
        self.clean, self.clean_at = fresh(), 0  # has consumed self.consumed[:clean_at], nothing else

    def fill_bitmask(self, row: torch.Tensor) -> None:
        """row: contiguous int32 [W] CPU tensor; bit j of word i allows token 32*i + j."""
        _fill(self.m, row)

    def fork(self) -> "Probe":
        """A copy of the state to look ahead with (unique_keys), never rolled back."""
        return Probe(self.m.deep_copy())

    def consume(self, token: int) -> bool:
        ok = self.m.consume_token(token)
        if ok:
            self.consumed.append(token)
        return ok

    def rollback(self, n: int) -> None:
        """Drop the last n tokens: a copy of the clean matcher fed the kept ones (a deep copy: 4 us
        at 10 tokens written, 0.3 ms at 2,000 on a 2-core EPYC)."""
        if not n:
            return
        if n > len(self.consumed):
            raise RuntimeError(f"rollback of {n} tokens where {len(self.consumed)} were consumed")
        del self.consumed[len(self.consumed) - n:]
        if self.clean_at > len(self.consumed):  # back past what the clean one holds: from the start
            self.clean, self.clean_at = self.fresh(), 0
        if not all(self.clean.consume_token(t) for t in self.consumed[self.clean_at:]):
            raise RuntimeError("llguidance refused tokens it had consumed before")
        self.clean_at = len(self.consumed)
        self.m = self.clean.deep_copy()

    def forced_tokens(self) -> list[int]:
        return self.m.compute_ff_tokens()

    def accepting(self) -> bool:
        return self.m.is_accepting()

    def error(self) -> str | None:
        if not self.m.is_error():
            return None
        message = _clean(self.m.get_error())
        return DEAD_END if message == "NoExtensionBias" else message  # llguidance's name for a dead end


class Probe:
    """A copy of a matcher's state: masked and fed, never rolled back (see LLGuidanceMatcher)."""

    def __init__(self, m):
        self.m = m

    def fill_bitmask(self, row: torch.Tensor) -> None:
        _fill(self.m, row)

    def consume(self, token: int) -> bool:
        return self.m.consume_token(token)

    def fork(self) -> "Probe":
        return Probe(self.m.deep_copy())


def _fill(m, row: torch.Tensor) -> None:
    m.unsafe_compute_mask_ptr(row.data_ptr(), row.numel() * 4)


def _notes(warnings: list[str], silent: list[str]) -> list[str]:
    """llguidance's warnings ('Unimplemented keys: ["not"]', 'Unknown format: foo', 'oneOf not fully
    supported...') -> notes for the user, the keywords it compiled past in one."""
    names, notes = list(silent), []
    for warning in warnings:
        if match := re.match(r"Unimplemented keys: (\[.*\])", warning):
            names += json.loads(match.group(1))
        elif match := re.match(r"Unknown format: (.*)", warning):
            names.append(f"format {match.group(1)}")
        elif warning.startswith("oneOf not fully supported"):
            notes.append(ONE_OF)
        else:
            notes.append(f"llguidance: {_clean(warning)[:200]}")
    return unenforced_note(names) + sorted(set(notes))


def _clean(message: str) -> str:
    """The line of an llguidance message that says what is wrong, without the grammar listing; a
    place in a schema without an $id as the pointer the user wrote (`json-schema:///#/definitions/a`
    is llguidance's own base)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    reason = next((line for line in lines if line.startswith("error:")), None)
    return (reason[len("error:"):].strip() if reason else lines[0]).replace("json-schema:///#", "#")
