"""A constraint read before any tokenizer is involved: the backend's own reading of a schema, regex or grammar
(the page's check as typed, an export, a run before it compiles), bounded in a worker and kept by its text's
digest; and each refusal said with its cause: the pattern at fault, whether the other backend reads or writes
it, a backend's limit rather than a contradiction. playground.constraints.compile compiles what reads."""
import dataclasses
import hashlib
import itertools
import json
import threading
from collections import OrderedDict

from playground import strict_json
from playground.constraints import worker
from playground.constraints.grammar_size import TOKEN_REFERENCE
from playground.constraints.guide import Guide, NoWayOn, allows_besides
from playground.constraints.llg import LLGuidanceBackend
from playground.constraints.schema_keywords import patterns
from playground.constraints.spec import BYTE_TOKENS, ConstraintSpec, Unreadable, parse_schema
from playground.constraints.xgr import XGrammarBackend
from playground.errors import PlaygroundError

BACKEND_CLASSES = {"llguidance": LLGuidanceBackend, "xgrammar": XGrammarBackend}
READING = ("checking this constraint as typed", "Run checks it in full")
MAX_PATTERNS_READ = 256  # a refused schema's patterns read one by one to name the one at fault
READ_SECONDS = 3.0  # the check as typed (on every edit); Run's compile has COMPILE_SECONDS


READ_KEPT = 128  # readings kept (by the text's digest): the page's check and its Export tab each read a setting
_read: OrderedDict = OrderedDict()  # (kind, backend, think budget, sha256 of the text) -> notes, last used last
_read_lock = threading.Lock()


def read_constraint(spec: ConstraintSpec) -> list[str]:
    """Refuse what compiling would refuse before any tokenizer is involved: the backend's own reading
    of the schema, regex or grammar (the page's check as the user types), in a worker bounded to
    READ_SECONDS (worker.TooSlow past it) -> the notes on what the backend reads but does not enforce.
    A reading that passed is kept: the same text again forks no worker (a refusal is read again)."""
    key = (spec.kind, spec.backend, spec.think_budget, hashlib.sha256(spec.text.encode()).hexdigest())
    with _read_lock:
        if (notes := _read.get(key)) is not None:
            _read.move_to_end(key)
            return list(notes)
    twice = parse_schema(spec.text).twice if spec.kind == "json" else ()
    notes = list(twice) + worker.bounded(_read_checked, spec, seconds=READ_SECONDS, task=READING)
    with _read_lock:
        _read[key] = tuple(notes)
        while len(_read) > READ_KEPT:
            _read.popitem(last=False)
    return list(notes)


def _read_checked(spec: ConstraintSpec) -> list[str]:
    """In the worker: the backend's reading (_reading), a refusal saying whether the other backend
    reads it."""
    try:
        return _reading(spec)
    except Unreadable as exc:
        raise with_other_backend(exc, spec) from None


def _reading(spec: ConstraintSpec) -> list[str]:
    """The backend's reading -> its notes; then a constraint that no byte string satisfies (or the empty
    one alone) is refused as Run would refuse it: a JSON schema, whose contradictions were found as it was
    parsed, as that backend's limit (the page said "looks fine" of one llguidance writes nothing for, until
    Run); a grammar naming tokens is Run's to check (the bytes have none of a model's)."""
    notes = BACKEND_CLASSES[spec.backend].read(spec)
    if spec.kind in ("regex", "json") or (spec.kind == "grammar" and not TOKEN_REFERENCE.search(spec.text)):
        backend = BACKEND_CLASSES[spec.backend].over_bytes()
        try:
            compiled = backend.compile(spec)[0]
        except Unreadable:  # read, yet not over bytes: Run decides
            return notes
        return notes + satisfiable_or_blamed(backend, compiled, spec, len(BYTE_TOKENS))  # (about 10 ms for the tests'
        # and presets' schemas)
    return notes


def with_other_backend(exc: Unreadable, spec: ConstraintSpec) -> PlaygroundError:
    """A backend's refusal, and whether the other backend reads the same text (each reads Lark and GBNF,
    not the same Lark: llguidance's extensions, xgrammar's subset); a schema's places as the user wrote them."""
    said = _other_backend_said(exc, spec)
    return PlaygroundError(parse_schema(spec.text).as_written(str(said))) if spec.kind == "json" else said


def _other_backend_said(exc: Unreadable, spec: ConstraintSpec) -> PlaygroundError:
    exc = PlaygroundError(f"{exc}{_pattern_at_fault(spec, str(exc))}")
    other = next(name for name in BACKEND_CLASSES if name != spec.backend)
    try:
        notes = _reading(dataclasses.replace(spec, backend=other))
    except Unsatisfiable as why:  # it reads it, and no output satisfies it there either
        return PlaygroundError(f"{exc} (the {other} backend reads it, but {why})")
    except PlaygroundError:
        return PlaygroundError(f"{exc} (the {other} backend cannot read it either)")
    if _gaps(notes):  # e.g. xgrammar drops a look-ahead it cannot follow: not the same constraint
        return PlaygroundError(f"{exc} (the {other} backend reads it without enforcing all of it: {'; '.join(notes)})")
    noted = f"; note: {'; '.join(notes)}" if notes else ""
    return PlaygroundError(f"{exc} (the {other} backend reads it: pick it as the constraint backend{noted})")


def _gaps(notes: list[str]) -> list[str]:
    """The notes on what a backend does not enforce (that it accepts an empty output is no such thing: the
    refusal said "reads it without enforcing all of it" of it alone; a fuzzing review)."""
    return [note for note in notes if EMPTY_OUTPUT not in note]


def with_lazy_backend(exc: PlaygroundError, spec: ConstraintSpec) -> PlaygroundError:
    """A compile stopped by its bounds, and whether llguidance reads the same text: it builds each
    mask as the output is written, where xgrammar builds its token tables first (JSONSchemaBench, 600
    schemas: 1 over 20 s; 26 over 2 GiB or 20 s while the worker handed back the serialized grammar)."""
    if spec.backend == "llguidance":
        return exc
    try:  # its reading alone (read_constraint would also try xgrammar's where llguidance refused)
        notes = worker.bounded(_reading, dataclasses.replace(spec, backend="llguidance"), seconds=READ_SECONDS, task=READING)
    except PlaygroundError:
        return exc
    enforced = (" without enforcing all of it" if _gaps(notes) else "") + (f" ({'; '.join(notes)})" if notes else "")
    return type(exc)(f"{exc} (the llguidance backend reads it{enforced}, and builds each mask as the output is "
                     "written, not all before: pick it as the constraint backend)")


def satisfiable_or_blamed(backend, compiled, spec: ConstraintSpec, vocab: int) -> list[str]:
    """_check_satisfiable, whose refusal of a JSON schema is said as its backend's limit where the other
    backend writes one (the one rule of whose limit it is: the page's check as typed and Run's compile)."""
    try:
        return _check_satisfiable(backend, compiled, spec, vocab)
    except Unsatisfiable:
        if spec.kind != "json":
            raise
        raise _what_the_other_backend_writes(spec) from None


def _what_the_other_backend_writes(spec: ConstraintSpec) -> PlaygroundError:
    """A JSON schema in which check_satisfiable found no contradiction, and whose backend allows no first
    token: that backend's limit, said as one, and whether the other backend writes it (llguidance 1.9.1
    writes no number for multipleOf 0.1 between 0.25 and 0.35, where 0.3 is one: "can never be satisfied"
    was said of it; a review)."""
    other = next(name for name in BACKEND_CLASSES if name != spec.backend)
    try:
        backend = BACKEND_CLASSES[other].over_bytes()
        compiled, notes = backend.compile(dataclasses.replace(spec, backend=other))
        _check_satisfiable(backend, compiled, spec, len(BYTE_TOKENS))
    except PlaygroundError:
        return Unsatisfiable(f"this {spec.named} can never be satisfied by any output (neither backend writes one)")
    its_notes = f" (its note: {'; '.join(notes)})" if notes else ""
    return PlaygroundError(f"the {spec.backend} backend writes no output for this {spec.named}, though no contradiction "
                           f"was found in it. The {other} backend writes it: pick it as the constraint backend{its_notes}")


def _pattern_at_fault(spec: ConstraintSpec, refusal: str) -> str:
    """' (in the pattern at /properties/zip/pattern)' when a regex of the schema is what the backend
    cannot read: the first (of at most MAX_PATTERNS_READ) that the backend refuses alone in the same
    words, else ''. (Any refusal of it was taken: a schema refused for its circular references was
    sent to a look-ahead elsewhere, JSONSchemaBench web-types.)"""
    if spec.kind != "json":
        return ""
    for pointer, pattern in itertools.islice(patterns(strict_json.loads(spec.text)), MAX_PATTERNS_READ):
        alone = ConstraintSpec("json", json.dumps({"type": "string", "pattern": pattern}), spec.backend)
        try:  # the pattern read as the backend reads a schema's (not as a regex constraint)
            BACKEND_CLASSES[spec.backend].read(alone)
        except PlaygroundError as exc:
            if str(exc) == refusal:
                return f" (in the pattern at {pointer})"
    return ""


EMPTY_OUTPUT = "accepts an empty output (an empty alternative, or only optional parts)"


def _check_satisfiable(backend, compiled, spec: ConstraintSpec, vocab: int) -> list[str]:
    """A constraint that allows no first token can never be met, or is met by the empty output alone
    (a run would write nothing and call it valid: `x{0}`) -> a note where the empty output is one of its
    outputs ('start: "yes" |', 'a*'): a run that ends at once is valid, and read as broken without it."""
    guide = Guide(backend.matcher(compiled), vocab, frozenset(), 1)
    try:
        writes = allows_besides(guide.next_mask(), backend.eos_ids)  # a first token that is not an end
    except NoWayOn:
        writes = False
    if not writes and not guide.accepting():
        raise Unsatisfiable(f"this {spec.named} can never be satisfied by any output")
    if not writes:
        raise Unsatisfiable(f"this {spec.named} allows only the empty output: the model would write nothing")
    if not guide.accepting():
        return []
    return [f"this {spec.named} {EMPTY_OUTPUT}: the model may end at once"]


class Unsatisfiable(PlaygroundError):
    """A constraint read whole that no output satisfies but the empty one, or none."""
