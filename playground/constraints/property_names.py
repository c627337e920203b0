"""propertyNames for llguidance, which compiles past it (its names were free: asked for counts of red,
green and blue, SmolLM2 wrote {"type": 0, "data": 3}, each output refused by the check after the run).
Where an object's names are limited by an enum, a const or a pattern alone and its other names are
free (additionalProperties not false, no patternProperties of its own), the same object is written
as patternProperties: {"<the names as a pattern>": <additionalProperties>} with additionalProperties
false; JSON Schema reads a patternProperties name unanchored, as it reads `pattern`. An object whose
`properties` name one the limit refuses is left as it is (the note and the check stand)."""
import copy
import re

from playground.constraints.schema_keywords import subschemas
from playground.constraints.validate import CheckTimeout, search

LIMITS = {"enum", "const", "pattern"}
KEPT = {"type", "title", "description", "$comment"}  # beside a limit, still the same names
META = re.compile(r"([\\.+*?()|\[\]{}^$])")  # a regex's own characters, escaped in a name


def names_as_patterns(schema):
    """The schema with each object's propertyNames it can say so rewritten (a copy; the schema as is
    where there is none)."""
    if not isinstance(schema, dict) or not any("propertyNames" in node for node in subschemas(schema)):
        return schema
    schema = copy.deepcopy(schema)
    for node in subschemas(schema):
        if (pattern := _names_pattern(node)) is not None:
            free = node.get("additionalProperties", True)
            node["patternProperties"] = {pattern: {} if free is True else free}
            node["additionalProperties"] = False
            del node["propertyNames"]
    return schema


def _names_pattern(node: dict) -> str | None:
    """The pattern of the names node's propertyNames allows, where the rewrite means the same."""
    limit = node.get("propertyNames")
    if not isinstance(limit, dict) or len(LIMITS & set(limit)) != 1 or not set(limit) <= LIMITS | KEPT:
        return None
    if limit.get("type", "string") != "string" or "patternProperties" in node or "unevaluatedProperties" in node:
        return None
    if node.get("additionalProperties", True) is False:  # (names from properties alone: the limit adds none)
        return None
    if "pattern" in limit:
        pattern = limit["pattern"]
        if not isinstance(pattern, str):
            return None
        fits = lambda name: search(pattern, name)  # noqa: E731  (bounded in time)
    else:
        names = limit["enum"] if "enum" in limit else [limit["const"]]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            return None
        pattern = "^(?:" + "|".join(META.sub(r"\\\1", n) for n in names) + ")$"
        fits = set(names).__contains__
    declared = node.get("properties", {})
    try:
        return pattern if isinstance(declared, dict) and all(fits(name) for name in declared) else None
    except CheckTimeout:  # (a pattern too slow to read names with: left as it is, noted)
        return None
