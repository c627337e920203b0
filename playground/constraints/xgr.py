"""xgrammar backend (vLLM's and SGLang's default). It compiles silently past keywords it does not
enforce, so those are refused here by name; its bounded strings can emit raw control characters
(xgrammar issue 800), which the grammar text is patched to exclude."""
import json

import torch
import xgrammar as xgr

from playground.constraints.schema_keywords import drop_noops, keywords, subschemas
from playground.constraints.spec import ConstraintSpec
from playground.errors import PlaygroundError

UNENFORCED = {"uniqueItems", "not", "if", "then", "else", "contains", "minContains", "maxContains",
              "propertyNames", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
              "unevaluatedItems", "multipleOf"}
INEXACT_FORMATS = {"ipv4"}
SEPARATORS = (", ", ": ")
# xgrammar's class for characters of a length-bounded string, and the JSON-legal one to use instead
BOUNDED_CHAR, JSON_CHAR = r'[^\"\\\r\n]', r'[^\0-\x1f\"\\]'


class XGrammarBackend:
    name = "xgrammar"

    def __init__(self, tokenizer, vocab: int, eos_ids: frozenset[int]):
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab, stop_token_ids=sorted(eos_ids) or None)
        self.compiler = xgr.GrammarCompiler(info, max_threads=2)
        self.tokenizer = tokenizer

    def compile(self, spec: ConstraintSpec) -> xgr.CompiledGrammar:
        try:
            if spec.kind == "json":
                return self.compiler.compile_grammar(self._json_grammar(spec.schema))
            if spec.kind == "regex":
                return self.compiler.compile_regex(spec.text)
            return self.compiler.compile_grammar(spec.text)
        except RuntimeError as exc:
            raise PlaygroundError(f"xgrammar cannot use this {spec.kind}: {_clean(exc)}") from None

    def _json_grammar(self, schema) -> str:
        schema = drop_noops(schema)
        refused = sorted({k for k, v in keywords(schema) if k in UNENFORCED or (k == "allOf" and len(v) > 1)})
        refused += _bounded_formats(schema)
        if refused:
            raise PlaygroundError(f"xgrammar cannot enforce {', '.join(refused)} (it would ignore them): "
                                  "use the llguidance backend or drop them")
        grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS)
        return str(grammar).replace(BOUNDED_CHAR, JSON_CHAR)

    def matcher(self, compiled: xgr.CompiledGrammar) -> "XGrammarMatcher":
        return XGrammarMatcher(xgr.GrammarMatcher(compiled), self.tokenizer)


class XGrammarMatcher:
    def __init__(self, matcher: xgr.GrammarMatcher, tokenizer):
        self.m, self.tokenizer = matcher, tokenizer

    def fill_bitmask(self, row: torch.Tensor) -> None:
        self.m.fill_next_token_bitmask(row[None])

    def consume(self, token: int) -> bool:
        return self.m.accept_token(token)

    def rollback(self, n: int) -> None:
        if n:
            self.m.rollback(n)

    def forced_tokens(self) -> list[int]:
        """The jump-forward string, tokenized, without its last token (which could merge with what
        follows)."""
        text = self.m.find_jump_forward_string()
        if not text:
            return []
        return self.tokenizer(text, add_special_tokens=False).input_ids[:-1]

    def accepting(self) -> bool:
        return self.m.is_completed()

    def error(self) -> str | None:
        return None  # xgrammar has no error state: a refused token just returns False


def _bounded_formats(schema) -> list[str]:
    """xgrammar drops minLength/maxLength on a string that also has a format, and its ipv4 format
    lets leading zeros through (JSON Schema's ipv4 does not)."""
    found = []
    for sub in subschemas(schema):
        if sub.get("format") in INEXACT_FORMATS:
            found.append(f"format {sub['format']}")
        if "format" in sub and {"minLength", "maxLength"} & set(sub):
            found.append("minLength/maxLength together with format")
    return sorted(set(found))


def _clean(exc: Exception) -> str:
    """xgrammar errors start with '[time] file.cc:line: '; keep the message."""
    line = str(exc).strip().splitlines()[0]
    return line.split(": ", 1)[1] if line.startswith("[") and ": " in line else line
