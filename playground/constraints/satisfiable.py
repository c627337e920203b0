"""Whether any JSON value satisfies a schema, asked of llguidance's schema compiler (no tokenizer,
about a millisecond): it finds contradictions such as minLength > maxLength, a pattern that no
string of the allowed length matches, or allOf parts of different types."""
import json
import re

import llguidance

from playground.constraints import worker
from playground.constraints.schema_keywords import drop_noops
from playground.errors import PlaygroundError

PREFIX = "Unsatisfiable schema:"
PLAIN = [  # llguidance's reason -> words for a person
    (r"Regex is empty.*", "no string can follow all of its string rules at once (a pattern or format and the "
                          "length limits contradict each other)"),
    (r"incompatible types", "its parts ask for values of different types (allOf, or a type against an enum)"),
    (r"anyOf is empty", "it allows no value (an empty enum, or no alternative left)"),
    (r"required property '(.*)' is unsatisfiable", r"the required property '\1' can have no value"),
]


def check_satisfiable(schema) -> None:
    """PlaygroundError when no value satisfies `schema`; other llguidance objections (keywords it
    cannot enforce) are left to the chosen backend at Run. It is a compile, so it runs bounded."""
    reason = worker.bounded(_unsatisfiable, schema)
    if reason is not None:
        raise PlaygroundError(f"no JSON value can satisfy this schema: {plain(reason)}")


def _unsatisfiable(schema) -> str | None:
    """llguidance's reason why no value satisfies the schema, or None."""
    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(drop_noops(schema)), overrides={"lenient": True})
        is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, None)
    except (ValueError, TypeError, RuntimeError):
        return None
    return next((m[len(PREFIX):].strip() for m in messages if m.startswith(PREFIX)), None) if is_error else None


def plain(reason: str) -> str:
    reason = reason.splitlines()[0]
    for pattern, words in PLAIN:
        if re.fullmatch(pattern, reason):
            return re.sub(pattern, words, reason)
    return reason[:200]
