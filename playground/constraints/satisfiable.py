"""Whether any JSON value satisfies a schema, asked of llguidance's schema compiler (no tokenizer,
about a millisecond): it finds contradictions such as minLength > maxLength, a pattern that no
string of the allowed length matches, or allOf parts of different types."""
import json
import re
import urllib.parse

import llguidance

from playground.constraints import worker
from playground.constraints.safety import at_pointer
from playground.constraints.schema_keywords import drop_noops, unescaped, with_pointers
from playground.constraints.unwritable import without_unwritable
from playground.errors import PlaygroundError

PREFIX = "Unsatisfiable schema:"
PROCESSING = re.compile(r"while processing \S*?#(/\S*)")  # the node a $ref named, as llguidance says it
NODES_MADE_FALSE = 32
PLAIN = [  # llguidance's reason -> words for a person
    (r"Regex is empty.*", "no string can follow all of its string rules at once (those it has of a pattern, a "
                          "format and length limits contradict each other)"),  # (it named length limits a
    # schema had none of: a pattern against a format; a review)
    (r"incompatible types", "its parts ask for values of different types (allOf, or a type against an enum)"),
    (r"anyOf is empty", "it allows no value (an empty enum, or no alternative left)"),
    (r"required property '(.*)' is unsatisfiable", r"the required property '\1' can have no value"),
    (r"minProperties \((\d+)\) is greater than number of properties \(\d+\)",  # (it counts the required ones)
     r"minProperties (\1) asks for more properties than the object allows"),
]


def check_satisfiable(schema) -> tuple[str, ...]:
    """PlaygroundError when no value satisfies `schema`; other llguidance objections (keywords it
    cannot enforce) are left to the chosen backend at Run. It is a compile, so it runs bounded.
    -> the places of the references that name a node with no value (no_value_refs_false)."""
    reason, made_false = worker.bounded(_unsatisfiable, schema)
    if reason is not None:
        raise PlaygroundError(f"no JSON value can satisfy this schema: {plain(reason)}")
    return made_false


def has_no_value(schema) -> bool:
    """Whether llguidance finds no value satisfying the schema (unbounded here: the caller's worker bounds it)."""
    return _unsatisfiable(schema)[0] is not None


def no_value_refs(schema) -> tuple[str, ...]:
    """The places of the references to a node with no value, in a satisfiable schema (unbounded here)."""
    return _unsatisfiable(schema)[1]


def _unsatisfiable(schema) -> tuple[str | None, tuple[str, ...]]:
    """(llguidance's reason why no value satisfies the schema or None, the places of the references
    to a node with no value, made false to ask it). llguidance compiles every node a $ref names, and
    gives up on the whole schema where one has no value, even one an optional property names
    (`{"$defs": {"g": <no value>}, "properties": {"a": {"$ref": "#/$defs/g"}}}`, which `{}`
    satisfies; JSONSchemaBench o91126's git_url, a pattern no URI matches): such a reference is
    `false` in meaning, so it is made `false` and the schema asked again, up to NODES_MADE_FALSE
    times; a reference at the root, one not found, or one left past the bound leaves the reason
    standing (a chain of 40 required references to a node with no value is refused, as before)."""
    schema, made_false = without_unwritable(drop_noops(schema))[0], []  # (what it cannot write it may call
    # unsatisfiable when it is not: an object's property counts, unwritable.py)
    for _ in range(NODES_MADE_FALSE):
        reason = _reason(schema)
        where = reason and PROCESSING.search(reason)
        referring = [pointer for pointer, node in with_pointers(schema) if where and isinstance(node.get("$ref"), str)
                     and urllib.parse.unquote(node["$ref"]) == "#" + urllib.parse.unquote(where.group(1))]
        if not referring or "" in referring:
            return reason, tuple(made_false)
        schema = made_false_at(schema, referring)
        made_false += referring
    return _reason(schema), tuple(made_false)


def _reason(schema) -> str | None:
    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema), overrides={"lenient": True})
        is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, None)
    except (ValueError, TypeError, RuntimeError):
        return None
    return next((m[len(PREFIX):].strip() for m in messages if m.startswith(PREFIX)), None) if is_error else None


def made_false_at(schema, pointers) -> object:
    """A copy of the schema with the node at each JSON pointer below its root (as with_pointers
    writes them) made `false`; the schema itself where there are none."""
    if not pointers:
        return schema
    schema = json.loads(json.dumps(schema))
    for pointer in pointers:
        parent, last = pointer.rsplit("/", 1)
        holder, last = at_pointer(schema, parent), unescaped(last)
        holder[int(last) if isinstance(holder, list) else last] = False
    return schema


def plain(reason: str) -> str:
    reason = reason.splitlines()[0]
    for pattern, words in PLAIN:
        if re.fullmatch(pattern, reason):
            return re.sub(pattern, words, reason)
    return reason[:200]
