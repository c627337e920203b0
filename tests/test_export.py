"""playground.export: every preset's vLLM and SGLang commands and requests use only the option names,
config keys and request fields read from the engines' sources (tests/data/engine_options.json);
commands split with shlex, bodies round-trip through JSON, the transformers snippet compiles (and, for
the demo pair, runs and writes the playground's text), the
notes name what an engine cannot express, and hostile text stays inside its quotes."""
import argparse
import html
import ast
import dataclasses
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from playground import session
from playground.errors import PlaygroundError
from playground.export import HUB_IDS, LOCAL, export_setting, format_export, shell_block
from playground.presets import all_presets
from playground.presets import Settings

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = json.loads((ROOT / "tests" / "data" / "engine_options.json").read_text(encoding="utf-8"))
VLLM, SGL = DOC["vllm"], DOC["sglang"]
PRESETS = all_presets()
HOSTILE = "'; rm -rf / #\"\"\" $(touch /tmp/pwned) `id` \\ \n\t}{%s"
HOSTILE_ID = "'; rm -rf / #\"\"\" $(touch /tmp/pwned) `id` ``` \\ }{%s"  # a model id's: no control character


def settings(name: str, **changes) -> Settings:
    return dataclasses.replace(Settings.from_preset(PRESETS[name]), **changes)


def options(argv: list[str], documented: list[str]) -> dict[str, str]:
    """--flag value pairs, parsed by argparse with exactly the documented flags (unknown ones fail)."""
    parser = argparse.ArgumentParser(exit_on_error=False, allow_abbrev=False)
    for flag in documented:
        parser.add_argument(flag)
    return {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}


def vllm_options(e) -> dict[str, str]:
    argv = shlex.split(e.vllm_command)
    assert argv[:2] == ["vllm", "serve"] and not argv[2].startswith("--")
    return options(argv[3:], VLLM["cli_options"]["names"])


def sglang_options(e) -> dict[str, str]:
    argv = shlex.split(e.sglang_command)
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    return options(argv[3:], SGL["server_flags"]["names"])


def check_vllm(e, s):
    opts = vllm_options(e)
    if "speculative_config" in opts:
        spec = json.loads(opts["speculative_config"])
        assert set(spec) <= set(VLLM["speculative_config_keys"]["names"])
        assert spec["method"] in VLLM["speculative_methods"]["names"]
        assert isinstance(spec["num_speculative_tokens"], int) and spec["num_speculative_tokens"] >= 1
    if "structured_outputs_config" in opts:
        config = json.loads(opts["structured_outputs_config"])
        assert set(config) <= set(VLLM["structured_outputs_config_keys"]["names"])
        assert config["backend"] in VLLM["structured_outputs_backends"]["names"]
    if "reasoning_parser" in opts:
        assert opts["reasoning_parser"] in VLLM["reasoning_parsers"]["names"]
    return opts


def check_sglang(e):
    opts = sglang_options(e)
    if "speculative_algorithm" in opts:
        assert opts["speculative_algorithm"] in SGL["speculative_algorithms"]["names"]
        assert int(opts["speculative_num_draft_tokens"]) >= 2
    for flag in ("speculative_num_steps", "speculative_eagle_topk", "speculative_ngram_max_bfs_breadth"):
        assert flag not in opts or int(opts[flag]) >= 1
    assert opts.get("grammar_backend", "xgrammar") in SGL["grammar_backends"]["names"]
    assert opts.get("reasoning_parser", "qwen3") in SGL["reasoning_parsers"]["names"]
    return opts


def check_request(body: dict, engine: dict, s):
    assert json.loads(json.dumps(body)) == body
    fields = engine["chat_request_fields" if s.chat else "completion_request_fields"]["names"]
    assert set(body) <= set(fields), set(body) - set(fields)
    assert ("messages" in body) == s.chat and ("prompt" in body) != s.chat
    if "response_format" in body:
        fmt = body["response_format"]
        assert fmt["type"] in engine["response_format"]["types"]
        assert set(fmt["json_schema"]) <= set(engine["response_format"]["json_schema_keys"])
        assert fmt["json_schema"]["schema"] == json.loads(s.schema)
    else:
        assert not s.schema.strip()
    assert set(body.get("structured_outputs", {})) <= set(VLLM["structured_outputs_request_keys"]["names"])


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_exports_documented_names(name):
    s = settings(name)
    e = export_setting(s)
    check_vllm(e, s)
    check_sglang(e)
    check_request(e.vllm_request, VLLM, s)
    check_request(e.sglang_request, SGL, s)
    compile(e.transformers_code, "<export>", "exec")
    for text in (e.vllm_command, e.sglang_command, json.dumps(e.vllm_request), e.transformers_code):
        assert not re.search(r"(?<![\w/-])(demo-target|demo-draft|smollm2-135m-instruct)\b", text)
    assert e.endpoint == ("/v1/chat/completions" if s.chat else "/v1/completions")


def test_notes_name_what_engines_cannot_express():
    feature = export_setting(settings("smollm2")).notes
    assert all("feature draft" in " ".join(feature[k]) for k in feature)
    assert "--speculative-config" not in export_setting(settings("smollm2")).vllm_command
    cascade = export_setting(settings("qwen2.5-7b-cascade")).notes
    assert all("cascade" in " ".join(cascade[k]) for k in cascade)
    reduced = export_setting(settings("smollm2-token-draft", draft="ngram+smollm2-draft"))  # (a review: the launch
    assert "--speculative" not in reduced.vllm_command + reduced.sglang_command  # commands named the local alias)
    assert reduced.notes == export_setting(settings("smollm2-token-draft")).notes
    demo = export_setting(settings("demo")).notes
    assert all("toy pair" in " ".join(demo[k]) for k in demo)
    # said first where nothing speculative carries over (a newcomer's review: the default preset's export served the
    # target alone, said only in the notes under a promise of serving at scale)
    alone = export_setting(settings("smollm2"))
    assert alone.alone.startswith("Nothing speculative to export: the draft smollm2-feature-draft runs only in this playground")
    assert format_export(alone).startswith(f"> {alone.alone}\n\n### vLLM")
    assert "the draft smollm2-draft runs only" in reduced.alone and export_setting(settings("demo")).alone == ""
    assert export_setting(settings("smollm2-1.7b")).alone == "" and "--speculative-config" in export_setting(
        settings("smollm2-1.7b")).vllm_command  # the pair the line names does export speculation
    for policy in ("schedule", "confidence"):
        notes = export_setting(settings("qwen2.5-7b", policy=policy)).notes
        assert policy in " ".join(notes["vllm"]) and policy in " ".join(notes["sglang"])
    constrained = export_setting(settings("smollm2-json")).notes["transformers"]
    assert any("no JSON-schema" in n for n in constrained)
    sampled = export_setting(settings("qwen2.5-7b", temperature=0.7)).notes
    assert "--enable-deterministic-inference" in " ".join(sampled["sglang"])
    assert "deterministic" not in " ".join(sampled["vllm"] + export_setting(settings("qwen2.5-7b")).notes["sglang"])


def test_tree_is_a_chain_for_vllm_and_a_sized_tree_for_sglang():
    s = settings("qwen2.5-7b", tree="1,2,1,1")
    e = export_setting(s)
    assert all("tree" in " ".join(e.notes[k]) for k in e.notes)
    assert json.loads(vllm_options(e)["speculative_config"])["num_speculative_tokens"] == 4
    opts = check_sglang(e)
    assert (opts["speculative_num_steps"], opts["speculative_eagle_topk"], opts["speculative_num_draft_tokens"]) == ("4", "2", "8")


def test_prompt_lookup_and_reasoning_flags():
    ngram = export_setting(settings("qwen2.5-7b-ngram"))
    assert json.loads(vllm_options(ngram)["speculative_config"]) == {
        "method": "ngram", "num_speculative_tokens": 8, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
    from playground.engine.proposers import PromptLookupProposer
    assert PromptLookupProposer().max_ngram == 3  # the drafter the export describes is the one measured
    assert sglang_options(ngram)["speculative_num_draft_tokens"] == "9"  # its match window the engine's, 3 down to 1
    assert (sglang_options(ngram)["speculative_ngram_min_match_window_size"],  # (SGLang's default went to 12)
            sglang_options(ngram)["speculative_ngram_max_match_window_size"]) == ("1", "3")
    assert "prompt_lookup_num_tokens=8" in ngram.transformers_code
    for name, vllm_name, sglang_name in (("qwen3-8b", "qwen3", "qwen3"), ("deepseek-r1-distill-7b", "deepseek_r1", "deepseek-r1")):
        e = export_setting(settings(name))
        assert vllm_options(e)["reasoning_parser"] == vllm_name and sglang_options(e)["reasoning_parser"] == sglang_name


def test_a_grammar_reaches_each_engine_as_its_own_field():
    """vLLM's structured_outputs.grammar and SGLang's ebnf: both read Lark or GBNF under llguidance (as
    the playground does); under xgrammar vLLM reads both, SGLang GBNF alone (a note says so)."""
    grammar = 'root ::= "yes" | "no"'
    for backend in ("llguidance", "xgrammar"):
        s = settings("qwen2.5-7b", grammar=grammar, backend=backend)
        e = export_setting(s)
        assert e.vllm_request["structured_outputs"] == {"grammar": grammar} and e.sglang_request["ebnf"] == grammar
        assert "regex" not in e.sglang_request and "response_format" not in e.vllm_request
        assert sglang_options(e)["grammar_backend"] == backend
        assert "grammar constraint built in" in " ".join(e.notes["transformers"])
        check_request(e.vllm_request, VLLM, s)
        check_request(e.sglang_request, SGL, s)
        assert not any("GBNF only" in note for notes in e.notes.values() for note in notes)
    lark = 'start: "yes" | "no"'
    for backend, told in (("xgrammar", True), ("llguidance", False)):
        e = export_setting(settings("qwen2.5-7b", grammar=lark, backend=backend))
        assert any("reads a request's ebnf as GBNF only" in note for note in e.notes["sglang"]) is told
        assert not any("GBNF only" in note for note in e.notes["vllm"])
    with pytest.raises(PlaygroundError, match="give one constraint only"):
        export_setting(settings("qwen2.5-7b", grammar=grammar, regex="[0-9]+"))
    code, out, _ = run_cli("--preset", "qwen2.5-7b", "--grammar", str(ROOT / "tests" / "data" / "yes_no.gbnf"), "--json")
    assert code == 0 and json.loads(out)["vllm_request"]["structured_outputs"] == {"grammar": grammar + "\n"}


def test_regex_and_policies_reach_each_engine():
    s = settings("qwen2.5-7b", regex="[0-9]{3}-[a-z]+", backend="xgrammar", policy="confidence", confidence=0.3)
    e = export_setting(s)
    assert e.vllm_request["structured_outputs"] == {"regex": s.regex} and e.sglang_request["regex"] == s.regex
    assert json.loads(vllm_options(e)["structured_outputs_config"]) == {"backend": "xgrammar"}
    assert sglang_options(e)["grammar_backend"] == "xgrammar"
    assert "assistant_confidence_threshold = 0.3" in e.transformers_code
    check_request(e.vllm_request, VLLM, s)
    check_request(e.sglang_request, SGL, s)
    schedule = export_setting(settings("qwen2.5-7b", policy="schedule")).transformers_code
    assert "'heuristic_transient'" in schedule and "num_assistant_tokens = 2" in schedule


def test_a_pair_of_two_logits_widths_is_exported_as_the_engines_accept_it():
    """Qwen2.5-7B (152,064 logits) with its 0.5B draft (151,936): vLLM refuses such a draft_model pair
    and transformers such an assistant, so the page's default preset exported two broken snippets."""
    e = export_setting(settings("qwen2.5-7b", temperature=0.7))
    spec = json.loads(vllm_options(e)["speculative_config"])
    assert spec["use_heterogeneous_vocab"] is True and "draft_sample_method" not in spec
    assert any("152,064 wide, the draft's 151,936" in n and "drawn greedily" in n for n in e.notes["vllm"])
    assert any("152,064 wide, the draft's 151,936" in n and "pull request 23838" in n for n in e.notes["sglang"])  # (it
    # said nothing there: SGLang's STANDALONE check refuses the pair as the server starts; a scripting review)
    assert "draft.resize_token_embeddings(model.config.get_text_config().vocab_size)" in e.transformers_code
    compile(e.transformers_code, "<export>", "exec")
    same = export_setting(settings("qwen3-8b", temperature=0.7))  # one width: drafts drawn as the playground draws them
    assert json.loads(vllm_options(same)["speculative_config"])["draft_sample_method"] == "probabilistic"
    assert "resize_token_embeddings" not in same.transformers_code
    assert not any("vocab_size" in n for n in same.notes["sglang"])
    greedy = json.loads(vllm_options(export_setting(settings("qwen3-8b", temperature=0.0)))["speculative_config"])
    assert "draft_sample_method" not in greedy and "use_heterogeneous_vocab" not in greedy


def test_a_model_without_a_chat_template_is_exported_as_raw_text():
    """The demo pair has no chat template: the playground sent raw text, the export a chat request."""
    e = export_setting(settings("demo", chat=True))
    assert e.endpoint == "/v1/completions" and e.vllm_request["add_special_tokens"] is False
    assert "apply_chat_template" not in e.transformers_code and "add_special_tokens=False" in e.transformers_code
    assert any("no chat template" in n for n in e.notes["vllm"])


def test_notes_fit_the_way_of_drafting():
    lookup = export_setting(settings("demo-ngram", policy="schedule"))
    assert any("prompt lookup proposes what followed its match" in n for n in lookup.notes["transformers"])
    feature = export_setting(settings("smollm2", tree="2,2,1"))
    assert not any("needs a draft model" in n for notes in feature.notes.values() for n in notes)
    confident = export_setting(settings("demo", policy="confidence"))
    assert any("drafts one more token at each early stop" in n for n in confident.notes["transformers"])
    assert not any("thinks and answers freely" in n for n in confident.notes["transformers"])  # no thinking here
    assert any("thinks and answers freely" in n for n in export_setting(settings("qwen3-8b-json")).notes["transformers"])


def test_model_aliases_map_to_loadable_ids():
    from playground.models import packaged
    assert all(HUB_IDS[name] == packaged.PACKAGED[name].hub_id for name in HUB_IDS)
    assert all((ROOT / path / "config.json").is_file() for path in LOCAL.values())


def test_a_thinking_budget_for_a_shipped_model_without_think_end_is_refused_as_run_refuses_it():
    """export wrote it, with a hedged note, where generate refused it (a review); the shipped targets' own
    tokenizers have no </think>, read here."""
    from transformers import AutoTokenizer
    from playground.constraints.reasoning import check_marker
    from playground.export import SHIPPED_WITHOUT_THINK_END
    from playground.models.locate import locate
    for name in SHIPPED_WITHOUT_THINK_END:
        with pytest.raises(PlaygroundError, match="has no </think> token") as run_said:
            check_marker(AutoTokenizer.from_pretrained(locate(name)))
        with pytest.raises(PlaygroundError) as export_said:
            export_setting(settings("demo", target=name, draft="ngram", regex="[a-z]+", think_budget=5))
        assert str(export_said.value) == str(run_said.value)
    assert export_setting(settings("demo", regex="[a-z]+", think_budget=0))  # no budget: exported
    assert export_setting(settings("demo", think_budget=5))  # no constraint: the budget is not used (said so), not refused


def test_bad_constraints_are_refused():
    with pytest.raises(PlaygroundError):
        export_setting(settings("demo-json", regex="a+"))
    with pytest.raises(PlaygroundError):
        export_setting(settings("demo-json", schema="{not json"))
    for target, draft in (("--help", "ngram"), ("Qwen/x", "-rf"), ("", "ngram")):  # options, or nothing
        with pytest.raises(PlaygroundError):
            export_setting(settings("qwen2.5-7b", target=target, draft=draft))


def shell_argv(command: str) -> list[str]:
    """The words a real shell passes for `command` (run as printf's arguments: nothing executes)."""
    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + command.split(" ", 1)[1]], capture_output=True, check=True)
    return out.stdout.decode().split("\0")[:-1]


def test_hostile_text_stays_quoted():
    benign = export_setting(settings("qwen2.5-7b", prompt="hello", system="be brief", target="Qwen/x", draft="a"))
    with pytest.raises(PlaygroundError, match=r"holds '\\n'"):  # (a newline and ``` closed Markdown's fence: refused)
        export_setting(settings("qwen2.5-7b", target="Qwen/x" + HOSTILE, draft="a"))
    s = settings("qwen2.5-7b", prompt=HOSTILE, system=HOSTILE, target="Qwen/x" + HOSTILE_ID, draft="a" + HOSTILE_ID,
                 regex=HOSTILE, schema="")
    e = export_setting(s)
    assert shlex.split(e.vllm_command)[2] == s.target
    assert shell_argv(e.vllm_command) == shlex.split(e.vllm_command)[1:]
    assert shell_argv(e.sglang_command) == shlex.split(e.sglang_command)[1:]
    assert sglang_options(e)["speculative_draft_model_path"] == s.draft
    assert e.vllm_request["messages"][-1]["content"] == HOSTILE and e.sglang_request["regex"] == HOSTILE
    tree = ast.parse(e.transformers_code)
    assert len(tree.body) == len(ast.parse(benign.transformers_code).body)  # no statement smuggled in
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert {s.target, s.draft, HOSTILE} <= strings
    schema = json.dumps({"type": "object", "description": HOSTILE, "properties": {HOSTILE: {"type": "string"}}})
    js = export_setting(settings("smollm2-json", schema=schema, schema_in_prompt=True, prompt=HOSTILE))
    assert js.vllm_request["response_format"]["json_schema"]["schema"] == json.loads(schema)
    compile(js.transformers_code, "<export>", "exec")


def test_format_export_is_markdown_with_runnable_commands():
    """Each engine's block, one option a line, is read by a real shell as the command and the request."""
    for preset in ("smollm2-json", "qwen2.5-7b"):
        e = export_setting(settings(preset, prompt=HOSTILE, system=HOSTILE, draft="Qwen/d" + HOSTILE_ID))
        text = format_export(e)
        fences = [line for line in text.split("\n") if line.startswith("```")]  # (``` inside a line closes nothing)
        assert len(fences) == 6 and "### vLLM" in text and "### SGLang" in text and "### transformers" in text
        for engine, command, body in (("vllm", e.vllm_command, e.vllm_request), ("sglang", e.sglang_command, e.sglang_request)):
            block = shell_block(e, engine)
            assert f"```bash\n{block}```" in text
            launch, curl = block.rstrip("\n").split("\n\n")
            options = [word for word in shlex.split(command)[3:] if word.startswith("--")]
            assert launch.count(" \\\n  --") == len(options) > 0
            assert shell_argv(launch) == shlex.split(command)[1:]
            argv = shell_argv(curl)
            assert json.loads(argv[argv.index("-d") + 1]) == body and argv[0].endswith(e.endpoint)
    assert "feature draft" in format_export(export_setting(settings("smollm2-json")))


@pytest.mark.parametrize("schema, regex, message", [
    ('{"a":' + "[" * 50_000 + "]" * 50_000 + "}", "", "nested too deeply"),
    (json.dumps({"description": "x" * 2**20}), "", "length of the schema"), ("", "a" * 3000, "length of the regex"),
    ('{"maximum": NaN}', "", "NaN is not a JSON number"), ('{"maximum": 1e999}', "", "too large")])
def test_export_refuses_deep_huge_and_non_json_constraints_by_name(schema, regex, message):
    with pytest.raises(PlaygroundError, match=message):
        export_setting(settings("qwen2.5-7b", schema=schema, regex=regex))


def test_export_module_stays_below_the_ui_and_torch():
    code = ("import sys, playground.export; "
            "assert 'torch' not in sys.modules and not any(m.startswith('playground.ui') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_evidence_names_its_sources():
    sources = [v for engine in (VLLM, SGL) for entry in engine.values() if isinstance(entry, dict)
               for k, v in entry.items() if k in ("source", "present_at", "absent_at")]
    assert len(sources) >= 15
    for source in sources:
        assert source["repo"] in ("vllm-project/vllm", "sgl-project/sglang") and source["path"]
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])


def run_cli(*argv) -> tuple[int, str, str]:
    out = subprocess.run([sys.executable, "-m", "playground", "export", *argv], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    return out.returncode, out.stdout, out.stderr


def test_cli_export_is_the_pages_export_of_the_same_setting():
    code, out, _ = run_cli("--preset", "qwen2.5-7b", "--k", "3", "--regex", "[0-9]+", "--temperature", "0.5", "--json")
    assert code == 0
    assert json.loads(out) == dataclasses.asdict(export_setting(settings("qwen2.5-7b", k=3, regex="[0-9]+", temperature=0.5)))
    code, text, _ = run_cli("--preset", "smollm2-json")
    assert code == 0 and text == format_export(export_setting(settings("smollm2-json")))


@pytest.mark.parametrize("argv,message", [(["--preset", "demo", "--k", "99"], "k must be"),
                                          (["--preset", "nope"], "unknown preset"),
                                          (["--preset", "demo", "--tree", "9,9,9"], "tree"),
                                          (["--preset", "demo", "--grammar", "g.lark"], "grammar"),
                                          # generate refused these and export wrote them into a request (exit 0):
                                          (["--preset", "demo", "--regex", "(unclosed"], "not a valid regular expression"),
                                          (["--preset", "demo", "--schema", '{"type": "objekt"}'], "not a valid JSON Schema"),
                                          (["--preset", "demo", "--think-budget", "-3", "--regex", "[a-z]+"],
                                           "thinking budget must be a whole number"),
                                          (["--preset", "demo", "--regex", "a{0}"], "allows only the empty output"),
                                          (["--preset", "demo", "--regex", "(?s:.)", "--constraint-backend", "xgrammar"],
                                           "xgrammar cannot use this regex"),
                                          (["--preset", "demo", "--prompt", " "], "the prompt is empty"),
                                          (["--target", "foo/bar", "--draft", "baz/qux"],
                                           "the prompt is empty: give --prompt (models named without a --preset"),
                                          # a newline and ``` closed the Markdown's fence early (a review):
                                          (["--target", "org/m\n```\n<b>x</b>", "--draft", "ngram", "--prompt", "hi"],
                                           "model id 'org/m\\n```\\n<b>x</b>' holds '\\n'"),
                                          (["--target", "org/m", "--draft", "org/d\rx", "--prompt", "hi"], "holds '\\r'")])
def test_cli_export_refuses_in_one_line(argv, message):
    code, out, err = run_cli(*argv)
    assert code == 2 and out == "" and err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_share_link_carries_the_export():
    from playground.ui.export_tab import export_view
    from playground.ui.inputs import inputs_from_settings
    from playground.ui.share import from_query, to_query
    import urllib.parse
    sent = settings("qwen3-8b", k=6, regex="(yes|no)", prompt="Is 7 prime?", temperature=0.3, seed=9)
    restored, notices = from_query(dict(urllib.parse.parse_qsl(to_query(sent))), allow_custom=False)
    assert notices == [] and export_setting(restored) == export_setting(sent)
    notes, vllm, sglang, code = export_view(*inputs_from_settings(restored))
    assert '"num_speculative_tokens":6' in vllm and '"regex": "(yes|no)"' in sglang and "--reasoning-parser qwen3" in vllm
    assert "temperature=0.3" in code and 'id="export-notes"' in notes


def test_the_page_says_why_a_setting_cannot_be_exported():
    from playground.ui.export_tab import export_view
    from playground.ui.inputs import inputs_from_settings
    notes, *boxes = export_view(*inputs_from_settings(settings("qwen2.5-7b", schema="{oops")))
    assert 'id="export-error"' in notes and "not valid JSON" in notes and boxes == ["", "", ""]
    notes, *boxes = export_view(*inputs_from_settings(settings("qwen2.5-7b", regex="(unclosed")))  # as Run reads it
    assert 'id="export-error"' in notes and "not a valid regular expression" in notes and boxes == ["", "", ""]
    notes = export_view(*inputs_from_settings(settings("qwen2.5-7b", prompt="<script>x</script>")))[0]
    assert "<script>" not in notes
    notes, *boxes = export_view(*inputs_from_settings(settings("qwen2.5-7b", regex="(?=a)b")))  # Run refuses it: it was
    assert 'id="export-error"' in notes and "look-around" in notes and boxes == ["", "", ""]  # exported, no word
    from playground.ui.inputs import SETTING_NAMES
    values = list(inputs_from_settings(settings("qwen2.5-7b")))
    values[SETTING_NAMES.index("kind")], values[SETTING_NAMES.index("constraint")] = "regex", " "  # exported unconstrained
    notes, *boxes = export_view(*values)
    assert 'id="export-error"' in notes and "the constraint is empty" in notes and boxes == ["", "", ""]



@pytest.mark.parametrize("changes, says", [(dict(tree="0,0"), "a token tree is 1 to 8 depths"),
                                           (dict(tree="50,50,50,50"), "a token tree is 1 to 8 depths"),
                                           (dict(tree="2,2,2", policy="schedule"), "fixed draft policy"),
                                           (dict(tree="4,4,4/8", temperature=0.8), "greedy decoding"),
                                           (dict(seed=-5), "seed must be between 0 and 2^63 - 1"),
                                           (dict(seed=2**64), "seed must be between 0 and 2^63 - 1"),
                                           (dict(temperature=0.004), "temperature must be 0 (greedy) or between"),
                                           (dict(prompt=" "), "the prompt is empty"),
                                           (dict(system="\ud800"), "the system prompt is not valid UTF-8"),
                                           (dict(target="someone/else"), "not one of this host's preset models")])
def test_the_page_exports_only_what_run_would_run(changes, says):
    """Export read the constraint alone: each of these, which Run refuses, was exported (a tree of 50
    children as SGLang's 7,551 draft tokens; a seed past 2^64 as a snippet that failed in torch); a
    review. The CLI's export refused them already."""
    from playground.ui import live
    from playground.ui.export_tab import export_view
    from playground.ui.inputs import inputs_from_settings
    sent = settings("qwen2.5-7b", **changes)
    with pytest.raises(PlaygroundError, match=re.escape(says)):  # Run's own checks refuse it, as the export must
        live.checked_config(sent, allow_custom=False)
        session.check_prompt_text(sent.prompt, sent.system)
    notes, *boxes = export_view(*inputs_from_settings(sent))
    assert 'id="export-error"' in notes and says in html.unescape(notes) and boxes == ["", "", ""], notes[:300]

def test_the_pages_export_is_bounded_in_size():
    """A 1 MB call (a schema of one 250,000-emoji enum string, shown in the prompt too) came back as
    a 17 MB export (each emoji JSON-escaped to 12 characters, the schema in each request twice), kept
    per session and per unread stream (a red-team pass: +7.5 GB from 250 unread streams)."""
    import json
    from playground.limits import MAX_EXPORT_CHARS
    from playground.ui.export_tab import export_view
    from playground.ui.inputs import inputs_from_settings
    emoji = json.dumps({"enum": ["\U0001F600" * 250_000]}, ensure_ascii=False)
    notes, *boxes = export_view(*inputs_from_settings(settings("qwen2.5-7b", schema=emoji, schema_in_prompt=True)))
    assert 'id="export-error"' in notes and f"more than the page shows ({MAX_EXPORT_CHARS:,})" in notes, notes[:300]
    assert boxes == ["", "", ""]
    big = json.dumps({"enum": ["x" * 60_000]})  # a large ASCII schema, in the prompt too: shown
    notes, vllm, sglang, code = export_view(*inputs_from_settings(settings("qwen2.5-7b", schema=big, schema_in_prompt=True)))
    assert 'id="export-notes"' in notes and "x" * 60_000 in vllm and "x" * 60_000 in sglang


def test_the_export_tab_reads_a_constraint_within_the_check_as_typeds_time(monkeypatch):
    """Its lanes are every visitor's (the tab's select and its refresh as settings change): one
    caller's slow schemas held each 15 s an event. Past READ_SECONDS it says so; once a Run has read
    the schema (kept), the export shows."""
    import json
    from playground.constraints import from_user
    from playground.ui import export_tab
    from playground.ui.inputs import inputs_from_settings
    slow = json.dumps({"title": "this test's own", "type": "string",  # (not one another test's Run has read: kept)
                       "pattern": "(?i)" + "[!-\U0010ffff]" * 150})  # 2.8 s of re's work (398: 7.6 s
    # idle, past the 15 s a Run gives it while other tests shared the 2 cores)
    monkeypatch.setattr(export_tab, "READ_SECONDS", 0.3)
    from playground.constraints import spec as constraint_spec
    monkeypatch.setattr(constraint_spec, "PARSE_SECONDS", 900)  # (a Run's bound, not this test's: 26-30 s here
    # with two busy processes beside; the worker runs niced, its bound is wall time)
    notes, *boxes = export_tab.export_view(*inputs_from_settings(settings("qwen2.5-7b", schema=slow)))
    assert "took longer than 0.3 s" in notes and "a Run reads it with more time" in notes and boxes == ["", "", ""]
    from_user(schema=slow)  # a Run's reading, kept
    notes, vllm, *_ = export_tab.export_view(*inputs_from_settings(settings("qwen2.5-7b", schema=slow)))
    assert 'id="export-notes"' in notes and '"json_schema"' in vllm


def test_a_note_every_engine_shares_is_said_once():
    from playground.ui.export_tab import export_view
    from playground.ui.inputs import inputs_from_settings
    notes = export_view(*inputs_from_settings(settings("demo")))[0]
    assert notes.count("toy pair") == 1 and "<b>Every engine</b>" in notes
    assert "system prompt is not sent" not in notes
    told = export_view(*inputs_from_settings(settings("demo", system="be brief")))[0]  # (dropped unsaid: a review)
    assert told.count("The system prompt is not sent: the playground gives it to the model only through a chat template") == 1


def test_the_reasoning_parsers_notes_follow_the_thinking_budget():
    """R1 under a constraint without a budget: the playground constrains its first token, the engines (with the
    reasoning parser the export gives them) only after </think>, and nothing said so. A budget on a model that
    does not think was said to start "with --reasoning-parser", a flag its command does not have."""
    r1 = export_setting(settings("deepseek-r1-distill-7b", regex="[0-9]+", think_budget=0))
    assert "--reasoning-parser" not in r1.vllm_command + r1.sglang_command  # (the command had it, and its note said
    assert "leaves --reasoning-parser out" in " ".join(r1.notes["vllm"])  # to leave it out: a review)
    assert "written inside the model's unclosed thinking" in " ".join(r1.notes["vllm"])  # R1's template opens <think>:
    assert "(no thinking)" not in " ".join(r1.notes["vllm"])  # it was said to answer without thinking
    thinking = export_setting(settings("deepseek-r1-distill-7b", regex="[0-9]+", think_budget=64))
    assert "--reasoning-parser deepseek_r1" in thinking.vllm_command and "leaves" not in " ".join(thinking.notes["vllm"])
    assert "Thinking budget 64: sent as thinking_token_budget" in " ".join(thinking.notes["vllm"])
    assert "Thinking budget 64: no option is emitted" in " ".join(thinking.notes["sglang"])
    plain = export_setting(settings("demo", target="someone/model", regex="[a-z]+", think_budget=96))  # (not a shipped
    # model: those have no </think>, and a budget for them is refused)
    assert "--reasoning-parser" not in plain.vllm_command + plain.sglang_command
    assert "reasoning-parser" not in " ".join(plain.notes["vllm"] + plain.notes["sglang"])
    unasked = export_setting(settings("qwen3-8b-json", think_budget=0))  # Qwen3 asked not to think: the parser stays
    assert "leaves" not in " ".join(unasked.notes["vllm"]) and "--reasoning-parser qwen3" in unasked.vllm_command
    assert "Thinking budget 96: not carried over" in " ".join(plain.notes["vllm"])  # (dropped without a word: a
    custom = export_setting(settings("demo", target="someone/reasoner", regex="[a-z]+", think_budget=96))  # review)
    assert "Thinking budget 96: not carried over" in " ".join(custom.notes["sglang"]) and "thinking_token_budget" not in (
        custom.vllm_request)
    marked = export_setting(settings("qwen3-8b", regex="[0-9]+", think_budget=64, prompt="What does </think> mean?"))
    assert "The prompt holds </think>" in " ".join(marked.notes["vllm"])  # (the engine's parser reads it from the prompt)
    assert "The prompt holds" not in " ".join(thinking.notes["vllm"])


def test_a_thinking_budget_reaches_vllm_as_its_own_field():
    """vLLM takes thinking_token_budget; its note said its form still changed, and no budget was sent: Qwen3 could
    think through all of max_completion_tokens (which counts thinking) and never reach the schema (a review)."""
    thinking = export_setting(settings("qwen3-8b-json"))  # a budget of 384
    assert thinking.vllm_request["thinking_token_budget"] == 384 and "thinking_token_budget" not in thinking.sglang_request
    check_request(thinking.vllm_request, VLLM, Settings.from_preset(PRESETS["qwen3-8b-json"]))
    assert "thinking_token_budget" not in export_setting(settings("qwen3-8b")).vllm_request  # no constraint: free
    assert "thinking_token_budget" not in export_setting(settings("demo-json", target="someone/model",
                                                                  think_budget=64)).vllm_request  # no parser


def test_each_vllm_key_a_release_may_not_know_is_named_with_its_pull_request():
    """vLLM refuses a --speculative-config key it does not know at start-up; the note named only draft_model's."""
    wide = " ".join(export_setting(settings("qwen2.5-7b")).notes["vllm"])
    assert "use_heterogeneous_vocab" in wide and "pull request 38174" in wide
    sampled = export_setting(settings("qwen3-8b"))
    assert '"draft_sample_method":"probabilistic"' in sampled.vllm_command
    assert "pull request 40269" in " ".join(sampled.notes["vllm"])


def test_qwen3_under_a_constraint_without_a_budget_is_exported_not_thinking():
    asked = export_setting(settings("qwen3-8b-json", think_budget=0))
    assert asked.vllm_request["chat_template_kwargs"] == {"enable_thinking": False} == asked.sglang_request["chat_template_kwargs"]
    assert "return_dict=True, enable_thinking=False)" in asked.transformers_code
    compile(asked.transformers_code, "<export>", "exec")
    thinking = export_setting(settings("qwen3-8b-json"))  # a budget of 384: it thinks first
    assert "chat_template_kwargs" not in thinking.vllm_request and "enable_thinking" not in thinking.transformers_code
    assert "chat_template_kwargs" not in export_setting(settings("smollm2-json", think_budget=0)).vllm_request


@pytest.mark.parametrize("name", ["demo", "demo-ngram", "demo-cascade"])
def test_the_transformers_snippet_runs_and_writes_the_playgrounds_text(name):
    """The exported transformers call, run as a user pastes it (a fresh interpreter at the repository's
    root, offline), writes the text the playground writes for the same greedy setting: its draft model,
    prompt lookup or cascade run by transformers' own assisted generation."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    prompt, tokens = "class Stack:", "24"
    code = export_setting(settings(name, prompt=prompt, max_new_tokens=int(tokens))).transformers_code
    theirs = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    ours = subprocess.run([sys.executable, "-m", "playground", "generate", "--preset", name, "--prompt", prompt,
                           "--max-new-tokens", tokens, "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert ours.returncode == 0, ours.stderr[-2000:]
    text = json.loads(ours.stdout)["text"]
    assert len(text) > 20 and theirs.stdout == text + "\n"  # (print's newline)


def test_the_snippet_in_the_runs_dtype_writes_its_text_as_its_note_says():
    """dtype='auto' loads the demo pair in bfloat16, as stored; the playground runs it in float32 on a CPU, and on
    "import os" the two texts parted within 48 tokens (a review). The note says so, and its advice holds."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    e = export_setting(settings("demo", prompt="import os", max_new_tokens=48))
    from playground.models.placement import SMALL_MODEL
    note = next(note for note in e.notes["transformers"] if "pass dtype=torch.float32 to reproduce a float32 run" in note)
    assert "float32 on a CPU" in note and f"over {SMALL_MODEL // 10**6}M parameters stored in float16" in note  # (as
    # placement.default_dtype picks: bfloat16 checkpoints in float32 on every CPU where the row kernel is built)
    code = e.transformers_code.replace("dtype='auto'", "dtype=torch.float32")
    theirs = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    ours = subprocess.run([sys.executable, "-m", "playground", "generate", "--preset", "demo", "--prompt", "import os",
                           "--max-new-tokens", "48", "--device", "cpu", "--json"], cwd=ROOT,
                          env={**env, "PLAYGROUND_CPU_DTYPE": "float32"}, capture_output=True, text=True, timeout=300)
    assert theirs.returncode == 0 and ours.returncode == 0, (theirs.stderr[-2000:], ours.stderr[-2000:])
    assert theirs.stdout == json.loads(ours.stdout)["text"] + "\n"


def test_qwen3_checkpoints_that_never_or_always_think_are_exported_as_they_behave():
    """Qwen3's Instruct checkpoints never write <think>: with --reasoning-parser qwen3 both engines wait for a
    </think> that never comes (the schema never starts; the answer is read as reasoning). Its Thinking ones open
    <think> whatever enable_thinking says, like DeepSeek-R1 (vLLM 0.33's and SGLang 0.5.23's parsers, a review)."""
    instruct = "Qwen/Qwen3-4B-Instruct-2507"
    for budget in (0, 64):
        e = export_setting(settings("qwen3-8b-json", target=instruct, think_budget=budget))
        assert "--reasoning-parser" not in e.vllm_command + e.sglang_command
        assert "chat_template_kwargs" not in e.vllm_request | e.sglang_request and "enable_thinking" not in e.transformers_code
        assert "thinking_token_budget" not in e.vllm_request
        said = " ".join(e.notes["vllm"])
        assert ("never writes <think>" in said) == (budget > 0) and "leaves --reasoning-parser out" not in said
    free = export_setting(settings("qwen3-8b", target=instruct))  # unconstrained: no parser either
    assert "--reasoning-parser" not in free.vllm_command + free.sglang_command
    thinker = export_setting(settings("qwen3-8b-json", target="Qwen/Qwen3-30B-A3B-Thinking-2507", think_budget=0))
    assert "--reasoning-parser" not in thinker.vllm_command and "chat_template_kwargs" not in thinker.vllm_request
    assert "written inside the model's unclosed thinking" in " ".join(thinker.notes["sglang"])
    budgeted = export_setting(settings("qwen3-8b-json", target="Qwen/Qwen3-30B-A3B-Thinking-2507"))
    assert "--reasoning-parser qwen3" in budgeted.vllm_command and budgeted.vllm_request["thinking_token_budget"] == 384
    hybrid = export_setting(settings("qwen3-8b-json", think_budget=0))  # Qwen3-8B itself: unchanged
    assert "--reasoning-parser qwen3" in hybrid.vllm_command and hybrid.vllm_request["chat_template_kwargs"]


def test_a_system_prompt_of_spaces_is_sent_as_none_as_the_run_reads_it():
    """The run reads spaces alone as no system prompt (the template's own stays); the export sent a system message
    of spaces, which replaces it."""
    for system, sent in (("  \n", []), ("be brief", [{"role": "system", "content": "be brief"}])):
        e = export_setting(settings("qwen2.5-7b", prompt="hello", system=system))
        assert e.vllm_request["messages"] == sent + [{"role": "user", "content": "hello"}]


def test_a_schema_of_true_is_exported_as_any_json_value():
    """Run reads the schema `true` (any JSON value); the export refused it ("must be a JSON object"; a review).
    Each engine gets {}, the same schema as an object."""
    from playground.ui.export_tab import export_view
    from playground.ui.inputs import inputs_from_settings
    notes, vllm, sglang, code = export_view(*inputs_from_settings(settings("qwen2.5-7b", schema=" true ")))
    assert 'id="export-notes"' in notes and '"schema": {}' in vllm.replace('\\"', '"') and vllm and sglang and code
    assert export_setting(settings("qwen2.5-7b", schema="true")) == export_setting(settings("qwen2.5-7b", schema="{}"))


def test_a_chat_prompt_spelling_a_token_is_said_to_be_read_otherwise_by_the_engines():
    """The playground reads a chat message's '<|im_end|>' as characters (session.chat_prompt); the engines'
    chat endpoints and apply_chat_template may read it as the token: each export says so."""
    spelled = export_setting(settings("qwen2.5-7b", prompt="hi", system="Say <|im_end|> twice."))
    for engine in ("vllm", "sglang", "transformers"):
        assert "The prompt holds '<|im_end|>'" in " ".join(spelled.notes[engine])
    for plain in (settings("qwen2.5-7b", prompt="a < b | c > d"), settings("demo", prompt="raw <|im_end|>")):
        assert "reads like one of the model's tokens" not in " ".join(export_setting(plain).notes["vllm"])
