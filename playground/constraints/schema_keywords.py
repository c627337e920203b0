"""Walk a JSON Schema's keywords (not property names) to find ones a backend cannot enforce."""


SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
             "unevaluatedProperties", "unevaluatedItems", "additionalItems")
SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")



def patterns(schema):
    """Yield (JSON pointer, regex) for every `pattern` and `patternProperties` name in the schema,
    as with_pointers() walks it (a property called "pattern" is a name, not a regex)."""
    for pointer, node in with_pointers(schema):
        if isinstance(node.get("pattern"), str):
            yield f"{pointer}/pattern", node["pattern"]
        if isinstance(node.get("patternProperties"), dict):
            yield from ((f"{pointer}/patternProperties/{_escaped(name)}", name) for name in node["patternProperties"])


def with_pointers(schema, pointer: str = ""):
    """Yield (JSON pointer, node) for the schema and every schema nested in it, as subschemas()
    walks them, and the items of an items list (drafts before 2020-12)."""
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for key, value in schema.items():
        here = f"{pointer}/{_escaped(key)}"
        if isinstance(value, list) and (key in SUBSCHEMA or key in SUBSCHEMA_LISTS):
            for i, sub in enumerate(value):
                yield from with_pointers(sub, f"{here}/{i}")
        elif key in SUBSCHEMA:
            yield from with_pointers(value, here)
        elif key in SUBSCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from with_pointers(sub, f"{here}/{_escaped(name)}")


def _escaped(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")

def subschemas(schema):
    """Yield the schema and every schema nested in it (through keywords, not property names)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for child in children(schema):
        yield from subschemas(child)


def children(schema: dict):
    """The values of a schema's keywords that are schemas themselves (some may be booleans or no schema)."""
    for key, value in schema.items():
        if key in SUBSCHEMA:
            yield value
        elif key in SUBSCHEMA_LISTS and isinstance(value, list):
            yield from value
        elif key in SUBSCHEMA_MAPS and isinstance(value, dict):
            yield from value.values()


def keywords(schema):
    """Yield (keyword, value) for every keyword of the schema and its subschemas."""
    for sub in subschemas(schema):
        yield from sub.items()


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


def unenforced_note(names: list[str]) -> list[str]:
    """The note naming the keywords a backend compiles past (none: no note)."""
    return [f"not enforced while writing (checked after the run): {', '.join(sorted(set(names)))}"] if names else []
