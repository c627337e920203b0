"""Check a finished output against what was asked: strict json.loads plus jsonschema, or
re.fullmatch. Returns (valid, first error or None)."""
import json
import re

import jsonschema

FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def validate_json(text: str, schema) -> tuple[bool, str | None]:
    try:
        value = json.loads(text)  # strict: raw control characters in strings are errors
    except json.JSONDecodeError as exc:
        return False, f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema, format_checker=FORMATS).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return False, f"at {where}: {error.message}"
    return True, None


def validate_regex(text: str, pattern: str) -> tuple[bool, str | None]:
    if re.fullmatch(pattern, text) is None:
        return False, f"does not fully match /{pattern}/"
    return True, None
