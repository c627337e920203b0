"""propertyNames under llguidance (playground.constraints.property_names): an enum, const or pattern
written as patternProperties, so the names are enforced while writing as xgrammar enforces them;
an object the rewrite would not mean the same for is left to the note and the check."""
import json

import pytest

from playground import session
from playground.constraints import ConstraintSpec
from playground.constraints.property_names import names_as_patterns
from playground.constraints.validate import validate_json
from tests import tiny

COLOURS = {"type": "object", "propertyNames": {"enum": ["red", "green", "blue"]},
           "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}}


def test_the_rewrite_means_the_same_names_and_values():
    odd = {"type": "object", "propertyNames": {"enum": ["a.b", "c d", "$x", "e-f", "(g)"]}}
    rewritten = names_as_patterns(odd)
    for name in ("a.b", "c d", "$x", "e-f", "(g)", "axb", "c", "$x$", "g"):
        instance = {name: 1}
        assert validate_json(instance, rewritten) == validate_json(instance, odd), name
    assert names_as_patterns(COLOURS)["patternProperties"] == {"^(?:red|green|blue)$": COLOURS["additionalProperties"]}
    assert "propertyNames" in odd  # (a copy: the schema the check reads stays as written)
    nested = {"type": "array", "items": {"type": "object", "propertyNames": {"pattern": "^x-"}}}
    assert names_as_patterns(nested)["items"] == {"type": "object", "patternProperties": {"^x-": {}},
                                                  "additionalProperties": False}
    for left in ({"type": "object", "properties": {"zzz": {}}, "propertyNames": {"enum": ["a"]}},  # zzz: refused
                 {"type": "object", "propertyNames": {"maxLength": 3}},  # not a set of names a pattern says
                 {"type": "object", "propertyNames": {"enum": ["a"]}, "patternProperties": {"^b": {}}},
                 {"type": "object", "propertyNames": {"enum": ["a"]}, "additionalProperties": False}):
        assert names_as_patterns(left) == left


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_names_a_schema_limits_are_the_only_ones_written(tokenizer, backend):
    """A random model left free writes names of its own; under the limit, only red, green and blue,
    each once (unique_keys), whatever the seed."""
    pair = tiny.make_pair(tiny.tiny_model(vocab=len(tokenizer), seed=5), None, tokenizer)
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps(COLOURS), backend))
    assert not constraint.notes
    prompt = tokenizer("x = ", add_special_tokens=False).input_ids
    written = set()
    for seed in range(8):
        result = session.run(pair, prompt, session.spec_config(temperature=1.0, seed=seed, max_new_tokens=60),
                             speculative=False, constraint=constraint)
        assert result.valid or result.finish_reason == "length", (result.text, result.validation_error)
        written |= set(json.loads(result.text)) if result.valid else set()
    assert written and written <= {"red", "green", "blue"}, written
