"""Compile a ConstraintSpec for one tokenizer, with caches: one backend object per tokenizer (the
expensive part: llguidance ~1 s, xgrammar's tokenizer info) and one compiled grammar per text."""
from dataclasses import dataclass

from playground.constraints.guide import Guide
from playground.constraints.llg import LLGuidanceBackend
from playground.constraints.spec import ConstraintSpec
from playground.constraints.validate import validate_json, validate_regex
from playground.constraints.xgr import XGrammarBackend
from playground.errors import PlaygroundError

BACKENDS = {"llguidance": LLGuidanceBackend, "xgrammar": XGrammarBackend}
_backends: dict = {}  # (backend, id(tokenizer), vocab, eos) -> (tokenizer, backend object)
_compiled: dict = {}  # (backend key, spec) -> compiled grammar


@dataclass(slots=True)
class Constraint:
    spec: ConstraintSpec
    backend: object
    compiled: object
    vocab: int
    eos_ids: frozenset[int]

    def guide(self, max_rows: int) -> Guide:
        return Guide(self.backend.matcher(self.compiled), self.vocab, self.eos_ids, max_rows)

    def validate(self, text: str, token_ids: list[int], complete: bool) -> tuple[bool, str | None]:
        """complete: the structure was finished (EOS or an accepting state) before the budget ran out."""
        if not complete:
            return False, "truncated: max new tokens ran out before the structure was complete"
        if self.spec.kind == "json":
            return validate_json(text, self.spec.schema)
        if self.spec.kind == "regex":
            return validate_regex(text, self.spec.text)
        return self._matches_grammar(token_ids)

    def _matches_grammar(self, token_ids: list[int]) -> tuple[bool, str | None]:
        matcher = self.backend.matcher(self.compiled)
        body = [t for t in token_ids if t not in self.eos_ids]
        if all(matcher.consume(t) for t in body) and matcher.accepting():
            return True, None
        return False, "the output does not match the grammar"


def compile_constraint(spec: ConstraintSpec, tokenizer, vocab: int, eos_ids: frozenset[int]) -> Constraint:
    key = (spec.backend, id(tokenizer), vocab, eos_ids)
    if key not in _backends:
        _backends[key] = (tokenizer, BACKENDS[spec.backend](tokenizer, vocab, eos_ids))
    backend = _backends[key][1]
    if (key, spec) not in _compiled:
        compiled = backend.compile(spec)
        _check_satisfiable(backend, compiled, spec, vocab)
        _compiled[(key, spec)] = compiled
    return Constraint(spec, backend, _compiled[(key, spec)], vocab, eos_ids)


def _check_satisfiable(backend, compiled, spec: ConstraintSpec, vocab: int) -> None:
    """A constraint that allows no first token and is not already complete can never be met."""
    guide = Guide(backend.matcher(compiled), vocab, frozenset(), 1)
    if not guide.next_mask().any() and not guide.accepting():
        raise PlaygroundError(f"this {spec.kind} constraint can never be satisfied by any output")
