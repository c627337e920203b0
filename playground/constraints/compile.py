"""Compile a ConstraintSpec for one tokenizer, with caches: one backend object per tokenizer (the
expensive part: llguidance ~1 s, xgrammar's tokenizer info) and the last COMPILED_KEPT compiled
grammars. Each compile runs in a bounded worker (playground.constraints.worker): a schema that
makes a compiler grow without bound is refused, and the server lives. xgrammar's compile is then
done again in the server (its compiled form is too large to hand back): work known to fit."""
import codecs
import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass

from playground import strict_json
from playground.constraints import worker
from playground.constraints.cut import truncation_hint
from playground.constraints.guide import Guide
from playground.constraints.llg import read_tokenizer
from playground.constraints.metered import MeteredMatcher, TooCostly
from playground.constraints.reasoning import Thinking, ThinkingMatcher, check_marker, thinking_tables
from playground.constraints.reading import (BACKEND_CLASSES, satisfiable_or_blamed, with_lazy_backend,
                                            with_other_backend)
from playground.constraints.spec import ConstraintSpec, Unreadable, parse_schema
from playground.constraints.validate import validate_json, validate_regex
from playground.constraints.unique_keys import NameTables, UniqueKeys, name_tables, names_can_repeat, names_can_run_out
from playground.constraints.whole_chars import NoSurrogates, SurrogateTables, surrogate_tables
from playground.errors import PlaygroundError

COMPILED_KEPT = 32  # compiled constraints kept, at most
COMPILED_KEPT_BYTES = 256 * 2**20  # and at most this much of them, as each backend counts its own
_backends: dict = {}  # (backend, id(tokenizer), vocab, eos) -> (tokenizer, backend object)
_thinking: dict = {}  # (id(tokenizer), vocab, eos) -> (tokenizer, Thinking)
_bytes: dict = {}  # (id(tokenizer), vocab) -> (tokenizer, (each id's bytes, the ids holding a quote))
_surrogates: dict = {}  # (id(tokenizer), vocab) -> (tokenizer, SurrogateTables)
_compiled: OrderedDict = OrderedDict()  # (backend key, spec) -> (compiled grammar, notes, size), newest last
TOKENIZERS_KEPT = 4  # tokenizers the caches above keep tables and backends for (a pair shares one): the model LRU
# makes a new tokenizer object each time it loads a model again, and each one's tables (151k token bytes, both
# backends' own) stayed here for good: tens of MB of a Space's memory at every switch of presets past its memory
_tokenizers: OrderedDict = OrderedDict()  # id(tokenizer) -> tokenizer, the newest used last
_lock = threading.Lock()  # guards the caches above (runs may compile from several threads); never held while compiling


@dataclass(slots=True)
class Constraint:
    spec: ConstraintSpec
    backend: object
    compiled: object
    vocab: int
    eos_ids: frozenset[int]
    notes: tuple[str, ...] = ()  # what the backend does not enforce while writing (checked after the run)
    thinking: Thinking | None = None  # a reasoning model thinks first (spec.think_budget > 0)
    name_tables: NameTables | None = None  # a schema's whose names can repeat: the tokens as UniqueKeys reads them
    surrogates: SurrogateTables | None = None  # a backend writing surrogates' (xgrammar): for NoSurrogates
    names_run_out: bool = False  # some object's free names are few: UniqueKeys looks ahead (names_can_run_out)
    token_bytes: tuple[bytes, ...] | None = None  # each id's bytes, where the backend may write bytes that are not UTF-8

    def guide(self, max_rows: int) -> Guide:
        matcher = self.backend.matcher(self.compiled)
        if self.surrogates is not None:
            matcher = NoSurrogates(matcher, self.surrogates)
        if self.name_tables is not None:
            matcher = UniqueKeys(matcher, self.name_tables, self.names_run_out)
        if self.thinking is not None:
            matcher = ThinkingMatcher(matcher, self.thinking, self.spec.think_budget)
        return Guide(MeteredMatcher(matcher), self.vocab, self.eos_ids, max_rows)

    def answer_start(self, token_ids: list[int]) -> int | None:
        """Where the answer starts in committed ids: 0 without thinking, None while still thinking."""
        return 0 if self.thinking is None else self.thinking.answer_start(token_ids)

    def reasoning_tokens(self, token_ids: list[int]) -> int | None:
        """How many of the committed ids are thinking (all while it still thinks); None: no thinking."""
        if self.thinking is None:
            return None
        start = self.answer_start(token_ids)
        return len(token_ids) if start is None else start

    def validate(self, text: str, token_ids: list[int], complete: bool) -> tuple[bool, str | None]:
        """complete: the structure was finished (EOS or an accepting state) before the budget ran out."""
        if not complete:
            return False, "truncated: max new tokens ran out before the structure was complete" + (
                truncation_hint(text, self.spec.engine_schema, self.notes) if self.spec.kind == "json" else
                GREEDY_LEXEMES if self.spec.kind == "grammar" and self.backend.name == "llguidance" else "")
        if (fault := not_utf8(self.token_bytes, [t for t in token_ids if t not in self.eos_ids])) is not None:
            return False, fault
        if self.spec.kind == "json":
            return validate_json(text, self.spec.schema)
        if self.spec.kind == "regex":
            return validate_regex(text, self.spec.text)
        return self._matches_grammar(token_ids)

    def _matches_grammar(self, token_ids: list[int]) -> tuple[bool, str | None]:
        """The output replayed on a new matcher, bounded as a run's (an ambiguous grammar's tokens cost more
        and more to consume): without its end tokens, else with them, where the grammar names one (`start: "a"
        <[0]>`, 0 the model's end: "a" and the end were called no match; a fuzzing review)."""
        body = [t for t in token_ids if t not in self.eos_ids]
        try:
            for replay in [body] + ([token_ids] if body != token_ids else []):
                matcher = MeteredMatcher(self.backend.matcher(self.compiled))
                if all(matcher.consume(t) for t in replay) and matcher.accepting():
                    return True, None
        except TooCostly as exc:
            return False, f"could not be checked: {exc}"
        return False, "the output does not match the grammar"


def not_utf8(token_bytes: tuple[bytes, ...] | None, token_ids: list[int]) -> str | None:
    """Why an output's bytes are no UTF-8 text, None where they are (or no bytes are at hand; a character
    the budget cut is the text's business, detok.whole_characters): xgrammar wrote F4 90 80 80 for
    `root ::= "\\U00110000"` (char_escapes refuses that one before)."""
    if token_bytes is None:
        return None
    data = b"".join(token_bytes[t] if t < len(token_bytes) else b"" for t in token_ids)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError as exc:
        return (f"the output's bytes are not UTF-8 text (byte {exc.start + 1}: {data[exc.start:exc.start + 4].hex(' ')}): "
                "the constraint let the model write bytes no character has")
    return None


GREEDY_LEXEMES = ("; or it cannot end under llguidance, which reads a rule of characters alone (a ::= [a-z]+) as one "
                  "lexeme matched greedily: where the grammar wants more of those characters after it (root ::= a "
                  "[a-z]), no output completes it; xgrammar reads it as written")


def compile_constraint(spec: ConstraintSpec, tokenizer, vocab: int, eos_ids: frozenset[int]) -> Constraint:
    """eos_ids: the pair's; where it names none, the tokenizer's EOS ends the structure (the run
    stops at it too: Constraint.eos_ids), as each backend would pick it on its own."""
    eos_ids = eos_ids or stop_ids(tokenizer)
    thinking = _thinking_tables(tokenizer, vocab, eos_ids) if spec.think_budget else None
    grammar = dataclasses.replace(spec, think_budget=0)  # compiled once whatever the budget
    backend, compiled, notes = _compiled_grammar(grammar, tokenizer, vocab, eos_ids)
    notes = (parse_schema(spec.text).twice if spec.kind == "json" else ()) + tuple(notes)
    schema = strict_json.loads(spec.text) if spec.kind == "json" else None  # checked when compiled
    names = _token_bytes(tokenizer, vocab) if spec.kind == "json" and names_can_repeat(schema) else None
    surrogates = _surrogate_tables(tokenizer, vocab) if backend.writes_surrogates else None
    return Constraint(spec, backend, compiled, vocab, eos_ids, notes, thinking, names, surrogates,
                      names is not None and names_can_run_out(schema),
                      _token_bytes(tokenizer, vocab).token_bytes if backend.writes_surrogates else None)


def stop_ids(tokenizer) -> frozenset[int]:
    if tokenizer.eos_token_id is None:
        raise PlaygroundError("the model names no end-of-sequence token (neither its generation config nor its "
                              "tokenizer): a constraint needs one to end the output")
    return frozenset([tokenizer.eos_token_id])


def _kept_for(tokenizer) -> None:
    """(Under _lock, as an entry for it is made or used) the tokenizer as the newest kept; the oldest past
    TOKENIZERS_KEPT forgotten with all that was built for it (a run holding its constraint keeps its own)."""
    _tokenizers[id(tokenizer)] = tokenizer
    _tokenizers.move_to_end(id(tokenizer))
    while len(_tokenizers) > TOKENIZERS_KEPT:
        gone = _tokenizers.popitem(last=False)[0]
        for cache, its in ((_backends, lambda key: key[1]), (_thinking, lambda key: key[0]), (_bytes, lambda key: key[0]),
                           (_surrogates, lambda key: key[0]), (_compiled, lambda key: key[0][1])):
            for key in [key for key in cache if its(key) == gone]:
                del cache[key]


def _thinking_tables(tokenizer, vocab: int, eos_ids: frozenset[int]) -> Thinking:
    """The thinking masks for a tokenizer (built once: 0.29 s at SmolLM2's 49k vocabulary)."""
    check_marker(tokenizer)
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    return _built_once(_thinking, (id(tokenizer), vocab, eos_ids), tokenizer,
                       lambda: thinking_tables(_token_bytes(tokenizer, vocab).token_bytes, encode, vocab, eos_ids))


def _token_bytes(tokenizer, vocab: int) -> NameTables:
    """Each id's bytes (.token_bytes) and UniqueKeys' tables, built once per tokenizer (0.3 s at
    SmolLM2's 49k vocabulary)."""
    def build() -> tuple:
        ll = read_tokenizer(tokenizer, n_vocab=max(vocab, len(tokenizer)))  # a model may have fewer rows
        token_bytes = tuple(ll.decode_bytes([i]) for i in range(min(vocab, ll.vocab_size)))
        return name_tables(token_bytes)
    return _built_once(_bytes, (id(tokenizer), vocab), tokenizer, build)


def _surrogate_tables(tokenizer, vocab: int) -> SurrogateTables:
    """NoSurrogates' tables, built once per tokenizer."""
    return _built_once(_surrogates, (id(tokenizer), vocab), tokenizer,
                       lambda: surrogate_tables(_token_bytes(tokenizer, vocab).token_bytes, vocab))


def _built_once(cache: dict, key: tuple, tokenizer, build):
    """cache[key]: what build() made for this tokenizer (outside the lock, on a miss), kept beside the
    tokenizer (its id stays its own while kept); the tokenizer marked the newest (_kept_for)."""
    with _lock:
        found = cache.get(key)
    if found is None:
        found = (tokenizer, build())
    with _lock:
        found = cache.setdefault(key, found)
        _kept_for(tokenizer)
    return found[1]


def _compiled_grammar(spec: ConstraintSpec, tokenizer, vocab: int, eos_ids: frozenset[int]):
    """-> (the backend object, the compiled grammar, notes), from the caches when they hold it."""
    key = (spec.backend, id(tokenizer), vocab, eos_ids)
    with _lock:
        _kept_for(tokenizer)
        if key not in _backends:
            _backends[key] = (tokenizer, BACKEND_CLASSES[spec.backend](tokenizer, vocab, eos_ids))
        backend, found = _backends[key][1], _compiled.get((key, spec))
        if found:
            _compiled.move_to_end((key, spec))
    if not found:
        if spec.kind == "json":
            parse_schema(spec.text)  # checked here: the parse is cached in this process, not in the worker's
        try:
            payload, notes = worker.bounded(_compile_checked, backend, spec, vocab)
        except worker.OverCeiling:
            raise
        except (worker.OverMemory, worker.TooSlow) as exc:
            raise with_lazy_backend(exc, spec) from None
        compiled = backend.load(payload)
        found = (compiled, tuple(notes), backend.size(compiled))
        with _lock:
            _compiled[(key, spec)] = found
            while len(_compiled) > COMPILED_KEPT or (len(_compiled) > 1 and _kept_bytes() > COMPILED_KEPT_BYTES):
                _compiled.popitem(last=False)
    return backend, found[0], found[1]


def _kept_bytes() -> int:
    return sum(size for _, _, size in _compiled.values())


def _compile_checked(backend, spec: ConstraintSpec, vocab: int):
    """In the worker: compile, and check that some first token is allowed -> (what backend.load
    takes, notes)."""
    try:
        compiled, notes = backend.compile(spec)
    except Unreadable as exc:
        raise with_other_backend(exc, spec) from None
    return backend.dump(compiled), list(notes) + satisfiable_or_blamed(backend, compiled, spec, vocab)


