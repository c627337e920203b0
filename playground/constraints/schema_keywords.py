"""Walk a JSON Schema's keywords (not property names) to find ones a backend cannot enforce."""
import urllib.parse

import jsonschema
import jsonschema_specifications

SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
             "unevaluatedProperties", "unevaluatedItems", "additionalItems")
SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
KEYWORD_NAMES = frozenset().union(*(jsonschema_specifications.REGISTRY.contents(uri).get("properties", {})
                                    for uri in jsonschema_specifications.REGISTRY if "draft-03" not in uri))
# (every keyword the meta-schemas of drafts 4 to 2020-12 name: any other key of a schema means nothing to it;
# draft-03 is refused, and its extends, disallow and divisibleBy mean nothing to the later ones)



def patterns(schema, pointer: str = ""):
    """Yield (JSON pointer, regex) for every `pattern` and `patternProperties` name in the schema,
    in the order the document writes them (a property called "pattern" is a name, not a regex)."""
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("pattern"), str):
        yield f"{pointer}/pattern", schema["pattern"]
    for key, value in schema.items():
        here = f"{pointer}/{escaped(key)}"
        if key == "patternProperties" and isinstance(value, dict):
            yield from ((f"{here}/{escaped(name)}", name) for name in value)
        for at, sub in keyword_children(key, value, here):
            yield from patterns(sub, at)


def with_pointers(schema, pointer: str = ""):
    """Yield (JSON pointer, node) for the schema and every schema nested in it, as subschemas()
    walks them."""
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for key, value in schema.items():
        for at, sub in keyword_children(key, value, f"{pointer}/{escaped(key)}"):
            yield from with_pointers(sub, at)


def keyword_children(key: str, value, here: str):
    """(pointer, value) of each schema one keyword holds (an items list too), `here` its pointer."""
    if isinstance(value, list) and (key in SUBSCHEMA or key in SUBSCHEMA_LISTS):
        yield from ((f"{here}/{i}", sub) for i, sub in enumerate(value))
    elif key in SUBSCHEMA:
        yield here, value
    elif key in SUBSCHEMA_MAPS and isinstance(value, dict):
        yield from ((f"{here}/{escaped(name)}", sub) for name, sub in value.items())
    elif key == "dependencies" and isinstance(value, dict):  # (a list there names properties)
        yield from ((f"{here}/{escaped(name)}", sub) for name, sub in value.items() if isinstance(sub, (dict, bool)))


def escaped(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def unescaped(part: str) -> str:
    """A JSON pointer's part as the name it stands for (~1 is "/", ~0 is "~")."""
    return part.replace("~1", "/").replace("~0", "~")


def pointer_names(ref: str) -> tuple[str, ...]:
    """A local reference's pointer ('#/$defs/a%20b/c~1d') -> the names it walks (('$defs', 'a b', 'c/d'))."""
    return tuple(unescaped(part) for part in urllib.parse.unquote(ref[1:]).split("/")[1:])


def fresh_name(held: dict, name: str) -> str:
    """`name`, or name_2, name_3...: one `held` has not."""
    new, i = name, 1
    while new in held:
        i += 1
        new = f"{name}_{i}"
    return new


def subschemas(schema):
    """Yield the schema and every schema nested in it (through keywords, not property names)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for child in children(schema):
        yield from subschemas(child)


def children(schema: dict):
    """The values of a schema's keywords that are schemas themselves (some may be booleans or no
    schema), with the drafts' older forms: an items list, and dependencies' schemas (drafts 4-7)."""
    for key, value in schema.items():
        yield from (sub for _, sub in keyword_children(key, value, ""))


def keywords(schema):
    """Yield (keyword, value) for every keyword of the schema and its subschemas."""
    for sub in subschemas(schema):
        yield from sub.items()


INT64 = (-2 ** 63, 2 ** 63 - 1)  # the integers xgrammar 0.2.8 writes as written (past them: as floats)


def literal_integers(schema) -> list[int]:
    """The integers a schema's const and enum values hold, at any depth, in order."""
    return sorted({n for key, value in keywords(schema) if key in ("const", "enum") for n in _whole_numbers(value)})


def _whole_numbers(value) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [n for item in inner for n in _whole_numbers(item)]


def drop_noops(schema):
    """Remove keywords that constrain nothing but that some backends refuse (uniqueItems: false)."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "uniqueItems" and value is False:
            continue
        if key in SUBSCHEMA:
            value = drop_noops(value)
        elif key in SUBSCHEMA_LISTS and isinstance(value, list):
            value = [drop_noops(sub) for sub in value]
        elif key in SUBSCHEMA_MAPS and isinstance(value, dict):
            value = {name: drop_noops(sub) for name, sub in value.items()}
        out[key] = value
    return out


ONE_OF = ("oneOf is enforced as anyOf (the backend cannot prove its branches exclusive); an output that matches "
          "two is caught by the check")


# Formats the check after the run reads: jsonschema's checkers with the packages installed here (uri, iri, hostname,
# duration and uri-template need packages it makes optional; an unknown format is an annotation to it).
CHECKED_FORMATS = frozenset(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)


def unenforced_note(names: list[str]) -> list[str]:
    """The notes naming the keywords a backend compiles past (none: no note), a format no check here reads
    apart: its outputs were said "valid" after a run that checked nothing of it (format uri-reference,
    iri: garbage text; an audit of real-world schemas)."""
    unchecked = {name for name in names if name.startswith("format ") and name[len("format "):] not in CHECKED_FORMATS}
    checked = set(names) - unchecked
    return ([f"not enforced while writing (checked after the run): {', '.join(sorted(checked))}"] if checked else []) + (
        [f"not enforced while writing, nor checked after the run (no checker for it here): {', '.join(sorted(unchecked))}"]
        if unchecked else [])
