"""xgrammar backend (vLLM's and SGLang's default). It compiles silently past keywords it does not
enforce, so those are named here in the constraint's notes (the output is checked against them
after the run); its bounded strings can emit raw control characters (xgrammar issue 800), which the
grammar text is patched to exclude."""
import json

import torch
import xgrammar as xgr

from playground.constraints import worker
from playground.constraints.schema_keywords import ONE_OF, subschemas, unenforced_note
from playground.constraints.spec import ConstraintSpec
from playground.errors import PlaygroundError

# Keywords xgrammar 0.2.8 compiles past without enforcing them (each tried with an output that
# breaks it); it does enforce propertyNames, multipleOf on integers and unevaluated*: false.
UNENFORCED = {"uniqueItems", "not", "if", "then", "else", "contains", "minContains", "maxContains",
              "dependentRequired", "dependentSchemas"}
INEXACT_FORMATS = {"ipv4"}
SEPARATORS = (", ", ": ")
# xgrammar's class for characters of a length-bounded string, and the JSON-legal one to use instead
BOUNDED_CHAR, JSON_CHAR = r'[^\"\\\r\n]', r'[^\0-\x1f\"\\]'


class XGrammarBackend:
    name = "xgrammar"

    def __init__(self, tokenizer, vocab: int, eos_ids: frozenset[int]):
        self.info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab, stop_token_ids=sorted(eos_ids) or None)
        self.tokenizer = tokenizer

    def compile(self, spec: ConstraintSpec) -> tuple[xgr.CompiledGrammar, list[str]]:
        """-> (the compiled grammar, notes on what it does not enforce)."""
        compiler = xgr.GrammarCompiler(self.info, max_threads=2, cache_enabled=False)  # one compile, in a worker
        log: list[str] = []
        notes: list[str] = []
        try:
            with worker.stderr_lines(log):
                if spec.kind == "json":
                    grammar, notes = _json_grammar(spec.engine_schema)
                    compiled = compiler.compile_grammar(grammar)
                elif spec.kind == "regex":
                    compiled = compiler.compile_regex(python_meaning(spec.text))
                else:
                    compiled = compiler.compile_grammar(spec.text)
        except RuntimeError as exc:
            raise PlaygroundError(f"xgrammar cannot use this {spec.kind}: {_clean(exc)}") from None
        return compiled, notes + _warned(log)  # the log is complete only once the block is left

    def dump(self, compiled: xgr.CompiledGrammar) -> str:
        return compiled.serialize_json()

    def load(self, serialized: str) -> xgr.CompiledGrammar:
        return xgr.CompiledGrammar.deserialize_json(serialized, self.info)

    def matcher(self, compiled: xgr.CompiledGrammar) -> "XGrammarMatcher":
        return XGrammarMatcher(xgr.GrammarMatcher(compiled), self.tokenizer)


def python_meaning(pattern: str) -> str:
    """A regex as the output's checker (Python's syntax) reads it, in words xgrammar 0.2.8 reads the
    same way: its '.' also matches a newline (Python's does not) -> [^\\n]; its \\xHH reads on past two
    digits ('a\\x41b' became 'a' + U+041B) -> \\u00HH. A NUL it cannot write at all (\\u0000 is read as
    nothing), so a pattern naming one is refused."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            escape = pattern[i:i + 4] if pattern[i + 1] == "x" else pattern[i:i + 2]
            octal_nul = escape == "\\0" and not pattern[i + 2:i + 3].isdigit()
            if escape == "\\x00" or octal_nul or pattern.startswith(("\\u0000", "\\U00000000"), i):
                raise PlaygroundError("xgrammar cannot write a NUL character (\\x00) in a regex: use llguidance")
            if pattern[i + 1] == "x" and len(escape) == 4 and all(h in "0123456789abcdefABCDEF" for h in escape[2:]):
                out.append("\\u00" + escape[2:])
                i += 4
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern.startswith("[^]", i) or pattern.startswith("[]", i):  # a ']' first in a class is itself
                out.append(pattern[i:i + (3 if pattern[i + 1] == "^" else 2)])
                i += 3 if pattern[i + 1] == "^" else 2
                continue
        elif c == ".":
            out.append("[^\\n]")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _json_grammar(schema) -> tuple[str, list[str]]:
    names = sorted({k for node in subschemas(schema) for k, v in node.items() if _unenforced(k, v, node)})
    try:
        grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS)
    except RuntimeError as exc:  # strict mode (no properties or items beyond those named) left too few
        if "not allowed" not in str(exc) and "aren't allowed" not in str(exc):
            raise
        grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS,
                                               strict_mode=False)
    return str(grammar).replace(BOUNDED_CHAR, JSON_CHAR), unenforced_note(names + _inexact_formats(schema))


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


def _unenforced(key: str, value, node: dict) -> bool:
    if key in ("unevaluatedProperties", "unevaluatedItems"):
        return value is not False  # false is xgrammar's strict mode; a schema here is not enforced
    if key == "multipleOf":
        return node.get("type") != "integer"
    return key in UNENFORCED or (key == "allOf" and len(value) > 1)


def _warned(log: list[str]) -> list[str]:
    """xgrammar's own warnings while converting ('... Warning: oneOf with overlapping ... branches
    ...; falling back to anyOf semantics') -> notes, once each."""
    notes = []
    for line in log:
        warning = line.split("Warning: ", 1)[1].strip() if "Warning: " in line else None
        if warning is None or warning.startswith("Support for allOf"):  # allOf: named by _json_grammar already
            continue
        notes.append(ONE_OF if warning.startswith("oneOf with overlapping") else f"xgrammar: {warning[:200]}")
    return sorted(set(notes))


def _inexact_formats(schema) -> list[str]:
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
