"""llguidance backend: compiles in about a millisecond and refuses schema keywords it cannot enforce."""
import json

import llguidance
import llguidance.hf
import torch

from playground.constraints.schema_keywords import drop_noops
from playground.constraints.spec import ConstraintSpec
from playground.errors import PlaygroundError

# Compact JSON with a space after separators; whitespace is never free, so it cannot run away.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


class LLGuidanceBackend:
    name = "llguidance"

    def __init__(self, tokenizer, vocab: int, eos_ids: frozenset[int]):
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab, eos_token=sorted(eos_ids) or None)

    def compile(self, spec: ConstraintSpec) -> str:
        """-> a checked llguidance grammar; PlaygroundError names what is wrong."""
        grammar = self._grammar(spec)
        is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, self.tokenizer)
        if is_error:
            raise PlaygroundError(f"llguidance cannot use this {spec.kind}: {_clean(messages[0])}")
        return grammar

    def _grammar(self, spec: ConstraintSpec) -> str:
        if spec.kind == "json":
            return llguidance.LLMatcher.grammar_from_json_schema(json.dumps(drop_noops(spec.schema)), defaults=JSON_OPTIONS)
        if spec.kind == "regex":
            return llguidance.LLMatcher.grammar_from_regex(spec.text)
        return llguidance.LLMatcher.grammar_from_lark(spec.text)

    def matcher(self, grammar: str) -> "LLGuidanceMatcher":
        return LLGuidanceMatcher(llguidance.LLMatcher(self.tokenizer, grammar))


class LLGuidanceMatcher:
    def __init__(self, matcher: llguidance.LLMatcher):
        self.m = matcher

    def fill_bitmask(self, row: torch.Tensor) -> None:
        """row: contiguous int32 [W] CPU tensor; bit j of word i allows token 32*i + j."""
        self.m.unsafe_compute_mask_ptr(row.data_ptr(), row.numel() * 4)

    def consume(self, token: int) -> bool:
        return self.m.consume_token(token)

    def rollback(self, n: int) -> None:
        if n:
            self.m.rollback(n)

    def forced_tokens(self) -> list[int]:
        return self.m.compute_ff_tokens()

    def accepting(self) -> bool:
        return self.m.is_accepting()

    def error(self) -> str | None:
        return _clean(self.m.get_error()) if self.m.is_error() else None


def _clean(message: str) -> str:
    """The line of an llguidance message that says what is wrong, without the grammar listing."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    reason = next((line for line in lines if line.startswith("error:")), None)
    return reason[len("error:"):].strip() if reason else lines[0]
