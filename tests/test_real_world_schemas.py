"""What real-world schemas need (JSONSchemaBench, scripts/bench_schemas.py), each with a small schema
of its own: a compile bounded in memory and time, the draft a schema declares, duplicate keys,
references to nodes outside any keyword, required names matched by patternProperties, sizes
counted minified, oneOf and unknown formats, and a cut output that says where and why."""
import json
import multiprocessing
import os
import pathlib
import re
import threading
import time

import pytest

from playground import stopping
from playground.constraints import ConstraintSpec, compile_constraint, from_user, read_constraint, unwritable, worker, xgr_reads
from playground.constraints.validate import validate_json
from playground.errors import PlaygroundError

BACKENDS = ["llguidance", "xgrammar"]
DRAFT4 = "http://json-schema.org/draft-04/schema#"


def compiled(tokenizer, schema, backend: str):
    spec = from_user(schema=json.dumps(schema), backend=backend)
    return compile_constraint(spec, tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id}))


# -- the compile is bounded, whatever the schema ---------------------------------------------------

def _allocate(n_bytes: int) -> int:
    return len(bytearray(n_bytes))


def _sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


def test_a_compile_past_its_memory_allowance_is_refused_and_the_server_lives():
    assert worker.bounded(_allocate, 10 * 2**20, extra_bytes=256 * 2**20) == 10 * 2**20
    with pytest.raises(PlaygroundError, match="needed more than 0.25 GiB"):
        worker.bounded(_allocate, 2**30, extra_bytes=256 * 2**20)


def test_a_compile_past_its_time_is_stopped():
    before = set(multiprocessing.active_children())
    with pytest.raises(PlaygroundError, match="longer than 1 s"):
        worker.bounded(_sleep, 60, seconds=1)
    assert set(multiprocessing.active_children()) <= before  # its child killed, not left to sleep out its 60 s


def test_an_xgrammar_compile_stopped_by_its_bounds_says_whether_llguidance_reads_the_schema(tokenizer, monkeypatch):
    """xgrammar builds its token tables before the first mask (1 of 600 JSONSchemaBench schemas went
    past 20 s), llguidance each mask as the output is written: the refusal says whether it reads the
    same schema. Every compile here runs past a bound of 1 ms; the check as typed keeps its own."""
    monkeypatch.setattr(worker, "COMPILE_SECONDS", 0.001)
    readable = {"type": "object", "properties": {"bounded_compile_hint": {"type": "string"}}}
    with pytest.raises(worker.TooSlow, match=r"longer than 0.001 s .*\(the llguidance backend reads it, and builds "
                                             "each mask as the output is written, not all before: pick it"):
        compiled(tokenizer, readable, "xgrammar")
    with pytest.raises(worker.TooSlow) as refused:
        compiled(tokenizer, readable, "llguidance")
    assert "pick it" not in str(refused.value)
    circular = {"type": "object", "properties": {"bounded_compile_hint": {"$ref": "#", "maxProperties": 3}}}
    with pytest.raises(worker.TooSlow) as refused:  # llguidance cannot read a circular $ref with keywords beside it
        compiled(tokenizer, circular, "xgrammar")
    assert "llguidance" not in str(refused.value)


def test_errors_in_the_worker_come_back_as_they_were(tokenizer):
    with pytest.raises(PlaygroundError, match="xgrammar cannot use this grammar"):
        compile_constraint(ConstraintSpec("grammar", "root ::= (", "xgrammar"), tokenizer, len(tokenizer), frozenset())


def test_xgrammar_refusals_say_the_same_on_every_run(tokenizer):
    """A Lark grammar's regex xgrammar cannot read: its error wraps another, each with xgrammar's
    clock time and source line ("...: [21:02:57] /project/cpp/regex_converter.cc:83: Regex ..."),
    the refusal's text changing from second to second."""
    with pytest.raises(PlaygroundError) as refused:
        compile_constraint(ConstraintSpec("grammar", "start: /x(?=y)/", "xgrammar"), tokenizer, len(tokenizer), frozenset())
    told = str(refused.value)  # (/\\p{L}+/ is refused before xgrammar now: Python's re cannot read it)
    assert "Lookahead is not supported" in told and not re.search(r"\[\d\d:\d\d:\d\d\]|\.cc:\d", told), told


def test_xgrammar_compiles_what_fits_its_bounds_however_large_its_serialized_form(tokenizer, monkeypatch):
    """xgrammar's compiled form, serialized, repeats its whole automaton for each rule: it grows with
    the square of the schema (JSONSchemaBench's Kubernetes kb_261: 2 MB compiled, 251 MB serialized,
    3.3 GB to write). The worker handed that back and refused what it could not write; it hands back
    the text it compiled now. This one compiles to under 1 MB in about 0.1 s; serializing it needed
    more than 256 MiB."""
    monkeypatch.setattr(worker, "COMPILE_BYTES", 256 * 2**20)
    one_integer = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    schema = {"type": "object", "properties": {f"p{i}": one_integer for i in range(150)}}
    constraint = compiled(tokenizer, schema, "xgrammar")
    assert constraint.compiled.compiled.memory_size_bytes < 2**20
    matcher = constraint.backend.matcher(constraint.compiled)
    assert all(matcher.consume(t) for t in tokenizer.encode('{"p7": {"a": 12}, "p149": {"a": 3}}'))
    assert matcher.accepting()
    assert not matcher.consume(tokenizer.encode("}")[0])  # past the end


def test_the_servers_second_xgrammar_compile_yields_the_cpu_and_a_compile_in_process_is_done_once(tokenizer,
                                                                                                  monkeypatch):
    """The text the worker compiled is compiled again in the server at the workers' low priority (on a
    2-core host a compile beside a run slowed it 15x); with no worker (not Linux, a ZeroGPU task) the
    compiled grammar is kept as it is, not compiled twice."""
    from playground.constraints import xgr
    niceness, compile_once = [], xgr._compiled

    def watched(*args):
        niceness.append(os.getpriority(os.PRIO_PROCESS, 0))  # (Linux: the calling thread's)
        return compile_once(*args)
    monkeypatch.setattr(xgr, "_compiled", watched)
    schema = {"type": "object", "properties": {"yielding": {"type": "integer"}}}
    compiled(tokenizer, schema, "xgrammar")  # (twice: over the tokens, and over bytes for the text it forces)
    assert niceness == [min(19, os.getpriority(os.PRIO_PROCESS, 0) + worker.CHILD_NICENESS)] * 2  # the child's is its own
    monkeypatch.setattr(worker, "FORKS", False)
    niceness.clear()
    constraint = compiled(tokenizer, {**schema, "title": "in-process"}, "xgrammar")
    assert len(niceness) == 2 and constraint.guide(1).next_mask().any()


def test_work_yielding_in_the_server_raises_in_its_caller():
    assert worker.yielding(max, 2, 3) == 3
    with pytest.raises(ZeroDivisionError):
        worker.yielding(divmod, 1, 0)
    began, done = time.monotonic(), threading.Event()
    with stopping.stopped_by(lambda: time.monotonic() - began > 0.3), pytest.raises(stopping.Stopped, match="again in the server"):
        worker.yielding(lambda: time.sleep(5) or done.set())  # a run cancelled during xgrammar's second compile
    assert not done.is_set()  # waited it out; now its 5 s are not waited for (the work ends on its own)


@pytest.mark.parametrize("backend", BACKENDS)
def test_required_self_recursion_without_a_root_type_is_bounded(tokenizer, backend, monkeypatch):
    """No root type: a string is an instance, so the schema is finite and passes the check; a
    compiler that assumes an object must recurse. Compiled or refused, within the worker's bounds."""
    monkeypatch.setattr(worker, "COMPILE_BYTES", 512 * 2**20)
    monkeypatch.setattr(worker, "COMPILE_SECONDS", 20)
    schema = {"properties": {"a": {"$ref": "#"}, "b": {"$ref": "#"}}, "required": ["a", "b"]}
    try:
        constraint = compiled(tokenizer, schema, backend)
    except PlaygroundError as exc:
        assert "simplify it (fewer alternatives" in str(exc), exc
    else:
        assert constraint.guide(1).next_mask().any()


# -- the declared draft ----------------------------------------------------------------------------

def test_draft4_dependencies_are_checked_by_draft4_rules():
    schema = {"$schema": DRAFT4, "type": "object", "dependencies": {"card": ["billing"]}}
    assert validate_json('{"card": 1}', schema) == (False, "at (root): 'billing' is a dependency of 'card'")
    assert validate_json('{"card": 1, "billing": 2}', schema) == (True, None)
    latest = {"type": "object", "dependentRequired": {"card": ["billing"]}}
    assert validate_json('{"card": 1}', latest)[0] is False


def test_draft4_exclusive_bounds_keep_their_meaning_for_the_engines():
    schema = {"$schema": DRAFT4, "type": "integer", "minimum": 0, "maximum": 3, "exclusiveMaximum": True}
    spec = from_user(schema=json.dumps(schema))
    assert spec.engine_schema["exclusiveMaximum"] == 3 and "maximum" not in spec.engine_schema
    assert validate_json("3", spec.schema)[0] is False and validate_json("2", spec.schema)[0] is True


@pytest.mark.parametrize("backend", BACKENDS)
def test_draft4_outputs_are_held_to_dependencies(tokenizer, backend):
    schema = {"$schema": DRAFT4, "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "dependencies": {"a": ["b"]}}
    constraint = compiled(tokenizer, schema, backend)
    assert constraint.notes == ("not enforced while writing (checked after the run): dependentRequired",)
    assert constraint.validate('{"a": 1}', [], complete=True)[0] is False


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("schema", [{"$schema": "http://json-schema.org/schema#", "type": "object"},
                                    {"$schema": "https://spec.openapis.org/oas/3.1/dialect/base", "type": "string"},
                                    True])
def test_a_generic_or_openapi_schema_uri_and_the_true_schema_compile(tokenizer, backend, schema):
    """Older schemas declare the generic ".../schema#", OpenAPI 3.1 its dialect: read as draft 2020-12,
    as for any URI jsonschema does not know; llguidance refused both ('not present in a registry'),
    and the schema `true` with an internal error. Held to what they say: an object, a string, any value."""
    constraint = compiled(tokenizer, schema, backend)
    opens = {first: allowed(constraint, tokenizer, "", first) for first in ("{", '"', "1")}
    kind = schema if schema is True else schema["type"]
    assert opens == {True: {"{": True, '"': True, "1": True}, "object": {"{": True, '"': False, "1": False},
                     "string": {"{": False, '"': True, "1": False}}[kind], opens


def test_draft3_is_refused_by_name():
    with pytest.raises(PlaygroundError, match="draft-03"):
        from_user(schema=json.dumps({"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}))


def test_a_key_twice_is_never_valid():
    valid, error = validate_json('{"a": 1, "a": 2}', {"type": "object"})
    assert valid is False and "'a' appears twice" in error


@pytest.mark.parametrize("value, step, valid", [("19.99", 0.01, True), ("4.35", 0.05, True), ("0.3", 0.1, True),
                                               ("-0.3", 0.1, True), ("19.995", 0.01, False), ("1e308", 0.01, True),
                                               ("10", 3, False), ("4.36", 0.05, False), ("1" + "0" * 400, 0.5, True)])
def test_multiple_of_is_decimal_arithmetic(value, step, valid):
    """A price of 19.99 under multipleOf 0.01 was called invalid (19.99 / 0.01 is 1998.9999999999998 in
    floats); the numbers are judged as written."""
    ok, error = validate_json('{"price": %s}' % value, {"properties": {"price": {"type": "number", "multipleOf": step}}})
    assert ok is valid, error
    assert valid or "is not a multiple of" in error


@pytest.mark.parametrize("value, schema, valid, said", [
    ("0.99999999999999999", {"type": "number", "exclusiveMaximum": 1}, True, None),  # (llguidance writes it: 1.0 as a float)
    ("0.30000000000000001", {"type": "number", "multipleOf": 0.1}, False, "0.30000000000000001 is not a multiple of 0.1"),
    ("0.35", {"maximum": 0.35}, True, None), ("0.36", {"maximum": 0.35}, False, "0.36 is greater than the maximum of 0.35"),
    ("5.0000000000000001", {"type": "integer", "maximum": 5}, False, "is not of type 'integer'"),
    ("5.0", {"type": "integer"}, True, None),  # (a zero fraction is an integer from draft 6 on; not in draft 4:)
    ("5.0", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}, False, "5.0 is not of type"),
    ("10000000000000000.5", {"oneOf": [{"type": "integer"}, {"type": "number"}]}, True, None),  # (one branch, not two)
    ("1e999999999", {"multipleOf": 3}, False, "1E+999999999 is too large or too fine for multipleOf to be checked"),
    ("1e400", {"multipleOf": 0.5}, True, None),  # (past a float's range: "cannot be checked" was said)
    ("1.50", {"enum": [1.5]}, True, None), ("[1.0, 1]", {"uniqueItems": True}, False, "has non-unique elements")])
def test_numbers_are_judged_as_written(value, schema, valid, said):
    """The check read the output's numbers as floats: 0.99999999999999999 under an exclusive maximum of 1 and a
    number past 2^53 with a fraction under oneOf (as a float a whole number: both branches) were called invalid,
    0.30000000000000001 a multiple of 0.1 (a constraints review); no message quotes Decimal('...')."""
    ok, error = validate_json(value, schema)
    assert ok is valid and (said is None or said in error), error
    assert "Decimal" not in (error or "")


LONG = "1" * 5000  # past the 4,300 digits int() reads


@pytest.mark.parametrize("value, schema, valid, said", [
    (LONG, {"type": "integer"}, True, None),
    (LONG, {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}, True, None),
    (LONG + ".0", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}, False, "is not of type"),
    ('{"a": -%s}' % LONG, {"properties": {"a": {"type": "integer", "minimum": 0}}}, False,
     "at a: -111111111111...(5,000 digits) is less than the minimum of 0"),
    (LONG, {"multipleOf": 3}, False, "is not a multiple of 3"), (LONG, {"enum": [1]}, False, "is not one of [1]")])
def test_an_integer_longer_than_python_reads_is_judged(value, schema, valid, said):
    """A 5,000-digit integer in an output was "could not be checked" (int() refuses past 4,300 digits); it is
    read as written, and a message quotes its first digits and its length, not all 5,000."""
    ok, error = validate_json(value, schema)
    assert ok is valid and (said is None or said in error), error
    assert len(error or "") < 200, error


# -- finiteness: no false "no finite instance" -----------------------------------------------------

def test_a_reference_to_a_node_outside_any_keyword_is_followed():
    schema = {"type": "object", "port": {"type": "integer"}, "properties": {"p": {"$ref": "#/port"}}, "required": ["p"]}
    assert from_user(schema=json.dumps(schema)) is not None


def _stored(node: dict, draft: str = "") -> dict:
    """A schema whose root refers to `node` in a place no keyword holds."""
    return {**({"$schema": draft} if draft else {}), "$ref": "#/components/schemas/A",
            "components": {"schemas": {"A": node}}}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("node, prefix, then, valid, noted", [
    ({"minLength": 3}, '"ab', '"', False, None),  # xgrammar: a node naming no kind was any value
    ({"type": "object", "required": ["a"]}, "{", "}", False, None),  # xgrammar: a required name missing from properties
    ({"type": "object", "required": ["a"], "anyOf": [{"properties": {"a": {"type": "integer"}}},
                                                     {"properties": {"a": {"type": "string"}}}]}, "{", "}", False, None),
    ({"type": "integer", "minimum": 0, "maximum": 18446744073709551615}, "1844674407370955161", "5", True,
     "maximum 18446744073709551615"),
])  # (a uint64's maximum: llguidance clamped it to 2^63 - 1 without a word, xgrammar refused the schema)
def test_a_node_a_reference_finds_outside_every_keyword_is_read_as_one_in_defs(tokenizer, backend, node, prefix,
                                                                               then, valid, noted):
    """Only keywords were rewritten for the engines, so such a node kept every misreading (JSONSchemaBench:
    67 of 9,557 schemas refer to one)."""
    constraint = compiled(tokenizer, _stored(node), backend)
    assert allowed(constraint, tokenizer, prefix, then) is valid
    assert not any("beside a $ref" in note for note in constraint.notes), constraint.notes  # (a store is no keyword)
    assert noted is None or noted in " ".join(constraint.notes), constraint.notes


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("draft", [DRAFT4, "http://json-schema.org/draft-07/schema#"])
def test_a_node_outside_every_keyword_is_read_by_its_draft(tokenizer, backend, draft):
    """Drafts 4-7 drop a $ref's siblings: the store a root $ref named went with them ("does not point to a
    schema inside this schema"); and draft-04's words there were never rewritten (`items: [...]` was no
    schema to either engine)."""
    node = {"type": "array", "items": [{"type": "integer"}], "additionalItems": False}
    constraint = compiled(tokenizer, _stored(node, draft), backend)
    assert allowed(constraint, tokenizer, "[1", "]") and not allowed(constraint, tokenizer, "[1", ",")
    bound = {"type": "integer", "maximum": 5, "exclusiveMaximum": True}
    held = compiled(tokenizer, {"$schema": DRAFT4, "type": "array", "items": {"$ref": "#/store/n"}, "store": {"n": bound}},
                    backend)  # (xgrammar: "Value must be a number", for the boolean)
    assert allowed(held, tokenizer, "[", "4") and not allowed(held, tokenizer, "[", "5")


def test_nodes_outside_every_keyword_are_moved_once_and_values_are_left_as_they_are():
    """A place inside a moved one follows it; a keyword's value a reference names (`default`) is copied,
    not taken; a reference in a place that is no schema is data, left as written."""
    from playground.constraints.ref_targets import with_targets_in_defs
    schema = {"properties": {"a": {"$ref": "#/store/x/inner"}, "b": {"$ref": "#/store/x"},
                             "c": {"$ref": "#/properties/d/default"}, "d": {"default": {"type": "null"}}},
              "store": {"x": {"type": "object", "inner": {"type": "integer", "data": {"$ref": "#/store/x"}}}}}
    engine, moved = with_targets_in_defs(schema)
    assert engine["$defs"] == {"store_x": {"type": "object"}, "properties_d_default": {"type": "null"},
                               "store_x_inner": {"type": "integer", "data": {"$ref": "#/store/x"}}}
    assert [engine["properties"][name]["$ref"] for name in "abc"] == [
        "#/$defs/store_x_inner", "#/$defs/store_x", "#/$defs/properties_d_default"]
    assert engine["properties"]["d"] == {"default": {"type": "null"}} and engine["store"] == {}
    assert moved == {"#/$defs/store_x": "#/store/x", "#/$defs/properties_d_default": "#/properties/d/default",
                     "#/$defs/store_x_inner": "#/store/x/inner"}
    assert schema["store"]["x"]["inner"]["type"] == "integer"  # (the schema as written is untouched)


def test_a_node_moved_later_refers_to_one_moved_before():
    """A stored node reached only through another stored node moves a round later, and its reference to
    the first was left pointing where that had been (JsonSchemaStore vega.json: "$ref '#/defs/scope' does
    not point to a schema inside this schema")."""
    from playground.constraints.ref_targets import with_targets_in_defs
    schema = {"type": "object", "properties": {"a": {"$ref": "#/store/a"}},
              "store": {"a": {"type": "object", "properties": {"b": {"$ref": "#/store/b"}}},
                        "b": {"type": ["object", "null"], "properties": {"a": {"$ref": "#/store/a"}}}}}
    engine, _ = with_targets_in_defs(schema)
    assert engine["$defs"]["store_b"]["properties"]["a"] == {"$ref": "#/$defs/store_a"}
    assert engine["$defs"]["store_a"]["properties"]["b"] == {"$ref": "#/$defs/store_b"}
    assert from_user(schema=json.dumps(schema)) is not None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reference_into_an_enum_or_const_value_leaves_the_value_as_written(tokenizer, backend):
    """A reference may name a node inside a keyword's value; the first version took it out of the value
    (`enum: [null]`: each engine wrote null, which the check refused; a review)."""
    schema = {"type": "object", "required": ["a"], "additionalProperties": False,
              "properties": {"a": {"enum": [{"type": "integer"}]}, "b": {"$ref": "#/properties/a/enum/0"}}}
    assert from_user(schema=json.dumps(schema)).engine_schema["properties"]["a"] == {"enum": [{"type": "integer"}]}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"a": ', "{") and not allowed(constraint, tokenizer, '{"a": ', "n")


@pytest.mark.parametrize("backend", BACKENDS)
def test_ids_and_anchors_in_a_stored_node_stay_unread(tokenizer, backend):
    """The output's checker reads no `$id` or anchor outside every keyword; moved into $defs, llguidance took a
    stored `"$id": ""` for a new root (it wrote `1` for the whole output), and a stored anchor for the one the
    checker reads in $defs (a review)."""
    rooted = compiled(tokenizer, {"type": "object", "required": ["a"], "properties": {"a": {"$ref": "#/store"}},
                                  "store": {"$id": "", "type": "integer"}}, backend)
    assert allowed(rooted, tokenizer, "", "{") and not allowed(rooted, tokenizer, "", "1")
    for store, real in (({"$anchor": "n", "type": "integer"}, {"$anchor": "n", "type": "string"}),
                        ({"$anchor": "n", "type": "string"}, {"$anchor": "n", "type": "integer"})):
        schema = {"type": "object", "required": ["a", "b"], "properties": {"a": {"$ref": "#/store"}, "b": {"$ref": "#n"}},
                  "store": store, "$defs": {"real": real}}
        constraint = compiled(tokenizer, schema, backend)
        prefix = '{"a": ' + ('1' if store["type"] == "integer" else '"x"') + ', "b": '
        assert allowed(constraint, tokenizer, prefix, '"' if real["type"] == "string" else "1")
        assert not allowed(constraint, tokenizer, prefix, "1" if real["type"] == "string" else '"')


def test_a_backends_refusal_names_a_moved_node_where_the_user_wrote_it(tokenizer):
    """llguidance said "circular references with sibling keys are not supported: #/$defs/components_schemas_A",
    a place only the engines' copy has."""
    schema = {"$ref": "#/components/schemas/A", "components": {"schemas": {"A": {
        "type": "object", "properties": {"x": {"$ref": "#/components/schemas/A", "minProperties": 1}}}}}}
    with pytest.raises(PlaygroundError, match="not supported: #/components/schemas/A ") as refused:
        compiled(tokenizer, schema, "llguidance")
    assert "$defs" not in str(refused.value)


def test_an_id_around_or_inside_a_stored_node_is_read_as_the_checker_reads_it():
    """The checker reads a reference under an `$id` against that `$id`, the engines against the whole schema:
    one inside a stored node was out of the check that refuses it elsewhere (moved, its `$id` dropped, both
    engines wrote the root's A where the checker wanted O's), and a store inside a subschema with an `$id` was
    read against the root (a review)."""
    inner = {"$defs": {"O": {"$id": "http://o.example/", "$defs": {"A": {"type": "string"}}}, "A": {"type": "integer"}},
             "$ref": "#/components/X", "components": {"X": {"type": "object", "properties": {
                 "a": {"$id": "http://o.example/", "$ref": "#/$defs/A"}}}}}
    with pytest.raises(PlaygroundError, match="sits inside a subschema with an \\$id of its own"):
        from_user(schema=json.dumps(inner))
    around = {"$defs": {"A": {"type": "integer"}, "K": {"$id": "http://k.example/", "$defs": {"A": {"type": "string"}},
                                                       "components": {"X": {"$ref": "#/$defs/A"}}}},
              "$ref": "#/$defs/K/components/X"}
    with pytest.raises(PlaygroundError, match="names a node outside every keyword inside a subschema with an \\$id"):
        from_user(schema=json.dumps(around))


def test_a_pointer_of_other_digits_or_of_many_names_is_refused_in_words():
    """`#/list/²` ended the parse with a ValueError ("²".isdigit() is true); a pointer of 50,000 names was
    hashed prefix by prefix (200,000 names took the parse's whole 15 s; a review)."""
    for ref in ("#/list/²", "#/x" + "/" * 50_000):
        schema = {"type": "object", "properties": {"a": {"$ref": ref}}, "list": [{"type": "null"}],
                  "store": {"b": {"$ref": "#/list/0"}}, "required": ["a"]}
        with pytest.raises(PlaygroundError, match="does not point to a schema"):
            from_user(schema=json.dumps(schema))


def test_a_required_name_matched_only_by_pattern_properties_is_writable():
    schema = {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False,
              "required": ["x-street"]}
    assert from_user(schema=json.dumps(schema)) is not None
    recursive = {"type": "object", "patternProperties": {"^x-": {"$ref": "#"}}, "required": ["x-a"]}
    with pytest.raises(PlaygroundError, match="no finite instance"):
        from_user(schema=json.dumps(recursive))


# -- sizes and options -----------------------------------------------------------------------------

def test_a_required_name_that_is_not_allowed_is_named_not_called_recursion():
    """A common slip: 'country' required, not in properties, additionalProperties false. The refusal
    spoke of recursion and never named the property."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city", "country"],
              "additionalProperties": False}
    with pytest.raises(PlaygroundError, match=r"required property 'country' is not allowed .* add it to properties"):
        from_user(schema=json.dumps(schema))


def test_a_required_name_given_the_schema_false_is_named_not_called_recursion():
    """A required name whose properties entry, or a pattern matching it, is `false` was refused as recursion."""
    for holder in ({"properties": {"xa": False}}, {"patternProperties": {"^x": False}}):
        with pytest.raises(PlaygroundError, match=r"required property 'xa' has the schema false .* drop it from required"):
            from_user(schema=json.dumps({"type": "object", "required": ["xa"], **holder}))


def test_a_deep_schema_is_told_how_to_fit():
    """20 levels of nested properties are 40 levels of JSON: refused with the way out ($defs), which
    the same 20 levels take."""
    deep = {"type": "string"}
    for _ in range(20):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(PlaygroundError, match=r"nested more than 32 objects and arrays deep .* into \$defs"):
        from_user(schema=json.dumps(deep))
    chained = {"$defs": {f"l{i}": {"type": "object", "properties": {"a": {"$ref": f"#/$defs/l{i + 1}"}}} for i in range(20)}}
    chained["$defs"]["l20"] = {"type": "string"}
    assert from_user(schema=json.dumps(dict(chained, **{"$ref": "#/$defs/l0"}))) is not None


def test_the_size_limit_counts_the_schema_minified(monkeypatch):
    from playground.constraints import spec as spec_module
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(20)}}
    pretty, minified = json.dumps(schema, indent=8), json.dumps(schema, separators=(",", ":"))
    monkeypatch.setattr(spec_module, "MAX_SCHEMA_CHARS", len(minified))
    spec_module.parse_schema.cache_clear()
    assert len(pretty) > 2 * len(minified) and from_user(schema=pretty) is not None
    monkeypatch.setattr(spec_module, "MAX_SCHEMA_CHARS", len(minified) - 1)
    spec_module.parse_schema.cache_clear()
    with pytest.raises(PlaygroundError, match="minified"):
        from_user(schema=pretty)
    spec_module.parse_schema.cache_clear()


@pytest.mark.parametrize("backend", BACKENDS)
def test_overlapping_one_of_compiles_as_any_of_with_a_note(tokenizer, backend):
    schema = {"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}},
                        {"type": "object", "properties": {"b": {"type": "string"}}}]}
    constraint = compiled(tokenizer, schema, backend)
    assert any("oneOf is enforced as anyOf" in note for note in constraint.notes), constraint.notes
    assert constraint.validate("{}", [], complete=True)[0] is False  # matches both branches: not oneOf


def test_xgrammar_names_what_it_drops_beside_a_ref(tokenizer):
    """Draft 2020-12 applies a $ref and its sibling keywords; xgrammar follows the $ref alone (a
    sibling maxLength 3 let 8 letters through) and said nothing. Annotations beside it are no loss."""
    schema = {"$defs": {"n": {"type": "string"}}, "type": "object", "required": ["a"],
              "properties": {"a": {"$ref": "#/$defs/n", "maxLength": 3}, "b": {"$ref": "#/$defs/n", "title": "B"}}}
    assert compiled(tokenizer, schema, "xgrammar").notes == (
        "not enforced while writing (checked after the run): keywords beside a $ref",)
    assert compiled(tokenizer, schema, "llguidance").notes == ()


def test_an_unknown_format_is_an_annotation_not_a_refusal(tokenizer):
    constraint = compiled(tokenizer, {"type": "string", "format": "color-hex"}, "llguidance")
    assert constraint.notes == ("not enforced while writing, nor checked after the run (no checker for it here): "
                                "format color-hex",)  # (it said "checked after the run": nothing checks it)
    assert compiled(tokenizer, {"type": "string", "format": "color-hex"}, "xgrammar") is not None


def test_a_format_no_check_here_reads_is_not_said_to_be_checked(tokenizer):
    """jsonschema checks uri, iri, hostname and duration only with packages it makes optional: outputs under
    format uri-reference were garbage, said "valid", with a note that they were checked after the run (an audit)."""
    from playground.constraints.schema_keywords import CHECKED_FORMATS
    schema = {"type": "object", "properties": {"u": {"type": "string", "format": "uri-reference"},
                                               "d": {"type": "string", "format": "date"}}}
    assert "uri-reference" not in CHECKED_FORMATS and "date" in CHECKED_FORMATS
    notes = " ".join(compiled(tokenizer, schema, "llguidance").notes)
    assert "nor checked after the run (no checker for it here): format uri-reference" in notes
    assert compiled(tokenizer, {"type": "string", "format": "uri-reference"}, "llguidance").validate(
        '"not a uri at all"', [], complete=True)[0] is True  # (what the note is for: nothing here refuses it)


@pytest.mark.parametrize("options", [{"whitespace_flexible": True}, {"whitespace_pattern": "[ \\n]*"}])
def test_a_schema_cannot_turn_free_whitespace_back_on(tokenizer, options):
    """llguidance reads options from the schema's own "x-guidance" key: they are dropped, ours used
    (a whitespace_pattern survived the overrides and let the model write runs of newlines)."""
    constraint = compiled(tokenizer, {"type": "object", "x-guidance": options}, "llguidance")
    guide = constraint.guide(2)
    guide._commit(tokenizer("{", add_special_tokens=False).input_ids)
    mask = guide.next_mask()
    for text in (" ", "\n"):
        ws = tokenizer(text, add_special_tokens=False).input_ids
        assert len(ws) == 1 and not (mask[ws[0] // 32].item() >> (ws[0] % 32)) & 1, text


# -- a cut output says where and why ---------------------------------------------------------------

@pytest.mark.parametrize("text, where", [
    ('{"tags": ["a", "b", ', "inside the array at /tags after 2 items: an array with no maxItems"),
    ('{"name": "abcabcabc', "inside the string at /name: the schema sets no maxLength"),
    ('{"n": 123456789', "inside the number at /n: a number with no maximum or minimum can go on with digits; "
                        "add maximum and minimum"),
    ('{"price": 123456789', "inside the number at /price: a number with no maximum can go on with digits; add maximum "),
])
def test_a_cut_output_says_where_and_what_would_end_it(tokenizer, text, where):
    """A number bounded below only is said to lack a maximum (it said "no maximum (or minimum)")."""
    schema = {"type": "object", "properties": {"price": {"type": "number", "minimum": 0}}}
    constraint = compiled(tokenizer, schema, "llguidance")
    valid, error = constraint.validate(text, [], complete=False)
    assert valid is False and error.startswith("truncated") and where in error, error


@pytest.mark.parametrize("text, where", [
    ('{"a":', "cut before the value at /a: the tokens ran out before it was complete; allow more new tokens"),
    ('{"a": 1, "b": ', "cut before the value at /b: the tokens ran out before it was complete"),
    ("{", "cut inside the object at the top level: the tokens ran out before it was complete"),
    ('{"a": 1,', "cut inside the object at the top level: the tokens ran out before it was complete"),
    ('{"a": 1, "b": "x", "c": 2, "d": 3,', "the model kept adding them; add additionalProperties: false"),
    ('{"list": [', "cut inside the array at /list after 0 items: the tokens ran out before it was complete"),
    ('{"list": [1, ', "cut inside the array at /list after 1 item: the tokens ran out before it was complete"),
    ('{"list": [1, 2, 3, ', "after 3 items: an array with no maxItems can go on with items; add maxItems"),
])
def test_a_container_cut_on_its_way_is_not_said_to_loop(text, where):
    """`{"a":` (a value due) and `{"a": 1,` (b required still due) were told "the model kept adding them; add
    additionalProperties: false", which would not have ended them, and `[` "an array with no maxItems can go on
    with items" (a review): only members past those the schema asks for are a loop."""
    from playground.constraints.cut import truncation_hint
    schema = {"type": "object", "required": ["a", "b"],
              "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                             "list": {"type": "array", "minItems": 2, "items": {"type": "integer"}}}}
    hint = truncation_hint(text, schema)
    assert where in hint, hint


TREE = {"$defs": {"node": {"type": "object", "additionalProperties": False, "required": ["name"],
                           "properties": {"name": {"type": "string", "maxLength": 30},
                                          "children": {"type": "array", "maxItems": 3, "items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node"}
USERNAME = {"type": "object", "properties": {"username": {"type": "string", "maxLength": 12, "pattern": "^[a-z][a-z0-9_]*$"}}}
VERSION = {"type": "object", "properties": {"version": {"type": "string", "pattern": r"^[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,3}$"}}}


def test_a_cut_inside_a_name_only_a_pattern_limits_asks_for_a_bound_on_names(tokenizer):
    """additionalProperties: false beside patternProperties ^[A-Z_][A-Z0-9_]*$ was said to bound a name ("the schema
    bounds it, but the tokens ran out first"), and the fix offered was the additionalProperties: false it had."""
    schema = {"type": "object", "patternProperties": {"^[A-Z_][A-Z0-9_]*$": {"type": "string", "maxLength": 20}},
              "additionalProperties": False}
    valid, error = compiled(tokenizer, schema, "llguidance").validate('{"ABCDEFGHIJKLMNOP', [], complete=False)
    assert valid is False and "the schema bounds it" not in error and "add additionalProperties" not in error
    assert "add propertyNames with a maxLength to the schema" in error, error
    bounded = {**schema, "patternProperties": {"^[A-Z]{1,8}$": {"type": "string"}}}
    assert "the schema bounds it" in compiled(tokenizer, bounded, "llguidance").validate('{"ABCDEFG', [], complete=False)[1]


@pytest.mark.parametrize("schema, text, backend, says", [
    (USERNAME, '{"username": "user123456789012', "xgrammar", "the schema bounds it, but that bound was not enforced"),
    (USERNAME, '{"username": "user12', "llguidance", "the schema bounds it, but the tokens ran out first"),
    (VERSION, '{"version": "1.2', "llguidance", "the schema bounds it, but the tokens ran out first"),  # demo-json's
    (TREE, '{"name": "a", "children": [' * 4 + '{"name": "b", "', "llguidance",
     "nested in 8 containers and the schema refers to itself"),
])
def test_a_cut_inside_a_bounded_value_does_not_ask_for_the_bound(tokenizer, schema, text, backend, says):
    """The hint said 'the schema sets no maxLength ... add maxLength' where it had one (xgrammar drops
    maxLength beside a pattern: its note says so), and 'add additionalProperties: false' to a
    self-referring schema that had it, where the model had nested 18 levels deep."""
    constraint = compiled(tokenizer, schema, backend)
    valid, error = constraint.validate(text, [], complete=False)
    assert valid is False and says in error, error
    assert "add maxLength" not in error and "add additionalProperties" not in error


@pytest.mark.parametrize("pattern, bounded", [
    (r"^[0-9]{1,2}\.[0-9]{1,3}$", True), ("^(ab|cd){2}$", True), (r"^[a-z*+]{3}$", True),
    ("^[a-z]+$", False), (r"^\d{2,}$", False), ("[0-9]{3}", False), (r"^[a-z]{3}\$", False), (r"^[^\]]*$", False),
])
def test_a_string_pattern_bounds_the_cut_only_where_its_length_is_bounded(pattern, bounded):
    """demo-json's version pattern (1-2, 1-2, 1-3 digits) bounds the string, yet the hint said "the
    schema sets no maxLength (or enum, or pattern) ... add maxLength"; an open pattern still asks for it."""
    from playground.constraints.cut import truncation_hint
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    hint = truncation_hint('{"v": "12', schema)
    assert ("the tokens ran out first" in hint) == bounded and ("add maxLength" in hint) != bounded, hint


def test_a_cut_inside_an_array_short_of_its_min_items_asks_for_tokens_not_a_bound():
    """A number cut in item 6 of an array of minItems 200 was told to add maximum and minimum, which could not let
    it end (a CLI review): the array's minimum is the limit; past it, the open value's own bound is asked again."""
    from playground.constraints.cut import truncation_hint
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}, "minItems": 200}}}
    hint = truncation_hint('{"a": [0, 1, 2, 2, 1, 2', schema)  # the array's minimum first, the number's own bound beside
    assert hint.startswith(" (cut inside the number at /a/5: the array at /a asks for at least 200 items and had 6; "
                           "allow more new tokens; besides, a number with no maximum or minimum"), hint
    bounded = {"type": "array", "minItems": 5, "items": {"type": "string", "maxLength": 3}}  # its items end: the minimum alone
    assert truncation_hint('["ab", "a', bounded) == (" (cut inside the string at /1: the array at the top level asks for "
                                                    "at least 5 items and had 2; allow more new tokens)")
    nested = {"type": "array", "minItems": 3, "items": {"type": "object", "properties": {"n": {"type": "string"}}}}
    assert "the array at the top level asks for at least 3 items and had 1" in truncation_hint('[{"n": "abc', nested)
    assert "add maximum and minimum" in truncation_hint('{"a": [' + "1, " * 200 + "123", schema)  # (its 201st)
    pairs = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}  # prefixItems ask for no item
    assert "asks for at least" not in truncation_hint('["abcabcabcabc', pairs)


def test_a_cut_inside_a_property_name_asks_for_a_bound_on_its_length():
    """A labels map (additionalProperties strings, maxProperties 3) cut inside one endless name was told to
    add additionalProperties: false, which would forbid every label (a review in Chromium)."""
    from playground.constraints.cut import truncation_hint
    labels = {"type": "object", "properties": {"labels": {"type": "object", "maxProperties": 3,
                                                          "additionalProperties": {"type": "string"}}}}
    hint = truncation_hint('{"labels": {"nginx-2-2-1-1-1', labels)
    assert "cut inside the property name at /labels" in hint and "add propertyNames with a maxLength" in hint, hint
    assert "additionalProperties: false" not in hint
    bounded = {"type": "object", "propertyNames": {"maxLength": 3}, "additionalProperties": {"type": "integer"}}
    note = "not enforced while writing (checked after the run): dependentSchemas, propertyNames"  # (llguidance's)
    hint = truncation_hint('{"abcdefghijkl', bounded, (note,))  # (a review: it said "the tokens ran out first")
    assert "the schema bounds it, but that bound was not enforced while writing" in hint, hint
    assert "the tokens ran out first" in truncation_hint('{"ab', bounded), hint


def test_a_string_no_value_satisfies_names_no_rule_it_does_not_have():
    """A pattern against a format was put down to "the length limits" the schema did not have (a review)."""
    with pytest.raises(PlaygroundError, match=r"those it has of a pattern, a format and length limits contradict"):
        from_user(schema=json.dumps({"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$", "format": "email"}))


@pytest.mark.parametrize("schema, said", [
    ({"type": "string", "format": "email", "maxLength": 30}, "minLength/maxLength together with format"),
    ({"type": "string", "pattern": "^a+$", "maxLength": 5}, "minLength/maxLength together with pattern"),
    ({"type": "integer", "multipleOf": 0.5}, "multipleOf"),
    ({"type": "number", "multipleOf": 3}, "multipleOf"),  # ('xgrammar: multipleOf is not supported for type:number')
])
def test_what_xgrammar_drops_is_said_once_in_the_notes_words(tokenizer, schema, said):
    """Each was said twice, the second time in xgrammar's own words ('xgrammar: format combined with
    minLength/maxLength is not supported; ignoring ...'), or only in them (a pattern's, multipleOf 0.5's; a review)."""
    notes = compiled(tokenizer, schema, "xgrammar").notes
    assert notes == (f"not enforced while writing (checked after the run): {said}",), notes


def test_the_cut_hint_stays_small_on_a_schema_that_multiplies():
    """anyOf [$ref "#" x 8, an array of "#"]: followed naively, each step of the path multiplied the
    subschemas (3.7 million at the first step, in the server process); each is followed once."""
    from playground.constraints.cut import MAX_HELD, holding, truncation_hint
    bomb = {"anyOf": [{"$ref": "#"}] * 8 + [{"type": "array", "items": {"$ref": "#"}}, {"type": "integer"}]}
    held, recursed = holding(bomb, [0, 0, 0, 0])
    assert len(held) <= MAX_HELD and recursed
    assert "refers to itself" in truncation_hint("[" * 8, bomb)


def test_xgrammar_allows_unnamed_items_where_the_schema_needs_them(tokenizer):
    """xgrammar's strict mode allows no items or properties beyond those named; where a minimum
    needs more, the schema is compiled by JSON Schema's own rule instead of refused."""
    for schema in ({"type": "array", "minItems": 2}, {"type": "object", "minProperties": 1}):
        constraint = compiled(tokenizer, schema, "xgrammar")
        assert constraint.notes == () and constraint.guide(1).next_mask().any()


def test_xgrammar_reads_a_property_false_as_a_name_refused(tokenizer):
    """A property whose schema is false (the usual mark of a field removed) made xgrammar refuse the whole
    schema (a review); beside additionalProperties false, or none (as xgrammar's strict mode reads it: no name
    beyond those listed), it is left out of what xgrammar reads: refused still."""
    for closed in ({"additionalProperties": False}, {}):
        schema = {"type": "object", "required": ["n"], **closed,
                  "properties": {"legacy": False, "n": {"type": "integer", "minimum": 0, "maximum": 9}}}
        for backend in ("llguidance", "xgrammar"):
            constraint = compiled(tokenizer, schema, backend)
            assert allowed(constraint, tokenizer, '{"', "n") and not allowed(constraint, tokenizer, '{"', "l"), backend
    read = xgr_reads.as_xgrammar_reads({"type": "object", "minProperties": 2, "properties": {"a": {}, "b": False}})
    assert read["properties"] == {"a": {}} and read["additionalProperties"] is False  # (not reopened by the compile
    # without strict mode a minimum past the names listed needs: "b" stays out; that schema is refused instead)
    with pytest.raises(PlaygroundError):
        compiled(tokenizer, {"type": "object", "minProperties": 2, "properties": {"a": {}, "b": False}}, "xgrammar")


def test_xgrammar_keeps_what_sits_beside_allof_under_unevaluated_properties(tokenizer):
    """Extending a base schema (allOf [$ref base] beside properties, required, unevaluatedProperties false):
    the merge for xgrammar was abandoned, which then read allOf alone and wrote {"id": 0}, no "name" (a review)."""
    schema = {"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
              "allOf": [{"$ref": "#/$defs/base"}], "properties": {"name": {"type": "string", "maxLength": 5}},
              "required": ["name"], "unevaluatedProperties": False}
    constraint = compiled(tokenizer, schema, "xgrammar")
    assert constraint.notes == (), constraint.notes
    assert allowed(constraint, tokenizer, '{"', "n") and not allowed(constraint, tokenizer, '{"', "x")  # (xgrammar
    # writes the names in the order the merged node lists them: "name", then "id")
    assert not allowed(constraint, tokenizer, '{"name": "a"', "}") and allowed(constraint, tokenizer, '{"name": "a"', ",")
    assert allowed(constraint, tokenizer, '{"name": "a", "', "i")  # "id", required too


def test_a_ref_whose_pointer_is_escaped_is_followed_by_both_backends(tokenizer):
    """A $ref's pointer is %-encoded where a definition's name holds what a URI may not ("List[int]", from
    generics) and ~-escaped where it holds "/" or "~": xgrammar looked for a field "List%5Bint%5D" and
    refused the schema ("Cannot find field"). Each backend now reads the definition the pointer names."""
    schema = {"$defs": {"List[int]": {"type": "array", "items": {"type": "integer"}},
                        "a/b": {"type": "string", "enum": ["q"]}, "a_b": {"type": "boolean"}, "c~d": {"type": "null"}},
              "type": "object", "additionalProperties": False, "required": ["l", "s", "t", "n"],
              "properties": {"l": {"$ref": "#/$defs/List%5Bint%5D"}, "s": {"$ref": "#/$defs/a~1b"},
                             "t": {"$ref": "#/$defs/a_b"}, "n": {"$ref": "#/$defs/c~0d"}}}
    read = xgr_reads.as_xgrammar_reads(schema)
    assert read["properties"]["s"]["$ref"] == "#/$defs/a_b_2" and read["$defs"]["a_b_2"] == {"type": "string", "enum": ["q"]}
    assert read["properties"]["l"]["$ref"] == "#/$defs/List[int]" and read["properties"]["n"]["$ref"] == "#/$defs/c~d"
    for backend in ("llguidance", "xgrammar"):
        constraint = compiled(tokenizer, schema, backend)
        assert allowed(constraint, tokenizer, '{"l": [', "1") and not allowed(constraint, tokenizer, '{"l": [', '"')
        assert allowed(constraint, tokenizer, '{"l": [], "s": "', "q") and not allowed(constraint, tokenizer, '{"l": [], "s": "', "x")
        assert allowed(constraint, tokenizer, '{"l": [], "s": "q", "t": ', "t") and not allowed(
            constraint, tokenizer, '{"l": [], "s": "q", "t": ', '"'), backend  # the other "a_b", not renamed over
        assert allowed(constraint, tokenizer, '{"l": [], "s": "q", "t": true, "n": ', "n"), backend



def test_a_ref_through_a_pattern_properties_pattern_is_followed_by_xgrammar(tokenizer):
    """A $ref into a patternProperties entry (%-encoded: `#/properties/inputs/patternProperties/%5B-_.a-z%5D%2B/...`,
    JsonSchemaStore opspec-io) pointed at a pattern xgrammar's copy had rewritten to be matched whole: "Cannot find
    field", the schema refused. The pointer now names the rewritten pattern."""
    schema = {"type": "object", "additionalProperties": False, "required": ["d"], "properties": {
        "inputs": {"type": "object", "patternProperties": {"[-_.a-z]+": {
            "type": "object", "properties": {"mode": {"type": "string", "enum": ["ro", "rw"]}}}}},
        "d": {"$ref": "#/properties/inputs/patternProperties/%5B-_.a-z%5D%2B/properties/mode"}}}
    read = xgr_reads.as_xgrammar_reads(schema)
    assert read["properties"]["d"]["$ref"] == "#/properties/inputs/patternProperties/.*(?:[-_.a-z]+).*/properties/mode"
    for backend in BACKENDS:
        constraint = compiled(tokenizer, schema, backend)
        assert allowed(constraint, tokenizer, '{"d": "', "r") and not allowed(constraint, tokenizer, '{"d": "', "x"), backend


def test_a_ref_to_a_pattern_written_as_another_patterns_rewriting_is_followed_to_its_own(tokenizer):
    """`^x$` is rewritten `(?:x)` for xgrammar: a $ref to a second pattern written `(?:x)` was taken to the
    first (a string where the schema says an integer, no note; a review)."""
    schema = {"type": "object", "additionalProperties": False, "required": ["d"], "properties": {
        "inputs": {"type": "object", "patternProperties": {"^x$": {"type": "string"}, "(?:x)": {"type": "integer"}}},
        "d": {"$ref": "#/properties/inputs/patternProperties/(%3F:x)"}}}
    constraint = compiled(tokenizer, schema, "xgrammar")
    assert allowed(constraint, tokenizer, '{"d": ', "1") and not allowed(constraint, tokenizer, '{"d": ', '"')


# -- a regex means what the checker reads, on both backends -----------------------------------------

def allowed(constraint, tokenizer, prefix: str, text: str) -> bool:
    guide = constraint.guide(2)
    assert guide._commit(tokenizer(prefix, add_special_tokens=False).input_ids), prefix
    mask, ids = guide.next_mask(), tokenizer(text, add_special_tokens=False).input_ids
    assert len(ids) == 1, text
    return bool((mask[ids[0] // 32].item() >> (ids[0] % 32)) & 1)


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("draft, anchor", [("http://json-schema.org/draft-04/schema#", {"id": "#n"}),
                                           ("http://json-schema.org/draft-07/schema#", {"$id": "#n"}),
                                           ("https://json-schema.org/draft/2020-12/schema", {"$anchor": "n"}),
                                           ("https://json-schema.org/draft/2020-12/schema", {"$dynamicAnchor": "n"})])
def test_a_ref_to_an_anchor_is_followed_in_every_draft(tokenizer, backend, draft, anchor):
    """Drafts 4-7 name an anchor with an id that is a fragment: such a $ref was refused as pointing
    nowhere (JSONSchemaBench o35904-o35906), and xgrammar, given `#n`, wrote any value there."""
    schema = {"$schema": draft, "definitions": {"n": {**anchor, "type": "integer"}},
              "type": "object", "properties": {"a": {"$ref": "#n"}}, "required": ["a"]}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"a": ', "1") and not allowed(constraint, tokenizer, '{"a": ', '"')
    assert not any("URI" in note or "$ref" in note for note in constraint.notes), constraint.notes


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_prefix_items_under_an_earlier_draft_is_what_its_checker_reads(tokenizer, backend):
    """Draft 4 has no prefixItems: its checker ignores it, and the engines wrote by it ([2], refused
    by the check as not one of [1])."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "array", "items": {"enum": [1]},
              "prefixItems": [{"enum": [2]}], "minItems": 1}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, "[", "1") and not allowed(constraint, tokenizer, "[", "2")


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_an_earlier_drafts_tuple_closed_by_additional_items_false_is_written(tokenizer, backend):
    """Draft-07's `items: [a], additionalItems: false` is 2020-12's `prefixItems: [a], items: false`; the engines'
    form kept `$schema: draft-07`, and llguidance read it by draft-07's rules (`items: false`: no item at all):
    with minItems 1 it was refused as unsatisfiable (an audit of real-world schemas)."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "integer"}],
              "additionalItems": False, "minItems": 1}
    constraint = compiled(tokenizer, schema, backend)
    assert constraint.spec.engine_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert allowed(constraint, tokenizer, "[", "1") and not allowed(constraint, tokenizer, "[1", ",")  # one item only
    assert not allowed(constraint, tokenizer, "[", '"')


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_whole_number_past_2_to_the_53_is_written_exactly_or_said_not_to_be(tokenizer, backend):
    """llguidance reads numbers as 64-bit floats: {"const": 9007199254740993} wrote ...992, and every output
    failed the check without a word (an audit). Said where it is so; xgrammar writes the number exactly."""
    schema = {"type": "object", "properties": {"id": {"const": 9007199254740993}}, "required": ["id"]}
    constraint = compiled(tokenizer, schema, backend)
    rounded = backend == "llguidance"
    assert any("written rounded to 9007199254740992" in note for note in constraint.notes) == rounded
    assert allowed(constraint, tokenizer, '{"id": 900719925474099', "3") != rounded
    assert allowed(constraint, tokenizer, '{"id": 900719925474099', "2") == rounded


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_whole_number_past_64_bits_is_said_to_be_written_as_a_float(tokenizer, backend):
    """xgrammar writes a const integer past 64 bits as a float: 1.2345678901234567e+19, which the check
    refused with no word why (a review); llguidance rounds it too, where its note said xgrammar was exact."""
    schema = {"type": "object", "properties": {"id": {"enum": [12345678901234567891, 1]}}, "required": ["id"]}
    notes = " ".join(compiled(tokenizer, schema, backend).notes)
    said = {"xgrammar": "xgrammar writes integers past 64 bits as floats: 12345678901234567891 (const or enum) is written "
                        "1.2345678901234567e+19, which the check refuses (llguidance rounds it too)",
            "llguidance": "written rounded to 12345678901234567168, which the check refuses (xgrammar writes it as a float too)"}
    assert said[backend] in notes
    within = {"type": "object", "properties": {"id": {"const": 2 ** 63 - 1}}, "required": ["id"]}  # 64 bits: exact there
    assert "past 64 bits" not in " ".join(compiled(tokenizer, within, "xgrammar").notes)


@pytest.mark.parametrize("bounds, dropped, past_int64", [
    ({"minimum": -9223372036854775808, "maximum": 9223372036854775807},  # int64's
     "maximum 9223372036854775807, minimum -9223372036854775808", ""),
    ({"minimum": -1e30}, "minimum -1e+30", "minimum -1e+30"),
    ({"minimum": 0, "maximum": 18446744073709551615}, "maximum 18446744073709551615", "maximum 18446744073709551615"),  # uint64's
])
def test_an_integer_bound_past_2_to_the_53_is_left_to_the_check(tokenizer, bounds, dropped, past_int64):
    """llguidance 1.9.1 refused a whole schema for an int64 field's minimum ("Failed to generate regex for integer
    range"; JSONSchemaBench's Github_hard o90912, over all 9,557), clamped a uint64's maximum to 2^63 - 1 (valid
    numbers refused) and read bounds past 2^53 rounded: now such bounds go unenforced while writing, said so,
    and the check after the run refuses a number past them."""
    schema = {"type": "object", "properties": {"id": {"type": "integer", **bounds}}, "required": ["id"]}
    constraint = compiled(tokenizer, schema, "llguidance")
    assert f"not enforced while writing (checked after the run): {dropped}" in constraint.notes
    assert not allowed(constraint, tokenizer, '{"id": ', '"')
    assert allowed(constraint, tokenizer, '{"id": 922337203685477580', "8")  # past int64, within uint64
    assert validate_json('{"id": 5}', schema) == (True, None)
    assert not validate_json('{"id": -99999999999999999999999999999999}', schema)[0]
    constraint = compiled(tokenizer, schema, "xgrammar")  # it refused a whole schema for an integer's bound past 64 bits
    assert [n for n in constraint.notes if "not enforced" in n] == (
        [f"not enforced while writing (checked after the run): {past_int64}"] if past_int64 else []), constraint.notes
    assert allowed(constraint, tokenizer, '{"id": 922337203685477580', "8") is bool(past_int64)  # int64's: enforced


def test_an_integer_range_below_minus_2_to_the_63_crashes_nothing():
    """llguidance 1.9.1 ends the process on an integer range with both ends below about -2^63 (a review: a
    first version asked it about each node with such a bound, and an unreferenced definition killed the
    page's check); such bounds are dropped without asking it."""
    schema = {"$defs": {"u": {"type": "integer", "minimum": -1e20, "maximum": -1e19}}, "type": "string"}
    assert from_user(schema=json.dumps(schema)).kind == "json"
    assert read_constraint(from_user(schema=json.dumps(schema))) == [
        "not enforced while writing (checked after the run): maximum -1e+19, minimum -1e+20"]


def test_only_bounds_past_2_to_the_53_are_dropped_and_named_in_a_line():
    schema = {"type": "object", "properties": {
        **{f"n{i}": {"type": ["number", "null"], "minimum": -float(f"{i + 1}e30"), "maximum": 1e3} for i in range(6)},
        "exact": {"type": "integer", "minimum": -2 ** 53, "maximum": 2 ** 53},  # written as written: kept
        "s": {"type": "string", "maxLength": 3, "minimum": -1e30},  # no number to bound
        "c": {"const": {"minimum": -1e30}}}}  # a value, not a schema
    out, dropped = unwritable.without_unwritable(schema)
    assert dropped == ["minimum -1e+30", "minimum -2e+30", "minimum -3e+30", "minimum -4e+30", "more bounds like them: 2"]
    assert all(out["properties"][f"n{i}"] == {"type": ["number", "null"], "maximum": 1e3} for i in range(6))
    assert {name: out["properties"][name] for name in ("exact", "s", "c")} == {
        name: schema["properties"][name] for name in ("exact", "s", "c")}
    assert "minimum" in schema["properties"]["n0"]  # (the caller's schema untouched)


@pytest.mark.parametrize("schema, kept", [
    ({"minProperties": 1, "maxProperties": 2}, "minProperties"),  # llguidance writes the first alone
    ({"minProperties": 2}, None),
])
def test_of_two_counts_the_one_llguidance_writes_stays(schema, kept):
    node = {"type": "object", "additionalProperties": False, "properties": {"a": {}, "b": {}, "c": {}}, **schema}
    out, dropped = unwritable.without_unwritable(node)
    assert sorted(dropped) == sorted(key for key in schema if key != kept)
    assert ({kept: schema[kept]} if kept else {}).items() <= out.items() and not set(dropped) & out.keys()


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_property_counts_beside_optional_properties_are_written_or_left_to_the_check(tokenizer, backend):
    """A valid schema (JSONSchemaBench's Github_medium o8454: minProperties 2 over six optional properties,
    none other allowed) was refused for both backends, "no JSON value can satisfy this schema: minProperties
    (2) is greater than number of properties (0)": llguidance's answer, asked leniently, counts the
    required ones. xgrammar writes the counts; llguidance compiles them only where all are required, so
    there they are left to the check, said so."""
    schema = {"type": "object", "minProperties": 2, "maxProperties": 2, "additionalProperties": False,
              "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}}
    constraint = compiled(tokenizer, schema, backend)
    unenforced = backend == "llguidance"
    assert ("not enforced while writing (checked after the run): maxProperties, minProperties" in constraint.notes) == unenforced
    assert allowed(constraint, tokenizer, '{"a": 1', "}") == unenforced
    assert allowed(constraint, tokenizer, '{"a": 1', ",")
    assert validate_json('{"a": 1, "c": 2}', schema) == (True, None) and not validate_json('{"a": 1}', schema)[0]


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("count", [{"minProperties": 1}, {"maxProperties": 1}])
def test_property_counts_llguidance_writes_beside_optional_properties_stay_enforced(tokenizer, backend, count):
    """llguidance writes a closed object's minProperties 1 or maxProperties 1 beside optional properties (31
    of the 9,557 JSONSchemaBench schemas have one): kept there, not left to the check (a first version of the
    rewrite dropped every count beside an optional property)."""
    schema = {"type": "object", **count, "additionalProperties": False,
              "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    constraint = compiled(tokenizer, schema, backend)
    assert not any("Properties" in note for note in constraint.notes), constraint.notes
    assert allowed(constraint, tokenizer, "{", "}") == ("maxProperties" in count)
    assert allowed(constraint, tokenizer, '{"a": 1', ",") == ("minProperties" in count)


@pytest.mark.parametrize("schema, why", [
    ({"minProperties": 3, "additionalProperties": False, "properties": {"a": {}, "b": {}}},
     "minProperties (3) asks for more properties than the object allows"),
    ({"maxProperties": 1, "properties": {"a": {}, "b": {}, "c": {}}, "required": ["a", "b"]}, "required > maxProperties"),
    ({"minProperties": 3, "maxProperties": 2, "properties": {"a": {}}}, "minProperties > maxProperties"),
    ({"minProperties": 2, "additionalProperties": False, "properties": {"a": False, "b": {}}},  # `a` can never be
     "minProperties (2) asks for more properties than the object allows"),  # written (a review)
])
def test_property_counts_no_object_meets_are_still_refused(schema, why):
    with pytest.raises(PlaygroundError, match=re.escape(f"no JSON value can satisfy this schema: {why}")):
        from_user(schema=json.dumps({"type": "object", **schema}))


@pytest.mark.parametrize("schema, loop", [
    ({"anyOf": [{"$ref": "#"}, {"type": "null"}]}, "# -> #/anyOf/0 -> #"),
    ({"not": {"$ref": "#/not"}}, "#/not -> #/not"),
    ({"$dynamicRef": "#", "type": "null"}, "# -> #"),
    ({"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}},
      "$defs": {"b": {"oneOf": [{"$ref": "#/properties/a"}, {"type": "string"}]}}},
     "#/properties/a -> #/properties/a/allOf/0 -> #/$defs/b -> #/$defs/b/oneOf/0 -> #/properties/a"),
    ({"properties": {"a": {"$ref": "#/port"}}, "port": {"properties": {"b": {"if": {"$ref": "#/port/properties/b"}}}}},
     "#/port/properties/b -> #/port/properties/b/if -> #/port/properties/b"),
    ({"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": True,
      "anyOf": [{"$recursiveRef": "#"}, {"type": "null"}]}, "# -> #/anyOf/0 -> #"),
])
def test_a_reference_loop_that_enters_no_property_or_item_is_refused_naming_it(schema, loop):
    """Such a loop checks the same value against the same schema again: both engines compiled these
    and every output was "could not be checked: nested too deeply for the checker"."""
    with pytest.raises(PlaygroundError, match=re.escape(f"refers back to itself without entering a property or an item ({loop})")):
        from_user(schema=json.dumps(schema))


def test_a_loop_is_named_by_its_own_places_and_a_then_without_if_is_no_step():
    """A node equal to one on the loop, but elsewhere, was named as its start; `then` without `if` is
    never applied (a review's finds)."""
    schema = {"properties": {"p": {"$ref": "#/$defs/x"}},
              "$defs": {"x": {"allOf": [{"$ref": "#/$defs/y"}]}, "y": {"allOf": [{"$ref": "#/$defs/y"}]}}}
    with pytest.raises(PlaygroundError, match=re.escape("(#/$defs/y -> #/$defs/y/allOf/0 -> #/$defs/y)")):
        from_user(schema=json.dumps(schema))
    from_user(schema=json.dumps({"type": ["object", "string"], "then": {"$ref": "#"}}))


def test_recursion_through_properties_or_items_is_no_loop():
    for schema in ({"type": "object", "properties": {"next": {"$ref": "#"}}},
                   {"$defs": {"n": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}},
                    "$ref": "#/$defs/n"},
                   {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"type": "string"}},
                    "$ref": "#/definitions/a", "allOf": [{"$ref": "#"}]}):  # (draft 7 ignores the siblings of $ref)
        from_user(schema=json.dumps(schema))


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_draft_2019_09_recursive_references_are_followed(tokenizer, backend):
    """`$recursiveAnchor: true` was refused (draft 2020-12's meta-schema, which the engines' form is
    checked against, wants a name there), and xgrammar compiled past $recursiveRef."""
    schema = {"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": True,
              "anyOf": [{"type": "integer"}, {"type": "array", "items": {"$recursiveRef": "#"}}]}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, "[[", "1") and not allowed(constraint, tokenizer, "[[", '"')
    assert not constraint.notes, constraint.notes
    parsed = from_user(schema=json.dumps(schema)).schema
    assert validate_json("[[1], 2]", parsed) == (True, None) and not validate_json('[["a"]]', parsed)[0]


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("draft", ["http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-07/schema#"])
def test_an_inner_id_of_a_bare_hash_is_an_empty_anchor_in_drafts_6_and_7(tokenizer, backend, draft):
    """Drafts 6-7 read an $id starting with "#" as an anchor: "#" names no resource (the checker reads
    it so, and the engines' form drops it), but was refused as naming the whole schema again."""
    schema = {"$schema": draft, "definitions": {"a": {"$id": "#", "type": "integer"}},
              "type": "object", "properties": {"x": {"$ref": "#/definitions/a"}}, "required": ["x"]}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"x": ', "1") and not allowed(constraint, tokenizer, '{"x": ', '"')
    assert validate_json('{"x": 1}', from_user(schema=json.dumps(schema)).schema) == (True, None)
    with pytest.raises(PlaygroundError, match="names the whole schema again"):  # (an empty fragment: the root there)
        from_user(schema=json.dumps({**schema, "$schema": "https://json-schema.org/draft/2020-12/schema"}))


def test_xgrammar_leaves_out_or_names_an_enum_with_no_value_its_node_allows(tokenizer):
    """Every value of `{"enum": ["X", "Y"], "type": "object"}` is refused by its own type: xgrammar
    cannot be told "no value" (it refuses an empty enum and `false`), so it wrote "X" there, and
    said nothing of it (JSONSchemaBench o31055). Where JSON Schema never takes the node (a property not
    required, an anyOf branch) it is left out, as llguidance does; a required one is refused before."""
    schema = {"type": "object", "properties": {"b": {"enum": ["X", "Y"], "type": "object"}, "c": {"type": "integer"}},
              "additionalProperties": False}
    for backend in ("xgrammar", "llguidance"):
        constraint = compiled(tokenizer, schema, backend)
        assert not allowed(constraint, tokenizer, '{"', "b") and allowed(constraint, tokenizer, '{"', "c"), backend
    assert not compiled(tokenizer, schema, "xgrammar").notes
    with pytest.raises(PlaygroundError, match="the required property 'b' can have no value"):
        compiled(tokenizer, {**schema, "required": ["b"]}, "xgrammar")
    schema["properties"]["b"]["type"] = "string"
    assert not compiled(tokenizer, schema, "xgrammar").notes


def test_xgrammar_writes_a_const_only_where_its_node_allows_it(tokenizer):
    """A const was written whatever else its node said (`{"type": "null", "const": 1}` wrote 1, and an anyOf
    branch `{"type": "string", "const": 1}` wrote 1 where only null was valid; a fuzzing review): it is read
    as an enum of one, filtered by the rest of its node."""
    constraint = compiled(tokenizer, {"anyOf": [{"type": "string", "const": 1}, {"type": "null"}]}, "xgrammar")
    assert allowed(constraint, tokenizer, "", "n") and not allowed(constraint, tokenizer, "", "1") and not constraint.notes
    schema = {"type": "object", "properties": {"a": {"type": "null", "const": 1}, "c": {"type": "integer"}}}
    constraint = compiled(tokenizer, schema, "xgrammar")
    assert not allowed(constraint, tokenizer, '{"', "a") and allowed(constraint, tokenizer, '{"', "c")
    with pytest.raises(PlaygroundError, match="the required property 'a' can have no value"):
        compiled(tokenizer, {**schema, "required": ["a"]}, "xgrammar")
    constraint = compiled(tokenizer, {"type": "integer", "const": 1, "minimum": 0}, "xgrammar")
    assert allowed(constraint, tokenizer, "", "1") and not allowed(constraint, tokenizer, "", "2") and not constraint.notes


NEVER = {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1}  # (xgrammar: "Invalid range")


@pytest.mark.parametrize("schema, prefix, allows, refuses", [
    ({"type": "object", "properties": {"a": NEVER, "b": {"type": "integer"}}, "additionalProperties": False}, '{"', "b", "a"),
    ({"anyOf": [{"type": "string", "minLength": 5, "maxLength": 2}, {"type": "integer"}]}, "", "1", '"'),
    ({"oneOf": [NEVER, {"type": "string"}]}, "", '"', "1"),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "maxItems": 1}, "[1", "]", ","),
    ({"type": "array", "prefixItems": [{"type": "integer"}, NEVER, {"type": "string"}]}, "[1", "]", ","),
    ({"type": "array", "items": NEVER}, "[", "]", "1"),
    ({"type": "object", "additionalProperties": NEVER}, "{", "}", '"'),
    ({"type": "object", "properties": {"a": {"type": "array", "minItems": 3, "maxItems": 1}}, "additionalProperties": False},
     "{", "}", '"'),
])
def test_xgrammar_leaves_out_a_place_with_no_value_where_json_schema_never_takes_it(tokenizer, schema, prefix, allows,
                                                                                     refuses):
    """A place that may be left out whose schema has no value written in place made xgrammar refuse the
    whole schema ("Invalid range: minimum greater than maximum", "maxItems is less than the number of
    prefixItems") where llguidance wrote `{}`: it is left out, as llguidance leaves it."""
    for backend in BACKENDS:
        constraint = compiled(tokenizer, schema, backend)
        assert allowed(constraint, tokenizer, prefix, allows) and not allowed(constraint, tokenizer, prefix, refuses), backend


def test_a_place_with_no_value_that_cannot_be_left_out_for_xgrammar_is_still_refused_in_its_words(tokenizer):
    """Beside additionalProperties (true by default), a property's name left out of properties would take
    its schema instead: xgrammar's refusal stands, pointing to llguidance; a marker the user writes means nothing."""
    schema = {"type": "object", "properties": {"a": NEVER}, "additionalProperties": True}
    with pytest.raises(PlaygroundError, match=r"xgrammar cannot use this JSON schema: Invalid range.*llguidance backend reads it"):
        compiled(tokenizer, schema, "xgrammar")
    marked = {"anyOf": [{"type": "string", xgr_reads.NO_VALUE: True}, {"type": "integer"}]}
    assert allowed(compiled(tokenizer, marked, "xgrammar"), tokenizer, "", '"')


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_draft4_dollar_id_is_no_keyword_for_the_engines(tokenizer, backend):
    """Draft 4 names ids `id`: its checker reads `$ref`s beside a `"$id"` from the root, and llguidance
    read the `$id` as a new base and refused "Pointer '/definitions/a' does not exist" (JSONSchemaStore
    cryproj, base)."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {"a": {"enum": ["x"]}},
              "type": "object", "properties": {"p": {"$id": "/properties/p", "type": "object",
                                                     "properties": {"q": {"$ref": "#/definitions/a"}}, "required": ["q"]}},
              "required": ["p"], "additionalProperties": False}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"p": {"q": "', "x") and not allowed(constraint, tokenizer, '{"p": {"q": "', "z")
    assert validate_json('{"p": {"q": "x"}}', from_user(schema=json.dumps(schema)).schema) == (True, None)


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_an_inner_dollar_schema_without_an_id_names_no_dialect(tokenizer, backend):
    """A 2020-12 schema holding `{"$schema": draft-04, "id": "schemata/a", ...}`: to its checker the
    inner `$schema` names no resource's dialect (no `$id` beside it) and `id` is no keyword, but
    llguidance read the `id` as a new base and refused "Resource 'json-schema:///schemata/a' is not
    present in a registry" (JSONSchemaBench o91126)."""
    schema = {"definitions": {"a": {"$schema": "http://json-schema.org/draft-04/schema", "id": "schemata/a",
                                    "type": "object", "definitions": {"x": {"enum": ["x"]}},
                                    "properties": {"x": {"$ref": "#/definitions/a/definitions/x"}}, "required": ["x"]}},
              "type": "object", "properties": {"a": {"$ref": "#/definitions/a"}}, "required": ["a"]}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"a": {"x": "', "x") and not allowed(constraint, tokenizer, '{"a": {"x": "', "z")
    assert "$schema" not in from_user(schema=json.dumps(schema)).engine_schema["definitions"]["a"]
    # its subschema is read by its own draft, as the checker reads it (jsonschema takes a subschema's $schema)
    inner = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["a"],
             "properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array",
                                  "prefixItems": [{"const": 1}], "minItems": 1}}}
    assert not allowed(compiled(tokenizer, inner, backend), tokenizer, '{"a": [', "2")
    assert validate_json('{"a": [2]}', from_user(schema=json.dumps(inner)).schema)[0] is False


def test_a_node_with_no_value_named_only_where_it_may_be_left_out_leaves_the_schema_satisfiable(tokenizer):
    """llguidance compiles every node a $ref names and gave up on the whole schema where one has no
    value, so the check refused `{}`'s schema as one no value satisfies (JSONSchemaBench o91126:
    git_url's pattern is no URI, and git_url is optional), and the llguidance backend refused it. A
    reference where a value must be written still refuses it, in the same words."""
    never = {"type": "string", "minLength": 5, "maxLength": 2}
    for schema in ({"$defs": {"g": never}, "type": "object", "properties": {"a": {"$ref": "#/$defs/g"}}},
                   {"$defs": {"g": never}, "type": "array", "items": {"$ref": "#/$defs/g"}},
                   {"$defs": {"g": never, "h": {"type": "object", "properties": {"x": {"$ref": "#/$defs/g"}}, "required": ["x"]}},
                    "anyOf": [{"$ref": "#/$defs/h"}, {"type": "null"}]}):
        from_user(schema=json.dumps(schema))
    for schema, said in (({"$defs": {"g": never}, "type": "object", "properties": {"a": {"$ref": "#/$defs/g"}}, "required": ["a"]},
                          "the required property 'a' can have no value"),
                         ({"$defs": {"g": never}, "$ref": "#/$defs/g"}, "minLength (5) is greater than maxLength (2)")):
        with pytest.raises(PlaygroundError, match=re.escape(f"no JSON value can satisfy this schema: {said}")):
            from_user(schema=json.dumps(schema))
    optional = {"$defs": {"g": never}, "type": "object", "additionalProperties": False,
                "properties": {"a": {"$ref": "#/$defs/g"}, "b": {"type": "integer"}}}
    constraint = compiled(tokenizer, optional, "llguidance")
    assert allowed(constraint, tokenizer, '{"', "b") and not allowed(constraint, tokenizer, '{"', "a")
    # xgrammar refuses `false` there and wrote such a node as it reads it (`{"a": {}}`, refused by the
    # check after the run, with a note): the place is left out; where it cannot be, the note stays
    closed = {**optional, "$defs": {"g": {"type": "object", "required": ["x"], "additionalProperties": False}}}
    constraint = compiled(tokenizer, closed, "xgrammar")
    assert allowed(constraint, tokenizer, '{"', "b") and not allowed(constraint, tokenizer, '{"', "a") and not constraint.notes
    open_names = {**closed, "additionalProperties": True}
    assert any("a $ref to a schema no value satisfies" in note for note in compiled(tokenizer, open_names, "xgrammar").notes)
    chain = {"$defs": {f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}}, "required": ["x"]}
                       for i in range(40)}, "properties": {"a": {"$ref": "#/$defs/d0"}}, "required": ["a"]}
    chain["$defs"]["d40"] = never  # (past the 32 references made false: still refused, not let through)
    with pytest.raises(PlaygroundError, match="no JSON value can satisfy this schema"):
        from_user(schema=json.dumps(chain))


def test_xgrammar_leaves_an_integer_bound_past_64_bits_to_the_check(tokenizer):
    """xgrammar 0.2.8 refused the whole schema for an integer's bound past 64 bits ("Check failed: (false) is false:
    Integer exceeds maximum limit due to precision loss at 64-bit boundary"; JSONSchemaBench's Snowplow maxima of
    9223372036854776000, a uint64's, -1e19): its copy goes without them, said in the note, as llguidance's does; a
    number's bound it writes stays, and so does one merged into an integer's node from beside it."""
    schema = {"type": "object", "required": ["a", "b", "c"], "additionalProperties": False, "properties": {
        "a": {"type": "number", "maximum": 1e30}, "b": {"type": ["integer", "null"], "maximum": 9223372036854776000},
        "c": {"allOf": [{"type": "integer"}, {"minimum": -1e19, "maximum": 5}]}}}
    constraint = compiled(tokenizer, schema, "xgrammar")
    assert "not enforced while writing (checked after the run): maximum 9223372036854776000, minimum -1e+19" in constraint.notes
    assert allowed(constraint, tokenizer, '{"a": 1, "b": 922337203685477600', "1")  # past the bound: left to the check
    assert not allowed(constraint, tokenizer, '{"a": 1, "b": null, "c": ', "6")  # the maximum beside it: enforced
    assert not validate_json('{"a": 1, "b": 9223372036854776001, "c": 0}', schema)[0]
    assert validate_json('{"a": 1e29, "b": null, "c": -99}', schema) == (True, None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pattern_property_of_schema_false_is_left_to_the_check(tokenizer, backend):
    """A patternProperties entry `false` (the names it matches refused; JSONSchemaBench Github_hard o27790, valid)
    made xgrammar refuse the schema ("Schema 'false' cannot accept any value") and llguidance refuse it beside
    another pattern ("... are not disjoint"); alone on an open object llguidance let such a name begin and
    never end (`{"xab` refused every `"`). Now the entry goes from the backend's copy, said in the note, and
    the check after the run refuses such a name; the other patterns stay enforced."""
    overlapping = {"type": "object", "patternProperties": {".*": {"type": "integer"}, "^x": False}}
    constraint = compiled(tokenizer, overlapping, backend)
    assert constraint.notes == ('not enforced while writing (checked after the run): patternProperties "^x": false',)
    assert allowed(constraint, tokenizer, '{"a": ', "1") and not allowed(constraint, tokenizer, '{"a": ', '"')
    assert not validate_json('{"xa": 1}', overlapping)[0] and validate_json('{"a": 1}', overlapping) == (True, None)
    alone = compiled(tokenizer, {"type": "object", "patternProperties": {"^x": False}}, backend)
    assert allowed(alone, tokenizer, '{"xa', '"')  # (the name ends; the check refuses it)
    closed = compiled(tokenizer, {"type": "object", "patternProperties": {"^x": False}, "additionalProperties": False,
                                  "properties": {"a": {"type": "integer"}}}, backend)
    assert allowed(closed, tokenizer, '{"', "a") and not allowed(closed, tokenizer, '{"', "x")


def test_xgrammar_reads_an_empty_pattern_properties_as_none(tokenizer):
    """xgrammar 0.2.8 read `"patternProperties": {}` as no name allowed: only `{}` was written."""
    constraint = compiled(tokenizer, {"type": "object", "patternProperties": {}}, "xgrammar")
    assert allowed(constraint, tokenizer, "{", '"')


@pytest.mark.parametrize("bound", [{"minimum": -9.223372036854776e18}, {"maximum": 9223372036854775808.0},
                                   {"exclusiveMinimum": 9223372036854775807}, {"exclusiveMaximum": -9223372036854775808}])
def test_xgrammar_leaves_an_integer_bound_at_the_edge_of_64_bits_to_the_check(tokenizer, bound):
    """xgrammar refused the whole schema for a float bound of +-2^63 ("precision loss at 64-bit boundary") and for
    an exclusive bound whose first value is past int64 ("would cause integer overflow"); a review."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", **bound}}}
    constraint = compiled(tokenizer, schema, "xgrammar")
    key, value = next(iter(bound.items()))
    assert f"not enforced while writing (checked after the run): {key} {value}" in constraint.notes
    assert allowed(constraint, tokenizer, '{"n": ', "1")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("node, last, then, valid", [
    ({"type": "integer", "maximum": 2.5}, "", "2", True), ({"type": "integer", "maximum": 2.5}, "", "3", False),
    ({"type": "integer", "exclusiveMinimum": 2.5, "maximum": 9}, "", "2", False),
    ({"type": "integer", "exclusiveMinimum": 2.5, "maximum": 9}, "", "3", True),
    ({"type": "integer", "exclusiveMaximum": -0.5, "minimum": -1}, "-", "1", True),
    ({"type": "integer", "minimum": -0.5, "maximum": 0}, "", "0", True),
    ({"type": ["integer", "string"], "maximum": 2.5}, "", "3", False),
    ({"type": ["integer", "number"], "minimum": 2.2, "maximum": 2.5}, "2.", "4", True),
])
def test_an_integers_bound_that_is_no_whole_number_allows_the_integers_it_means(tokenizer, backend, node, last, then,
                                                                                valid):
    """`{"type": "integer", "maximum": 2.5}` is valid; xgrammar 0.2.8 refused the whole schema ("Integer constraint
    must be a whole number"). None of JSONSchemaBench's 9,557 has one; a review found it."""
    constraint = compiled(tokenizer, {"type": "array", "items": node}, backend)
    assert allowed(constraint, tokenizer, "[" + last, then) is valid
    assert constraint.notes == ()


def test_a_refusal_names_a_pattern_only_where_the_pattern_is_its_cause():
    """llguidance refuses a circular $ref with keywords beside it; a look-ahead elsewhere, which it
    also refuses alone, was named as the place at fault (JSONSchemaStore web-types), and the place of
    the $ref was given in llguidance's own base (`json-schema:///#`)."""
    from playground.constraints import read_constraint
    schema = {"type": "object", "properties": {"n": {"$ref": "#", "required": ["m"]},
                                               "m": {"type": "string", "pattern": "^(?!x$).*$"}}}
    with pytest.raises(PlaygroundError) as refused:
        read_constraint(from_user(schema=json.dumps(schema)))
    told = str(refused.value)
    assert "circular references with sibling keys are not supported: # (" in told, told
    assert "in the pattern at" not in told and "json-schema:///" not in told, told
    schema["properties"]["n"] = {"type": "integer"}
    with pytest.raises(PlaygroundError, match=re.escape("look-ahead and look-behind, is not supported (in the pattern at "
                                                        "/properties/m/pattern)")):
        read_constraint(from_user(schema=json.dumps(schema)))


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_regex_dot_and_hex_escape_mean_what_python_reads(tokenizer, backend):
    """xgrammar read '.' as any character, a newline too (the run then failed its own check, which
    reads '.' as Python does), and '\\x41b' as U+041B: both now reach it in words it reads the same."""
    eos = frozenset({tokenizer.eos_token_id})
    dot = compile_constraint(from_user(regex="a.*", backend=backend), tokenizer, len(tokenizer), eos)
    assert allowed(dot, tokenizer, "a", "b") and not allowed(dot, tokenizer, "a", "\n")
    hex_escape = compile_constraint(from_user(regex=r"a\x41b", backend=backend), tokenizer, len(tokenizer), eos)
    assert allowed(hex_escape, tokenizer, "a", "A")


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_latin_1_letters_before_a_hex_digit_are_written_as_in_the_schema(tokenizer, backend):
    """xgrammar wrote é in "café2" as \\xe9 in its grammar and read \\xe92 back as U+0E92: a required name or
    enum value with such a letter was never writable (a constraints review)."""
    schema = {"type": "object", "properties": {"Größe": {"enum": ["café2", "Zürich"]}, "ñb": {"pattern": "^éa+$"}},
              "required": ["Größe", "ñb"], "additionalProperties": False}
    constraint = compile_constraint(from_user(schema=json.dumps(schema), backend=backend), tokenizer, len(tokenizer),
                                    frozenset({tokenizer.eos_token_id}))
    text = '{"Größe": "café2", "ñb": "éaa"}'
    guide = constraint.guide(2)
    assert guide._commit(tokenizer(text, add_special_tokens=False).input_ids) and guide.accepting()
    assert constraint.validate(text, tokenizer(text, add_special_tokens=False).input_ids, True)[0]


def test_a_schema_a_backend_writes_nothing_for_is_said_to_be_that_backends_limit(tokenizer):
    """llguidance 1.9.1 writes no number for multipleOf 0.1 between 0.25 and 0.35 (0.3 is one): "this JSON
    schema can never be satisfied by any output" was said of it, and of nothing about xgrammar (a review)."""
    schema = json.dumps({"type": "number", "multipleOf": 0.1, "minimum": 0.25, "maximum": 0.35})
    eos = frozenset({tokenizer.eos_token_id})
    with pytest.raises(PlaygroundError) as refused:
        compile_constraint(from_user(schema=schema), tokenizer, len(tokenizer), eos)
    assert str(refused.value).startswith("the llguidance backend writes no output for this JSON schema, though no "
                                         "contradiction was found in it. The xgrammar backend writes it: pick it")
    assert "multipleOf" in str(refused.value)  # (xgrammar checks it after the run: said)
    assert compile_constraint(from_user(schema=schema, backend="xgrammar"), tokenizer, len(tokenizer), eos)
    from playground.ui.inputs import CONSTRAINT_OK, check_constraint  # the page's check as typed says it too (it said "looks fine")
    assert "The xgrammar backend writes it: pick it" in check_constraint("JSON schema", schema, "llguidance")
    assert check_constraint("JSON schema", schema, "xgrammar").startswith(CONSTRAINT_OK)


@pytest.mark.parametrize("pattern", [r"\Aab\Z", r"\D+", r"[^\d]+", r"[\^ab]+", r"[\x5eab]+"])
def test_xgrammar_refuses_what_it_reads_otherwise(tokenizer, pattern):
    """\A and \Z are letters to xgrammar, \D/[^\d] ASCII (Python's are Unicode), [\^..] negated."""
    spec = from_user(regex=pattern, backend="xgrammar")
    with pytest.raises(PlaygroundError, match="xgrammar reads"):
        compile_constraint(spec, tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id}))


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_octal_and_nul_escapes_and_a_leading_bracket_mean_what_python_reads(tokenizer, backend):
    """llguidance refused \\101 as a backreference (Python's octal A; a review), and x{,3} (Python's x{0,3}),
    x{,} and a brace that starts no count (a{b}, a{}, a lone {) as "expects a valid decimal" or "Invalid
    repetition count" on both backends."""
    eos = frozenset({tokenizer.eos_token_id})
    read = lambda pattern: compile_constraint(from_user(regex=pattern, backend=backend), tokenizer, len(tokenizer), eos)  # noqa: E731
    assert allowed(read(r"a\x00b"), tokenizer, "a", "\x00")
    octal = read(r"a\101[\060-\062]")
    assert allowed(octal, tokenizer, "a", "A") and not allowed(octal, tokenizer, "a", "1")
    assert allowed(octal, tokenizer, "aA", "1") and not allowed(octal, tokenizer, "aA", "3")
    assert allowed(read(r"a\0"), tokenizer, "a", "\x00")
    bracket = read("[]a]x")
    assert allowed(bracket, tokenizer, "", "]") and allowed(bracket, tokenizer, "a", "x")
    at_most = read("yx{,2}[{,]")
    assert allowed(at_most, tokenizer, "y", "x") and allowed(at_most, tokenizer, "y", "{")
    assert not allowed(at_most, tokenizer, "yxx", "x") and not allowed(at_most, tokenizer, "y", "0")
    any_count = read("x{,}y")
    assert allowed(any_count, tokenizer, "", "y") and allowed(any_count, tokenizer, "xxxx", "x")
    braces = read("a{b}c{}d{")  # (Python: the braces themselves)
    assert allowed(braces, tokenizer, "a", "{") and allowed(braces, tokenizer, "a{b}c", "{")
    assert allowed(braces, tokenizer, "a{b}c{}d", "{") and not allowed(braces, tokenizer, "a", "b")


@pytest.mark.parametrize("pattern, words", [
    ("a$b", "has $ inside it with text possible after it"), ("a^b", "has ^ inside it with text possible before it"),
    ("(?m)^a$", "(?m) and its line anchors"),
    (r"a\bc", r"\b and \B (word boundaries)"), ("(?P<x>ab)(?P=x)", "a named back-reference (?P=name)"),
    ("(?>ab)", "an atomic group"), (r"a\Z", "such as Python's \\Z")])
def test_llguidance_refuses_a_regex_in_the_words_of_its_part(pattern, words):
    """It said "lookarounds not supported yet; End in regex /a$b/" of a $ in the middle and "unrecognized flag"
    of (?P=x): neither names what the user wrote (a review)."""
    with pytest.raises(PlaygroundError, match=re.escape(words)) as refused:
        read_constraint(from_user(regex=pattern, backend="llguidance"))
    assert "lookarounds" not in str(refused.value) and "unrecognized" not in str(refused.value)


@pytest.mark.parametrize("pattern, anchor", [("a$b", "$"), ("a^b", "^"), ("(^a)*", "^"), ("x(^a)", "^"), ("(a$)?b", "$"),
                                             ("a?^b", "^"), ("a$\n", "$"), (r"a\Ab", r"\A"), (r"x\Z.", r"\Z")])
def test_an_anchor_that_matches_nothing_is_refused_alike_by_both_backends(pattern, anchor):
    """llguidance refused `a$b` (lookarounds); xgrammar dropped the $ (a warning on stderr) and wrote "ab", which
    the check refused: a run whose every output was invalid. Python reads each of these as matching less than
    the pattern without its anchor."""
    for backend in BACKENDS:
        with pytest.raises(PlaygroundError, match=re.escape(f"has {anchor} inside it with text possible")):
            from_user(regex=pattern, backend=backend)


@pytest.mark.parametrize("pattern, texts", [("(^a|b)$", ("a", "b")), ("a|^b", ("a", "b")), ("(a$)|b", ("a", "b")),
                                            ("^a(b$)", ("ab",)), ("[$^]", ("$", "^")), (r"a\$b", ("a$b",))])
def test_an_anchor_at_an_edge_is_read_by_both_backends(tokenizer, pattern, texts):
    """An anchor no text can stand before (^) or after ($) changes nothing: each backend writes what Python matches,
    xgrammar without a note that it drops it (it drops only these now)."""
    eos = frozenset({tokenizer.eos_token_id})
    for backend in BACKENDS:
        spec = from_user(regex=pattern, backend=backend)
        assert read_constraint(spec) == []
        constraint = compile_constraint(spec, tokenizer, len(tokenizer), eos)
        for text in texts:
            assert re.fullmatch(pattern, text)
            assert allowed(constraint, tokenizer, text[:-1], text[-1]), (pattern, backend, text)


@pytest.mark.parametrize("escape, char", [(r"\u00e9", "é"), (r"\U0001F600", "😀"), (r"\u0022", '"'), (r"\u4e00", "一")])
def test_a_gbnf_unicode_escape_with_leading_zeros_is_its_character_under_llguidance(tokenizer, escape, char):
    """llguidance 1.9.1's GBNF converter dropped the zeros (\\u00e9 became Lark's \\ue9) and refused the grammar as
    "3(13): lexer error", a place in its own text (a review); xgrammar read it."""
    eos = frozenset({tokenizer.eos_token_id})
    for grammar in (f'root ::= "a{escape}"', f"root ::= \"a\" [{escape}]"):
        for backend in BACKENDS:
            constraint = compile_constraint(from_user(grammar=grammar, backend=backend), tokenizer, len(tokenizer), eos)
            first = tokenizer(char, add_special_tokens=False).input_ids[0]
            guide = constraint.guide(2)
            assert guide._commit(tokenizer("a", add_special_tokens=False).input_ids)
            mask = guide.next_mask()
            assert (mask[first // 32].item() >> (first % 32)) & 1, (grammar, backend)
    literal = compile_constraint(from_user(grammar=r'root ::= "\\u00e9"'), tokenizer, len(tokenizer), eos)
    assert allowed(literal, tokenizer, "", "\\")  # an escaped backslash and the letters: not an escape


# -- a schema means to xgrammar what it means to JSON Schema -----------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_of_a_node_without_a_type_are_enforced(tokenizer, backend):
    """xgrammar read a node naming no kind as any JSON value and dropped its keywords: "ab" passed
    minLength 3. The check after the run refused it; now the mask does."""
    constraint = compiled(tokenizer, {"minLength": 3}, backend)
    assert not allowed(constraint, tokenizer, '"ab', '"') and allowed(constraint, tokenizer, '"abc', '"')
    assert allowed(constraint, tokenizer, "", "1")  # still any kind: a number has no length


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("names", [{"pattern": "^[a-c]+$"}, {"$ref": "#/$defs/name"}])
def test_a_property_name_is_a_string(tokenizer, backend, names):
    """xgrammar wrote a name by its propertyNames schema as a value: one naming no type (or a $ref to
    one) was any value, and `{false: null}` was written: no JSON at all, and no note said so."""
    schema = {"type": "object", "propertyNames": names, "additionalProperties": {"type": "null"},
              "$defs": {"name": {"pattern": "^[a-c]+$"}}}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, "{", '"') and allowed(constraint, tokenizer, '{"ab', '"')
    assert not any(allowed(constraint, tokenizer, "{", start) for start in ("f", "t", "n", "1", "{", "["))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pattern_property_is_searched_for_in_a_name(tokenizer, backend):
    """JSONSchemaBench's Github_trivial o78117 (no type, one unanchored pattern): xgrammar matched
    the pattern whole, so "$schema" escaped it and took an object where a string is required."""
    schema = {"patternProperties": {"[A-Za-z0-9-_.:]{1,255}": {"type": "string"}}}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"$schema": ', '"')
    assert not allowed(constraint, tokenizer, '{"$schema": ', "{") and not allowed(constraint, tokenizer, '{"$schema": ', "1")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pattern, name, outside, then", [("^x-", "x-foo", '{"', "a"), ("foo$", "afoo", '{"foob', '"'),
                                                          ("[^.]+", "a.b", '{"..', '"'), (r"\$ref", "a$ref", '{"ref', '"')])
def test_a_pattern_property_anchored_at_one_end_is_searched_for_from_the_other(tokenizer, backend, pattern, name,
                                                                               outside, then):
    """xgrammar drops a ^ or $ at either end of a pattern and matches the rest whole: `^x-` took only
    "x-", and a caret in a class (`[^.]`) or an escaped dollar kept the rewrite from searching."""
    constraint = compiled(tokenizer, {"type": "object", "patternProperties": {pattern: {"type": "string"}}}, backend)
    prefix = "{" + json.dumps(name) + ": "
    assert allowed(constraint, tokenizer, prefix, '"') and not allowed(constraint, tokenizer, prefix, "1")
    closed = compiled(tokenizer, {"type": "object", "patternProperties": {pattern: {}}, "additionalProperties": False},
                      backend)  # the anchor still holds: a name the pattern does not match is refused
    assert not allowed(closed, tokenizer, outside, then)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extra", [{"type": "boolean"}, {}, True])
def test_a_name_a_pattern_matches_takes_the_patterns_schema_alone(tokenizer, backend, extra):
    """xgrammar, beside properties, let a name matching a pattern take additionalProperties' schema."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}},
              "additionalProperties": extra}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"x-b": ', '"') and not allowed(constraint, tokenizer, '{"x-b": ', "t")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_name_in_properties_that_a_pattern_matches_takes_both_schemas_or_is_noted(tokenizer, backend):
    """JSONSchemaBench's Github_easy o9814: xgrammar let "id" take the catch-all pattern's free
    string past its own pattern; llguidance holds it to both, xgrammar's notes say it does not."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-f]{4}$"}},
              "patternProperties": {"^[a-z]+$": {"type": ["string", "number"]}}}
    constraint = compiled(tokenizer, schema, backend)
    held = not allowed(constraint, tokenizer, '{"id": "', "q") and not allowed(constraint, tokenizer, '{"id": ', "1")
    noted = any("a name in properties that a patternProperties pattern matches" in n for n in constraint.notes)
    assert (held, noted) == ((True, False) if backend == "llguidance" else (False, True))
    apart = compiled(tokenizer, {**schema, "patternProperties": {"^x-": {}}}, backend)
    assert not any("patternProperties" in n for n in apart.notes)  # "id" is not an x- name


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("beside", [{}, {"additionalProperties": {"type": "integer"}},
                                    {"patternProperties": {"^a$": {"type": "integer"}}}])
def test_a_required_name_missing_from_properties_is_required(tokenizer, backend, beside):
    """xgrammar let `{}` through where `a` is required but not in properties."""
    constraint = compiled(tokenizer, {"type": "object", "required": ["a"], **beside}, backend)
    assert not allowed(constraint, tokenizer, "{", "}") and allowed(constraint, tokenizer, "{", '"')
    if beside:  # its value is held by the schema that holds the name
        assert not allowed(constraint, tokenizer, '{"a": ', '"') and allowed(constraint, tokenizer, '{"a": ', "1")



@pytest.mark.parametrize("backend", BACKENDS)
def test_a_format_in_a_branch_without_a_type_is_enforced(tokenizer, backend):
    """Snowplow's schemas write `"type": "string", "anyOf": [{"format": "ipv4"}, ...]`: each branch
    names no type, which xgrammar read as any value, the format dropped."""
    constraint = compiled(tokenizer, {"type": "string", "anyOf": [{"format": "ipv4"}]}, backend)
    assert allowed(constraint, tokenizer, '"', "1") and not allowed(constraint, tokenizer, '"', "a")


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("fmt", ["idn-email", "iri", "regex", "made-up"])
def test_a_format_the_backend_writes_as_any_string_is_named(tokenizer, backend, fmt):
    """xgrammar 0.2.8 writes any string for idn-email, iri, regex or a format it does not know, and said
    nothing (a review: idn-email wrote 🌱🌱🌱); llguidance named each. Both notes name it, where the mask lets
    through what the format refuses."""
    schema = {"type": "string", "format": fmt}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '"', " ")  # (no address, IRI or pattern starts with a space)
    for notes in (constraint.notes, read_constraint(from_user(schema=json.dumps(schema), backend=backend))):
        assert any(f"format {fmt}" in note and note.startswith("not enforced while writing") for note in notes), notes


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("fmt, prefix", [("date", '"2025-04-3'), ("date-time", '"2025-04-3')])
def test_a_day_the_month_lacks_is_named_where_the_mask_lets_it_through(tokenizer, backend, fmt, prefix):
    """xgrammar's date and date-time read any day 01-31 in any month: `2025-04-31` is written, and
    the check after the run refuses it. Its note says so (it said nothing); llguidance's mask knows
    April's 30 days (its note names the format for Feb 29: the test below)."""
    constraint = compiled(tokenizer, {"type": "string", "format": fmt}, backend)
    lets_through = allowed(constraint, tokenizer, prefix, "1")
    assert lets_through == (backend == "xgrammar")
    assert f"format {fmt}" in " ".join(constraint.notes) or not lets_through, constraint.notes
    assert allowed(constraint, tokenizer, prefix, "0")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt, prefix, last", [("date", '"2025-02-2', "9"), ("date-time", '"2025-02-2', "9"),
                                               ("date-time", '"2025-01-01T12:00:6', "0"), ("time", '"12:00:6', "0")])
def test_a_leap_day_or_second_the_mask_lets_through_is_named(tokenizer, backend, fmt, prefix, last):
    """llguidance's masks let Feb 29 of any year and a 60th second at any minute through (2025 has no
    Feb 29; the check after the run refuses both): its notes said nothing. Each backend names the
    format wherever its mask lets such a value through."""
    constraint = compiled(tokenizer, {"type": "string", "format": fmt}, backend)
    lets_through = allowed(constraint, tokenizer, prefix, last)
    assert (f"format {fmt}" in " ".join(constraint.notes)) == lets_through, (lets_through, constraint.notes)


# -- keywords beside anyOf, oneOf and allOf: xgrammar read the first of the three and nothing beside ---

@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_beside_anyof_hold_in_each_branch(tokenizer, backend):
    """xgrammar dropped `required` and `properties` beside anyOf: `{}` passed, "a" took a string."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "anyOf": [{"type": "object", "properties": {"b": {"type": "string"}}}]}
    constraint = compiled(tokenizer, schema, backend)
    assert not allowed(constraint, tokenizer, "{", "}") and allowed(constraint, tokenizer, "{", '"')
    assert not allowed(constraint, tokenizer, '{"a": ', '"') and allowed(constraint, tokenizer, '{"a": ', "1")
    assert not constraint.notes


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_type_beside_a_branch_without_one_holds(tokenizer, backend):
    """JSONSchemaBench's Github_hard o29445 (`"type": "object"` beside oneOf branches naming no
    type): xgrammar let a container be a string."""
    constraint = compiled(tokenizer, {"type": "string", "maxLength": 3, "anyOf": [{"minLength": 2}]}, backend)
    assert not allowed(constraint, tokenizer, "", "1") and not allowed(constraint, tokenizer, "", "{")
    assert not allowed(constraint, tokenizer, '"a', '"') and not allowed(constraint, tokenizer, '"abc', "d")
    assert allowed(constraint, tokenizer, '"ab', '"')


@pytest.mark.parametrize("backend", BACKENDS)
def test_allof_of_two_branches_is_both(tokenizer, backend):
    """xgrammar read allOf of two as any value (and said so in the notes); merged, it is enforced."""
    schema = {"allOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "maximum": 5}]}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, "", "3") and not allowed(constraint, tokenizer, "", "7")
    assert not allowed(constraint, tokenizer, "", '"') and not constraint.notes


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_branch_naming_a_definition_takes_the_keywords_beside(tokenizer, backend):
    schema = {"$defs": {"A": {"type": "object", "properties": {"x": {"type": "integer"}}}},
              "type": "object", "required": ["x"], "oneOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}
    constraint = compiled(tokenizer, schema, backend)
    assert not allowed(constraint, tokenizer, "{", "}") and not allowed(constraint, tokenizer, "", "n")
    assert allowed(constraint, tokenizer, '{"x": ', "1") and not constraint.notes


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_enum_beside_branches_meets_theirs(tokenizer, backend):
    """Github_easy o69635: `msg`'s enum of commands beside oneOf branches each naming one command
    (three of them not among the parent's, so those branches can never hold: dropped)."""
    schema = {"type": "object", "properties": {"m": {"enum": ["a", "b"]}}, "required": ["m"],
              "oneOf": [{"properties": {"m": {"enum": ["b", "c"]}}}, {"properties": {"m": {"enum": ["z"]}}}]}
    constraint = compiled(tokenizer, schema, backend)
    assert allowed(constraint, tokenizer, '{"m": "', "b") and not allowed(constraint, tokenizer, '{"m": "', "a")
    assert not allowed(constraint, tokenizer, '{"m": "', "z") and not any("beside" in n for n in constraint.notes)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_enum_holds_only_the_values_the_rest_of_its_node_allows(tokenizer, backend):
    """xgrammar wrote every value of an enum whatever the node's type or minLength said."""
    constraint = compiled(tokenizer, {"type": "string", "enum": ["a", 1, None]}, backend)
    assert allowed(constraint, tokenizer, "", '"') and not allowed(constraint, tokenizer, "", "1")
    assert not allowed(constraint, tokenizer, "", "n")
    constraint = compiled(tokenizer, {"type": "string", "minLength": 2, "enum": ["a", "bb"]}, backend)
    assert not allowed(constraint, tokenizer, '"', "a") and allowed(constraint, tokenizer, '"', "b")


@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_beside_a_branch_they_do_not_merge_with_are_noted(tokenizer, backend):
    """additionalProperties: false beside a branch naming another property: in one node it would
    allow "b", which the parent forbids; not merged, xgrammar's notes say the keywords are not held."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False,
              "required": ["a"], "anyOf": [{"properties": {"b": {"type": "string"}}}]}
    constraint = compiled(tokenizer, schema, backend)
    noted = any("keywords beside anyOf, oneOf or allOf" in note for note in constraint.notes)
    assert noted == (backend == "xgrammar")
    if backend == "llguidance":
        assert not allowed(constraint, tokenizer, "{", "}")


def test_merging_branches_is_bounded():
    """Each level's keywords go into both its branches, which hold the next level: 3^16 copies
    written out. The merging stops at its budget (the rest noted) instead."""
    node = {"type": "string"}
    for level in range(16):
        node = {"type": "object", "properties": {"p": node}, "required": ["p"],
                "anyOf": [{"required": ["p"]}, {"properties": {"q": {"type": "integer"}}}]}
    text = json.dumps(node)
    started = time.perf_counter()
    rewritten = json.dumps(xgr_reads.as_xgrammar_reads(node))
    assert len(rewritten) <= 5 * len(text) + 100_000
    assert time.perf_counter() - started < 60  # (seconds here; unbounded, it would not end)
    assert any(xgr_reads.beside_choice(n) for n in xgr_reads.read_nodes(json.loads(rewritten)))


def xgrammar_mask(tokenizer, schema):
    return compiled(tokenizer, schema, "xgrammar")


@pytest.mark.parametrize("schema, prefix, refused", [
    # a patternProperties dict shared by the merged branches: turning ^a$ into a property for one holder
    # took it from the others
    ({"type": "object", "patternProperties": {"^a$": {"type": "integer"}}, "anyOf": [{"minProperties": 1}, {"maxProperties": 5}]},
     '{"a": ', '"'),
    # a marker the user wrote is not the rewrite's
    ({"type": "object", "required": ["a"], "anyOf": [{"type": "object"}], "x-playground-pushed-down": True}, "{", "}"),
    # a required name nothing allows was given a free schema
    ({"anyOf": [{"type": "object", "required": ["a"], "additionalProperties": False}, {"type": "string"}]}, "{", '"'),
    # the typeless fill (items, additionalProperties) marked every name evaluated
    ({"type": "object", "properties": {"o": {"unevaluatedProperties": False}}}, '{"o": {', '"'),
])
def test_what_a_review_found_in_the_rewrite_stays_closed(tokenizer, schema, prefix, refused):
    assert not allowed(xgrammar_mask(tokenizer, schema), tokenizer, prefix, refused)


def test_json_values_compare_as_json_in_the_merging(tokenizer):
    """0 and false are one value to Python: merged as equal, `{"a": false}` passed const 0."""
    schema = {"type": "object", "properties": {"a": {"const": 0}}, "anyOf": [{"properties": {"a": {"const": False}}}]}
    constraint = xgrammar_mask(tokenizer, schema)
    assert any("beside anyOf" in n for n in constraint.notes)  # not merged as one value: noted, checked after the run
    assert not validate_json('{"a": false}', schema)[0]
    from playground.constraints.schema_merge import same  # (either half of an `or` passed the test before)
    assert not same(0, False) and not same(1, True) and same(1, 1.0) and same({"a": [1]}, {"a": [1.0]})
    assert not same([0], [False]) and not same({"a": 1}, {"a": True}) and not same({"a": 1}, {"b": 1})


@pytest.mark.parametrize("schema, refusal", [
    ({"minProperties": 1, "anyOf": [{"$ref": "#"}, {"type": "string"}]},  # a branch naming its own holder
     "refers back to itself without entering a property or an item"),
    ({"port": {"properties": [], "required": ["a"]}, "anyOf": [{"$ref": "#/port"}], "type": "object"},
     r"at #/port/properties: \[\] is not of type 'object'"),  # a $ref to a place that is no schema
    ({"port": {"required": 5}, "anyOf": [{"$ref": "#/port"}], "type": "object"},
     "at #/port/required: 5 is not of type 'array'"),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "$defs": {"a": {"required": 5}}, "$ref": "#/$defs/a"},
     r"\(draft-07\) at #/\$defs/a/required: 5 is not of type 'array'"),  # $defs: no keyword of draft 7
    ({"type": "object", "x-playground-pushed-down": True}, None),  # a marker without branches
])
def test_a_hostile_schema_compiles_or_is_refused_in_words(tokenizer, schema, refusal):
    """Before the review's fixes, the worker turned a cycle in the rewritten schema (json.dumps) or a
    TypeError into "compiling failed: ..."; the first compiled then (its self-reference noted); it is
    a loop that enters no property or item, refused in words since.
    A node a $ref names outside the meta-schema's keywords is checked as the schema it is used as:
    before, the finiteness check read `required: 5` and failed with a TypeError under some hash seeds
    (CI's run of stop 73), and xgrammar refused it in its own words under the others."""
    if refusal:
        with pytest.raises(PlaygroundError, match=refusal):
            xgrammar_mask(tokenizer, schema)
    else:
        xgrammar_mask(tokenizer, schema)


def test_merging_shared_references_is_bounded():
    """Two chains of definitions, each level naming the one below twice, merged name by name: the
    merges double at each level. They stop at their budget (the node is noted instead)."""
    defs = {"A0": {"type": "string"}, "B0": {"minLength": 1}}
    for i in range(1, 25):
        for chain in "AB":
            below = {"$ref": f"#/$defs/{chain}{i - 1}"}
            defs[f"{chain}{i}"] = {"type": "object", "properties": {"x": below, "y": below}}
    schema = {"$defs": defs, "$ref": "#/$defs/A24", "anyOf": [{"$ref": "#/$defs/B24"}]}
    started = time.perf_counter()
    rewritten = xgr_reads.as_xgrammar_reads(schema)
    assert time.perf_counter() - started < 120  # (0.5 s here, 3.3 s under load; 2^24 merges unbounded: never ends)
    assert any(xgr_reads.beside_choice(n) for n in xgr_reads.read_nodes(rewritten))


def test_the_generation_bench_checks_every_output_again_and_names_faults(tmp_path, monkeypatch):
    """scripts/bench_schema_runs.py (generation under JSONSchemaBench's schemas) over a made-up subset
    of two schemas on the offline demo pair, each backend: every run recorded with the target alone's
    beside it, each output not cut checked again outside the product; a verdict that check
    contradicts is a fault, listed."""
    import importlib.util
    import subprocess
    import sys
    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "bench_schema_runs.py"
    subset = tmp_path / "made-up"
    subset.mkdir()
    (subset / "a.json").write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}},
                                               "required": ["n"], "additionalProperties": False}))
    (subset / "b.json").write_text(json.dumps({"type": "object", "additionalProperties": False,
                                               "properties": {"b": {"enum": ["X"], "type": "object"}, "c": {"type": "integer"}}}))
    for backend in BACKENDS:
        done = subprocess.run([sys.executable, str(script), "--data", str(tmp_path), "--target", "demo-target",
                               "--draft", "demo-draft", "--backend", backend, "--max-new-tokens", "24",
                               "--out", str(tmp_path / f"{backend}.jsonl")],
                              capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
        rows = [json.loads(line) for line in (tmp_path / f"{backend}.jsonl").read_text().splitlines()]
        assert sorted(r["file"] for r in rows) == ["a.json", "b.json"] and all(r["identical"] for r in rows), rows
        assert "verdicts the check outside the product contradicts: 0" in done.stdout, done.stdout
    monkeypatch.syspath_prepend(str(script.parent))  # (as a script, its folder is on the path: bench_schemas)
    spec = importlib.util.spec_from_file_location("bench_schema_runs", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.checked_here('{"n": 1}', json.dumps({"required": ["n"]})) is True
    assert bench.checked_here('{"n": 1, "n": 2}', json.dumps({"required": ["n"]})) is False  # (a key twice)
    assert bench.contradicted({"status": "valid", "checked_here": False})
    assert not bench.contradicted({"status": "cut", "checked_here": None})


def test_a_grammar_cut_short_under_llguidance_says_it_may_never_end_there(tokenizer):
    """root ::= a [a-z] with a ::= [a-z]+ never ends under llguidance (a rule of characters alone is one greedy
    lexeme) and its run said only "max new tokens ran out", as if more would do; xgrammar ends it (a review)."""
    eos = frozenset({tokenizer.eos_token_id})
    grammar = "root ::= a [a-z]\na ::= [a-z]+"
    said = {backend: compile_constraint(from_user(grammar=grammar, backend=backend), tokenizer, len(tokenizer), eos)
            .validate("abc", [], complete=False)[1] for backend in BACKENDS}
    assert "it cannot end under llguidance" in said["llguidance"] and "llguidance" not in said["xgrammar"]
    assert said["xgrammar"] == "truncated: max new tokens ran out before the structure was complete"


@pytest.mark.parametrize("schema, written", [
    ({"const": 0.1}, "0.1"), ({"const": 1e-7}, "1e-07"), ({"const": {"a": 0.3, "b": [1.1], "c\"0.30000000000000004": 2.5}},
                                                            '{"a":0.3,"b":[1.1],"c\\"0.30000000000000004":2.5}'),
    ({"enum": [3.14159]}, "3.14159"), ({"type": "array", "items": {"enum": [0.2]}, "minItems": 1, "maxItems": 1}, "[0.2]"),
])
def test_xgrammar_writes_a_fraction_of_a_const_as_written(schema, written):
    """xgrammar 0.2.8 forced {"const": 0.1} as 0.10000000000000001 (its %.17g), which the check refused every
    time (a fuzzing review): its literals' numbers are written the shortest way back to the same float (a
    JSON string in the literal left as it is)."""
    from playground import session
    pair = session.load_pair("demo-target", "demo-draft", "cpu")
    constraint = session.constrain(pair, from_user(schema=json.dumps(schema), backend="xgrammar"))
    result = session.run(pair, session.encode_prompt(pair, "x"), session.spec_config(k=3, max_new_tokens=80),
                         constraint=constraint)
    assert (result.text, result.valid) == (written, True), result.validation_error


def test_xgrammar_names_a_pattern_beside_a_format_as_unenforced(tokenizer):
    """It drops the pattern (a uuid that must start with 0 was written "d12fd297-..."; a fuzzing review)."""
    schema = {"type": "string", "format": "uuid", "pattern": "^0"}
    assert any("pattern together with format" in note for note in compiled(tokenizer, schema, "xgrammar").notes)


def test_xgrammar_applies_property_names_to_the_names_listed_in_properties(tokenizer):
    """It wrote {"x": null} beside `"propertyNames": {"enum": ["a"]}` (a fuzzing review): x is left out."""
    schema = {"type": "object", "properties": {"x": {"type": "null"}, "a": {"type": "null"}}, "propertyNames": {"enum": ["a"]}}
    constraint = compiled(tokenizer, schema, "xgrammar")
    assert not allowed(constraint, tokenizer, '{"', "x") and allowed(constraint, tokenizer, '{"', "a")
