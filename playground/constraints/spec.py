"""What the user asked for (a JSON Schema, a regex or a grammar, and a backend), checked before
any compilation so a mistake is reported next to its cause."""
import difflib
import functools
import json
from dataclasses import dataclass

from jsonschema.validators import validator_for

from playground import strict_json
from playground.constraints import drafts, worker
from playground.constraints.embedded_json import embedded_schemas
from playground.constraints.char_escapes import check_escapes
from playground.constraints.grammar_chars import check_grammar_characters
from playground.constraints.grammar_ends import check_rules_end
from playground.constraints.grammar_size import check_grammar_size
from playground.constraints.python_regex import ANCHORED, misplaced_anchor
from playground.constraints.ref_loops import check_no_ref_loop
from playground.constraints.ref_reading import check_refs_read_alike
from playground.constraints.ref_targets import in_user_words, with_targets_in_defs
from playground.constraints.safety import (ANY_TYPE, check_pattern, check_schema_safe, check_sizes_first, depth, referenced,
                                           unicode_class_hint)
from playground.constraints.satisfiable import check_satisfiable
from playground.constraints.schema_keywords import drop_noops
from playground.config import BACKENDS, one_constraint
from playground.errors import PlaygroundError, shown
from playground.limits import MAX_NEW_TOKENS, MAX_GRAMMAR_CHARS, MAX_REGEX_CHARS, MAX_SCHEMA_CHARS, MAX_SCHEMA_TEXT_CHARS, at_most

KINDS = ("json", "regex", "grammar")
SCHEMAS_KEPT = 16  # parsed schemas kept: a text of up to 1 MiB and its parse each
PARSE_SECONDS = 15  # the finiteness check's own bound (5 s) and the rest, with room on a loaded host
CHECKING = ("checking the schema", "fewer or simpler patterns, references and required names")
# A vocabulary of the 256 bytes and an end (BYTE_END): any text a tokenizer writes is bytes, so what
# no byte string satisfies no token string does; the check as typed compiles over it (no model needed).
BYTE_TOKENS = [bytes([b]) for b in range(256)] + [b"</s>"]
BYTE_END = 256


def check_backend(name: str) -> None:
    """A backend's name, one of BACKENDS (named escaped: a caller's text can hold a lone surrogate)."""
    if not isinstance(name, str):  # (None or a number from Python: a TypeError in the message below)
        raise PlaygroundError(f"the constraint backend must be a str, not {type(name).__name__}: {' or '.join(BACKENDS)}")
    if name not in BACKENDS:
        raise PlaygroundError(f"unknown constraint backend {ascii(name[:40])}: use {' or '.join(BACKENDS)}")


@dataclass(frozen=True, slots=True)
class ConstraintSpec:
    kind: str  # json | regex | grammar
    text: str  # the schema (JSON text), the pattern, or the grammar (Lark or GBNF)
    backend: str = BACKENDS[0]
    think_budget: int = 0  # > 0: a reasoning model thinks first (at most this many tokens), the constraint starts after </think>

    @property
    def named(self) -> str:
        """The kind as the page names it: JSON schema, regex or grammar."""
        return "JSON schema" if self.kind == "json" else self.kind

    def __post_init__(self):
        if self.kind not in KINDS:
            raise PlaygroundError(f"unknown constraint kind '{self.kind}': use one of {', '.join(KINDS)}")
        check_backend(self.backend)
        if not self.text.strip():
            raise PlaygroundError(f"the {self.kind} constraint is empty")
        limit = {"json": MAX_SCHEMA_TEXT_CHARS, "regex": MAX_REGEX_CHARS, "grammar": MAX_GRAMMAR_CHARS}[self.kind]
        name = "schema as typed" if self.kind == "json" else self.kind
        at_most(len(self.text), limit, f"the length of the {name} (characters)")
        try:  # (the backends failed with UnicodeEncodeError)
            self.text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise PlaygroundError(f"the {self.named} holds a lone surrogate (\\u{ord(self.text[exc.start]):04x}) at "
                                  f"character {exc.start + 1}, which is not a character") from None
        if self.kind != "json":  # (a schema's patterns: its metaschema's check refuses these)
            check_escapes(self.text, self.kind)
        if self.kind == "grammar":
            check_grammar_characters(self.text, self.gbnf)
            check_grammar_size(self.text, self.gbnf)
            check_rules_end(self.text, self.gbnf)
            _check_embedded_schemas(self.text)
        if not isinstance(self.think_budget, int) or self.think_budget < 0:
            raise PlaygroundError(f"the thinking budget must be a whole number of tokens >= 0, got {shown(self.think_budget)}")
        at_most(self.think_budget, MAX_NEW_TOKENS, "the thinking budget (tokens)")

    @property
    def gbnf(self) -> bool:
        """A grammar in GBNF (llama.cpp's: every rule defined with ::=), not Lark: vLLM's test
        (grammar_is_likely_lark), which both backends here follow."""
        return self.kind == "grammar" and "::=" in self.text

    @property
    def schema(self) -> dict | bool:
        """The schema as written: outputs are validated against it, by its declared draft's rules."""
        return parse_schema(self.text).schema

    @property
    def engine_schema(self) -> dict | bool:
        """The same schema in draft 2020-12 words, without no-op keywords: what the engines compile."""
        return parse_schema(self.text).engine


@dataclass(frozen=True, slots=True)
class Schema:
    schema: dict | bool  # as written
    draft: type  # the jsonschema validator class of its declared draft
    engine: dict | bool  # in draft 2020-12 words (playground.constraints.drafts)
    no_value_refs: tuple[str, ...] = ()  # places of references to a node no value satisfies (satisfiable.py)
    moved: tuple[tuple[str, str], ...] = ()  # (pointer in the engines' form, pointer as written): ref_targets.py
    twice: tuple[str, ...] = ()  # notes on keys an object gives twice (the last one read, as JSON readers do)

    def as_written(self, message: str) -> str:
        """A message about the engines' form, naming the places the user wrote."""
        return in_user_words(message, dict(self.moved))


class Unreadable(PlaygroundError):
    """A backend cannot read this schema, regex or grammar (playground.constraints.reading says
    whether the other one can)."""


def _check_embedded_schemas(grammar: str) -> None:
    """Each `%json {...}` schema in a grammar checked as a schema given alone is (see embedded_json)."""
    for number, text in enumerate(embedded_schemas(grammar), 1):
        try:
            parse_schema(text)
        except PlaygroundError as exc:
            raise PlaygroundError(f"the grammar's %json schema {number}: {exc}") from None


@functools.lru_cache(maxsize=SCHEMAS_KEPT)
def parse_schema(text: str) -> Schema:
    """Strict JSON text -> a schema that passes its declared draft's meta-schema, the safety checks
    (bounded, local references only, a finite instance) and that some value satisfies. Sizes count
    the schema minified: pretty-printing costs the engines nothing. In a bounded worker
    (playground.constraints.worker): the meta-schema check compiles every pattern with Python's re
    before any of the schema's sizes is checked, which nothing stops and which holds the interpreter
    lock (30 KB of case-insensitive classes held the server 58 s)."""
    at_most(len(text), MAX_SCHEMA_TEXT_CHARS, "the length of the schema as typed (characters)")
    return worker.bounded(_parsed_schema, text, seconds=PARSE_SECONDS, task=CHECKING)


def _twice(text: str) -> tuple[str, ...]:
    """A note per key an object of the schema gives twice (2 of JSONSchemaBench's 9,557 do: refused, they
    would be turned away; read silently, the first one was dropped unsaid; a review)."""
    return tuple(f"the schema gives {ascii(key[:40])} twice in one object: the last one is read, as JSON readers "
                 "read it" for key in strict_json.keys_said_twice(text)[:5])


def _parsed_schema(text: str) -> Schema:
    try:
        schema = strict_json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlaygroundError(f"the schema is not valid JSON: {strict_json.where_wrong(exc)}") from None
    except ValueError as exc:  # NaN/Infinity (not JSON), a number past a float's range (strict_json)
        raise PlaygroundError(f"the schema is not valid JSON: {exc}") from None
    except RecursionError:
        raise PlaygroundError("the schema is nested too deeply") from None
    if not isinstance(schema, (dict, bool)):
        raise PlaygroundError("the schema must be a JSON object")
    depth(schema)  # before the meta-schema check, which recurses
    minified = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    at_most(len(minified), MAX_SCHEMA_CHARS, "the length of the schema, minified (characters)")
    try:
        minified.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PlaygroundError(f"the schema holds a lone surrogate escape (\\u{ord(minified[exc.start]):04x}), "
                              "which is not a character") from None
    check_sizes_first(schema)
    draft = drafts.declared(schema)
    try:
        error = _meta_schema_error(draft, schema)
        where, error = ("", error) if error is not None else _referenced_error(draft, schema)
    except RecursionError:  # the meta-schema's "format": "regex" compiles each pattern with Python's re
        raise PlaygroundError("the schema could not be checked: a pattern in it nests its groups too deeply") from None
    if error is not None:
        raise PlaygroundError(f"the schema is not a valid JSON Schema ({drafts.NAMES[draft]}) at "
                              f"{_place(error, where)}: {error.message}{_type_hint(error)}{_regex_hint(error)}")
    check_refs_read_alike(schema, draft)
    engine, moved = with_targets_in_defs(schema)  # (before the draft's words are rewritten: those nodes' too)
    try:
        if moved:  # (their references were out of the check's reach; a review)
            check_refs_read_alike(engine, draft)
        engine = drop_noops(drafts.to_2020_12(engine, draft))
        return Schema(schema, draft, engine, _checked_engine_form(engine, draft), tuple(moved.items()), _twice(text))
    except PlaygroundError as exc:
        raise PlaygroundError(in_user_words(str(exc), moved)) from None


def _checked_engine_form(engine, draft: type) -> tuple[str, ...]:
    """The engines' form checked (valid, bounded, no reference loop, some value) -> the places of references
    to a node no value satisfies."""
    if draft is not drafts.LATEST:
        _check_engine_form(engine)
    check_schema_safe(engine)
    check_no_ref_loop(engine)
    return check_satisfiable(engine)


def _meta_schema_error(draft: type, schema):
    """Of the schema's errors against its draft's meta-schema, the one nearest the top, then first by
    path as text; None where it has none. (jsonschema's check_schema raises the first its walk meets,
    and the walk goes through a set of names: the place named changed with the process's hash seed.)"""
    checker = validator_for(draft.META_SCHEMA, default=draft)
    errors = checker(draft.META_SCHEMA, format_checker=checker.FORMAT_CHECKER).iter_errors(schema)
    error = min(errors, key=lambda error: (len(error.path), [str(p) for p in error.path]), default=None)
    return error and _deeper(error)


def _deeper(error):
    """An error of anyOf/oneOf ("{...} is not valid under any of the given schemas", the whole
    subschema printed) -> the deepest error of its branches, while that names a place further in
    (items of draft 4 is a schema or an array of them: `{"id": {...}}` -> "at items/id: ... is not
    of type 'string'"). Ties go to the larger path as text, then message: the same in every process."""
    while error.context:
        deeper = max(error.context, key=lambda e: (len(e.absolute_path), [str(p) for p in e.absolute_path], e.message))
        if len(deeper.absolute_path) <= len(error.absolute_path):
            break
        error = deeper
    return error


def _check_engine_form(engine) -> None:
    """The schema in the engines' words (draft 2020-12) must be one too: an earlier draft's
    meta-schema never reads `$defs` (draft 7) or `dependentSchemas`, which the engines and the
    checks here do read ({"$schema": draft-07, "$defs": {"a": {"type": 7}}} failed there with a
    TypeError)."""
    if (error := _meta_schema_error(drafts.LATEST, engine)) is not None:
        raise PlaygroundError(f"the schema is not valid where the constraint engines read it (as draft 2020-12) "
                              f"at {_place(error)}: {error.message}")


def _place(error, ref: str = "") -> str:
    """Where a meta-schema error lies: its path, after the $ref that named its node if any."""
    return "/".join([ref] * bool(ref) + [str(p) for p in error.absolute_path]) or "the top level"


def _type_hint(error) -> str:
    """Words for a misspelt type, which the meta-schema's message does not name ("'objct' is not valid
    under any of the given schemas"): "; 'objct' is no type: did you mean 'object'? ..."."""
    path = list(error.absolute_schema_path)  # the meta-schema's: [..., "properties", "type", ...] where the value
    # is the type keyword's (the instance's path read a property named "type" as one: a review)
    last = max((i for i, step in enumerate(path) if step == "properties"), default=None)
    if last is None or path[last + 1:last + 2] != ["type"]:
        return ""
    named = error.instance if isinstance(error.instance, list) else [error.instance]
    wrong = next((name for name in named if isinstance(name, str) and name not in ANY_TYPE), None)
    if wrong is None:
        return ""
    close = difflib.get_close_matches(wrong, ANY_TYPE, n=1)
    listed = "" if "'integer'" in error.message else f" (the types: {', '.join(sorted(ANY_TYPE))})"
    return f"; {wrong[:40]!r} is no type" + (f": did you mean {close[0]!r}?" if close else "") + listed


def _regex_hint(error) -> str:
    """Words for a pattern the meta-schema's format check refused ("'^\\p{Han}+$' is not a 'regex'")."""
    refused = error.validator == "format" and error.validator_value == "regex" and isinstance(error.instance, str)
    return unicode_class_hint(error.instance) if refused else ""


def _referenced_error(draft: type, schema) -> tuple[str, object]:
    """A $ref may name a node the meta-schema never looks at (`#/port`, a plain key used as a store
    of definitions; `$defs` under draft 7): each such node is a schema too, checked here.
    ("$ref", first error) or ("", None). Before, `{"port": {"required": 5}}` reached
    the finiteness check and failed there with a TypeError, or not, by the process's hash seed."""
    checked: set[int] = set()  # (each target once; one inside another is checked again: `#/x/y` sits
    for ref, target in referenced(schema):  # under a plain key of `#/x`, which the meta-schema never reads)
        if target is schema or id(target) in checked:
            continue
        checked.add(id(target))
        if (error := _meta_schema_error(draft, target)) is not None:
            return ref, error
    return "", None


@functools.lru_cache(maxsize=256)  # patterns checked fine (at most 2,000 characters each): one fork each, not one a run
def check_regex(pattern: str) -> None:
    """The output is later checked with Python's syntax (by the `regex` module), so the pattern
    must mean the same there. In a bounded worker, as a schema's parse: Python's re took 1.9 s to
    compile 2,000 characters of case-insensitive full-range classes, the interpreter lock held."""
    worker.bounded(_check_whole_regex, pattern, seconds=PARSE_SECONDS, task=("checking the regex", "a shorter or simpler regex"))


def _check_whole_regex(pattern: str) -> None:
    """check_pattern, and no anchor where it matches nothing (`a$b`: refused by llguidance, written as "ab" by
    xgrammar, which the check then refused)."""
    check_pattern(pattern)
    if anchor := misplaced_anchor(pattern):
        side = "before" if anchor in ("^", "\\A") else "after"
        literal = f", or write \\{anchor} for the character" if anchor in "^$" else ""
        raise PlaygroundError(f"the regex has {anchor} inside it with text possible {side} it, so it matches nothing "
                              f"there ({ANCHORED}): leave it out{literal}")


def from_user(schema: str = "", regex: str = "", grammar: str = "", backend: str = BACKENDS[0], think_budget: int = 0):
    """At most one of the three may be given; None when none is. think_budget > 0: the constraint
    starts after a reasoning model's </think> (playground.constraints.reasoning). A schema is JSON
    text, or the dict (or bool) a Python caller holds."""
    schema = "" if schema is None else _schema_text(schema)  # None: not given
    regex, grammar = ("" if text is None else text for text in (regex, grammar))
    for name, value in (("regex", regex), ("grammar", grammar)):
        if not isinstance(value, str):
            raise PlaygroundError(f"the {name} must be a str, not {type(value).__name__}")
    if (given := one_constraint(schema, regex, grammar)) is None:
        return None
    spec = ConstraintSpec(*given, backend, think_budget)
    if spec.kind == "json":
        parse_schema(spec.text)
    elif spec.kind == "regex":
        check_regex(spec.text)
    return spec


def _schema_text(schema) -> str:
    """A schema as JSON text: a dict or bool written as JSON (a dict raised AttributeError: 'dict'
    object has no attribute 'strip')."""
    if isinstance(schema, str):
        return schema
    if not isinstance(schema, (dict, bool)):
        raise PlaygroundError(f"the schema must be JSON text or a dict, not {type(schema).__name__}")
    try:
        return json.dumps(schema, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as exc:  # NaN, a value JSON has no word for, a loop
        raise PlaygroundError(f"the schema cannot be written as JSON: {str(exc)[:120]}") from None
