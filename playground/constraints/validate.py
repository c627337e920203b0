"""Check a finished output against what was asked: strict json.loads (a key twice in one object is
an error: what it means is up to each reader) plus jsonschema by the rules of the draft the schema
declares, or a full match of the regex. Returns (valid, first error or None).

Nothing here can reach outside the process or run unbounded: references resolve in an empty
registry that never retrieves anything (jsonschema's default would fetch http:// and file:// URLs),
and every regex we match, the schema's `pattern`s included, runs in the `regex` module (Python's
syntax) with a timeout instead of `re`, whose backtracking holds the interpreter lock until it
finishes. jsonschema still uses `re` itself in places (unevaluatedProperties over patternProperties,
format "regex"), so the whole JSON check runs in a bounded worker (playground.constraints.worker)."""
import contextvars
import functools
import json
import math
import re
from decimal import Decimal
from time import monotonic  # (a module's own name for it: a test replacing time.monotonic froze the test server's event loop)
from fractions import Fraction

import jsonschema
import referencing
import regex
from jsonschema.exceptions import ValidationError

from playground import strict_json
from playground.constraints import worker
from playground.constraints.drafts import declared
from playground.errors import PlaygroundError
from playground.limits import CHECK_SECONDS

CHECK_WORKER_SECONDS = 3 * CHECK_SECONDS  # the pattern budget below, plus a fork and jsonschema's own work
CHECK_BYTES = 512 * 2**20
PATTERNS_KEPT = 16  # compiled patterns kept: each at most MAX_PATTERN_SIZE written out, about 7 MB

NO_RETRIEVAL = referencing.Registry()  # resolving anything outside the document fails instead of fetching


class CheckTimeout(Exception):
    pass


DEADLINE = contextvars.ContextVar("deadline", default=None)  # one check's end: all its matching shares CHECK_SECONDS


@functools.lru_cache(maxsize=PATTERNS_KEPT)
def compiled_pattern(pattern: str):
    """The `regex` module's compile, kept here (its own cache keeps 500, each up to a few MB)."""
    return regex.compile(pattern, cache_pattern=False)


def search(pattern: str, text: str) -> bool:
    deadline = DEADLINE.get()
    left = CHECK_SECONDS if deadline is None else deadline - monotonic()
    try:
        if left <= 0:
            raise TimeoutError
        return compiled_pattern(pattern).search(text, timeout=left) is not None
    except TimeoutError:
        raise CheckTimeout(f"matching the schema's patterns took longer than {CHECK_SECONDS:g} s "
                           f"(at /{pattern[:60]}/)") from None


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, schema):
    if validator.is_type(instance, "object"):
        for pattern, subschema in patterns.items():
            for key, value in instance.items():
                if search(pattern, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, extra_schema, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    named, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in named and not any(search(p, k) for p in patterns)]
    if validator.is_type(extra_schema, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra_schema, path=key)
    elif extra_schema is False and extras:
        yield ValidationError(f"additional properties are not allowed ({', '.join(map(repr, extras))})")


def _multiple_of(validator, step, instance, schema):
    """Exact arithmetic on the numbers as written (read as Decimal): 19.99 is a multiple of 0.01 (floats:
    1998.9999...), 0.30000000000000001 is not one of 0.1 (as a float it was 0.3)."""
    if validator.is_type(instance, "number") and validator.is_type(step, "number") and step > 0:
        if isinstance(instance, FarNumber) or any(isinstance(n, Decimal) and abs(n.as_tuple().exponent) > MAX_EXPONENT
                                                  for n in (instance, step)):
            yield ValidationError(f"{str(instance)[:80]} is too large or too fine for multipleOf to be checked")
        elif Fraction(instance) % Fraction(step):  # (Fraction of a Decimal: 10**|exponent| at most, bounded above)
            yield ValidationError(f"{str(instance)[:80]} is not a multiple of {step}")


MAX_EXPONENT = 1_000  # a number's decimal exponent multipleOf reads exactly (a float's reach is 10**308)


class LongInteger(Decimal):
    """An integer the output wrote with more digits than int() reads (Python refuses 4,301 and more), kept as
    written: a 5,000-digit integer was "could not be checked" where a schema's maximum says it is too large."""


INT_DIGITS = 4_000  # int() reads these; longer ones are LongInteger


def _integer(text: str):
    return int(text) if len(text) <= INT_DIGITS else LongInteger(text)


class FarNumber(float):
    """A number whose exponent is past Decimal's reach (10**18 and more: 112...e850079...259, a demo model's,
    was "could not be checked: InvalidOperation"), read as the float nearest it on its side of zero: inf, or
    the smallest float above zero (5e-324), signed; right against 0 and every bound a float reaches, too
    large or too fine for multipleOf, quoted as written."""
    def __new__(cls, text: str):
        near = float(text) or math.copysign(5e-324, float(text))  # (a zero mantissa is no FarNumber: below)
        far = super().__new__(cls, near)
        far.text = text
        return far

    def __repr__(self) -> str:
        return self.text if len(self.text) <= 40 else f"{self.text[:20]}...{self.text[-12:]}"


def _fraction(text: str) -> Decimal | float:
    """A JSON number with a fraction or an exponent, as written (Decimal) where Decimal reaches it."""
    try:
        return Decimal(text)
    except ArithmeticError:
        mantissa = MANTISSA.match(text)[0]
        return Decimal(mantissa) if not mantissa.strip("-0.") else FarNumber(text)  # (0 times 10**anything is 0)


MANTISSA = re.compile(r"-?[\d.]+")


def _integer_as_written(types, zero_fraction: bool):
    """A draft's `integer` type check (of its TypeChecker `types`) that takes a long integer as written, and
    a number written with a fraction of zeros (5.0) where the draft does (`zero_fraction`: drafts 6 and
    later; their check took a float, and a Decimal was none)."""
    def is_integer(checker, instance) -> bool:
        return (types.is_type(instance, "integer") or isinstance(instance, LongInteger)
                or (zero_fraction and isinstance(instance, Decimal) and instance.is_finite()
                    and instance == instance.to_integral_value()))
    return is_integer


SAFE = {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties,
        "multipleOf": _multiple_of}


@functools.cache
def safe_validator(draft: type) -> type:
    """The draft's validator with the keywords that run a regex replaced by bounded ones, reading numbers
    as written (Decimal)."""
    types = draft.TYPE_CHECKER  # (drafts 6 and later: a number with a zero fraction is an integer)
    types = types.redefine("integer", _integer_as_written(types, zero_fraction=types.is_type(1.0, "integer")))
    return jsonschema.validators.extend(draft, SAFE, type_checker=types)


def as_written(value):
    """A parsed schema with its fractions as Decimal: the output's numbers are read as written, and 0.35
    written in an output is not above a maximum of 0.35 read as a float (0.34999999999999997...)."""
    return json.loads(json.dumps(value), parse_float=Decimal)


DECIMAL = re.compile(r"Decimal\('([^']*)'\)")  # jsonschema's messages quote numbers with repr
LONG_DIGITS = re.compile(r"\d{41,}")  # a long integer quoted in a message: 5,000 digits once filled the badge


def readable(message: str) -> str:
    """jsonschema's message with its numbers as written, each long run of digits shortened."""
    message = DECIMAL.sub(lambda m: m[1], message)
    return LONG_DIGITS.sub(lambda m: f"{m[0][:12]}...({len(m[0]):,} digits)", message)


def checker(schema, draft: type):
    """A validator of the schema by the draft's rules: its regex keywords bounded, nothing retrieved."""
    return safe_validator(draft)(schema, format_checker=draft.FORMAT_CHECKER, registry=NO_RETRIEVAL)


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) < len(keys):
        raise DuplicateKey(next(key for i, key in enumerate(keys) if key in keys[:i]))
    return dict(pairs)


def validate_json(text: str, schema) -> tuple[bool, str | None]:
    """In a bounded worker: jsonschema still matches some patterns with `re` (unevaluatedProperties
    over patternProperties, format "regex"), which no timeout stops and which holds the interpreter
    lock: one schema froze the whole server for 36 s, and 10 more letters in the output would be hours."""
    safe_validator(declared(schema))  # built here, where its cache lasts
    try:
        return worker.bounded(_validate_json, text, schema, seconds=CHECK_WORKER_SECONDS, extra_bytes=CHECK_BYTES,
                              task=("checking the output against the schema", "simpler patterns in the schema"))
    except PlaygroundError as exc:
        return False, f"could not be checked: {exc}"


def _validate_json(text: str, schema) -> tuple[bool, str | None]:
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_float=_fraction, parse_int=_integer)  # strict: raw control
        # characters in strings are errors; numbers as written (as floats 1e16 + 0.5 was a whole number, and
        # 0.99999999999999999 was 1.0, past an exclusiveMaximum of 1)
    except json.JSONDecodeError as exc:
        return False, f"not valid JSON: {strict_json.where_wrong(exc)}"
    except DuplicateKey as exc:
        return False, f"the key {str(exc)[:80]!r} appears twice in one object"
    except RecursionError:
        return False, "not valid JSON: nested too deeply"
    draft = declared(schema)
    validator = checker(as_written(schema), draft)
    token = DEADLINE.set(monotonic() + CHECK_SECONDS)  # 60 names x 0.27 s each took 16 s with a timeout each
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except CheckTimeout as exc:
        return False, f"could not be checked: {exc}"
    except referencing.exceptions.Unresolvable as exc:
        return False, f"could not be checked: unresolvable reference {exc}"
    except RecursionError:
        return False, "could not be checked: the schema or the output is nested too deeply for the checker"
    finally:
        DEADLINE.reset(token)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return False, f"at {where}: {readable(error.message)}"
    return True, None


def validate_regex(text: str, pattern: str) -> tuple[bool, str | None]:
    """In this process (a worker each time cost 300 s of the tests' 460, sampled outputs checked by the
    thousand): the pattern was bounded written out when given (safety.written_out), so its compile is too."""
    try:
        matched = compiled_pattern(pattern).fullmatch(text, timeout=CHECK_SECONDS) is not None
    except TimeoutError:
        return False, f"could not be checked: matching took longer than {CHECK_SECONDS:g} s"
    return (True, None) if matched else (False, f"does not fully match /{pattern}/")
