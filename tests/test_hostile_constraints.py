"""Hostile constraints: a schema or pattern may never fetch a URL, read a file, hang the process or
exhaust its memory; each is refused up front with one clear line, or checked in bounded time."""
import json
import os
import re
import resource
import socket
import sys
import threading
import time

import pytest

from playground import limits, session
from playground.cli import main
from playground.constraints import ConstraintSpec, from_user
from playground.constraints.validate import validate_json, validate_regex
from playground.errors import PlaygroundError
from tests import tiny


@pytest.fixture
def listener():
    """A TCP listener on loopback that records every connection made to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    hits, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                hits.append(conn.recv(200))
                conn.close()
            except OSError:
                pass
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], hits
    stop.set()
    thread.join(2)
    server.close()


def cli_error(capsys, saved_pair, *args) -> str:
    target, draft = saved_pair
    code = main(["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x", "--max-new-tokens", "16",
                 "--json", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_remote_and_file_refs_are_refused_and_nothing_is_fetched(capsys, saved_pair, listener, backend):
    port, hits = listener
    for ref in (f"http://127.0.0.1:{port}/x.json", "file:///etc/hostname", f"http://127.0.0.1:{port}/x.json#/a"):
        err = cli_error(capsys, saved_pair, "--constraint-backend", backend, "--schema", json.dumps({"$ref": ref}))
        assert "points outside the schema" in err
    nested = {"type": "object", "properties": {"a": {"$ref": f"http://127.0.0.1:{port}/y"}}}
    assert "points outside" in cli_error(capsys, saved_pair, "--constraint-backend", backend, "--schema", json.dumps(nested))
    bundle = {"$id": f"http://127.0.0.1:{port}/order.json", "type": "object", "properties": {"addr": {"$ref": "address.json"}},
              "$defs": {"address": {"$id": f"http://127.0.0.1:{port}/address.json", "type": "string"}}}
    for ref in ("address.json", f"http://127.0.0.1:{port}/address.json"):  # (a review: a bundle was told its ref
        bundle["properties"]["addr"]["$ref"] = ref  # pointed outside it)
        err = cli_error(capsys, saved_pair, "--constraint-backend", backend, "--schema", json.dumps(bundle))
        assert "names the schema bundled at '#/$defs/address' by its $id, and references by $id are not resolved here: " \
               "write it as '#/$defs/address'" in err, err
    time.sleep(0.3)
    assert hits == []


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_grammar_reads_no_file_and_fetches_no_schema(capsys, saved_pair, listener, backend, tmp_path, monkeypatch):
    """Both backends read Lark: its %import names their own `common` terminals only (a file beside
    the process is never read), and a %json schema's remote $ref is never retrieved (llguidance
    refuses it; xgrammar reads past it, and the run's notes say so)."""
    port, hits = listener
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mylib.lark").write_text('SECRET: "read from a file"\n')
    grammar = tmp_path / "g.lark"
    grammar.write_text("start: SECRET\n%import mylib.SECRET\n")
    err = cli_error(capsys, saved_pair, "--constraint-backend", backend, "--grammar", str(grammar))
    assert f"{backend} cannot use this grammar" in err and "read from a file" not in err
    url = f"http://127.0.0.1:{port}/x.json"
    grammar.write_text(f'start: %json {{"$ref": "{url}"}}\n')
    target, draft = saved_pair
    code = main(["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x", "--max-new-tokens", "4",
                 "--json", "--constraint-backend", backend, "--grammar", str(grammar)])
    out, err = capsys.readouterr()
    assert code == 2 and "the grammar's %json schema 1: $ref" in err and "points outside the schema" in err  # (before
    time.sleep(0.3)  # either backend reads it: llguidance refused it itself, xgrammar read past it)
    assert hits == []


@pytest.mark.parametrize("grammar, says", [
    ('start: %json {"type":"string","pattern":"^a{8000000}$"}', "a repetition count in a schema pattern is 8000000"),
    ('start: %json ' + '{"type":"array","items":' * 2500 + '{}' + '}' * 2500, "nested too deeply|nested more than 32"),
    ('start: a b\na: %json {"type":"integer"}\nb: %json {"type": "string", "maxLength": 1e999}', "schema 2: "),
    ('start: %json {"type":"integer"' + ', "x": "}"', "schema 1: the schema is not valid JSON"),  # never closed
    ("start: " + " ".join(["%json {}"] * 9), "the number of %json schemas in the grammar"),
])
def test_a_grammars_json_schemas_pass_a_schemas_checks(grammar, says):
    """A schema in a grammar (llguidance's %json) skipped every check of a schema: a pattern's count of 8 million
    held xgrammar 13 s and 900 MB, a nesting of 2,500 the compile worker its 20 s (a red-team pass)."""
    for backend in ("llguidance", "xgrammar"):
        with pytest.raises(PlaygroundError, match=says):  # (which nesting check comes first depends
            from_user(grammar=grammar, backend=backend)  # on the recursion limit other tests leave)
    fine = 'start: "n=" %json {"type": "string", "pattern": "^[a-z]{3}$", "description": "a } and a \\" inside"}'
    assert from_user(grammar=fine, backend="llguidance").kind == "grammar"


def test_validation_never_retrieves_a_reference(listener):
    port, hits = listener
    valid, error = validate_json("1", {"$ref": f"http://127.0.0.1:{port}/x.json"})
    assert valid is False and "unresolvable" in error
    valid, error = validate_json("1", {"$ref": "file:///etc/hostname"})
    assert valid is False and "hostname" not in (error or "").split("unresolvable")[0]
    time.sleep(0.3)
    assert hits == []


def test_local_refs_still_work():
    spec = from_user(schema=json.dumps({"$defs": {"n": {"type": "integer"}}, "type": "object",
                                        "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#"}}}))
    assert spec is not None
    with pytest.raises(PlaygroundError, match="does not point to a schema"):
        from_user(schema=json.dumps({"$ref": "#/$defs/missing"}))


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]},
    {"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}, "minItems": 1}}, "$ref": "#/$defs/a"},
    {"$defs": {"a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}}, "required": ["b"]},
               "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
])
def test_schemas_without_a_finite_instance_are_refused(schema):
    for backend in ("llguidance", "xgrammar"):
        with pytest.raises(PlaygroundError, match="no finite instance"):
            from_user(schema=json.dumps(schema), backend=backend)


def test_an_array_shorter_than_it_must_be_is_refused_in_its_words_not_as_recursion():
    """`items: false` after one prefixItem and minItems 2 was "make the recursion optional" (a fuzzing review)."""
    schema = {"type": "array", "prefixItems": [{"type": "null"}], "items": False, "minItems": 2}
    for backend in ("llguidance", "xgrammar"):
        with pytest.raises(PlaygroundError, match="an array asks for at least 2 items .minItems. where items is false "
                                                  "after its 1 prefixItems") as refused:
            from_user(schema=json.dumps(schema), backend=backend)
        assert "recursion" not in str(refused.value)


def test_optional_recursion_is_allowed():
    tree = {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array",
            "items": {"$ref": "#"}}}, "required": ["value"]}
    assert from_user(schema=json.dumps(tree), backend="xgrammar") is not None
    either = {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]}]}
    assert from_user(schema=json.dumps(either)) is not None


def test_xgrammar_recursive_schema_stays_bounded(capsys, saved_pair):
    """The case that grew to 23 GB: refused before compiling, memory unchanged."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    schema = '{"type":"object","properties":{"x":{"$ref":"#"}},"required":["x"]}'
    assert "no finite instance" in cli_error(capsys, saved_pair, "--constraint-backend", "xgrammar", "--schema", schema)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000  # KiB


BAD_SCHEMAS = {
    "false": ("false", "allows no value"),
    "deeply nested": ('{"items":' * 100 + "{}" + "}" * 100, "nested more than"),
    "very deeply nested": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "too long as typed": ("[" * 600_000 + "]" * 600_000, "length of the schema as typed"),
    "nested JSON value": ('{"const":' + "[" * 5000 + "]" * 5000 + "}", "nested"),
    "too many properties": (json.dumps({"type": "object", "properties": {f"p{i}": {} for i in range(300)}}),
                            "number of properties"),
    "too long": (json.dumps({"description": "x" * 300_000}), "length of the schema, minified"),
    "divergent pattern": (json.dumps({"type": "string", "pattern": "(x+)+[[:alpha:]&&[x]]"}), "read differently"),
    "huge repetition in a pattern": (json.dumps({"type": "string", "pattern": "a{1000000}"}), "repetition count"),
    "NaN": ('{"type": "number", "maximum": NaN}', "NaN is not a JSON number"),
    "1e999": ('{"type": "number", "maximum": 1e999}', "too large for a number"),
    "a 5,000-digit number": ('{"type": "string", "maxLength": ' + "9" * 5000 + "}", "5000 digits"),
    "an integer past a float's range": ('{"type": "integer", "minimum": -' + "9" * 309 + "}", "309 digits"),  # the
    # backends failed on it: llguidance "number out of range", xgrammar an IndexError
    "a lone surrogate": ('{"const": "a\\ud800b"}', "lone surrogate"),
    # the output's checker reads a $ref against the nearest $id, the engines against the whole schema:
    # each compiled, and every output was "could not be checked: unresolvable reference" (a helper's audit)
    "an anchor inside another resource": (json.dumps({"$defs": {"a": {"$id": "u1", "$anchor": "x"}}, "$ref": "#x"}),
                                          r"\$ref '#x' names an anchor that the output's checker \(draft 2020-12\) does not find"),
    "an $anchor in draft 7": (json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                                          "definitions": {"a": {"$anchor": "x"}}, "$ref": "#x"}), r"checker \(draft-07\)"),
    "a $ref inside another resource": (json.dumps({"$defs": {"a": {"$id": "u1", "items": {"$ref": "#/$defs/b"},
                                                                   "$defs": {"b": {"type": "integer"}}}, "b": {}},
                                                   "$ref": "#/$defs/a"}),
                                       r"the \$ref '#/\$defs/b' sits inside a subschema with an \$id of its own \('u1'\)"),
    "a $ref inside another resource, draft 4": (json.dumps({"$schema": "http://json-schema.org/draft-04/schema#",
                                                            "items": {"id": "http://e.org/u", "items": {"$ref": "#"}}}),
                                                r"with an id of its own \('http://e.org/u'\)"),
    # a fuzzing helper's finds: each reached the finiteness check or the checker unchecked (a TypeError
    # there, or every output "could not be checked"), or had the engines and the checker disagree
    "a $ref into a node a checked $ref holds": (json.dumps({"properties": {"a": {"$ref": "#/x"}, "b": {"$ref": "#/x/y"}},
                                                            "x": {"y": {"type": "object", "required": 5}}}),
                                                r"at #/x/y/required: 5 is not of type 'array'"),
    "junk in $defs under draft 7": (json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                                                "$defs": {"a": {"type": "object", "properties": 5}}}),
                                    r"not valid where the constraint engines read it \(as draft 2020-12\) at "
                                    r"\$defs/a/properties: 5 is not of type 'object'"),
    "a $ref in an items list": (json.dumps({"$schema": "http://json-schema.org/draft-04/schema#",
                                            "items": [{"$ref": "#/x"}], "x": {"not": 3}}),
                                r"\(draft-04\) at #/x/not: 3 is not of type 'object'"),
    "a $ref in dependencies": (json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                                           "dependencies": {"a": {"$ref": "#/x"}}, "x": {"not": 3}}),
                               r"\(draft-07\) at #/x/not: 3 is not of type"),
    "a $ref in another resource in an items list": (
        json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"x": {"type": "integer"}},
                    "items": [{"$id": "http://x.org/o", "properties": {"a": {"$ref": "#/definitions/x"}}}]}),
        r"sits inside a subschema with an \$id of its own"),
    "an anchor declared twice": (json.dumps({"properties": {"a": {"$anchor": "n", "type": "integer"},
                                                            "x": {"oneOf": [{"$ref": "#n"}]}},
                                             "$defs": {"b": {"$anchor": "n", "type": "string"}}}),
                                 r"the anchor '#n' is declared more than once"),
    "an inner $id naming the whole schema": (json.dumps({"type": "string", "$defs": {"x": {"$id": "", "type": "integer"}}}),
                                             r"the \$id '' inside the schema names the whole schema again"),
    # items of draft 4 is a schema or an array of them: the place named is inside the branch that
    # goes furthest, not "{...} is not valid under any of the given schemas" (JSONSchemaBench o28532)
    "an id that is a schema": ('{"$schema": "http://json-schema.org/draft-04/schema#", "items": {"id": {"type": "integer"}}}',
                               r"\(draft-04\) at items/id: \{'type': 'integer'\} is not of type 'string'$"),
}


def test_a_schema_against_its_meta_schema_is_told_the_same_place_in_every_process():
    """jsonschema's check_schema names the first error its walk meets, and it walks a set of names:
    JSONSchemaBench o15286 was refused at definitions/currency/enum in 4 of 12 processes and at
    definitions/Location/... in 8. The place named is the one nearest the top, then first by name."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#",
              "definitions": {name: {"enum": [1, 1]} for name in "hgfedcba"}}
    assert told_by_seed(schema, range(4)) == {"the schema is not a valid JSON Schema (draft-04) at definitions/a/enum: "
                                              "[1, 1] has non-unique elements"}


def test_a_misspelt_type_is_named_with_the_type_meant():
    """The meta-schema says "'objct' is not valid under any of the given schemas" (a newcomer's review):
    the type meant is named, or the types listed; a property named "type" is no keyword."""
    def told(schema) -> str:
        with pytest.raises(PlaygroundError) as refused:
            from_user(schema=json.dumps(schema))
        return str(refused.value)
    assert told({"type": "objct"}).endswith("; 'objct' is no type: did you mean 'object'? (the types: array, boolean, "
                                            "integer, null, number, object, string)")
    assert told({"items": {"type": ["string", "nul"]}}).endswith(  # (its message lists them already)
        "is not one of ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']; 'nul' is no type: did you mean 'null'?")
    assert told({"$schema": "http://json-schema.org/draft-04/schema#", "type": "Integer"}).endswith("did you mean 'integer'? "
                                                                                                   "(the types: array, boolean, integer, null, number, object, string)")
    assert told({"type": "xyzzy"}).endswith("; 'xyzzy' is no type (the types: array, boolean, integer, null, number, object, string)")
    assert told({"properties": {"type": "objct"}}).endswith("at properties/type: 'objct' is not of type 'object', 'boolean'")
    for named in ({"dependentRequired": {"type": ["a", "a"]}}, {"dependentRequired": {"type": "objct"}},  # (a review)
                  {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"type": ["a", "a"]}}):
        assert "is no type" not in told(named), named  # a property named "type": no keyword there
    assert told({"properties": {"properties": {"type": "objct"}}}).endswith("did you mean 'object'? (the types: array, "
                                                                            "boolean, integer, null, number, object, string)")


def test_a_node_named_by_a_ref_outside_the_keywords_is_checked_in_every_process():
    """`#/port` is no keyword, so the meta-schema never looked at it: its `required: 5` reached the
    finiteness check, which failed with a TypeError under hash seed 5 (the type it tried first came
    from a set) and passed it on to the backend under the others (CI's run of stop 73)."""
    schema = {"port": {"required": 5}, "anyOf": [{"$ref": "#/port"}], "type": "object"}
    assert told_by_seed(schema, range(7)) == {"the schema is not a valid JSON Schema (draft 2020-12) at "
                                              "#/port/required: 5 is not of type 'array'"}


def test_references_the_checker_reads_as_the_engines_do_are_accepted():
    """An anchor of the whole schema, an id that is a fragment, and a $ref beside an inner $id under
    draft 4 (which reads only `id`): accepted, and outputs are checked."""
    from playground.constraints.validate import validate_json
    accepted = [({"$defs": {"a": {"$anchor": "x", "type": "string"}}, "$ref": "#x"}, '"s"', "5"),
                ({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"$id": "#x", "type": "string"}},
                  "$ref": "#x"}, '"s"', "5"),
                ({"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {"b": {"type": "string"}},
                  "items": {"$id": "http://e.org/u", "items": {"$ref": "#/definitions/b"}}}, '[["s"]]', "[[5]]")]
    for schema, good, bad in accepted:
        parsed = from_user(schema=json.dumps(schema)).schema
        assert validate_json(good, parsed) == (True, None), schema
        ok, why = validate_json(bad, parsed)
        assert not ok and "is not of type 'string'" in why, (schema, why)


def test_only_references_the_keywords_reach_are_read():
    """A `$ref` inside a value (default, examples) is data, and was refused as pointing outside the
    schema or nowhere; a $dynamicRef to its $dynamicAnchor was refused as pointing nowhere, its
    keyword named "$ref"."""
    for schema in ({"type": "object", "properties": {"a": {"default": {"$ref": "http://example.com/x"}}}},
                   {"type": "object", "examples": [{"$ref": "#/nowhere"}]},
                   {"$defs": {"n": {"$dynamicAnchor": "node", "type": "object",
                                    "properties": {"c": {"$dynamicRef": "#node"}}}}, "$ref": "#/$defs/n"}):
        from_user(schema=json.dumps(schema))
    for schema, said in (({"$dynamicRef": "#nope"}, "$dynamicRef '#nope' does not point to a schema"),
                         ({"properties": {"a": {"$ref": "http://example.com/x"}}}, "$ref 'http://example.com/x' points outside")):
        with pytest.raises(PlaygroundError, match=re.escape(said)):
            from_user(schema=json.dumps(schema))


def told_by_seed(schema, seeds) -> set[str]:
    """What parse_schema says of the schema in a fresh process per hash seed."""
    import subprocess
    return {subprocess.run([sys.executable, "-c", "import sys; from playground.constraints.spec import parse_schema\n"
                            "try: parse_schema(sys.argv[1])\nexcept Exception as exc: print(exc)", json.dumps(schema)],
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}, capture_output=True, text=True,
                           check=True).stdout.strip() for seed in seeds}


@pytest.mark.parametrize("case", BAD_SCHEMAS)
def test_bad_schemas_are_clear_errors(case):
    text, message = BAD_SCHEMAS[case]
    with pytest.raises(PlaygroundError, match=message):
        from_user(schema=text)


@pytest.mark.parametrize("pattern, message", [
    ("(x+)+[[:alpha:]&&[x]]", "read differently"), ("[a-z--[aeiou]]", "read differently"),
    ("a{1000000}", "repetition count"), ("[a-z]{1,20000}", "repetition count"), ("(", "the regex is not a valid regular expression"),
    ("x" * 3000, "length"), ("a\ud800", "lone surrogate"),
])
def test_bad_regexes_are_clear_errors(pattern, message):
    with pytest.raises(PlaygroundError, match=message):
        from_user(regex=pattern)


def test_a_lone_surrogate_in_a_grammar_is_a_clear_error():
    """Both backends failed with UnicodeEncodeError on it."""
    for grammar in ('root ::= "a\ud800"', 'start: "a\udfff"'):
        with pytest.raises(PlaygroundError, match="the grammar holds a lone surrogate"):
            from_user(grammar=grammar, backend="xgrammar")


def test_redos_regex_is_refused_by_the_cli_fast(capsys, saved_pair):
    started = time.monotonic()
    err = cli_error(capsys, saved_pair, "--regex", "(x+)+[[:alpha:]&&[x]]", "--max-new-tokens", "30")
    assert "read differently" in err and time.monotonic() - started < 30


def test_checks_of_catastrophic_patterns_are_bounded():
    """Were such a pattern to reach the checker, it gives up after its timeout instead of hanging."""
    started = time.monotonic()
    valid, error = validate_regex("x" * 40 + "!", "(x+)+y")
    assert valid is False and time.monotonic() - started < 30
    valid, error = validate_json(json.dumps("x" * 40 + "!"), {"anyOf": [{"pattern": "^(x+)+y$"}, {"type": "integer"}]})
    assert valid is False and time.monotonic() - started < 60


def test_pattern_properties_against_required_names_share_one_budget(monkeypatch):
    """n catastrophic patterns x m required names cost n x m regex timeouts, again on each pass of
    the fixpoint (a 755-character schema held the server 63 s; a share link's check as long). Now
    all of one check's matching shares CHECK_SECONDS, a pair that cannot be told counts as writable,
    and each pair is matched once."""
    schema = {"type": "object", "additionalProperties": False,
              "patternProperties": {"^(a|a)*$" + "b?" * i: {"type": "string"} for i in range(8)},
              "required": ["a" * 40 + "!" + "b" * i for i in range(8)]}
    from playground.constraints import safety
    monkeypatch.setattr(safety, "FIXPOINT_SECONDS", 600.0)  # (its own bound, tested apart: a suite's busy 2 cores
    # once took it past 5 s; the budget shared is checked on a fake clock below, not by the time this takes)
    spec = from_user(schema=json.dumps(schema))  # the names cannot be told: not refused for them
    assert spec.kind == "json" and json.loads(spec.text)["required"] == schema["required"]
    name = "a" * 40 + "!"  # what is known still refuses: the slow pattern cannot vouch for a self-required name
    with pytest.raises(PlaygroundError, match="no finite instance"):
        from_user(schema=json.dumps({"type": "object", "properties": {name: {"$ref": "#"}}, "required": [name],
                                     "patternProperties": {"^(a|a)*$": {}}}))
    clock, calls = [0.0], []

    class FullTimeout:  # each search spends its whole timeout, on a fake clock
        def __init__(self, pattern):
            self.pattern = pattern

        def search(self, name, timeout):
            calls.append((self.pattern, name))
            clock[0] += timeout
            raise TimeoutError
    monkeypatch.setattr(safety, "monotonic", lambda: clock[0])
    monkeypatch.setattr(safety, "compiled_pattern", FullTimeout)
    matches = safety.NameMatcher()
    assert [matches("p", "n"), matches("q", "n"), matches("p", "n")] == [None, None, None]
    assert calls == [("p", "n")]  # the budget went on the first; none after it, none twice
    calls.clear()
    safety.check_schema_safe(schema)  # the whole check of the 8 x 8 schema, every pass of its fixpoint: one budget
    assert len(calls) == 1, calls  # (a matcher per pass, or per node, would search again)


def test_the_finiteness_check_refuses_past_its_time(monkeypatch):
    """A chain of 1,450 references with 450 patterns x 451 required names took 84 s to check (every
    pass of the fixpoint matched the names again); what a node needs is now worked out once, and
    past FIXPOINT_SECONDS the check refuses instead of going on."""
    from playground.constraints import safety
    defs = {f"c{i}": {"$ref": f"#/$defs/c{i + 1}"} for i in range(40)} | {"c40": {"type": "string"}}
    schema = {"type": "object", "$defs": defs, "properties": {"z": {"$ref": "#/$defs/c0"}}, "required": ["z"]}
    assert from_user(schema=json.dumps(schema)) is not None
    monkeypatch.setattr(safety, "FIXPOINT_SECONDS", -1.0)
    with pytest.raises(PlaygroundError, match="too complex to check"):
        from_user(schema=json.dumps(schema | {"title": "not cached"}))


def test_one_output_check_shares_one_matching_budget(monkeypatch):
    """Each pattern search had its own timeout: 60 names x 0.27 s took 16 s. One check now shares
    CHECK_SECONDS: after a search spends it, the check stops with its reason."""
    from playground.constraints import validate
    clock, calls = [0.0], []

    class FullTimeout:  # each search spends its whole timeout, on a fake clock
        def __init__(self, pattern):
            pass

        def search(self, text, timeout):
            calls.append(text)
            clock[0] += timeout
            raise TimeoutError
    monkeypatch.setattr(validate, "monotonic", lambda: clock[0])
    monkeypatch.setattr(validate, "compiled_pattern", FullTimeout)
    output = json.dumps({f"k{i}": 1 for i in range(60)})
    schema = {"type": "object", "patternProperties": {"^(a|a)*$": {"type": "integer"}}}
    valid, error = validate._validate_json(output, schema)  # in this process, to count the searches
    assert valid is False and "took longer than" in error and len(calls) == 1


def test_a_check_that_backtracks_in_re_is_stopped_and_the_server_lives():
    """jsonschema matches patternProperties with `re` when it works out unevaluatedProperties: no
    timeout there, and the interpreter lock held throughout (30 letters froze every request for 36 s;
    each 2 more is 4x). The whole check runs in a bounded worker."""
    name = "a" * 34 + "!"
    schema = {"type": "object", "properties": {name: {"type": "integer"}}, "required": [name],
              "patternProperties": {"^(a+)+$": {}}, "unevaluatedProperties": False}
    valid, error = validate_json(json.dumps({name: 9}), schema)
    assert valid is False and "could not be checked" in error and "took longer than" in error


@pytest.mark.parametrize("output, schema, says", [
    ('"' + "(" * 5000 + ")" * 5000 + '"', {"type": "string", "format": "regex"}, "nested too deeply"),
    ("[1e99999]", {"type": "array", "items": {"type": "number", "multipleOf": 0.5}}, "too large or too fine for multipleOf"),
    ("[1e-99999]", {"type": "array", "items": {"type": "number", "multipleOf": 0.5}}, "too large or too fine for multipleOf"),
])
def test_checks_that_python_cannot_do_say_so(output, schema, says):
    """(A number past a float's range is read as written: 1e400 is a multiple of 0.5; one whose exact
    fraction would be a number of 100,000 digits is not worked out.)"""
    valid, error = validate_json(output, schema)
    assert valid is False and says in error, error


FAR = "11240297840216307e850079165000075100526477865366473617166459021502536000032044117004216311965611002040099901000158823451046604170050025259"


@pytest.mark.parametrize("output, schema, valid, says", [
    (FAR, {"type": "number"}, True, None),  # (a demo model's, greedy: "could not be checked: InvalidOperation")
    (FAR, {"maximum": 5}, False, "11240297840216307e85...170050025259 is greater than the maximum of 5"),
    (FAR, {"multipleOf": 0.5}, False, "too large or too fine for multipleOf"),
    ("-" + FAR, {"exclusiveMaximum": 0}, True, None),
    ("1e-99999999999999999999", {"exclusiveMinimum": 0}, True, None),  # (far below every float, above zero)
    ("1e-99999999999999999999", {"maximum": 0}, False, "greater than the maximum of 0"),
    ("0e00616616611116611111666666666666666666", {"type": "integer", "multipleOf": 3}, True, None),  # zero: exact
])
def test_a_number_past_decimals_reach_is_checked_on_its_side_of_zero(output, schema, valid, says):
    ok, error = validate_json(output, schema)
    assert ok is valid and (error is None if says is None else says in error), error


@pytest.mark.parametrize("pattern, says", [
    ("((a{1000}){1000}){1000}", "written out is 1000000000"),  # the `regex` module compiled it to 23 GB
    ("b(((a{1000}){1000}){1000}){0}", "written out is 1000000001"),  # matches "b" alone, compiled whole
    ("(x{3,}){1000}|" + "y{1000}" * 7, "written out is 11000"),
    ("a{,100000}", "a repetition count in"),  # {,m} passed the count check
    ("(?:(?:[" + "".join(f"{chr(256 + 3 * i)}-{chr(257 + 3 * i)}" for i in range(600)) + "]){99}){100}",
     "written out is 5940000"),  # 99 x 100 copies of a 600-range class: 786 MB
    ("(?x)[a-z ]{0,20}|((b{ 1000 }){ 1000 }){ 1000 }", "verbose mode"),  # Python read text, `regex` 10^9
    ("a(?x: b{ 3 })", "verbose mode"),
])
def test_patterns_that_grow_when_written_out_are_refused(pattern, says):
    """Counts were bounded one by one (1,000), not nested: 91 characters of schema took the server's
    memory in the check as typed, and a regex constraint at the output's check."""
    schemas = ({"type": "string", "pattern": pattern}, {"type": "object", "patternProperties": {pattern: {}}, "required": ["x"]})
    for given in [{"regex": pattern}] + [{"schema": json.dumps(schema)} for schema in schemas]:
        with pytest.raises(PlaygroundError, match=re.escape(says)):
            from_user(**given)
    assert from_user(regex="(x{3,}){1000}|" + "y{1000}" * 5) is not None  # 9,000 written out: allowed


@pytest.mark.parametrize("pattern, says", [
    ("a?+", "a possessive repetition"), ("(?:ab){1,2}+", "a possessive repetition"),  # llguidance: (a?)+, "aaaa"
    ("x(a*+a)", "a possessive repetition"),  # (matches nothing in Python; llguidance wrote "xaa")
    ("(?i)a[^\\s\\S]?", "the output's checker (the `regex` module) fails to read (AttributeError"),  # (mid-run, before)
])
def test_patterns_the_engines_or_the_checker_read_otherwise_are_refused_by_name(pattern, says):
    """A fuzzing review: possessive repetitions were misread by llguidance (an output the check refused),
    and one class under (?i) broke the `regex` module's compile in the middle of a run."""
    for given in ({"regex": pattern}, {"schema": json.dumps({"type": "string", "pattern": pattern})}):
        with pytest.raises(PlaygroundError, match=re.escape(says)):
            from_user(**given)


GROWN = "the size of the grammar with its counted repetitions written out"


@pytest.mark.parametrize("grammar, says", [
    ('root ::= "ab"{4000000}', "a repetition count in the grammar is 4000000"),  # 25 characters
    ('root ::= x{1000}\nx ::= "ab"{1000}', f"{GROWN} (each count times what it repeats, through the rules it names) is 2000000"),
    ('root ::= y{10}\ny ::= (x | "c"){100}\nx ::= "ab"{1000} # a comment {5}', f"{GROWN} (each count times what it repeats, through the rules it names) is 2001000"),
    ('start: x ~ 1000\nx: "ab" ~ 200..1000', f"{GROWN} (each count times what it repeats, through the rules it names) is 2000000"),
    ('start: x{2,}\n?x.2: /[0-9]{1000}/ ~ 100', f"{GROWN} (each count times what it repeats, through the rules it names) is 300000"),
    ('start: /a{1001}/', "a repetition count in a regex in the grammar is 1001"),
    ("root ::= " + "(" * 5000 + '"a"' + ")" * 5000, "nests its rules or groups too deeply to be sized here"),
    # read as the backends read them (a review of the first reading found each of these passing at 10^6):
    ('start: "a" # don\'t\n | b~1000\nb: c~1000 # it\'s\nc: "ab"', "is 2000001"),  # Lark's # comments
    ('start: "a" # :)\n | b~1000\nb: c~1000\nc: "ab"', "is 2000001"),  # (a stray bracket ended the rule)
    ('start: x~1000\nx[max_tokens=9]: y~1000\ny: "ab"', "is 2000000"),  # llguidance's rule attributes
    ('start: %json {"type":"integer"} b~1000\nb: c~1000\nc: "ab"', "is 2000012"),  # %json is no directive
    ('root ::= a.b{1000}\na.b ::= c{1000}\nc ::= "ab"', "is 2000000"),  # a GBNF name with a dot
    ('start: /(?<x>(ab{1000}){1000})/', "is 1001003"),  # a regex Python cannot parse, read loosely
    ('root ::= Regex("((ab){1000}){1000}")', "is 2000000"),  # xgrammar's regex in EBNF
    ('root ::= "' + "abcdefghij" * 100 + '"{1000}', "is 1000000"),  # a string counts its characters (it counted 1:
    ('start: /((ab{ 100 }){ 100 }){ 100 }/x', "uses verbose mode"),  # a run took 8.5 s), a regex its x flag (a fuzzing review)
])
def test_grammars_that_grow_when_written_out_are_refused(grammar, says):
    """A grammar's counts were not bounded at all: xgrammar took `root ::= "ab"{4000000}` (or a rule of
    1999 copies of one of 2000) and its matcher spent 9-10 s on a step, the server 4-6 GB larger (a
    red-team pass; the CLI here, 24.5 s and 2.6 GB). Refused before any backend reads them."""
    for backend in ("llguidance", "xgrammar"):
        with pytest.raises(PlaygroundError, match=re.escape(says)):
            from_user(grammar=grammar, backend=backend)


@pytest.mark.parametrize("grammar, refused", [
    ("root ::= " + "[" * 63_000, ""),  # a class never closed: each [ scanned to the end again (85 s at 64,000)
    ('root ::= ' + '"\\' * 31_000, ""),  # a string never closed, of escapes (80 s at 128,000)
    ("start: " + "a[" * 31_000, "nests its rules or groups too deeply"),  # Lark: each name[ looked for its
    ("start: " + "'\\" * 31_000, ""),  # attributes' ] to the end (28 s at 64,000)
])
def test_a_grammar_is_sized_in_time_linear_in_its_length(grammar, refused):
    """The size check runs in the server, before any bounded worker: a grammar of unclosed brackets or quotes
    held a lane of every visitor's (a run, the constraint check, the export) for a minute and more (an audit).
    Sized (a backend refuses the unclosed ones as it compiles, in its worker), or refused for its nesting; in
    CPU time, not wall time, that does not depend on what else the machine runs."""
    from playground.constraints import grammar_size
    started = time.process_time()
    if refused:
        with pytest.raises(PlaygroundError, match=refused):
            from_user(grammar=grammar)
    else:
        assert from_user(grammar=grammar).kind == "grammar"
        assert len(grammar_size._tokens(grammar, grammar.startswith("root"))) < 10  # the open mark runs to the end
    assert time.process_time() - started < 10  # (0.1 s here; quadratic, 28-85 s. The process's every thread counts)


def test_a_size_past_every_bound_is_said_without_its_digits():
    """12,800 counts in a row made a size of 38,000 digits, which Python would not write into the message
    (ValueError: a server error); a 2,000-character regex's 855 digits were said in full."""
    for given in ({"grammar": 'root ::= "a"' + "{999}" * 12_000}, {"grammar": "start: x" + " ~ 999" * 10_000 + '\nx: "a"'},
                  {"regex": "(" * 280 + "a" + "{999})" * 280}):
        with pytest.raises(PlaygroundError, match="written out.* is past 1,000,000,000,000, more than this host allows"):
            from_user(**given)


def test_grammars_within_the_written_out_bound_are_read():
    for grammar in ('root ::= x{100}\nx ::= "a"{1000}', 'root ::= x{50}\nx ::= "ab"{1000}',  # 100,000: the bound
                    'root ::= ("a" | [{-}]){3,5} root?',  # recursion is not written out; a class holds braces
                    '?start: item+\nitem.2: "a"i | WORD ~ 3\n%import common.WORD',
                    'start: "{" x{5} "}" /\\p{L}{3}/\nx: "y"',  # a regex Python cannot read: loosely
                    'start: "a"\n# up to {5000}', 'root ::= x .{1000}\nx ::= "ab"{20}'):  # a comment; GBNF's any character
        assert from_user(grammar=grammar) is not None


def test_what_the_meta_schema_check_meets_is_bounded_before_it(monkeypatch):
    """The meta-schema check compiles every pattern with re and visits every subschema before the
    sizes were checked (30 KB of case-insensitive classes: 58 s holding the interpreter lock; 85,000
    subschemas: 15 s); both are refused first now, and the whole parse runs in a bounded worker."""
    with pytest.raises(PlaygroundError, match="length of the schema pattern at /properties/a/pattern is 30004"):
        from_user(schema=json.dumps({"properties": {"a": {"pattern": "(?i)" + "[!-\U0010ffff]" * 6000}}}))
    with pytest.raises(PlaygroundError, match="number of subschemas is 2001"):
        from_user(schema=json.dumps({"anyOf": [{}] * 85_000}))
    from playground.constraints import spec
    monkeypatch.setattr(spec, "PARSE_SECONDS", 0.5)
    slow = {"type": "string", "pattern": "(?i)" + "[!-\U0010ffff]" * 399}  # seconds of re's work, within every size
    with pytest.raises(PlaygroundError, match="checking the schema took longer than 0.5 s"):
        from_user(schema=json.dumps(slow))
    with pytest.raises(PlaygroundError, match="checking the regex took longer than 0.5 s"):  # re's compile: seconds
        from_user(regex=slow["pattern"])
    from playground.ui import inputs as page_inputs  # the check as typed says so as Run would (it said "over 3 s")
    told = page_inputs.check_constraint("JSON schema", json.dumps(slow))
    assert "field-error" in told and "checking the schema took longer than 0.5 s" in told


def test_a_cancelled_runs_compile_in_a_worker_ends_at_once(tmp_path):
    """A run cancelled while its constraint compiled went on compiling (up to COMPILE_SECONDS) on the
    engine thread, every run behind it waiting: a cancel (playground.ui.pacing.stop_handed) now
    ends the worker, its child killed; work not stopped gets its answer."""
    import threading

    from gradio.context import LocalContext

    from playground import stopping
    from playground.constraints import worker
    from playground.ui import pacing
    outcome = []

    from tests.test_live import sleep_then_touch
    done = tmp_path / "compiled"

    def make(stop):
        yield worker.bounded(sleep_then_touch, 30, str(done), seconds=60)  # a compile of 30 s

    def drive():  # as Gradio reads a run: in its event's context
        LocalContext.event_id.set("cancelled-compile")
        try:
            outcome.extend(pacing.paced(make, 0.05))
        except stopping.Stopped as exc:
            outcome.append(exc)
    started = time.monotonic()
    thread = threading.Thread(target=drive)
    thread.start()
    while "cancelled-compile" not in dict(pacing.handed_requests()):
        assert time.monotonic() - started < 30
        time.sleep(0.02)
    import multiprocessing
    while not multiprocessing.active_children():  # its child compiling (a fixed 0.5 s wait raced a loaded host)
        assert time.monotonic() - started < 30
        time.sleep(0.02)
    pacing.stop_handed("cancelled-compile")
    thread.join(25)
    assert not thread.is_alive() and isinstance(outcome[0], stopping.Stopped), outcome
    assert "was stopped with its run" in str(outcome[0]) and not done.exists()  # (not the 30 s compile's end)
    with stopping.stopped_by(threading.Event().is_set):
        assert worker.bounded(pow, 2, 10, seconds=20) == 1024


def test_the_check_as_typed_holds_its_lane_at_most_its_ceiling_and_workers_yield_the_cpu(monkeypatch):
    """Every visitor's check as typed waits in one lane: one caller's schemas of 12 slow patterns held
    it the parse's 15 s each (another visitor's check waited 37 s), and the workers' CPU slowed a
    32-token run from 0.9 s to 14 s. The check stops a parse at its ceiling (READ_SECONDS) and says
    it was not checked as typed; Run still parses it in full. Workers run at a lower priority."""
    import os
    from playground.constraints import spec as constraint_spec, worker
    from playground.ui import inputs as page_inputs
    slow = json.dumps({"type": "string", "pattern": "(?i)" + "[!-\U0010ffff]" * 150})  # ~3 s of re's work (399 took
    # 7 s, and past the parse's 15 s while other tests shared the 2 cores)
    monkeypatch.setattr(page_inputs, "READ_SECONDS", 0.3)
    monkeypatch.setattr(constraint_spec, "PARSE_SECONDS", 900)  # (the Run's bound is not this test's: 26-30 s
    # here with two busy processes beside, about 85 s with six; the worker runs niced, its bound is wall time)
    told = page_inputs.check_constraint("JSON schema", slow)
    assert "not checked as typed (over 0.3 s)" in told and "field-error" not in told
    assert from_user(schema=slow) is not None  # Run: the parse's own bound
    assert "badge-ok" in page_inputs.check_constraint("JSON schema", slow, compiled=True)
    with worker.ceiling(0.3), pytest.raises(worker.OverCeiling, match="took longer than 0.3 s, the time given"):
        worker.bounded(time.sleep, 5, seconds=10)
    with worker.ceiling(8.0):  # the time of the whole check, not of each step in it (two steps took twice)
        worker.bounded(time.sleep, 1, seconds=10)  # (7 s to spare for starting a child of a large process)
        with pytest.raises(worker.OverCeiling):
            worker.bounded(time.sleep, 7.5, seconds=10)  # within 8 s alone, not after the first step
    with worker.ceiling(30), pytest.raises(worker.TooSlow, match="took longer than 0.3 s") as own:
        worker.bounded(time.sleep, 5, seconds=0.3)
    assert not isinstance(own.value, worker.OverCeiling)
    assert worker.bounded(os.nice, 0) == min(19, os.nice(0) + worker.CHILD_NICENESS)


def test_a_pattern_nesting_groups_too_deeply_is_refused_by_name():
    """The meta-schema check compiles each pattern with Python's re: 5,000 nested groups raised a
    bare RecursionError (and a 9,000-line traceback per request); 5,000 are now refused by length first.
    At Python's default recursion limit (torch's compiler raises it: then 1,000 are read)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)
    try:
        with pytest.raises(PlaygroundError, match="nests its groups too deeply"):
            from_user(schema=json.dumps({"type": "string", "pattern": "(" * 1000 + ")" * 1000}))
    finally:
        sys.setrecursionlimit(limit)


def test_pattern_keywords_still_validate():
    schema = {"type": "object", "patternProperties": {"^n_": {"type": "integer"}}, "additionalProperties": False,
              "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}
    assert validate_json('{"id": "abc", "n_1": 2}', schema) == (True, None)
    assert validate_json('{"id": "ABC"}', schema)[0] is False
    assert validate_json('{"n_1": "x"}', schema)[0] is False
    assert "additional properties" in validate_json('{"other": 1}', schema)[1]


AMBIGUOUS = {  # each text of x's parses in ever more ways: an Earley parser's work per token grows with the output
    "xgrammar": 'root ::= a+\na ::= b | b b | a a | c\nb ::= "x" | c c\nc ::= "x" | b',
    "llguidance": 'start: a+\na: b | b b | a a | c\nb: "x" | c c\nc: "x" | b',
}


@pytest.fixture(scope="module")
def x_pair(tokenizer):
    """A pair that writes x after x, the text every ambiguous grammar above allows."""
    (x,) = tokenizer("x").input_ids
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=31, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.3, seed=32)
    return tiny.make_pair(tiny.prefer_tokens(target, [x], 8.0), tiny.prefer_tokens(draft, [x], 8.0), tokenizer)


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_an_ambiguous_grammar_stops_the_run_with_its_reason_instead_of_holding_it(tokenizer, x_pair, monkeypatch,
                                                                                   backend):
    """Untouched, xgrammar took 0.15 s a mask after 250 x's of this grammar and kept growing (a 2,048-token run:
    hours); llguidance gives up at its own limit. Each call of the matcher is bounded in CPU time (the
    bound lowered here, so the test is quick), and the run stops saying why, next to the constraint."""
    monkeypatch.setattr(limits, "CONSTRAINT_STEP_SECONDS", 0.001)
    constraint = session.constrain(x_pair, ConstraintSpec("grammar", AMBIGUOUS[backend], backend))
    with pytest.raises(PlaygroundError, match=r"took [0-9.]+ s of CPU for one step after \d+ tokens, more than this "
                                              r"host allows \(0\.001 s\): simplify the constraint") as caught:
        session.run(x_pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=2048),
                    constraint=constraint)
    assert caught.value.where == "constraint"
    (x,) = tokenizer("x").input_ids  # the check of an output after its run is bounded the same way
    valid, error = constraint.validate("x" * 600, [x] * 600, complete=True)
    assert not valid and error.startswith("could not be checked: the constraint took")


def test_a_runs_constraint_work_is_bounded_in_all(tokenizer, x_pair, monkeypatch):
    monkeypatch.setattr(limits, "CONSTRAINT_RUN_SECONDS", 0.0)
    constraint = session.constrain(x_pair, ConstraintSpec("regex", "x{1,64}", "llguidance"))
    with pytest.raises(PlaygroundError, match=r"s of CPU in this run, more than this host allows \(0 s\)"):
        session.run(x_pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=64), constraint=constraint)
    monkeypatch.setattr(limits, "CONSTRAINT_RUN_SECONDS", 120)
    result = session.run(x_pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=64),
                         constraint=constraint)
    assert result.valid and set(result.text) == {"x"}


def test_a_long_forced_text_past_the_runs_bound_is_said_as_such_not_as_ambiguity(tokenizer, x_pair, monkeypatch):
    """A review: {"const": "ab" * 50000} (100 KB, inside the schema's size) took the run's 30 s, each token finding the
    whole forced text again (40 ms a call on the demo tokenizer), and was told to look for an ambiguous grammar."""
    monkeypatch.setattr(limits, "CONSTRAINT_RUN_SECONDS", 0.3)
    constraint = session.constrain(x_pair, ConstraintSpec("json", json.dumps({"const": "ab" * 20_000}), "llguidance"))
    with pytest.raises(PlaygroundError, match=r"s of CPU in this run, more than this host allows \(0\.3 s\): most of it "
                                              r"finding the text the constraint forces") as caught:
        session.run(x_pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=2048), constraint=constraint)
    assert caught.value.where == "constraint" and "ambiguous" not in str(caught.value)
    monkeypatch.setattr(limits, "CONSTRAINT_RUN_SECONDS", 120)  # one step past its own bound: said the same way
    monkeypatch.setattr(limits, "CONSTRAINT_STEP_SECONDS", 0.001)
    constraint = session.constrain(x_pair, ConstraintSpec("json", json.dumps({"const": "ab" * 20_000}), "llguidance"))
    with pytest.raises(PlaygroundError, match=r"for one step after \d+ tokens, .*: most of it finding the text") as caught:
        session.run(x_pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=2048), constraint=constraint)
    assert "ambiguous" not in str(caught.value)  # (xgrammar's forced text is found 256 bytes at most: none of its
    # steps is long for it, test_constraints.test_xgrammars_forced_text_is_found_within_a_bound)


def test_a_refusal_is_one_bounded_line_in_the_log(caplog):
    """A review: a property name of a schema, said back in its refusal, was written raw into the server's log (its
    newlines forged whole lines of the app's own, an ANSI escape hid the rest) and whole (a 200,000-character
    value: 200 KB of log and of popup a request, 160 KB a second from one address)."""
    import logging
    from playground.errors import MESSAGE_CHARACTERS
    from playground.ui import experiments_tab, inputs, live
    forged = "\n2026-12-02 15:00:00,000 playground.ui: FORGED \x1b[8m"
    with pytest.raises(PlaygroundError) as refused:
        from_user(schema=json.dumps({"type": "object", "properties": {forged + "K" * 240_000: {"minLength": "x"}}}))
    said = str(refused.value)
    assert "FORGED" in said and len(said) <= MESSAGE_CHARACTERS and said.endswith("'x' is not of type 'integer'")
    caplog.set_level(logging.INFO)
    inputs.user_error(refused.value)
    live.failed(refused.value, wrote=False)
    experiments_tab.experiment_error(refused.value, 0)
    lines = [r.getMessage() for r in caplog.records if "FORGED" in r.getMessage()]
    assert len(lines) == 3 and all("\n" not in line and "\x1b" not in line and len(line) < 600 for line in lines)
    assert all("\\n2026-12-02" in line and "\\x1b[8m" in line for line in lines), lines
