"""No key twice in one JSON object while writing (playground.constraints.unique_keys): the names
followed byte by byte, a repeated name's closing masked under both backends, never a dead end, and
runs whose model wants to repeat a name come out valid, the speculative one the target alone's."""
import dataclasses
import json

import numpy as np
import pytest
import torch

from playground import session
from playground.constraints import ConstraintSpec
from playground.constraints.unique_keys import Lexed, lexed
from tests import tiny

BACKENDS = ["llguidance", "xgrammar"]
FREE_NAMES = {"type": "object", "additionalProperties": {"type": "integer"}}


def lexed_all(pieces: list[bytes]) -> Lexed:
    state = Lexed()
    for piece in pieces:
        state = lexed(state, piece)
    return state


def test_names_are_followed_through_nesting_strings_and_escapes():
    text = b'{"a": 1, "b": {"a": ["x", {"c": "\\"q,{"}]}, "d\\u0061": "}", "e\\"'
    for cut in range(1, len(text)):  # however the tokens split it
        state = lexed_all([text[:cut], text[cut:]])
        assert state.frames == (frozenset({"a", "b", "da"}),)
        assert state.key == b'e\\"' and state.in_string  # a name being written, its escape kept as written
    inner = lexed_all([b'{"a": 1, "b": {"a": ["x", {"c": "'])
    assert inner.frames == (frozenset({"a", "b"}), frozenset({"a"}), None, frozenset({"c"})) and inner.key is None


def allows(row: torch.Tensor, token: int) -> bool:
    return bool((row[token // 32].item() >> (token % 32)) & 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_name_its_object_holds_cannot_be_closed(tokenizer, backend):
    pair = tiny.make_pair(tiny.tiny_model(vocab=len(tokenizer)), None, tokenizer)
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps({"type": "object"}), backend))
    closing = [i for i in range(len(tokenizer)) if tokenizer.decode([i]).startswith('"')]
    for written, repeats in (('{"a": 1, "a', True), ('{"a": 1, "ab', False), ('{"a": 1, "b": {"a', False),
                             ('{"a": {"b": 2}, "b', False), ('{"a": 1, "b": 2, "b', True)):
        guide = constraint.guide(2)
        assert guide._commit(tokenizer(written, add_special_tokens=False).input_ids), written
        row = guide.next_mask()
        assert any(allows(row, t) for t in range(len(tokenizer)))
        assert not any(allows(row, t) for t in closing) if repeats else any(allows(row, t) for t in closing), written


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_token_holding_a_whole_name_it_repeats_is_masked_where_names_start(tokenizer, backend):
    """`""` is one token here: after `{"": 1, ` it would open and close the name "" at once."""
    pair = tiny.make_pair(tiny.tiny_model(vocab=len(tokenizer)), None, tokenizer)
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps({"type": "object"}), backend))
    (empty_name,) = tokenizer('""', add_special_tokens=False).input_ids
    (quote,) = tokenizer('"', add_special_tokens=False).input_ids
    for written, masked in (('{"": 1, ', True), ('{"a": 1, ', False), ('{', False)):
        guide = constraint.guide(2)
        assert guide._commit(tokenizer(written, add_special_tokens=False).input_ids)
        row = guide.next_mask()
        assert allows(row, quote) and allows(row, empty_name) is not masked, written


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_token_writing_a_whole_name_is_masked_where_it_repeats_one(backend):
    """Tokens that write a whole name themselves, from outside one: after a value (`1, "b"`; `"}, "a"`
    closes an inner object as well), or the first name and its repeat at once (`"a": 1, "a"`)."""
    tokenizer = tiny.byte_bpe_tokenizer()
    whole = ['1, "a"', '"}, "a"', '1, "b"', '"a": 1, "a"', '{"a": 1, "a"', '"a": 1, "b"']
    tokenizer.add_tokens(whole)
    ids = dict(zip(whole, tokenizer.convert_tokens_to_ids(whole)))
    pair = tiny.make_pair(tiny.tiny_model(vocab=len(tokenizer)), None, tokenizer)
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps({"type": "object"}), backend))
    grammar_alone = dataclasses.replace(constraint, name_tables=None)
    for written, masked in (("", {'{"a": 1, "a"'}), ("{", {'"a": 1, "a"'}), ('{"a": ', {'1, "a"', '{"a": 1, "a"'}),
                            ('{"b": ', {'1, "b"', '{"a": 1, "a"'}), ('{"b": {"x": "', set()), ('{"a": {"x": "', {'"}, "a"'})):
        allowed = []
        for c in (grammar_alone, constraint):
            guide = c.guide(2)
            assert guide._commit(tokenizer(written, add_special_tokens=False).input_ids)
            row = guide.next_mask()
            allowed.append({t for t in whole if allows(row, ids[t])})
        assert allowed[0] - allowed[1] == masked and allowed[1] <= allowed[0], written


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_only_a_repeat_can_follow_the_grammar_stands(tokenizer, backend):
    """Names limited to "a": after `{"a": 1, "a` the closing quote is the only way on; it stays
    allowed (no dead end), and the check after the run refuses the repeat."""
    pair = tiny.make_pair(tiny.tiny_model(vocab=len(tokenizer)), None, tokenizer)
    schema = {"type": "object", "patternProperties": {"^a$": {"type": "integer"}}, "additionalProperties": False}
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps(schema), backend))
    guide = constraint.guide(2)
    assert guide._commit(tokenizer('{"a": 1, "a', add_special_tokens=False).input_ids)
    (quote,) = tokenizer('"', add_special_tokens=False).input_ids
    assert allows(guide.next_mask(), quote)
    assert constraint.validate('{"a": 1, "a": 2}', [], True) == (False, "the key 'a' appears twice in one object")


@pytest.fixture(scope="module")
def repeating_pair(tokenizer):
    """A random pair whose head favours `"`, `a`, `:`, ` `, `1`, `,` and `}`: under free names the
    grammar alone lets it write the same name twice."""
    favoured = {'"': 5.0, "a": 3.0, ":": 3.0, " ": 3.0, "1": 3.0, ",": 4.0, "}": 2.0}
    ids = {tokenizer(c, add_special_tokens=False).input_ids[0]: bias for c, bias in favoured.items()}
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=61, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.5, seed=62)
    models = [tiny.prefer_tokens(m, list(ids), 0.0) for m in (target, draft)]
    with torch.no_grad():
        for model in models:
            for token, bias in ids.items():
                model.get_output_embeddings().bias[token] = bias
    return tiny.make_pair(*models, tokenizer)


def grammar_alone_repeats(pair, prompt, constraint) -> bool:
    """Whether the constraint's grammar alone (no name tables) lets a sampled run write a name twice: seeds tried
    until one does, at most 12."""
    grammar_alone = dataclasses.replace(constraint, name_tables=None)
    for seed in range(1, 13):
        cfg = session.spec_config(k=4, temperature=1.0, seed=seed, max_new_tokens=160)
        if "appears twice" in (session.run(pair, prompt, cfg, constraint=grammar_alone).validation_error or ""):
            return True
    return False


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_that_repeats_names_never_writes_one_twice(repeating_pair, tokenizer, backend):
    pair = repeating_pair
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps(FREE_NAMES), backend))
    prompt = tokenizer("x = ", add_special_tokens=False).input_ids
    valid = 0
    for temperature, seed in ((0.0, 0), (1.0, 1), (1.0, 2), (1.0, 3)):
        cfg = session.spec_config(k=4, temperature=temperature, seed=seed, max_new_tokens=160)
        speculative = session.run(pair, prompt, cfg, constraint=constraint)
        alone = session.run(pair, prompt, cfg, speculative=False, constraint=constraint)
        for result in (speculative, alone):  # valid, or cut by max new tokens: never a name twice
            assert result.valid or result.finish_reason == "length", (result.text, result.validation_error)
            valid += result.valid and len(json.loads(result.text)) > 1
        if temperature == 0:  # greedy: the same tokens (sampled runs share a law, not their tokens)
            assert speculative.token_ids == alone.token_ids
    assert grammar_alone_repeats(pair, prompt, constraint), "the grammar alone never repeated a name: nothing was kept from it"
    assert valid, "no whole object of several names was written"


def test_a_model_with_fewer_rows_than_its_tokenizer_has_names_followed(tokenizer):
    """The token bytes are read for the model's rows (xgrammar takes such a model; reading them for
    the rows alone raised 'vocab size too small' from llguidance's tokenizer)."""
    from playground.constraints.compile import compile_constraint, stop_ids
    rows = len(tokenizer) - 3
    constraint = compile_constraint(ConstraintSpec("json", json.dumps({"type": "object"}), "xgrammar"), tokenizer,
                                    rows, stop_ids(tokenizer))
    assert len(constraint.name_tables.token_bytes) == rows
    guide = constraint.guide(2)
    assert guide._commit(tokenizer('{"a": 1, "a', add_special_tokens=False).input_ids)
    (quote,) = tokenizer('"', add_special_tokens=False).input_ids
    assert not allows(guide.next_mask(), quote)


FEW_NAMES = {"type": "object", "patternProperties": {"^(a|aa|b)$": {"type": "integer"}}, "additionalProperties": False}


def allowed_after(constraint, tokenizer, written: str) -> set[str]:
    """The allowed tokens after `written`, as text."""
    guide = constraint.guide(2)
    assert guide._commit(tokenizer(written, add_special_tokens=False).input_ids), written
    row = guide.next_mask()
    return {tokenizer.decode([t]) for t in range(len(tokenizer)) if allows(row, t)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_token_that_leads_only_to_held_names_is_masked(tokenizer, backend):
    """Names "a", "aa" and "b" alone: once all are written no comma may follow (it leads only to a
    repeat), and where a name starts, what can end only as a held one is masked too."""
    pair = tiny.make_pair(tiny.tiny_model(vocab=len(tokenizer)), None, tokenizer)
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps(FEW_NAMES), backend))
    grammar_alone = dataclasses.replace(constraint, name_tables=None)
    for written, masked in (('{"a": 1, "aa": 2, "b": 3', {","}), ('{"a": 1, "b": 2, "', {"b"}),
                            ('{"aa": 1, "b": 2, "a', {"a"}), ('{"a": 1, "aa": 2, "', {"a"}),
                            ('{"a": 1, "aa": 2', set()), ('{"a": 1, "', set())):
        before, after = allowed_after(grammar_alone, tokenizer, written), allowed_after(constraint, tokenizer, written)
        assert before - after == masked and after <= before and after, (written, before, after)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_that_repeats_names_writes_each_of_few_once(repeating_pair, tokenizer, backend):
    """The repeating pair under three allowed names: the grammar alone writes one twice; with the
    look-ahead every output is valid (or cut by max new tokens), the speculative one the target alone's."""
    pair = repeating_pair
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps(FEW_NAMES), backend))
    prompt = tokenizer("x = ", add_special_tokens=False).input_ids
    names = set()
    for temperature, seed in ((0.0, 0), (1.0, 1), (1.0, 2), (1.0, 3), (1.0, 4)):
        cfg = session.spec_config(k=4, temperature=temperature, seed=seed, max_new_tokens=60)
        speculative = session.run(pair, prompt, cfg, constraint=constraint)
        alone = session.run(pair, prompt, cfg, speculative=False, constraint=constraint)
        for result in (speculative, alone):
            assert result.valid or result.finish_reason == "length", (result.text, result.validation_error)
            names.update(json.loads(result.text) if result.valid else ())
        if temperature == 0:  # greedy: the same tokens (sampled runs share a law, not their tokens)
            assert speculative.token_ids == alone.token_ids
    assert grammar_alone_repeats(pair, prompt, constraint), "the grammar alone never repeated a name: nothing was kept from it"
    assert len(names) > 1, names


def test_allowed_ids_reads_every_bit_of_a_row():
    """Bit 31 of a word is its sign in int32: read as an id all the same."""
    from playground.constraints.unique_keys import allowed_ids
    words, ids = np.zeros(3, dtype=np.int32), [0, 5, 31, 32, 63, 64, 90]
    for t in ids:
        words.view(np.uint32)[t // 32] |= np.uint32(1 << (t % 32))
    assert list(allowed_ids(words, 96)) == ids and list(allowed_ids(words, 64)) == ids[:5]


CLOSED = {"type": "object", "additionalProperties": False, "properties": {
    "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"$ref": "#/$defs/inner"}},
    "$defs": {"inner": {"anyOf": [{"type": "object", "additionalProperties": False, "required": ["a"],
                                   "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
                                  {"type": "object", "additionalProperties": False,
                                   "properties": {"a": {"type": "integer"}, "c": {"type": "integer"}}}]}}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_names_from_properties_alone_are_never_repeated_by_the_grammar(tokenizer, backend):
    """What lets a closed schema go without UniqueKeys (names_can_repeat): both grammars write the
    names of `properties` in order, each once, in objects nested through $ref and anyOf too."""
    pair = tiny.make_pair(tiny.tiny_model(vocab=len(tokenizer)), None, tokenizer)
    constraint = session.constrain(pair, ConstraintSpec("json", json.dumps(CLOSED), backend))
    assert constraint.name_tables is None
    for written, held in (('{"a": 1, "', {"a"}), ('{"b": 1, "', {"a", "b"}), ('{"c": {"a": 1, "', {"a"}),
                          ('{"a": 1, "c": {"a": 1, "', {"a"})):
        allowed = allowed_after(constraint, tokenizer, written)
        assert allowed and not held & allowed, (written, allowed)


def test_names_can_repeat_where_some_object_has_free_names():
    from playground.constraints.unique_keys import names_can_repeat
    closed = {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}
    assert not names_can_repeat(closed) and not names_can_repeat(CLOSED) and not names_can_repeat({"type": "string"})
    assert not names_can_repeat({"type": "array", "items": closed}) and not names_can_repeat({"enum": [{"a": 1}]})
    for free in ({"type": "object"}, {}, True, {"type": "array", "items": True}, {"type": ["object", "null"]},
                 {**closed, "properties": {"a": {}}}, {**closed, "patternProperties": {"^x$": {}}},
                 {**closed, "propertyNames": {"maxLength": 3}}, {**closed, "additionalProperties": {"type": "integer"}},
                 {"anyOf": [closed], "properties": {"b": {}}}, {"$ref": "#/$defs/x", "$defs": {"x": {"type": "object"}}},
                 {"type": "array", "items": {"$ref": "#/port"}, "port": {"type": "object"}}):
        assert names_can_repeat(free), free
