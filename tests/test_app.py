"""The web app: event functions called directly, then the real server driven by gradio_client."""
import csv
import dataclasses
import functools
import hashlib
import html
import json
import math
import pathlib
import re
import time
import urllib.parse
import urllib.request

import gradio as gr
import pytest
from gradio_client import Client
from starlette.datastructures import QueryParams

from playground.measure import sweeps
from playground.ui import calculator, experiments_tab, files, inputs as page_inputs, json_view, playground_tab
from playground.ui import api as page_api, live, plots, race, share, turn
from playground.errors import PlaygroundError
from playground.draft_ids import cascade
from playground.events import KINDS
from playground.presets import Settings
from playground.ui.share import RANGES, from_query, to_query

QUIET = lambda *a, **k: None  # noqa: E731  (a progress callback that shows nothing)
slot = playground_tab.RUN_SLOTS.index  # where each of Run's outputs is in an update
OWN = slot("model_msg")  # the run's own outputs (stream, text, charts, download...) come before the messages

def run_preset(name: str, **overrides) -> list:
    settings = Settings.from_preset(page_inputs.PRESETS[name])
    for key, value in overrides.items():
        setattr(settings, key, value)
    return list(playground_tab.run(None, QUIET, *page_inputs.inputs_from_settings(settings)))


def test_run_streams_every_token_kind_with_consistent_stats():
    plain = run_preset("demo", max_new_tokens=96)
    constrained = run_preset("demo-json")
    assert len(plain) > 2  # streamed: several updates before the final one
    growing = [text for out in plain[:-1] if isinstance(text := out[slot("text")], str) and text]
    assert growing and all(plain[-1][slot("text")].startswith(text) for text in growing)  # the output box grows with the stream
    html = plain[-1][slot("stream")] + constrained[-1][slot("stream")]
    assert set(re.findall(r'data-kind="(\w+)"', html)) == set(KINDS)
    for outputs in (plain, constrained):
        report = json.loads(open(outputs[-1][slot("download")]["value"]).read())  # the downloadable run
        stats = report["stats"]
        tokens = [t for r in report["rounds"] for t in r["tokens"]]
        committed = [t["id"] for t in tokens if t["kind"] != "rejected"]
        assert committed == report["token_ids"] and stats["generated_tokens"] == len(committed)
        refused_alone = sum(r["forced_refused"] for r in report["rounds"])  # drafts the constraint allowed alone,
        assert stats["proposed"] == sum(t["kind"] in ("accepted", "rejected") for t in tokens) - refused_alone  # refused
        assert stats["accepted"] == sum(t["kind"] == "accepted" for t in tokens)
        assert stats["acceptance_rate"] == pytest.approx(stats["accepted"] / stats["proposed"])
        for kind in ("draft_passes", "target_passes"):  # each round's passes, and the prompt's one pass of each model
            assert stats[kind] - sum(r[kind] for r in report["rounds"]) == 1
        measure = report["speedup_measure"]
        assert report["identical_to_baseline"] is True and measure["estimate"] > 0
        assert report["speedup"] == measure["speedup"] and (measure["speedup"] is None) == bool(measure["reason"])
        if measure["speedup"] is not None:
            assert measure["low"] <= measure["speedup"] <= measure["high"]
        assert outputs[-1][slot("measured")]["k"] == report["settings"]["k"]  # measured point for the calculator
    report = json.loads(open(constrained[-1][slot("download")]["value"]).read())
    assert report["valid"] is True and json.loads(constrained[-1][slot("json")]) == json.loads(report["text"])
    assert report["stats"]["forced"] > 0


def test_runs_outputs_are_set_by_name_and_a_misspelt_one_is_refused():
    """Run's 22 outputs were lists built by position ([gr.skip()] * 12 + ...): one off, and a chart got a message."""
    values = playground_tab.outputs({"text": "a", "badge": "b"}, text="c", status={"phase": "done"})
    assert values[slot("text")] == "c" and values[slot("badge")] == "b" and values[slot("status")] == {"phase": "done"}
    assert sum(v != gr.skip() for v in values) == 3
    with pytest.raises(KeyError, match="txt"):
        playground_tab.outputs(txt="a")
    with pytest.raises(KeyError, match="tree"):
        playground_tab.run_outputs_in_order({name: name for name in playground_tab.RUN_SLOTS if name != "tree"})


@pytest.mark.parametrize("compare", [False, True])
def test_a_run_whose_first_update_is_not_streamed_still_clears_and_sets_the_messages(monkeypatch, compare):
    """The pacing hands over the newest snapshot: a short run's first update can be the target alone's
    phase or the last one. Only a streamed first update cleared the last run's messages and outputs (an
    earlier "the prompt is empty" stayed under the prompt after a good run)."""
    from playground.ui import live
    real = live.live_run
    monkeypatch.setattr(live, "live_run", lambda *a, **k: (s for s in real(*a, **k) if s.phase != "speculative"))
    outputs = run_preset("demo", max_new_tokens=16, compare=compare)
    first = outputs[0]
    assert [first[slot(m)] for m in ("model_msg", "prompt_msg", "run_msg")] == ["", "", ""]  # the model, prompt and run messages
    badge = first[slot("badge")]
    assert badge == "" or "valid-badge" in badge or "stopped" in badge  # no earlier run's badge
    assert outputs[-1][slot("stream")] and all(isinstance(m := out[slot("model_msg")], str) or m == gr.skip() for out in outputs)


def test_preset_switch_and_url_restore():
    values = page_inputs.apply_preset("demo-ngram")
    assert values[0] == "demo-ngram" and values[2] == "ngram"

    class Request:  # (as the server reads the page's address)
        query_params = QueryParams({"preset": "demo", "k": "7", "temperature": "0.5", "bogus": "1", "target": "evil/model"})
    values = page_inputs.restore_from_url(Request())
    assert values[3] == 7 and values[4] == 0.5 and values[1] == "demo-target"
    assert "bogus" in values[-1] and "evil/model" in values[-1]
    Request.query_params = QueryParams("preset=demo&k=3&k=7&temperature=0.5&temperature=0.9")  # repeated: the last, said
    values = page_inputs.restore_from_url(Request())
    assert values[3] == 7 and values[4] == 0.9 and "'k' is given 2 times\\: the last, '7', is used" in values[-1]  # (Markdown-escaped)
    # a value in another encoding's escapes (GBK's 你好) ran as '���' without a word (an outside review in Chinese)
    Request.query_params = QueryParams("preset=demo&prompt=%C4%E3%BA%C3&k=3")
    values = page_inputs.restore_from_url(Request())
    assert values[3] == 3 and set(values[page_inputs.SETTING_NAMES.index("prompt")]) == {"\ufffd"}  # (a link made from a
    assert "prompt holds U\\+FFFD" in values[-1]  # text with one opens on it) said (Markdown-escaped)
    with pytest.raises(Exception, match="its percent-escapes at 'prompt=' are not UTF-8"):
        page_api._base_settings("", "?preset=demo&prompt=%C4%E3%BA%C3")
    for surrogate in ("\udc80", "\ud800"):  # written in the link itself (JSON's escape), not escaped: said as one
        with pytest.raises(Exception, match=re.escape(f"it holds a lone surrogate (\\u{ord(surrogate):04x}) at character 9")):
            page_api._base_settings("", f"prompt=x{surrogate}")
    # a U+FFFD of the prompt's own, in a link the app made, was refused as one of those (a review)
    assert page_api._base_settings("", "?preset=demo&prompt=mojibake+%EF%BF%BD+here").prompt == "mojibake \ufffd here"
    from playground.presets import get_preset  # an unknown preset in the CLI's words (their order and the close name
    with pytest.raises(PlaygroundError) as cli_words:  # differed; a scripting review)
        get_preset("demoo")
    with pytest.raises(PlaygroundError, match=re.escape(str(cli_words.value))):
        page_api._base_settings("demoo", "")
    assert "did you mean 'demo'?" in str(cli_words.value)


def test_a_preset_picked_keeps_what_the_user_typed_and_says_so():
    """A prompt written, then a pair picked to try it on, was replaced by the preset's without a word."""
    at = page_inputs.SETTING_NAMES.index
    stock = page_inputs.apply_preset("demo-json", page_inputs.PRESETS["demo"].prompt)  # a preset's own: replaced
    assert "metadata" in stock[at("prompt")] and stock[at("kind")] == "JSON schema" and "Kept" not in stock[-2]
    example = page_inputs.EXAMPLE_CONSTRAINTS["regex: IPv4"]
    replaced = page_inputs.apply_preset("demo", example[2], "", example[0], example[1] + "\n")  # an example's
    assert replaced[at("kind")] == "none" and "Kept" not in replaced[-2]

    mine = page_inputs.apply_preset("demo-json", "My own prompt", "Be brief.", "regex", "[0-9]+")
    for box in ("prompt", "system", "kind", "constraint", "schema_in_prompt"):
        assert mine[at(box)] == gr.skip(), box
    assert mine[at("k")] == page_inputs.PRESETS["demo-json"].k  # the pair's own settings still come with it
    assert mine[-2].endswith("*Kept your prompt, your system prompt and your regex: empty a box and pick the "
                             "preset again for the preset's own.*")
    assert mine[-1] == gr.skip()  # the section holding the user's regex stays as it is
    odd = page_inputs.apply_preset("demo", ["not", "text"], {"x": 1}, "regex", None)  # a forged call's values
    assert odd[at("prompt")] == page_inputs.PRESETS["demo"].prompt and "Kept" not in odd[-2]
    unused = page_inputs.apply_preset("demo", "My own prompt", "", "none", "[0-9]+")  # an editor's text unused
    assert unused[at("kind")] == "none" and unused[-2].endswith("*Kept your prompt: empty its box and pick the "
                                                                 "preset again for the preset's own.*")


def test_a_host_without_a_gpu_marks_the_gpu_presets_before_one_is_picked(monkeypatch):
    """A newcomer on a CPU learnt that a 7B preset cannot run here from Run's refusal."""
    monkeypatch.setattr(page_inputs, "hub_resolves", lambda: True)  # (the hub's marks: the test below)
    for gpu in (False, True):
        monkeypatch.setattr(page_inputs, "gpu_host", lambda: gpu)
        labels = dict((name, label) for label, name in page_inputs.preset_choices())
        assert list(labels) == list(page_inputs.PRESETS)  # the values: the names links and the API use
        note = page_inputs.preset_note("qwen2.5-7b")
        if gpu:
            assert labels["qwen2.5-7b"] == "qwen2.5-7b" and note.endswith("*A GPU is recommended.*")
        else:
            assert labels["qwen2.5-7b"] == "qwen2.5-7b (needs a GPU)" and "Made for a GPU, which this host lacks" in note
        assert labels["demo"] == "demo" and "GPU" not in page_inputs.preset_note("demo")


def test_a_host_without_the_hub_marks_the_presets_whose_models_are_not_here(monkeypatch, tmp_path):
    """Offline, qwen2.5-1.5b and smollm2-1.7b looked runnable until Run refused them (a newcomer's review), and so
    did any model picked by hand in the Target and Draft lists. A model in the hub's local cache (config and
    safetensors weights) counts as here."""
    monkeypatch.setattr(page_inputs, "gpu_host", lambda: True)
    monkeypatch.setattr(page_inputs, "hub_resolves", lambda: False)
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    labels = dict((name, label) for label, name in page_inputs.preset_choices())
    assert labels["qwen2.5-1.5b"] == "qwen2.5-1.5b (not downloaded)" and labels["demo"] == "demo"
    assert "Run refuses it here" in page_inputs.preset_note("qwen2.5-1.5b")
    assert "Run refuses it" not in page_inputs.preset_note("demo")
    preset = page_inputs.PRESETS["qwen2.5-1.5b"]
    for model in (preset.target, preset.draft):  # the hub cache's layout: models--org--name/snapshots/<commit>/
        repo = tmp_path / f"models--{model.replace('/', '--')}"
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text("0" * 40)
        snapshot = repo / "snapshots" / ("0" * 40)
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text("{}")
        if model == preset.target:
            assert not preset.here  # the draft missing
        (snapshot / "model.safetensors").write_bytes(b"")
    assert preset.here and dict((n, lab) for lab, n in page_inputs.preset_choices())["qwen2.5-1.5b"] == "qwen2.5-1.5b"
    drafts = dict((n, lab) for lab, n in page_inputs.model_choices(page_inputs.DRAFTS))  # the model lists say it too
    assert list(drafts) == page_inputs.DRAFTS  # (the values: what links and the API name)
    assert drafts[preset.draft] == preset.draft and drafts["demo-draft"] == "demo-draft" and drafts["ngram"] == "ngram"
    assert drafts["Qwen/Qwen3-0.6B"] == "Qwen/Qwen3-0.6B (not downloaded)"
    assert drafts["ngram+Qwen/Qwen2.5-0.5B-Instruct"] == "ngram+Qwen/Qwen2.5-0.5B-Instruct"  # the cascade's draft is here
    targets = dict((n, lab) for lab, n in page_inputs.model_choices(page_inputs.TARGETS))
    assert targets["Qwen/Qwen3-8B"] == "Qwen/Qwen3-8B (not downloaded)" and targets[preset.target] == preset.target
    monkeypatch.setattr(page_inputs, "hub_resolves", lambda: True)
    assert not any("not downloaded" in label for label, _ in page_inputs.preset_choices())  # online: no marks
    assert not any("not downloaded" in label for label, _ in page_inputs.model_choices(page_inputs.DRAFTS))


def test_experiments_use_their_own_prompts_and_explain_what_they_cannot_do():
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.prompt, settings.max_new_tokens = "", 12  # the Playground's prompt may be empty
    inputs = page_inputs.inputs_from_settings(settings)
    *measuring, (status, table, _, csv_path, k_sweep) = experiments_tab.run_sweep(None, QUIET, "k", "1,3", "def add(a, b):\\n\nclass A:\n", *inputs)
    ran_with = "; with demo-target and the draft demo-draft: temperature 0, 12 new tokens"  # each note says what it ran
    assert all(ran_with in html.unescape(update[0]) for update in [*measuring, (status,)])  # with (the line above
    # follows the Playground tab's changes), the swept k left out
    rows = table.value["data"]
    assert [row[0] for row in rows] == [1, 3] and all(row[-2] == 2 for row in rows)  # 2 prompts each
    assert "temperature" not in table.headers and [p["k"] for p in k_sweep["rows"]] == [1, 3]  # (for the calculator)
    csv_rows = list(csv.reader(open(csv_path)))
    assert csv_rows[0][:2] == ["k", "temperature"] and "done: 2 values of k, 2 prompts each" in status
    columns = dict(zip(*csv_rows[:2]))  # what it was measured with, and the
    assert columns["target"] == "demo-target" and columns["draft"] == "demo-draft" and columns["max_new_tokens"] == "12"
    assert columns["compile"] == "False" and columns["constraint"] == columns["constraint_sha256"] == ""  # (a compiled
    regex = experiments_tab.measured_with(dataclasses.replace(settings, regex="(yes|no)", compile=True))  # sweep's and an
    assert regex["constraint"] == "regex" and regex["compile"] is True  # eager one's could not be told apart)
    assert regex["constraint_sha256"] == hashlib.sha256(b"(yes|no)").hexdigest() and regex["backend"] == "llguidance"
    assert float(columns["speedup_estimate"]) > 0 and columns["verdict"]  # estimate a noisy row leaves out of its speedup
    line = experiments_tab.settings_line(*inputs)  # the Experiments tab says what it runs with
    assert "Runs with demo-target and the draft demo-draft: k 4, temperature 0, 12 new tokens (a sweep sets the one it sweeps)." in line
    assert "an experiment's note says these as it ran with them, its CSV every setting" in html.unescape(line)
    settings.regex, settings.policy = "<b>[0-9]+", "schedule"
    line = experiments_tab.settings_line(*page_inputs.inputs_from_settings(settings))
    assert "policy schedule, a regex (a sweep" in line and "<b>" not in line
    assert experiments_tab.settings_line(*inputs[:3], "many", *inputs[4:]) == ""  # a value the page cannot hold: nothing
    refused = list(experiments_tab.run_sweep(None, QUIET, "k", "2", "x\n" * 400_000, *inputs))  # bounded before it is split
    assert "the prompts' length (characters) is 800000, more than this host allows" in html.unescape(refused[0][0])
    refused = list(experiments_tab.run_sweep(None, QUIET, "k", "2", "", *inputs))  # one message above the results, which stay
    assert len(refused) == 1 and "no prompts" in refused[0][0] and refused[0][1:] == [gr.skip()] * 4
    for axis, typed, said in (("k", "2,2.5", "'2.5' is not a whole number"), ("temperature", "0.5,warm", "'warm' is not a number"),
                              ("k", "3,3", "3 is given twice"), ("temperature", "0,0.0", "0 is given twice")):  # (was measured twice)
        refused = list(experiments_tab.run_sweep(None, QUIET, axis, typed, "def f():", *inputs))  # was "'2.5' is not a number"
        assert len(refused) == 1 and said in html.unescape(refused[0][0])
    settings.tree, settings.policy = "1,2", "fixed"  # a k sweep of a token tree measured one setting again and again (k unused)
    refused = list(experiments_tab.run_sweep(None, QUIET, "k", "1,2", "def f():", *page_inputs.inputs_from_settings(settings)))
    assert len(refused) == 1 and "k changes nothing with a token tree (1,2: it sets each round&#x27;s drafts)" in refused[0][0]
    settings.tree = "2,2/6"  # a value its settings refuse: told before the models load, not midway (the first measured)
    for typed, said in (("0,0.005", "sweep values for temperature must be 0 (greedy) or from 0.01 to 2, not 0.005"),
                        ("0,0.7", "temperature = 0.7: a dynamic tree is for greedy decoding")):
        refused = list(experiments_tab.run_sweep(None, QUIET, "temperature", typed, "def f():", *page_inputs.inputs_from_settings(settings)))
        assert len(refused) == 1 and said in html.unescape(refused[0][0])
    settings.tree = "1,2"  # ways of drafting a tree cannot take: a row each saying why, none loaded nor measured
    compared = list(experiments_tab.run_comparison(None, QUIET, ["prompt lookup", "adaptive: schedule"], "def f():",
                                                   *page_inputs.inputs_from_settings(settings)))[-1]
    assert [row[0] for row in compared[1]["data"]] == ["prompt lookup", "adaptive: schedule"]
    notes = [row[compared[1]["headers"].index("note")] for row in compared[1]["data"]]
    assert notes == ["not run: a token tree is drafted by a draft model (not prompt lookup or a cascade, for now)",
                     "not run: a token tree runs with the fixed draft policy for now"]
    settings.tree, settings.draft = "", "ngram"
    refused = list(experiments_tab.run_comparison(None, QUIET, ["draft model"], "def f():", *page_inputs.inputs_from_settings(settings)))
    assert len(refused) == 1 and "needs a draft model" in refused[0][0] and refused[0][1:] == [gr.skip()] * 3


def fail_the_second_measurement(monkeypatch, error: Exception | None = None) -> None:
    """The second point of an experiment fails (by default the host's constraint bound, forced)."""
    calls, measured = [], sweeps.measured

    def failing_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise error or PlaygroundError("this run spent 31 s of CPU on its constraint, more than this host allows (30 s)")
        return measured(*args, **kwargs)
    monkeypatch.setattr(sweeps, "measured", failing_second)


def test_a_sweep_that_fails_midway_keeps_what_it_measured(monkeypatch):
    """An error at the second value (here the host's constraint bound, forced) returned before the CSV
    was written: the first value's measurement, minutes on a CPU, could not be downloaded."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 8
    fail_the_second_measurement(monkeypatch)
    status, table, chart, csv_path, points = list(experiments_tab.run_sweep(None, QUIET, "k", "1,3", "def f():",
                                                                            *page_inputs.inputs_from_settings(settings)))[-1]
    assert points != gr.skip() and points is not None and [p["k"] for p in points["rows"]] == [1]  # the calculator's
    # last K sweep is this one, as when stopped (it kept drawing an older one; a review)
    assert "at k = 3: this run spent 31 s of CPU on its constraint, more than this host allows (30 s)" in status
    assert "(the results below: measured with demo-target and the draft demo-draft: temperature 0, 8 new tokens)" in status
    assert [row[0] for row in table.value["data"]] == [1]
    assert chart is not None and [row[0] for row in csv.reader(open(csv_path))] == ["k", "1"]


def test_a_sweep_whose_engine_fails_midway_says_so_and_keeps_what_it_measured(monkeypatch, caplog):
    """An error of the engine's own (not a refusal) showed its bare words in Gradio's corner, the status still
    "measuring", the first value's rows not downloadable (a failure review)."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 8
    fail_the_second_measurement(monkeypatch, RuntimeError("CUDA error: an illegal memory access was encountered"))
    with caplog.at_level("INFO", logger="playground"):
        status, table, chart, csv_path, _ = list(experiments_tab.run_sweep(None, QUIET, "k", "1,3", "def f():",
                                                                           *page_inputs.inputs_from_settings(settings)))[-1]
    assert "the experiment failed (RuntimeError: CUDA error: an illegal memory access was encountered)" in status
    assert [row[0] for row in csv.reader(open(csv_path))] == ["k", "1"] and any(r.exc_info for r in caplog.records)


def test_stop_while_a_sweeps_models_load_ends_it_there(monkeypatch):
    """Stop ended a run's loads, not a sweep's: a download went on to its end, the device held."""
    from playground import session
    real, stopped, loaded = session.load_pair, [], []

    def downloading(*args, progress=None, **kwargs):  # a load's reports, Stop pressed between them
        progress(0.1, "downloading the draft")
        stopped.append(True)
        progress(0.2, "downloading the draft")
        loaded.append(True)  # (the download went on to its end)
        return real(*args, progress=progress, **kwargs)
    monkeypatch.setattr(session, "load_pair", downloading)
    monkeypatch.setattr(experiments_tab, "stop_requested", lambda request, job: bool(stopped))
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    status, *_, csv_path, _ = list(experiments_tab.run_sweep(None, QUIET, "k", "1,3", "def f():",
                                                            *page_inputs.inputs_from_settings(settings)))[-1]
    assert "stopped: 0 of 2 values of k" in status and csv_path is None and not loaded


def test_a_comparison_that_fails_at_once_after_a_way_keeps_it(monkeypatch):
    """The error path took the rows the page was last handed: a way measured just before the next one failed
    (within a pacing interval) was lost, table and CSV."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 8
    fail_the_second_measurement(monkeypatch)
    monkeypatch.setattr(experiments_tab.live, "PAGE_UPDATE_S", 30.0)  # the first way is never handed to the page
    status, table, _, csv_path = list(experiments_tab.run_comparison(None, QUIET, ["draft model", "prompt lookup"],
                                                                     "def f():", *page_inputs.inputs_from_settings(settings)))[-1]
    assert "at prompt lookup: this run spent 31 s" in status and [row[0] for row in table["data"]] == ["draft model"]
    assert [row[0] for row in csv.reader(open(csv_path))] == ["variant", "draft model"]


def test_links_and_presets_stay_inside_what_the_sliders_show():
    settings, notices = from_query({"k": "20", "max_new_tokens": "96", "temperature": "3"}, allow_custom=False)
    default = Settings.from_preset(page_inputs.PRESETS[settings.preset])  # no preset in the link: the default one
    assert settings.max_new_tokens == 96 and settings.k == default.k  # out of range: ignored, with a notice
    assert any("k=" in n for n in notices) and any("temperature=" in n for n in notices)
    assert len(notices) == 2  # no preset named is no notice: the default preset is what the page opens with
    from playground.limits import MAX_NEW_TOKENS  # one limit of new tokens for the page, its links and /generate
    assert from_query({"max_new_tokens": str(MAX_NEW_TOKENS)}, False)[0].max_new_tokens == MAX_NEW_TOKENS
    assert from_query({"max_new_tokens": str(MAX_NEW_TOKENS + 8)}, False)[1]  # past it: a notice
    assert from_query({"max_new_tokens": "1"}, False)[0].max_new_tokens == 1  # as /generate and the CLI take
    assert from_query({"max_new_tokens": "0"}, False)[1]
    assert from_query({"think_budget": str(MAX_NEW_TOKENS)}, False)[0].think_budget == MAX_NEW_TOKENS  # as the CLI's
    for typed in ("abc", "1_0", "nan", "٠.٥"):  # Python's words were the notice ("could not convert string to float")
        assert from_query({"temperature": typed}, False)[1] == [
            f"ignored temperature={typed!r}: must be a number in ASCII digits, such as 0.7"]


def test_a_share_link_says_what_it_holds_unlike_the_output_shown():
    """Settings changed since (or during) a run: its link opens on them, not on the output the page shows."""
    from playground.ui.share import changed_since
    run = Settings(preset="demo", k=4, prompt="def f():", schema='{"type": "object"}\n')
    assert changed_since(None, run) == []  # no run yet: nothing to differ from
    assert changed_since(dataclasses.asdict(run), dataclasses.replace(run, schema='{"type": "object"}')) == []  # as shown
    now = dataclasses.replace(run, k=6, prompt="def g():", chat=True)
    assert changed_since(dataclasses.asdict(run), now) == ["k 4 → 6", "the prompt", "chat false → true"]
    values = page_inputs.inputs_from_settings(now)
    note = page_inputs.share_note(dataclasses.asdict(run), *values)
    assert "not those of the output shown" in note and "k 4 → 6, the prompt, chat false → true" in note
    assert page_inputs.share_note(dataclasses.asdict(now), *values) == ""
    hostile = dataclasses.replace(now, tree="<b>&")  # any text said is escaped
    assert "&lt;b&gt;&amp;" in page_inputs.share_note(dataclasses.asdict(hostile), *values)
    above = page_inputs.shown_note(dataclasses.asdict(run), *values)  # above the output, the same difference
    assert above == ('<p class="shown-note">The output below is of other settings: since its run, k 4 → 6, the prompt, '
                     'chat false → true. Run to see these.</p>')
    assert page_inputs.shown_note(dataclasses.asdict(now), *values) == page_inputs.shown_note(None, *values) == ""


def test_a_schema_left_under_another_kind_is_named_as_one():
    """Switching the kind keeps the editor's text: a schema read as a regex was refused with llguidance's
    "repetition operator missing expression" alone (a walk-through; it is a regex of literal braces to Python,
    so now a note says it matches only itself); a text that is no schema gets no hint."""
    schema = '{"type": "object", "properties": {"name": {"type": "string"}}}'
    told = html.unescape(page_inputs.check_constraint("grammar", schema))
    assert "field-error" in told and told.endswith("; this text is a JSON schema: set Constraint to JSON schema</div>")
    told = html.unescape(page_inputs.check_constraint("regex", schema))  # (a regex to Python, its braces themselves)
    assert told.endswith('<div class="constraint-note">this text is a JSON schema: as a regex it matches only this very '
                         'text; set Constraint to JSON schema</div>'), told
    assert "JSON schema: set" not in html.unescape(page_inputs.check_constraint("regex", "[a-z]+ {"))
    assert "JSON schema: set" not in html.unescape(page_inputs.check_constraint("regex", "{" * 5000 + "}" * 5000))


def test_the_badge_names_what_a_backend_reads_past_and_stops_checking_a_slow_constraint(monkeypatch):
    """xgrammar compiles a look-ahead by dropping it: the badge said "looks fine", and llguidance's
    refusal recommended xgrammar as reading it. A reading past READ_SECONDS is not a refusal."""
    from playground.constraints import reading as constraint_reading
    lookahead = '{"type": "string", "pattern": "(?=a)a"}'
    told = html.unescape(page_inputs.check_constraint("JSON schema", lookahead, "xgrammar"))
    assert "looks fine" in told and "Lookahead assertion is not supported and is ignored" in told
    refused = html.unescape(page_inputs.check_constraint("JSON schema", lookahead, "llguidance"))
    assert "(the xgrammar backend reads it without enforcing all of it: xgrammar: Lookahead" in refused
    monkeypatch.setattr(constraint_reading, "READ_SECONDS", 0.3)
    monkeypatch.setattr(constraint_reading, "_read_checked", lambda spec: time.sleep(5))  # a reading that takes long
    slow = page_inputs.check_constraint("regex", "[0-9]+", "llguidance")
    assert "not checked as typed" in slow and "field-error" not in slow
    assert page_inputs.check_constraint("regex", "[0-9]+", "llguidance", compiled=True) == page_inputs.CONSTRAINT_OK


def test_a_regex_with_blanks_at_its_ends_says_the_output_has_them_too():
    """The constraint editor's Tab writes spaces: a keyboard user Tabbing on wrote 14 before an ISO-date regex,
    the badge said "looks fine" and the output began with 14 spaces, "valid" (an accessibility review)."""
    told = html.unescape(page_inputs.check_constraint("regex", "  [0-9]{4}\n", "llguidance"))
    assert "looks fine" in told and "the pattern starts with 2 blanks and ends with 1 blank: the output must too" in told
    assert "blank" not in page_inputs.check_constraint("regex", "[0-9]{4}", "llguidance")
    assert "blank" not in page_inputs.check_constraint("grammar", '  start: "a"\n', "llguidance")  # a grammar's are nothing


def test_xgrammars_ascii_short_classes_are_noted():
    """\\w{1,6} on a Chinese prompt wrote 你好０ under llguidance and "Ichigo" under xgrammar, whose \\w is ASCII:
    "looks fine" for both, a user's own script silently lost on switching (an outside review in Chinese)."""
    told = html.unescape(page_inputs.check_constraint("regex", r"\w{1,6}", "xgrammar"))
    assert "looks fine" in told and "xgrammar reads \\d, \\w and \\s as ASCII" in told
    assert "ASCII" not in page_inputs.check_constraint("regex", r"\w{1,6}", "llguidance")
    assert "ASCII" not in page_inputs.check_constraint("regex", r"a\\w", "xgrammar")  # an escaped backslash, then w


def test_a_refused_schema_names_the_pattern_at_fault():
    """"llguidance cannot use this JSON schema: look-around ..." did not say where, in a schema of many patterns."""
    from playground.constraints.schema_keywords import patterns
    schema = {"type": "object", "properties": {"pattern": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                                               "a/b": {"type": "string", "pattern": "^(?!00)[0-9]{3}$"}},
              "patternProperties": {"^x-": {"type": "string"}}, "$defs": {"d": {"prefixItems": [{"pattern": "y"}]}}}
    assert list(patterns(schema)) == [("/properties/zip/pattern", "^[0-9]{5}$"), ("/properties/a~1b/pattern", "^(?!00)[0-9]{3}$"),
                                      ("/patternProperties/^x-", "^x-"), ("/$defs/d/prefixItems/0/pattern", "y")]
    assert list(patterns({"items": [{"pattern": "z"}]})) == [("/items/0/pattern", "z")]  # draft-07's tuple form
    told = html.unescape(page_inputs.check_constraint("JSON schema", json.dumps(schema), "llguidance"))
    assert "look-around, including look-ahead and look-behind, is not supported (in the pattern at /properties/a~1b/pattern)" in told


def test_an_example_constraint_brings_its_prompt_unless_the_user_wrote_one():
    """The person schema ran on "How do plants make their food?" (the preset's prompt) and wrote a
    plant as a person; a prompt of the user's own stays."""
    kind, text, prompt = page_inputs.load_example("JSON: person", page_inputs.DEFAULT.prompt)
    assert kind == "JSON schema" and "languages" in text and "languages" in prompt
    assert page_inputs.load_example("regex: ISO date", prompt)[2].startswith("On what date")  # another example's: replaced
    assert page_inputs.load_example("regex: ISO date", "")[2].startswith("On what date")
    assert page_inputs.load_example("regex: ISO date", "my own question")[2] == gr.skip()
    assert page_inputs.load_example("no such example", "x") == (gr.skip(),) * 3


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_every_example_constraint_is_read_whole_by_either_backend(backend):
    """Picking an example keeps the backend chosen (the Lark one switched to llguidance while xgrammar
    read GBNF alone): each must then be read, with nothing read past, by both."""
    for name, (kind, text, _) in page_inputs.EXAMPLE_CONSTRAINTS.items():
        assert "badge-ok" in page_inputs.check_constraint(kind, text, backend), name


def test_gradios_own_query_keys_are_not_link_notices():
    """/?view=api opens Gradio's API page: it said "ignored unknown parameter 'view'" and "the link
    names no preset"."""
    settings, notices = from_query({"view": "api", "lang": "fr", "__theme": "dark", "__sign": "x"}, allow_custom=False)
    assert notices == [] and settings == page_inputs.DEFAULT
    for preset in page_inputs.PRESETS.values():
        for key, (lo, hi) in RANGES.items():
            value = getattr(Settings.from_preset(preset), key)
            assert lo <= value <= hi, (preset.name, key, value)


def test_constraint_checked_as_typed():
    assert "field-error" in page_inputs.check_constraint("JSON schema", '{"type": ')
    unsatisfiable = page_inputs.check_constraint("JSON schema", '{"type": "integer", "minimum": 5, "maximum": 2}')
    assert "no JSON value can satisfy this schema: minimum (5) is greater than maximum (2)" in unsatisfiable
    assert "no string can follow all of its string rules" in page_inputs.check_constraint(
        "JSON schema", '{"type": "string", "pattern": "^a$", "minLength": 3}')
    assert "field-error" in page_inputs.check_constraint("regex", "([a-z]")
    assert "badge-ok" in page_inputs.check_constraint("regex", "[a-z]+")
    assert "write a schema above, or pick one from the Examples below" in page_inputs.check_constraint("JSON schema", " ")
    assert page_inputs.check_constraint("none", "") == ""


@pytest.mark.parametrize("kind, text, backend, message", [
    ("regex", r"(a)\1", "llguidance", "llguidance cannot use this regex: backreferences are not supported (the "
                                       "xgrammar backend cannot read it either)"),
    ("regex", r"(?i)abc", "xgrammar", "Group modifier flag is not supported yet. (the llguidance backend reads it: pick it "
                                      "as the constraint backend)"),
    ("regex", r"(?=a)a+", "xgrammar", "xgrammar cannot use this regex: Regex parsing error at position 3: Lookahead"),
    ("JSON schema", '{"type": "string", "pattern": "(?<=a)b"}', "llguidance", "llguidance cannot use this JSON schema: look-around"),
    ("regex", r"[^\s]+", "xgrammar", "xgrammar reads \\s with ASCII classes"),
    # it said "the xgrammar backend reads it: pick it", and xgrammar then refused it at Run
    ("grammar", 'start: "a"{0}', "llguidance", "(the xgrammar backend reads it, but this grammar allows only the empty output")])
def test_the_badge_refuses_what_run_refuses_before_the_tokenizer(kind, text, backend, message):
    """The check as typed is the backend's own reading too: it said "looks fine" and Run then refused."""
    assert message in html.unescape(page_inputs.check_constraint(kind, text, backend))
    if text == r"[^\s]+":  # what one backend refuses the other may read
        assert "badge-ok" in page_inputs.check_constraint(kind, text, "llguidance")


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("kind, text, message", [
    ("regex", r"[^\x00-\U0010FFFF]+", "can never be satisfied by any output"),
    ("regex", "a{0}", "allows only the empty output"),
    ("grammar", 'root ::= ""', "allows only the empty output"),
    ("grammar", 'start: "x" | "y" "z"', None),
    ("regex", "😀|😃", None),  # xgrammar's forced prefix ends inside a character: it failed, typed and at Run
    ("grammar", "root ::= [😀-🙏]", None),
    ("grammar", 'start: "a" <[1]>', None),  # names a token: Run's to check, over the model's tokenizer
    ("grammar", 'start: "a" <|endoftext|>', None)])  # (xgrammar refused it as typed: "requires tokenizer_info")
def test_the_badge_refuses_a_constraint_no_text_satisfies_as_run_does(kind, text, message, backend):
    """The check as typed said "looks fine" for a{0}, and Run then refused it ("allows only the empty
    output"): it now compiles the constraint over the 256 bytes, as Run does over the model's tokens."""
    from playground.constraints import ConstraintSpec, compile_constraint
    from playground.errors import PlaygroundError
    from tests import tiny
    told = html.unescape(page_inputs.check_constraint(kind, text, backend))
    assert (message in told) if message else "badge-ok" in told, told
    tokenizer = tiny.byte_bpe_tokenizer()
    spec = ConstraintSpec("json" if kind == "JSON schema" else kind, text, backend)
    if message:
        with pytest.raises(PlaygroundError, match=message):
            compile_constraint(spec, tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id}))
    else:
        compile_constraint(spec, tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id}))
    if backend == "llguidance":  # a named token (a special token of some model's) is Run's to check too
        assert "badge-ok" in page_inputs.check_constraint("grammar", 'start: </s> "a"', backend)


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


def test_bench_page_reads_what_the_page_runs(client):
    """scripts/bench_page.py (the page against the CLI, BENCHMARKS.md) reads /run's outputs as the
    page gets them: it broke unnoticed once, when the run's download became a button's update. The
    tokens it reads are the ones the same settings make in-process."""
    import importlib.util
    import pathlib

    from playground import session
    from playground.presets import get_preset
    from playground.ui import live
    spec = importlib.util.spec_from_file_location("bench_page", pathlib.Path(__file__).parents[1] / "scripts" / "bench_page.py")
    bench_page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_page)
    settings = Settings.from_preset(get_preset("demo"))
    settings.max_new_tokens, settings.compare = 16, False
    run = bench_page.page_run(client, settings)
    pair, ids, cfg, _ = live.prepare(settings)
    assert run["tokens"] == len(run["ids"]) == 16 and run["engine_tok_s"] > 0
    assert run["ids"] == session.run(pair, ids, cfg).token_ids


def test_api_streams_a_run(client):
    job = client.submit("def add(a, b):\n", "demo", 4, 0.0, 48, 0, "", "", True, api_name="/generate")
    snapshots = list(job)
    assert len(snapshots) > 1
    final = snapshots[-1]
    assert final["phase"] == "done" and len(final["token_ids"]) == final["stats"]["generated_tokens"] <= 48
    assert final["identical_to_baseline"] is True
    kinds = {t["kind"] for r in final["rounds"] for t in r["tokens"]}
    assert "accepted" in kinds


def test_the_apis_snapshots_carry_the_text_so_far_and_each_round_once(monkeypatch):
    """While it wrote, a snapshot had no text, token ids or stats (a reader of `text` met a KeyError, and a
    cancel left no text), and each resent every round so far: a 2,000-token run streamed 22 MB (an API review).
    A snapshot due as the last round came (every one here) was still "speculative" with the result's keys."""
    monkeypatch.setattr(live, "MIN_UPDATE_S", 0.0)
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens, settings.compare = 64, False
    snaps = list(live.streamed(live.live_run(settings, every=0)))
    writing, final = [s for s in snaps if s["phase"] == "speculative"], snaps[-1]
    assert len(writing) > 2 and final["phase"] == "done" and final["rounds_from"] == 0
    joined = []
    for snap in writing:  # each: the rounds new since the last, and the text, ids and stats so far
        assert snap["rounds_from"] == len(joined)
        joined += snap["rounds"]
        ids = [t["id"] for r in joined for t in r["tokens"] if t["kind"] != "rejected"]
        assert snap["token_ids"] == ids and snap["stats"]["generated_tokens"] == len(ids)
        assert snap["text"] == "".join(t["text"] for r in joined for t in r["tokens"] if t["kind"] != "rejected")
    assert joined == final["rounds"][:len(joined)] and final["text"].startswith(writing[-1]["text"])
    assert final.keys() - writing[-1].keys() >= {"finish_reason", "valid"}  # the result's own keys come with it
    # the settings in the first and the last alone (each snapshot echoed a 256 KB schema: 46 MB in a 900 s run)
    assert [("settings" in snap) for snap in snaps] == [True] + [False] * (len(snaps) - 2) + [True]
    assert final["settings"] == snaps[0]["settings"] and final["settings"]["max_new_tokens"] == 64


def test_api_compare_false_runs_without_the_target_alone(client):
    """`compare` False was read as "the preset's", which compares: an API caller could not turn the
    comparison (and its measuring again, minutes on a CPU) off (a red-team pass)."""
    alone = client.predict("x = ", "demo", 4, 0.0, 16, 0, "", "", False, api_name="/generate")
    assert alone["settings"]["compare"] is False and "baseline" not in alone and "speedup" not in alone
    told = client.predict(prompt="x = ", preset="demo", max_new_tokens=16, compare=None, api_name="/generate")
    assert told["settings"]["compare"] is True and told["baseline"]["token_ids"] == told["token_ids"]  # the preset's
    with pytest.raises(Exception, match="compare must be a bool"):
        client.predict(prompt="x = ", preset="demo", compare="no", api_name="/generate")


def _a_run_then_another_waiting(app_url, args: tuple, tokens: int, host: str):
    """/generate of `args` from one address, and once it runs, a `tokens`-token one from another, waiting."""
    first = Client(app_url, verbose=False, headers={"X-Forwarded-For": f"203.0.113.{host}"}).submit(*args, api_name="/generate")
    deadline = time.monotonic() + 60
    while first.status().code.name not in ("PROCESSING", "ITERATING"):
        assert time.monotonic() < deadline and not first.done(), first.status()
        time.sleep(0.02)
    second = Client(app_url, verbose=False, headers={"X-Forwarded-For": f"198.51.100.{host}"}).submit(
        *args[:4], tokens, 0, "", "", False, api_name="/generate")
    return first, second


def test_measuring_again_gives_way_to_a_run_waiting_for_the_model(app_url, monkeypatch):
    """A comparison too noisy to tell measures again once its text is whole (up to 3 more blocks, a
    minute on a 2-core CPU), and every other visitor's run waited in the queue behind it, unseen. It
    now ends as soon as a run waits for the model, with the estimate so far and why."""
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread is too wide: it would measure again, to 4 blocks
    args = ("def add(a, b):\n", "demo", 4, 0.0, 256, 0, "", "", True)
    first, second = _a_run_then_another_waiting(app_url, args, 16, "9")
    final = first.result(timeout=300)
    assert final["phase"] == "done" and len(final["token_ids"]) == final["stats"]["generated_tokens"]
    assert final["speedup_measure"]["blocks"] == 1, final["speedup_measure"]
    assert final["speedup_measure"]["reason"].endswith("measuring stopped: a run was waiting for the model")
    assert second.result(timeout=120)["phase"] == "done"
    assert first.outputs()[-1]["speedup_measure"]["blocks"] == 1


def test_a_run_gives_way_to_a_run_waiting_for_the_model(app_url, monkeypatch):
    """A run had no turn on the device: a 2,048-token comparison held it 6 minutes while another visitor's
    8-token run waited with nothing on their page to say why (a hosting review). Past RUN_SHARE_SECONDS
    (0 here) it now ends as Stop ends it when a run waits, keeps what it wrote, and says why."""
    monkeypatch.setattr(live, "RUN_SHARE_SECONDS", 0)
    args = ("def add(a, b):\n", "demo", 4, 0.0, 2000, 0, "", "", True)
    first, second = _a_run_then_another_waiting(app_url, args, 8, "10")
    final = first.result(timeout=300)
    assert final["phase"] == "stopped" and 0 < final["stats"]["generated_tokens"] < 2000, final["stats"]
    assert final["stopped_why"].endswith("on the device, giving way to a run waiting for the model"), final
    assert second.result(timeout=120)["phase"] == "done"


def test_an_experiment_gives_way_to_a_run_waiting_for_the_model(app_url, monkeypatch):
    """A sweep or Compare drafts held the device up to the host's 900 s while every other visitor's
    run waited in the queue with nothing on their page to say why. Past EXPERIMENT_SHARE_SECONDS (0
    here) it now ends where it is when a run waits, keeps the points measured whole, and says so."""
    monkeypatch.setattr(experiments_tab, "EXPERIMENT_SHARE_SECONDS", 0)
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 64
    values = ",".join(str(k) for k in range(1, 17))  # 16 points: minutes, were it let run
    sweep = Client(app_url, verbose=False, headers={"X-Forwarded-For": "203.0.113.7"}).submit(
        "k", values, "def add(a, b):", *page_inputs.inputs_from_settings(settings), api_name="/sweep")
    deadline = time.monotonic() + 120
    while not any(len(out[1]["value"]["data"]) for out in sweep.outputs() if isinstance(out[1], dict)):
        assert time.monotonic() < deadline and not sweep.done(), (sweep.status(), sweep.outputs()[-1:])
        time.sleep(0.05)  # a point measured whole before the run comes
    run = Client(app_url, verbose=False, headers={"X-Forwarded-For": "198.51.100.7"}).submit(
        "x = ", "demo", 4, 0.0, 16, 0, "", "", False, api_name="/generate")
    status, table, _, csv_path = sweep.result(timeout=300)
    told = re.search(r"stopped after [^,:]+, giving way to a run waiting for the model: (\d+) of 16 values of k", status)
    assert told and 1 <= int(told[1]) < 16 and len(table["value"]["data"]) == int(told[1]), (status, table)
    assert isinstance(csv_path, str)  # the points measured whole are kept, as after Stop
    assert run.result(timeout=120)["phase"] == "done"
    alone = Client(app_url, verbose=False).submit("k", "1,2", "def f(x):", *page_inputs.inputs_from_settings(settings),
                                                   api_name="/sweep").result(timeout=300)
    assert "done: 2 values of k" in alone[0]  # nobody waiting: nothing given way to


def test_an_experiment_gives_way_only_past_its_share_of_the_device(monkeypatch):
    """Halt's order and threshold, on a clock of its own: Stop first, then the host's limit, then a
    run waiting once the experiment has held the device EXPERIMENT_SHARE_SECONDS; its why latched."""
    import threading
    clock, waiting = [1000.0], [0]
    monkeypatch.setattr(experiments_tab, "EXPERIMENT_SHARE_SECONDS", 120)
    monkeypatch.setattr(turn, "monotonic", lambda: clock[0])
    monkeypatch.setattr(turn, "waiting", lambda: waiting[0])
    monkeypatch.setattr(experiments_tab, "stop_requested", lambda request, job: False)
    halt, stop = experiments_tab.Halt(None, "sweep"), threading.Event()
    halted = halt.checker(stop)
    waiting[0] = 2
    clock[0] += experiments_tab.EXPERIMENT_SHARE_SECONDS - 1
    assert not halted()  # a run waits, but the experiment's share is not used up
    waiting[0], clock[0] = 0, clock[0] + 6
    assert not halted()  # its share used up, nobody waiting
    waiting[0] = 1
    assert halted() and halt.why == " after 2 min 5 s on the device, giving way to a run waiting for the model"
    waiting[0], clock[0] = 0, clock[0] + 10_000
    assert halted() and "giving way" in halt.why  # latched: the first reason stays
    late = experiments_tab.Halt(None, "sweep")
    clock[0] += experiments_tab.EXPERIMENT_SECONDS + 1
    stop.set()
    assert late.checker(stop)() and late.why == ""  # Stop (or a closed page) before the time limit
    assert experiments_tab.Halt(None, "sweep").checker(threading.Event())() is False
    timed = experiments_tab.Halt(None, "sweep")
    clock[0] += experiments_tab.EXPERIMENT_SECONDS + 1
    waiting[0] = 1
    assert timed.checker(threading.Event())() and "limit of" in timed.why  # the limit before giving way
    monkeypatch.setattr(experiments_tab, "EXPERIMENT_SECONDS", 900)  # ZeroGPU: a 360 s lease ended a 900 s sweep
    monkeypatch.setattr(turn, "GPU_SECONDS", 120)  # mid-work, without the stop that keeps what was measured
    monkeypatch.setattr(turn, "on_zero_gpu", lambda: True)
    leased = experiments_tab.Halt(None, "sweep")
    clock[0] += 325
    assert leased.checker(threading.Event())() and leased.why == " at this Space's GPU lease limit of 324 s for one experiment"
    monkeypatch.setattr(turn, "on_zero_gpu", lambda: False)
    assert experiments_tab.Halt(None, "sweep").turn.limit == 900


def test_api_stream_reaches_the_client_as_the_server_yields_it(client, monkeypatch):
    """Gradio sends each streamed value as edits from the last, and shifted the deletes inside a list's
    elements twice: where a round's tokens shrank in the rounds list, the client rebuilt wrong values,
    or gradio_client raised IndexError mid-run (a CI run of test_api_constrained_run_is_valid_json).
    Here every snapshot is streamed (no pacing, none skipped), so each carries the one round new since
    the last, and a round of 9 tokens (forced ones) is followed by one of 5."""
    from gradio_client.utils import apply_diff

    from playground.ui import api, live
    yielded, streamed, live_run = [], live.streamed, live.live_run

    def kept(snaps):
        for out in streamed(snaps):
            yielded.append(json.loads(json.dumps(out)))
            yield out
    monkeypatch.setattr(api.live, "streamed", kept)
    monkeypatch.setattr(api.live, "live_run", functools.partial(live_run, every=0))
    monkeypatch.setattr(live, "MIN_UPDATE_S", 0)
    job = client.submit("config = ", "demo-json", 4, 0.0, 384, 1, "", "", False, api_name="/generate")
    final = job.result(timeout=300)
    rebuilt = [json.loads(json.dumps(out)) for out in job.outputs()]
    assert final == yielded[-1] and rebuilt == yielded[:len(rebuilt)] and len(rebuilt) >= len(yielded) - 1
    assert any(len(new["tokens"]) < len(old["tokens"])  # (what the edits got wrong happened in this run)
               for before, after in zip(yielded, yielded[1:]) for old, new in zip(before["rounds"], after["rounds"]))
    old, new = {"rounds": [{"tokens": [0, 1, 2, 3]}, {"tokens": [1]}]}, {"rounds": [{"tokens": [7, 8]}]}
    assert apply_diff(old, gr.utils.diff(old, new)) == new  # (Gradio's own made [{"tokens": [7, 3]}])


def test_api_says_what_of_the_request_no_model_read(client):
    """An API review: chat and a system prompt on the demo pair (no chat template) wrote the text written
    without them, and nothing said so; the page's notes (a compile not used, no room to answer) never
    reached API callers at all. Each snapshot carries the run's `note`, as the page shows it by the metrics."""
    link = "preset=demo&system=be+brief&chat=true&max_new_tokens=8&compare=false"
    told = client.predict(link=link, api_name="/generate")
    plain = client.predict(link="preset=demo&max_new_tokens=8&compare=false", api_name="/generate")
    assert told["text"] == plain["text"] and plain["note"] == ""
    assert told["note"] == ("the target's tokenizer has no chat template: the prompt went in as written, "
                            "and the system prompt is unused"), told["note"]
    unchatted = client.predict(link="preset=demo&system=be+brief&chat=false&max_new_tokens=8&compare=false",
                               api_name="/generate")
    assert unchatted["note"] == "the system prompt is unused: it goes in only through the chat template (chat off)"
    unread = client.predict(link="preset=demo&max_new_tokens=8&compare=false&top_p=0.5&top_k=5&seed=9&think_budget=40"
                                 "&backend=xgrammar&schema_in_prompt=true", api_name="/generate")
    assert unread["text"] == plain["text"] and unread["note"] == (  # (a link's; the CLI says its flags so: a review)
        "the top-p, top-k and seed are not used: the run is greedy (temperature 0), which draws nothing; the thinking "
        "budget is not used: it ends a reasoning model's thinking before a schema, regex or grammar, and the run has "
        "none (the model thinks as long as it likes); the constraint backend is not used: the run has no schema, regex "
        "or grammar; the schema shown in the prompt is not used: the run has no schema to show")


def test_settings_a_run_never_reads_are_said_where_they_are_not_its_presets():
    """A preset's own stay unsaid: qwen3-8b's thinking budget waits for a schema, its top-p for a temperature."""
    from playground.unread import unused_settings
    qwen3 = Settings.from_preset(page_inputs.PRESETS["qwen3-8b"])
    assert unused_settings(qwen3) == "" and unused_settings(dataclasses.replace(qwen3, temperature=0.0)) == ""
    demo = Settings.from_preset(page_inputs.PRESETS["demo"])
    assert unused_settings(dataclasses.replace(demo, seed=3, temperature=0.7)) == ""
    assert unused_settings(dataclasses.replace(demo, seed=3, regex="[a-z]+", schema_in_prompt=True)) == (
        "the seed is not used: the run is greedy (temperature 0), which draws nothing; the schema shown in the prompt "
        "is not used: the run has no schema to show")
    assert unused_settings(dataclasses.replace(demo, schema="{}", schema_in_prompt=True, think_budget=5)) == ""
    assert unused_settings(dataclasses.replace(demo, k=7, tree="2,2", confidence=0.8)) == (  # (the CLI's rules too)
        "the draft length k is not used: a token tree drafts the shape it names; k is a chain's length; the confidence "
        "threshold is not used: only the confidence policy reads it")
    assert unused_settings(dataclasses.replace(demo, k=7, policy="confidence", confidence=0.8)) == ""


def test_api_constrained_run_is_valid_json(client):
    final = client.predict("config = ", "demo-json", 0, -1.0, 0, 1, "", "", False, api_name="/generate")
    assert final["valid"] is True
    json.loads(final["text"])


def test_api_invalid_schema_is_a_clean_error(client):
    with pytest.raises(Exception, match="the schema is not valid JSON"):
        client.predict("x", "demo", 4, 0.0, 16, 0, '{"type": ', "", False, api_name="/generate")
    said = r"temperature must be 0 \(greedy\) or from 0.01 to 2; -1: the preset's"
    for temperature in (5.0, 0.005, -0.5):  # one message for each, as the slider says
        with pytest.raises(Exception, match=said):
            client.predict("x", "demo", 4, temperature, 16, 0, "", "", False, api_name="/generate")
    from playground.ui import api
    for temperature in (float("nan"), float("inf")):  # a raw JSON body may carry them (gradio_client refuses to)
        with pytest.raises(gr.Error, match=said):
            next(api.generate("x", "demo", 4, temperature, 16))
    with pytest.raises(Exception, match="unknown constraint backend 'outlines'"):
        client.predict("x", "demo", 4, 0.0, 16, 0, "", "[0-9]+", False, "outlines", api_name="/generate")


def test_a_slider_emptied_or_past_its_range_names_itself(client):
    """An emptied k box popped up "Could not preprocess input component at index 3 (a `slider`
    component) of the event handler (named "export_view") ... TypeError"; a typed 100 "Value 100 is
    greater than maximum value 16.". A script's wrong choice or NaN seed names its box too."""
    values = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    for k, said in ((None, "Draft length k is empty: type a number from 1 to 16 (the page's box turns it into 1 when you leave it)"),
                    (100, "Draft length k takes a number from 1 to 16, not 100 (the page's box turns it into 16 when you leave it)")):
        with pytest.raises(Exception, match=re.escape(said)) as caught:
            client.predict(*values[:3], k, *values[4:], api_name="/export")
        assert "preprocess" not in str(caught.value)
    assert "vllm serve" in client.predict(*values, api_name="/export")[1]
    seed = page_inputs.SETTING_NAMES.index("seed")
    k = page_inputs.SETTING_NAMES.index("k")
    for index, value, said in ((0, "nope", f"Preset takes one of {', '.join(list(page_inputs.PRESETS)[:12])} and "
                                           f"{len(page_inputs.PRESETS) - 12} more, not 'nope'"),
                               (k, "4", "Draft length k takes a number from 1 to 16, not '4'"),  # (Gradio's TypeError)
                               (k, float("nan"), "Draft length k takes a finite number from 1 to 16, not nan"),
                               (page_inputs.SETTING_NAMES.index("prompt"), ["a"], "Prompt takes text, not list"),
                               (seed, 2**60, "Seed takes a number from 0 to 9007199254740992, not 1152921504606846976"),
                               (seed, 1.5, "Seed takes a whole number, not 1.5"),  # (rounded to 2, unsaid)
                               (seed, float("nan"), "Seed takes a finite number, not nan")):  # (a script's: the
        sent = list(values)  # log had a traceback of each; raw HTTP, as gradio_client sends no NaN)
        sent[index] = value
        called = urllib.request.Request(client.src + "gradio_api/call/export", json.dumps({"data": sent}).encode(),
                                        {"Content-Type": "application/json"})
        event = json.loads(urllib.request.urlopen(called, timeout=30).read())["event_id"]
        with urllib.request.urlopen(f"{client.src}gradio_api/call/export/{event}", timeout=60) as answer:
            stream = answer.read().decode()
        assert "event: error" in stream and said in stream and "preprocess" not in stream, stream[:300]
    from playground.ui import page
    variants = gr.CheckboxGroup(list(sweeps.VARIANTS), label="Drafts")  # a string was read letter by letter
    with pytest.raises(gr.Error, match="Drafts takes a list of names, not 'draft model'"):
        variants.preprocess("draft model")
    with pytest.raises(gr.Error) as refused:
        variants.preprocess([list(sweeps.VARIANTS)[0], "x"])  # (the whole list was quoted, after "takes one of")
    assert refused.value.message.startswith("Drafts takes names among draft model, prompt lookup, cascade")
    assert refused.value.message.endswith(", not 'x'"), refused.value.message
    prompts = gr.Textbox(label="Prompts")  # (Gradio passed on str() of it: Compare drafts measured "['a']")
    with pytest.raises(gr.Error, match="Prompts takes text, not list"):
        prompts.preprocess(["a"])
    assert prompts.preprocess("a") == "a" and prompts.preprocess(None) is None
    backend = gr.Dropdown(["llguidance", "xgrammar"], label="Constraint backend")  # (Gradio's words: "Value:
    with pytest.raises(gr.Error, match="Constraint backend takes one of llguidance, xgrammar, not 'outlines'"):
        backend.preprocess("outlines")  # 'outlines' (type: <class 'str'>) is not in the list of choices")
    remade = page.ui.k.__class__(**page.ui.k.constructor_args)  # as Gradio remakes it for a session after an update
    with pytest.raises(gr.Error, match="Draft length k is empty"):  # (a wrapper on the instance was gone)
        remade.preprocess(None)


def test_the_api_picks_the_constraint_backend_its_refusals_suggest(client):
    """A refusal may say "the llguidance backend reads it": /generate had no way to ask for it."""
    with pytest.raises(Exception, match=r"xgrammar cannot use this regex.*\(the llguidance backend reads it"):
        client.predict("x", "demo", 4, 0.0, 8, 0, "", r"(?i)abc", False, "xgrammar", api_name="/generate")
    final = client.predict("x = ", "demo", 4, 0.0, 8, 0, "", "[0-9]{3}", False, "xgrammar", api_name="/generate")
    assert final["settings"]["backend"] == "xgrammar" and final["valid"] is True and re.fullmatch("[0-9]{3}", final["text"])


def test_a_grammar_is_a_constraint_kind_of_the_page_its_links_and_the_api(client):
    """Grammars ran from the CLI only. On the page: a kind of constraint, checked as typed; in links
    one constraint at most, the one a link carries replacing the preset's; /generate takes one too."""
    gbnf, lark = page_inputs.EQUATION, page_inputs.SQL
    assert "badge-ok" in page_inputs.check_constraint("grammar", gbnf, "xgrammar")
    for backend in ("llguidance", "xgrammar"):  # both read Lark (xgrammar read GBNF alone)
        assert "badge-ok" in page_inputs.check_constraint("grammar", lark, backend)
        assert "badge-ok" in page_inputs.check_constraint("grammar", '?start: "a" | "b"', backend)  # no "start:" line
    intersection = 'start: A\nA: /a/ & /[a-z]/'  # llguidance's Lark extension
    told = html.unescape(page_inputs.check_constraint("grammar", intersection, "xgrammar"))
    assert "xgrammar cannot use this grammar" in told and "the llguidance backend reads it: pick it" in told
    settings = Settings.from_preset(page_inputs.PRESETS["demo-json"])  # a preset with a schema
    settings.schema, settings.grammar = "", gbnf
    values = page_inputs.inputs_from_settings(settings)
    assert values[12:14] == ["grammar", gbnf] and page_inputs.settings_from_inputs(*values) == settings
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(
        client.predict(*values, api_name="/share_link")).query))
    assert from_query(query, allow_custom=False) == (settings, [])
    hand_made, notices = from_query({"preset": "demo-json", "grammar": gbnf, "regex": "[0-9]+"}, allow_custom=False)
    assert hand_made.grammar == "" and hand_made.regex == "[0-9]+" and hand_made.schema == ""  # the preset's replaced
    assert notices == ["ignored grammar: the link also carries a regex, and a run takes one constraint"]
    final = client.predict("x = ", "demo", 4, 0.0, 24, 0, "", "", False, "llguidance", 'root ::= [0-9]{1,3} ";"',
                           api_name="/generate")
    assert final["valid"] is True and re.fullmatch(r"[0-9]{1,3};", final["text"]) and final["settings"]["grammar"]
    from playground.presets import Preset, chosen_constraint
    regex_preset = Preset("r", "a preset with a regex", "demo-target", "demo-draft", regex="[0-9]+")
    assert chosen_constraint({"schema": "", "regex": "", "grammar": ""}, regex_preset)["regex"] == "[0-9]+"  # preset's
    # own (/generate kept a preset's schema but dropped its regex)
    assert chosen_constraint({"grammar": gbnf}, regex_preset) == {"schema": "", "regex": "", "grammar": gbnf}


def test_api_share_link_round_trip(client):
    sent = Settings.from_preset(page_inputs.PRESETS["demo"])
    sent.k, sent.temperature, sent.seed, sent.prompt, sent.regex = 6, 0.7, 42, "x = [1, 2,", "[0-9]+"
    url = client.predict(*page_inputs.inputs_from_settings(sent), api_name="/share_link")
    params = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))
    restored, notices = from_query(params, allow_custom=False)
    assert restored == sent and notices == []
    default = client.predict(api_name="/share_link")  # every input optional: the page's first values
    fingerprint = share.preset_fingerprint(page_inputs.DEFAULT)  # (a link opened after its preset changed says so)
    assert urllib.parse.urlparse(default).query == f"preset={page_inputs.DEFAULT.preset}&preset_hash={fingerprint}"


def test_an_untouched_json_presets_link_names_the_preset_alone():
    """The page shows a schema stripped of its outer blank lines: the link read that as a change and carried the
    whole schema (809 characters for demo-json where 35 say it)."""
    for name in ("demo-json", "smollm2-json"):
        shown = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS[name]))
        url = page_inputs.make_share_link(None, *shown)
        fingerprint = share.preset_fingerprint(Settings.from_preset(page_inputs.PRESETS[name]))
        assert urllib.parse.urlsplit(url).query == f"preset={name}&preset_hash={fingerprint}", url[:120]
    edited = Settings.from_preset(page_inputs.PRESETS["demo-json"])
    edited.schema = '{"type": "integer"}'
    assert "schema=" in page_inputs.make_share_link(None, *page_inputs.inputs_from_settings(edited))


def test_a_link_opened_after_its_preset_changed_says_so(monkeypatch):
    """A link carries what differs from its preset: once a Space changed the preset's k, prompt or length, an old
    link opened on the new ones without a word (a review). Its fingerprint of the preset says so; a link made
    by hand (no fingerprint) and an untouched preset say nothing."""
    sent = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), temperature=0.7, seed=3)
    params = dict(urllib.parse.parse_qsl(share.to_query(sent)))
    assert set(params) == {"preset", "temperature", "seed", "preset_hash"} and from_query(params, False) == (sent, [])
    changed = {**share.all_presets(), "demo": dataclasses.replace(page_inputs.PRESETS["demo"], k=7, prompt="class Queue:")}
    monkeypatch.setattr(share, "all_presets", lambda: changed)
    opened, notices = from_query(params, allow_custom=False)
    assert (opened.k, opened.prompt, opened.temperature, opened.seed) == (7, "class Queue:", 0.7, 3)
    assert notices == ["preset 'demo' has changed since this link was made: the settings the link leaves to it open "
                       "as the preset has them now, which may not be those the link was made with"]
    assert from_query({k: v for k, v in params.items() if k != "preset_hash"}, allow_custom=False)[1] == []
    unknown = from_query({**params, "preset": "nope"}, allow_custom=False)[1]  # (the default preset's: not its own)
    assert unknown[0].startswith("unknown preset 'nope'") and not any("has changed" in n for n in unknown)


def test_api_generate_runs_a_share_link(client):
    """/generate ran a preset with seven of its settings; a page's link carries them all (top-p,
    top-k, the drafting way...). A link runs as it is, the inputs given replace its values, and what
    the page would ignore of it is refused, nothing run."""
    sent = Settings.from_preset(page_inputs.PRESETS["demo"])
    sent.k, sent.temperature, sent.top_p, sent.top_k, sent.seed = 3, 0.7, 0.9, 20, 11
    sent.prompt, sent.max_new_tokens, sent.policy = "x = ", 10, "confidence"  # (schedule's pauses follow times)
    url = client.predict(*page_inputs.inputs_from_settings(sent), api_name="/share_link")
    final = client.predict(link=url, api_name="/generate")
    assert final["settings"] == {name: getattr(sent, name) for name in sent.__slots__}
    assert len(final["token_ids"]) == 10
    query = urllib.parse.urlparse(url).query  # the query string alone, and an input replacing the link's value
    shorter = client.predict(link=query, max_new_tokens=6, api_name="/generate")
    assert shorter["settings"]["max_new_tokens"] == 6 and shorter["settings"]["top_p"] == 0.9
    assert len(shorter["token_ids"]) == 6
    assert client.predict(link=url, api_name="/generate")["token_ids"] == final["token_ids"]  # seeded: repeats
    experiments = url + "&tab=experiments&sweep_axis=temperature&sweep_values=0%2C0.5"  # the Experiments tab's link:
    assert client.predict(link=experiments, api_name="/generate")["token_ids"] == final["token_ids"]  # its settings run
    refused = "the link is refused, nothing run (the page would run it without what it names): "  # (it read
    for link, said in ((url + "&bogus=1", "ignored unknown parameter 'bogus'"),  # "the link: ignored ...", as if run)
                       (url + "&k=2&k=3", "'k' is given 3 times: the last, '3', is used"),
                       (url.replace("preset=demo", "preset=nope"), "unknown preset 'nope'"),
                       (experiments + "&calc_k=999", "ignored calc_k='999'")):  # (as the page says)
        with pytest.raises(Exception, match=re.escape(refused + said)):
            client.predict(link=link, api_name="/generate")
    with pytest.raises(Exception, match=re.escape("regex is only spaces: give one, or leave it empty")):
        client.predict(preset="demo-json", regex=" ", api_name="/generate")  # (it ran the preset's schema)
    with pytest.raises(Exception, match="give a preset or a link, not both"):
        client.predict(preset="demo", link=url, api_name="/generate")
    from playground.ui import api
    with pytest.raises(gr.Error, match=re.escape("k is not used: the link's token tree (2,2) drafts the shape")):
        next(api.generate(link="preset=demo&tree=2,2", k=3))  # (it ran the tree, k unsaid)
    assert list(api.generate(link="preset=demo&tree=2,2&max_new_tokens=8&compare=false"))[-1]["settings"]["tree"] == "2,2"
    with pytest.raises(gr.Error, match=r"the length of the link \(characters\)"):  # as long as a page's link at most
        next(api.generate(link="preset=demo&" + "k=2&" * 3000))


def test_the_pages_endpoints_name_their_inputs(client):
    """Not param_0..param_21: each input by its setting's name, optional, and accepted by name."""
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    names = {name: [p["parameter_name"] for p in endpoints[name]["parameters"]]
             for name in ("/run", "/share_link", "/export", "/sweep", "/compare_drafts", "/share_experiment")}
    settings = list(page_inputs.SETTING_NAMES)
    assert names == {"/run": settings, "/share_link": settings, "/export": settings,
                     "/sweep": ["axis", "sweep_values", "prompts", *settings], "/compare_drafts": ["variants", "prompts", *settings],
                     "/share_experiment": ["sweep_axis", "sweep_values", "sweep_prompts", "compare_drafts", "calc_alpha",
                                           "calc_k", "calc_c", *settings]}
    assert settings[:4] == ["preset", "target", "draft", "k"] and "prompt" in settings and "think_budget" in settings
    assert all(p["parameter_has_default"] for name in names for p in endpoints[name]["parameters"])
    url = client.predict(k=6, prompt="x = ", api_name="/share_link")
    assert dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query)) == {
        "preset": page_inputs.DEFAULT.preset, "k": "6", "prompt": "x = ", "preset_hash": share.preset_fingerprint(page_inputs.DEFAULT)}


def test_a_preset_or_link_with_a_constraint_opens_its_section_and_regexes_are_not_json():
    assert page_inputs.apply_preset("demo-json")[-1] == gr.update(open=True)
    assert page_inputs.apply_preset("demo")[-1] != gr.update(open=True)

    class Request:
        query_params = {"preset": "demo", "regex": "[0-9]+"}
    sections = lambda query: page_inputs.restore_from_url(type("R", (), {"query_params": QueryParams(query)}))[  # noqa: E731
        len(page_inputs.SETTING_NAMES) + 1:len(page_inputs.SETTING_NAMES) + 3]  # (constraint, Advanced)
    assert sections(Request.query_params) == [gr.update(open=True), gr.skip()]
    for query in ({"preset": "demo", "tree": "1,2"}, {"preset": "demo", "seed": "3"}, {"preset": "demo", "top_p": "0.9"},
                  {"preset": "demo", "backend": "xgrammar"}):  # restored out of sight before (a fresh-eyes pass)
        assert sections(query) == [gr.skip(), gr.update(open=True)], query
    assert sections({"preset": "demo", "k": "3"}) == [gr.skip(), gr.skip()]
    assert page_inputs.constraint_editor("regex")["language"] is None
    assert page_inputs.constraint_editor("JSON schema")["language"] == "json"
    assert [page_inputs.constraint_editor(kind)["visible"] for kind in ("none", "regex", "JSON schema")] == [False, True, True]
    shown = lambda target, budget=0: page_inputs.think_budget_shown(target, budget)["visible"]  # noqa: E731
    assert shown("Qwen/Qwen3-8B") and shown("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B") and shown("acme/unknown")
    assert not shown("demo-target") and not shown("smollm2-135m-instruct") and shown("demo-target", 64)


MESSAGE_SLOTS = {where: slot(name) for where, name in playground_tab.MESSAGE_SLOTS.items()}  # see playground_tab._messages
SECTIONS = {where: slot(name) for where, name in playground_tab.SECTIONS.items()}  # the closed sections the messages sit in (Structured output, Advanced)
POINTED = playground_tab.POINTED  # the messages a refused run points to from under Run (each gone with its inputs' change)


def test_a_constraint_too_costly_to_follow_stops_the_run_beside_the_constraint(monkeypatch):
    """The matcher's work is bounded (playground.constraints.metered); past it the run says so where the
    constraint is, its section opened, as any other refusal of the constraint."""
    from playground import limits
    monkeypatch.setattr(limits, "CONSTRAINT_RUN_SECONDS", 0)
    final = run_preset("demo-json")[-1]
    assert "s of CPU in this run, more than this host allows (0 s)" in final[MESSAGE_SLOTS["constraint"]]
    assert final[SECTIONS["constraint"]] == gr.update(open=True) and 'id="run-pointer"' in final[MESSAGE_SLOTS["run"]]


def test_a_constraint_past_its_bound_part_way_ends_the_run_as_stopped_with_what_it_wrote(costly_part_way, caplog):
    """Past its CPU bound after 276 tokens a run said "not run", and its text, charts and download (and the last
    run's) were gone (a failure review): it ends as a stopped run, drawn whole, the bound said at the constraint."""
    with caplog.at_level("INFO", logger="playground"):
        final = run_preset("demo-json", compare=False)[-1]
    assert "took 31 s of CPU" in final[MESSAGE_SLOTS["constraint"]] and final[SECTIONS["constraint"]] == gr.update(open=True)
    assert 'id="stopped-badge"' in final[slot("badge")] and final[slot("text")] and final[slot("download")]
    assert final[slot("status")]["phase"] == "stopped" and all(final[slot(c)] is not None for c in playground_tab.CHARTS)
    assert [r.getMessage()[:27] for r in caplog.records] == ["run stopped part way (const"]
    assert 'id="run-ended-pointer" role="status">ended early: <a class="message-link" href="#constraint-ended" data-where="constraint">see the message in Structured output</a>' in final[MESSAGE_SLOTS["run"]]  # not
    # "not run" (#run-pointer): the page dims a refused run's output as the last run's


def test_an_engine_error_part_way_keeps_what_the_run_wrote_and_says_so_under_run(monkeypatch, caplog):
    """An error in the engine thread part way (a device fault, a bug) showed its bare words in Gradio's corner,
    and the text, charts and download were lost: the run ends as stopped with what it wrote, the error under Run,
    its traceback in the log; the next run is not touched."""
    from playground import session
    real = session.generate

    def failing(*args, **kwargs):
        for i, event in enumerate(real(*args, **kwargs)):
            if i == 4:
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            yield event
    monkeypatch.setattr(session, "generate", failing)
    with caplog.at_level("INFO", logger="playground"):
        final = run_preset("demo", compare=False)[-1]
    said = final[MESSAGE_SLOTS["run"]]
    assert "the run failed (RuntimeError: CUDA error: an illegal memory access was encountered); what it wrote is kept" in said
    assert 'id="run-ended"' in said  # (not run-error: the page would dim the output as the last run's)
    assert 'id="stopped-badge"' in final[slot("badge")] and final[slot("text")] and final[slot("download")]
    assert any(r.exc_info for r in caplog.records)  # the operator's traceback
    last = list(page_api.generate("hi", "demo", compare=False))[-1]  # the web API: the same, its `error` the reason
    assert last["phase"] == "stopped" and last["text"] and last["error"].startswith("the run failed (RuntimeError: CUDA")
    monkeypatch.setattr(session, "generate", real)
    assert run_preset("demo", compare=False)[-1][slot("status")]["phase"] == "done"


def test_a_failure_while_the_speedup_is_measured_again_keeps_both_texts_and_the_estimate(monkeypatch):
    """Measuring again after a comparison that could not tell runs the engine again; a failure there was a
    refusal: both whole texts were drawn, then said not run, no download, no estimate (a review)."""
    from playground import session
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread is too wide: it always measures again
    real, calls = session.generate, []

    def third_fails(*args, **kwargs):  # the run, the target alone beside it, then a measurement's
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        yield from real(*args, **kwargs)
    monkeypatch.setattr(session, "generate", third_fails)
    final = run_preset("demo", max_new_tokens=24)[-1]
    assert final[slot("status")]["phase"] == "done" and final[slot("download")] and final[slot("baseline_text")]
    assert 'id="run-ended"' in final[MESSAGE_SLOTS["run"]] and "RuntimeError" in final[MESSAGE_SLOTS["run"]]
    assert "measuring failed" in final[slot("metrics")]


def test_an_unexpected_error_before_the_run_wrote_is_said_under_run_and_keeps_the_last_outputs(monkeypatch):
    """Gradio showed its bare words in a corner toast; now as any refusal: under Run, the last run's outputs kept."""
    from playground.ui import live as page_live

    def broken(*args, **kwargs):
        raise OSError("No space left on device")
    monkeypatch.setattr(page_live, "prepare", broken)
    outputs = run_preset("demo")
    assert len(outputs) == 1 and outputs[0][:OWN] == [gr.skip()] * OWN
    assert "the run failed (OSError: No space left on device). Run again" in outputs[0][MESSAGE_SLOTS["run"]]


@pytest.mark.parametrize("change, where, message", [
    ({"prompt": "   "}, "prompt", "the prompt is empty"),
    ({"target": "evil/model"}, "model", "not one of this host's preset models"),
    ({"target": "ngram"}, "model", "is a way of drafting, not a model that writes on its own"),
    ({"regex": "", "schema": '{"type": "string", "minLength": 5, "maxLength": 2}'}, "constraint",
     "no JSON value can satisfy this schema"),
    ({"max_new_tokens": 10**6}, "run", "max new tokens must be between"),
    ({"tree": "9,9,9,9,9,9"}, "tree", "a token tree is 1 to 8 depths of 1 to 8 children per node, 64 nodes at most"),
    ({"tree": "1,2,1,1", "policy": "confidence"}, "tree", "a token tree runs with the fixed draft policy"),
    ({"tree": "1,2", "policy": "foo"}, "run", "unknown draft policy 'foo'"),  # its own error, not the tree's
])
def test_a_refused_run_says_so_once_next_to_its_cause_and_keeps_the_outputs(caplog, change, where, message):
    with caplog.at_level("INFO", logger="playground"):
        outputs = run_preset("demo", **change)
    assert len(outputs) == 1
    final = outputs[0]
    assert final[:OWN] == [gr.skip()] * OWN  # the last run's stream, text, charts and download stay
    assert html.escape(message) in final[MESSAGE_SLOTS[where]] and f'id="{where}-error"' in final[MESSAGE_SLOTS[where]]
    for slot, i in MESSAGE_SLOTS.items():  # the other messages are cleared (the constraint's own check stays)
        if slot == "run" and where in POINTED:  # a section, or the models far down on a phone, may be out of
            assert 'id="run-pointer" role="status"' in final[i]  # sight: under Run, a pointer to it (said politely: the
            # message is an alert of its own where it is new; one shown as typed was said by nothing)
            for place in POINTED:  # gone once its message's inputs change, and only then (test_browser)
                assert (json.dumps(final[i]) in playground_tab.pointer_cleared(place)) == (place == where)
        else:
            assert slot == where or final[i] == ("" if slot != "constraint" else gr.skip())
    if where == "run":  # a message of its own under Run stays through a section's change
        assert not any(json.dumps(final[MESSAGE_SLOTS["run"]]) in playground_tab.pointer_cleared(s) for s in POINTED)
    for slot, i in SECTIONS.items():  # its section opens to show it
        assert (final[i] == gr.update(open=True)) == (where == slot)
    lines = [r.getMessage() for r in caplog.records]  # the server log: one line, no traceback
    assert len(lines) == 1 and lines[0].startswith("run refused (") and message in lines[0]
    assert not any(r.exc_info for r in caplog.records)


def test_a_trees_refusals_are_said_beside_the_tree():
    """A tree under prompt lookup, and a tree past its length, were said under Run (the tree's other refusals
    beside it, with a pointer under Run)."""
    for draft, tree, said in (("ngram", "2,2", "a token tree is drafted by a draft model"),
                              ("demo-draft", "9" * 5000, "the tree's length (characters) is 5000")):
        outputs = run_preset("demo", draft=draft, tree=tree)
        assert len(outputs) == 1 and said in html.unescape(outputs[0][MESSAGE_SLOTS["tree"]]), outputs[0][OWN:slot("race_lanes")]
        assert "Advanced" in outputs[0][MESSAGE_SLOTS["run"]]  # the pointer to it


@pytest.mark.parametrize("kind", ["grammar", "regex", "JSON schema"])
def test_a_kind_of_constraint_picked_with_its_box_empty_is_refused_beside_it(kind):
    """Constraint 'grammar' with nothing written ran unconstrained, without a word (a newcomer's pass)."""
    values = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    values[page_inputs.SETTING_NAMES.index("kind")] = kind
    values[page_inputs.SETTING_NAMES.index("constraint")] = "  \n"
    outputs = list(playground_tab.run(None, QUIET, *values))
    assert len(outputs) == 1 and outputs[0][:OWN] == [gr.skip()] * OWN
    said = outputs[0][MESSAGE_SLOTS["constraint"]]
    assert f"the constraint is empty: write a {page_inputs.KIND_FIELDS[kind]}" in said and "set Constraint to none" in said
    values[page_inputs.SETTING_NAMES.index("kind")] = "none"  # the box's text unused: runs
    assert len(list(playground_tab.run(None, QUIET, *values))) > 1


def test_stop_ends_the_run_with_what_it_produced():
    class Request:
        session_hash = "stop-test-session"
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 1024
    outputs = []
    for i, out in enumerate(playground_tab.run(Request(), QUIET, *page_inputs.inputs_from_settings(settings))):
        outputs.append(out)
        if i == 3:
            files.request_stop(Request())
    final = outputs[-1]
    report = json.loads(open(final[slot("download")]["value"]).read())
    assert report["phase"] == "stopped" and 0 < len(report["token_ids"]) < 1024
    assert final[slot("text")] == report["text"] and final[slot("text")].strip()  # the partial text can be copied
    assert f"stopped after {len(report['token_ids'])} tokens" in final[slot("badge")]
    assert final[slot("accepted_chart")] is not None and "speedup" in final[slot("metrics")]  # charts and stats so far
    assert report["identical_to_baseline"] is True and "as far as both went (stopped)" in final[slot("metrics")]  # not "differs"
    assert not files.stop_flag(Request()).exists()  # the next run is not stopped by this Stop
    spec, base = final[slot("race_lanes")]  # a stopped race: each run where it stood, not "texts differ", not "finished"
    shown = html.unescape(final[slot("race")])
    assert spec.stopped and shown.count("stopped at") == 2 and "finished in" not in shown and "texts differ" not in shown
    assert shown == html.unescape(race.ended_html([spec, base]))

    class Hostile:
        session_hash = "../../tmp/x"
    assert files.stop_flag(Hostile()) is None and files.stop_flag(None) is None  # no path outside the flag folder
    assert len(list(playground_tab.run(Request(), QUIET, *page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))))) > 1


def test_stop_while_the_models_load_says_so_and_keeps_the_last_outputs(monkeypatch):
    """Stop during a load ends it (test_live); the page then said nothing at all."""
    from playground import session
    real, stopped = session.load_pair, []

    def downloading(*args, progress=None, **kwargs):  # a load's reports, Stop pressed between them
        progress(0.1, "downloading the target")
        stopped.append(True)
        progress(0.2, "downloading the target")
        return real(*args, progress=progress, **kwargs)
    monkeypatch.setattr(session, "load_pair", downloading)
    monkeypatch.setattr(playground_tab, "stop_requested", lambda request: bool(stopped))
    outputs = run_preset("demo")
    assert len(outputs) == 1 and outputs[0][:OWN] == [gr.skip()] * OWN and outputs[0][slot("status")]["phase"] == "stopped"
    assert "stopped before the run wrote anything (while its models loaded" in outputs[0][MESSAGE_SLOTS["run"]]


def test_stop_before_either_run_wrote_a_token_gives_no_figure_for_what_was_not_measured():
    """A Stop within a second of Run (a review): the card said "about 0.00x (its text identical to the target
    alone's as far as both went)", 0.00 tokens per target pass, and a 0 s bar for a target alone never run."""
    class Request:
        session_hash = "stop-at-once-test-session"
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    live.prepare(settings)  # the pair loaded (Stop during its load ends the load: nothing drawn, test_live)
    files.request_stop(Request())  # pressed before the run's first round
    final = list(playground_tab.run(Request(), QUIET, *page_inputs.inputs_from_settings(settings)))[-1]
    said = html.unescape(final[slot("metrics")])
    assert "the run ended (Stop, or a failure) before either run wrote a token" in said and "0.00x" not in said and "as far as both went" not in said
    assert re.search(r"tokens per target pass</small><b>n/a</b><small>no token written", said)
    assert [bar.x for bar in final[slot("time_chart")].data] == [("speculative",)] * 3  # the target alone: no bar
    assert "no race to replay" in final[slot("race")]


def test_run_clicked_while_measuring_again_ends_that_measuring_and_waits_its_turn(monkeypatch):
    """Run is enabled while a run only measures its speedup again; its click ends that measuring (the
    estimate so far kept) and the buttons stay busy for the run it asked for."""
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread is too wide: it measures again, up to 4 times

    class Request:
        session_hash = "supersede-test-session"
    inputs = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    assert playground_tab.start_run(Request()) == playground_tab.BUSY
    outputs, enabled = [], []
    for out in playground_tab.run(Request(), QUIET, *inputs):
        outputs.append(out)
        if out[slot("status")]["phase"] == "measuring" and not enabled:
            enabled.append(playground_tab.runnable_while_measuring(out[slot("status")]))
            playground_tab.start_run(Request())  # Run clicked again
    assert enabled == [gr.update(interactive=True)]
    assert playground_tab.runnable_while_measuring(outputs[0][slot("status")]) == gr.skip()  # not while it writes
    report = json.loads(open(outputs[-1][slot("download")]["value"]).read())
    assert report["phase"] == "done" and report["speedup_measure"]["reason"].endswith("measuring stopped")
    kept = outputs[-1][slot("measured")]  # for the calculator: too noisy to tell, yet its estimate and range
    assert kept["speedup"] is None and kept["speedup_low"] <= kept["speedup_estimate"] <= kept["speedup_high"]
    assert playground_tab.after_run(Request(), outputs[-1][slot("status")]) == (gr.skip(), gr.skip())  # the next run waits
    again = list(playground_tab.run(Request(), QUIET, *inputs))
    assert again[-1][slot("status")]["phase"] == "done" and again[-1][slot("status")]["ticket"] != outputs[-1][slot("status")]["ticket"]
    # the superseded run's after_run reading the next run's status (that run already begun): still busy
    assert playground_tab.after_run(Request(), again[0][slot("status")]) == (gr.skip(), gr.skip())
    assert playground_tab.after_run(Request(), again[-1][slot("status")]) == playground_tab.IDLE
    assert playground_tab.after_run(None, None) == playground_tab.IDLE  # over the API: no click, no ticket


def test_while_it_measures_again_the_badge_charts_and_race_are_drawn(monkeypatch):
    """Measuring again took minutes on a 2-core CPU after the text was complete, with the charts empty
    and the Race tab saying to turn on the comparison that was on (a newcomer's review): the first
    comparison's results are drawn as measuring again begins; only the file waits for the estimate."""
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread is too wide: it measures again
    monkeypatch.setattr(live, "live_run", functools.partial(live.live_run, every=0))  # every snapshot in turn (the
    # pacing may skip a quick phase's)

    class Request:
        session_hash = "measuring-draws-test-session"
    settings = Settings.from_preset(page_inputs.PRESETS["demo-json"])
    outputs = []
    for out in playground_tab.run(Request(), QUIET, *page_inputs.inputs_from_settings(settings)):
        outputs.append(out)
        if out[slot("status")]["phase"] == "measuring":
            files.request_stop(Request())  # the first measuring update is enough
    measuring = next(out for out in outputs if out[slot("status")]["phase"] == "measuring")
    assert 'id="valid-badge"' in measuring[slot("badge")] and measuring[slot("badge")] == outputs[-1][slot("badge")]  # the verdict, as at the end
    assert measuring[slot("json")] is not None and measuring[slot("json")] == outputs[-1][slot("json")]  # the output as JSON
    assert all(measuring[slot(c)] is not None and measuring[slot(c)] != gr.skip() for c in playground_tab.CHARTS)  # the four charts
    spec, base = measuring[slot("race_lanes")]  # the race's lanes
    assert spec.at(spec.total)[0] == measuring[slot("text")] and base.at(base.total)[0] == measuring[slot("baseline_text")]
    assert measuring[slot("download")] == gr.skip()  # the file waits for the estimate (greyed by the run's first update)
    assert outputs[0][slot("download")] == playground_tab.download_update(None)
    assert "no race to replay" in next(playground_tab.replay_race(None))
    assert measuring[slot("race")] == race.ended_html([spec, base])  # drawn as both runs ended, while it measures


def test_the_race_replays_both_runs_at_their_measured_pace(monkeypatch):
    outputs = run_preset("demo", max_new_tokens=64)
    final = outputs[-1]
    assert outputs[0][slot("race")] == race.note_html(playground_tab.RACE_WAITS)  # the last run's race goes at once
    spec, base = lanes = final[slot("race_lanes")]
    assert spec.at(spec.total)[0] == final[slot("text")] and base.at(base.total)[0] == final[slot("baseline_text")]  # each lane ends with its run's text
    assert sum(map(len, spec.pieces)) == len(final[slot("text")])  # each round's own text kept, not the text so far after each
    assert all(a < b for lane in lanes for a, b in zip(lane.ends, lane.ends[1:]))  # time only moves forward
    report = json.loads(open(final[slot("download")]["value"]).read())
    assert len(base.ends) == report["baseline"]["stats"]["target_passes"] - 1  # one round per target pass
    assert spec.total == pytest.approx(report["stats"]["wall_s"], rel=1e-6)  # the clock the stats use
    times, scale = race.replay_times(lanes)
    assert times[-1] == max(spec.total, base.total) and scale * times[-1] == pytest.approx(race.REPLAY_S)
    assert spec.at(0.0) == ("", 0) and spec.at(spec.total)[1] == len(spec.ends) and spec.at(spec.ends[0])[1] == 1
    monkeypatch.setattr(race, "REPLAY_S", 0.4)
    frames = list(playground_tab.replay_race(lanes))
    assert len(frames) > 2 and frames[-1].count("finished in") == 2 and "finished in" not in frames[0]
    assert "no race to replay" in next(playground_tab.replay_race(None))  # nothing to race before one
    assert list(playground_tab.replay_race(lanes, still=True)) == [frames[-1]]  # less motion asked: the end at once
    end = race.frame_html(lanes, max(spec.total, base.total), 1.0)
    assert final[slot("race")] == race.ended_html(lanes) and final[slot("race")].count("finished in") == 2  # drawn at
    assert "as they ended" in final[slot("race")]  # the run's end (the last run's stayed until the tab was selected)
    assert spec.tokens == base.tokens == 64 and end.count(", 64 tokens, ") == 2  # greedy: one text, two paces
    assert "first measurement" in end and "different texts" not in end
    ratio = (spec.tokens / spec.total) / (base.tokens / base.total)  # said once both have finished, apart from the card's
    assert f"This measurement alone: speculation <b>{ratio:.2f}x</b> as fast as the target alone." in end
    assert "race-outcome" not in frames[0]
    sampled = [race.Lane("speculative", [1.0], ["a b c"], 30), race.Lane("target alone", [2.0], ["a"], 12, 0.8)]
    ended = race.frame_html(sampled, 2.0, 1.0)
    assert ("the runs wrote different texts, 30 tokens and 12 tokens: who finishes first says little (the line at the "
            "end costs the target alone at speculation's length)" in html.unescape(ended))  # (a sampled comparison: a race the shorter text may win)
    # alone, 30 tokens cost its 0.8 s prefill and 30 x (1.2 s / 12): 3.8 s against 1.0 s (their tok/s: 5.00x)
    assert "speculation <b>3.80x</b> as fast as the target alone would write its 30 tokens" in ended
    longer = [race.Lane("speculative", [1.0], ["a"], 10), race.Lane("target alone", [1.0, 2.0, 10.0], ["b"] * 3, 100, 0.5, (5, 5, 90))]
    assert "speculation <b>2.00x</b> as fast as the target alone wrote its first 10 tokens" in race.frame_html(longer, 10.0, 1.0)
    # (its first 10 tokens: 0.5 s prefill, then 0.5 s and 1.0 s; not its 90 more, written alone)
    cut = [dataclasses.replace(ln, stopped=True) for ln in longer]  # Stop: the runs cut where each stood, greedy or not
    said = html.unescape(race.frame_html(cut, 10.0, 1.0))
    assert "stopped: each run where it stood, 10 tokens and 100 tokens" in said and "different texts" not in said
    assert "wrote its first 10 tokens (stopped)" in said and said.count("stopped at") == 2
    tricky = race.Lane("<b>x</b>", [0.1], ["<script>alert(1)</script>"], 1)
    assert "<script>" not in race.frame_html([tricky], 0.1, 1.0) and "&lt;script&gt;" in race.frame_html([tricky], 0.1, 1.0)


def test_a_long_races_replay_sends_a_bounded_amount_of_text(monkeypatch):
    """Each frame re-sends both lanes' text so far: 2,048 tokens a lane (a round per token for the
    target alone) sent 1.7 MB over the 8 s replay. Frames come further apart for long texts."""
    piece = "word "  # one token a round, 5 characters
    base = race.Lane("target alone", [0.01 * (i + 1) for i in range(2048)], [piece] * 2048, 2048)
    spec = race.Lane("speculative", [0.04 * (i + 1) for i in range(512)], [piece * 4] * 512, 2048)
    monkeypatch.setattr(playground_tab.time, "sleep", lambda s: None)
    frames = list(playground_tab.replay_race([spec, base]))
    assert frames[-1].count("finished in") == 2 and len(frames) > 20  # still a race to watch
    assert sum(map(len, frames)) < 2 * race.REPLAY_CHARS  # the texts plus each frame's markup
    short = [race.Lane("speculative", [0.1, 0.2], ["a", "b"], 2), race.Lane("target alone", [0.4], ["ab"], 2)]
    assert race.frame_seconds(short) == race.FRAME_S


def test_the_calculator_draws_the_runs_that_told_their_speedup_and_faintly_the_rest():
    """On a noisy 2-core CPU nearly every run was too noisy to tell: the calculator drew none of them."""
    history = []
    untold = {"k": 4, "alpha": 0.5, "speedup": None, "speedup_estimate": 1.2, "speedup_low": 0.9, "speedup_high": 1.5}
    for measured in ({"k": 3, "alpha": 0.6, "speedup": 1.4, "speedup_estimate": 1.4, "speedup_low": 1.3,
                      "speedup_high": 1.5}, untold, None):
        history = playground_tab.remember_run(measured, history)  # None: a run without the comparison
    assert len(history) == 2
    text, figure = calculator.calculator(0.7, 4, 0.1, history)
    assert "1 of your runs compared with the target alone gave no single number for its speedup (too noisy for one): drawn as a circle" in text
    assert "measured 0.90-1.50x, about 1.20x (too noisy for one number)" in text  # no verdict known: none said
    history[-1] = dict(untold, verdict="faster", speedup_low=1.14, speedup_high=2.09, speedup_estimate=1.66)
    text, figure = calculator.calculator(0.55, 3, 0.025, history)  # it said "could not tell" of a run shown "faster"
    assert "measured faster, 1.14-2.09x, about 1.66x (too noisy for one number)" in text
    assert any(t.name == "expected (α=0.55, c=0.025)" for t in figure.data)  # as its slider says (c=0.03 before)
    text, figure = calculator.calculator(0.7, 4, 0.1, history[:1] + [untold])
    assert [list(t.y) for t in figure.data if t.name == "measured runs"] == [[1.4]]
    faint = next(t for t in figure.data if t.name == plots.UNTOLD)
    assert list(faint.y) == [1.2] and list(faint.error_y.array) == [pytest.approx(0.3)]
    assert list(faint.error_y.arrayminus) == [pytest.approx(0.3)]


def test_the_calculator_says_when_no_k_pays():
    """At α 0.5 and c 1 every k is slower than the target alone: it named k = 1 "best", at 0.75x,
    under its own 1x line (a newcomer's review)."""
    text, _ = calculator.calculator(0.5, 8, 1.0, [])
    assert "expected speedup **0.22x** (no k pays for these numbers: the best, k = 1, gives 0.75x; the target alone is faster" in text
    assert "best k for these numbers" not in text
    assert "the best, k = 1, gives 0.99x; the target alone is faster" in calculator.calculator(0.99, 16, 1.0, [])[0]
    assert "expected speedup **0.99x** (no k pays" in calculator.calculator(0.99, 1, 1.0, [])[0]  # one value, one number
    assert "**0.88x** (no k pays for these numbers: the best, k = 1, gives 0.88x" in calculator.calculator(0.1, 1, 0.25, [])[0]
    assert "**1.00x** (at best break-even: k = 1 gives 1.00x" in calculator.calculator(0.1, 1, 0.1, [])[0]  # (α = c)  # (0.995: "1.00x")
    assert "(best k for these numbers: 3)" in calculator.calculator(0.6, 8, 0.1, [])[0]
    # past the slider's 16 (α 0.95, c 0.01: k = 40 gives 12.5x, 16 gives 10.0x): not called the best (a maths review)
    assert "(best k for these numbers: 16 or more (16 is the slider's limit))" in calculator.calculator(0.95, 8, 0.01, [])[0]


def test_the_calculator_takes_an_exact_match_and_a_free_draft():
    """α stopped at 0.99 and c at 0.01: an exact match (a repeat of the prompt) and prompt lookup's
    near-free guesses could not be asked."""
    assert "**5.00** tokens per round (a verify pass), expected speedup **3.57x**" in calculator.calculator(1.0, 4, 0.1, [])[0]
    free = calculator.calculator(0.7, 4, 0.0, [])[0]
    assert "expected speedup **2.77x**" in free and "with c = 0 drafting is free here" in free
    flat = calculator.calculator(0.3, 4, 0.0, [])[0]  # k = 16 "best" where k = 3 gives as much (a review)
    assert "k = 3 already gives 1.42x, within 1% of k = 16's 1.43x" in flat
    for alpha in (0.01, 0.05, 0.08):  # the speedup rises with k, past float's last digit before 16 (k = 8, 12, 14
        assert "best k for these numbers: 16 or more: with c = 0" in calculator.calculator(alpha, 4, 0.0, [])[0]  # named)
    restored = page_inputs.restore_from_url(_request("/?tab=experiments&calc_alpha=1&calc_c=0"))
    assert restored[-9:-2][4] == 1 and restored[-9:-2][6] == 0 and "calc_" not in html.unescape(restored[-1])


def test_the_calculator_draws_the_last_k_sweep_beside_the_formula():
    """A K sweep is a measured speedup-vs-k curve: the calculator drew only the formula's. Its points
    come as a line, a noisy one at its estimate (open) with its 95% interval; the text says what
    the line is and the best k it measured where one was clear."""
    def row(k, speedup, low, high, estimate=None):
        return {"k": k, "temperature": 0.0, "speedup": speedup, "speedup_low": low, "speedup_high": high,
                "speedup_estimate": estimate or speedup, "verdict": "faster", "acceptance_rate": 0.9 - 0.1 * k,
                "token_acceptance": 0.9 - 0.05 * k}
    rows = [row(1, 1.3, 1.2, 1.4), row(2, 1.9, 1.8, 2.0), row(3, None, 1.1, 1.7, estimate=1.4),
            {"k": 4, "speedup": None, "speedup_estimate": None, "speedup_low": None}]  # (a point stopped: no range)
    points = experiments_tab.k_sweep_points(rows, Settings.from_preset(page_inputs.PRESETS["demo"]))
    assert [p["k"] for p in points["rows"]] == [1, 2, 3] and points["temperature"] == 0.0
    text, figure = calculator.calculator(0.7, 4, 0.1, [], points)
    line = next(t for t in figure.data if t.name == "your last K sweep (measured)")
    assert list(line.x) == [1, 2, 3] and list(line.y) == [1.3, 1.9, 1.4]
    assert list(line.error_y.array) == [pytest.approx(0.1), pytest.approx(0.1), pytest.approx(0.3)]
    assert list(line.marker.symbol) == ["circle", "circle", "circle-open"]
    # α, the slider's: the share of drafts kept falls with k by construction (a maths review: "acceptance 0.19-0.37"
    # sat under the α slider); the line's points say theirs
    assert "Your last K sweep (temperature 0, α 0.75-0.85) is the measured line" in text
    assert list(line.text) == ["per-token acceptance α=0.85", "per-token acceptance α=0.80",
                               "per-token acceptance α=0.75, too noisy for one number"]
    assert "best k measured: 2" in text  # its interval above every other's, the noisy one's range included
    rows[2]["speedup_high"] = 2.1
    assert "no k measured clearly best" in calculator.calculator(0.7, 4, 0.1, [], experiments_tab.k_sweep_points(
        rows, Settings.from_preset(page_inputs.PRESETS["demo"])))[0]
    assert "Your last K sweep" not in calculator.calculator(0.7, 4, 0.1, [], None)[0]
    assert experiments_tab.k_sweep_points(rows[3:], Settings.from_preset(page_inputs.PRESETS["demo"])) is None
    typed = experiments_tab.k_sweep_points([rows[2], rows[0], rows[1]], Settings.from_preset(page_inputs.PRESETS["demo"]))
    assert [p["k"] for p in typed["rows"]] == [1, 2, 3]  # typed 3,1,2: drawn in k's order (a zigzag)
    chart_rows = [r | {"tokens_per_target_pass": 2.0} for r in (rows[2], rows[0], rows[1])]
    assert all(list(trace.x) == [1, 2, 3] for trace in plots.sweep_chart(chart_rows, "k").data[:4])
    one = experiments_tab.k_sweep_points(rows[:1], Settings.from_preset(page_inputs.PRESETS["demo"]))
    alone = calculator.calculator(0.7, 4, 0.1, [], one)[0]  # (one point: no line, no k best among others)
    assert "(temperature 0, α 0.85) measured k 1 alone" in alone and "clearly best" not in alone  # α not 0.85-0.85
    for changed, beyond in (({"draft": "ngram"}, "prompt lookup"), ({"policy": "schedule"}, "the schedule policy"),
                            ({"policy": "confidence"}, "the confidence policy")):  # the formula is a draft model's fixed k:
        settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), **changed)  # not drawn against it,
        points = experiments_tab.k_sweep_points(rows, settings)  # and said (the earlier sweep's line went without a word)
        assert points == {"temperature": 0.0, "rows": [], "beyond": beyond}, changed
        text, figure = calculator.calculator(0.7, 4, 0.1, [], points)
        assert f"Your last K sweep, with {beyond}, is not drawn" in text
        assert not any(t.name == "your last K sweep (measured)" for t in figure.data)


def test_stop_ends_an_experiment_where_it_is_with_the_points_measured_whole(monkeypatch):
    """Stop (and the host's time limit, and a closed page) were looked at between points only: one
    point of 16 prompts x 2,048 tokens held the engine past them all. The point being measured now
    ends where it is, without a row; the rows measured whole stay."""
    class Request:
        session_hash = "experiment-stop-test"
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 8
    inputs = page_inputs.inputs_from_settings(settings)
    made = sweeps.engine_block
    for job, experiment, args, total, what in (
            ("sweep", experiments_tab.run_sweep, ("k", "1,2,3", "def f(x):"), 3, "values of k"),
            ("compare_drafts", experiments_tab.run_comparison, (["draft model", "prompt lookup"], "def f(x):"), 2, "ways of drafting")):
        start, stop, _ = experiments_tab.experiment_buttons(job, 0)
        files.request_stop(Request(), job)  # a Stop pressed after the last one ended...
        start(Request())  # ...is forgotten when the experiment is asked for
        files.request_stop(Request(), "run")  # the Playground's Stop is not this experiment's
        points = []

        def counted(*args, **kwargs):  # Stop pressed as the second point starts measuring
            points.append(1)
            if len(points) == 2:
                assert stop(Request())["value"] == "Stopping"
            return made(*args, **kwargs)
        monkeypatch.setattr(sweeps, "engine_block", counted)
        outputs = list(experiment(Request(), QUIET, *args, *inputs))
        status, table = outputs[-1][:2]
        rows = (table.value if isinstance(table, gr.Dataframe) else table)["data"]  # (a sweep's names its columns)
        assert f"stopped: 1 of {total} {what}" in status and isinstance(rows, list) and len(rows) == 1  # the point measured stays
        assert len(points) == 2  # none measured after it
        assert not files.stop_flag(Request(), job).exists()  # the next experiment or run is not stopped by it
        assert files.stop_flag(Request(), "run").exists()  # (nor was the Playground's flag used up)
        playground_tab.start_run(Request())
        assert not files.stop_flag(Request(), "run").exists()


def test_a_sweep_stopped_before_its_first_value_offers_no_file(monkeypatch):
    """It offered a CSV of its header alone."""
    class Request:
        session_hash = "experiment-stop-first-test"
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 8
    start, stop, _ = experiments_tab.experiment_buttons("sweep", 0)
    start(Request())
    made = sweeps.engine_block

    def stopped_at_once(*args, **kwargs):
        stop(Request())
        return made(*args, **kwargs)
    monkeypatch.setattr(sweeps, "engine_block", stopped_at_once)
    status, table, _, csv_path, _ = list(experiments_tab.run_sweep(Request(), QUIET, "k", "1,2", "def f(x):",
                                                                    *page_inputs.inputs_from_settings(settings)))[-1]
    assert "stopped: 0 of 2 values of k" in status and csv_path is None
    from gradio.components.dataframe import DataframeData  # the table as the page's handler reads it (a DataFrame)
    assert not experiments_tab.rows_shown(gr.Dataframe().preprocess(DataframeData(headers=["k"], data=[[]])))
    assert experiments_tab.rows_shown(gr.Dataframe().preprocess(DataframeData(headers=["k"], data=[[1]])))
    assert not table.value["data"]  # (the table this sweep left)


def test_a_point_measured_whole_before_an_experiment_halts_is_kept(monkeypatch):
    """The halt was looked at once more after each point: a run that came to wait just after a point's
    last round threw that whole point away (the last of a sweep too). Only a point cut short goes."""
    from playground import session
    pair = session.load_pair("demo-target", "demo-draft")
    ids = [session.encode_prompt(pair, "def f(x):")]
    came = []
    made = sweeps.measure

    def measure_then_a_run_comes(block, **kwargs):
        told = made(block, **kwargs)
        came.append(1)  # from here on, halted() is true
        return told
    monkeypatch.setattr(sweeps, "measure", measure_then_a_run_comes)
    counts = []  # the page says each point's measurements as they are done (its first took minutes, unsaid)
    tables = list(sweeps.sweep(pair, ids, session.spec_config(max_new_tokens=8), "k", [1, 2, 3], halted=lambda: bool(came),
                               on_measured=counts.append))
    assert [len(t) for t in tables] == [1] and tables[-1][0]["k"] == 1  # the first kept, the second cut at once
    first = tables[0][0]["measurements"]
    assert counts[:first + 2] == list(range(first + 1)) + [0]  # 0, 1, ... for k = 1, then 0 again for k = 2


def test_the_draft_comparison_measures_the_target_alone_beside_every_variant():
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens = 16
    *measuring, (status, table, _, csv_path) = experiments_tab.run_comparison(
        None, QUIET, ["draft model", "prompt lookup"], "def f(x):", *page_inputs.inputs_from_settings(settings))
    columns = {c: i for i, c in enumerate(sweeps.COMPARE_COLUMNS)}
    rows = table["data"]
    assert "done: 2 ways of drafting, 1 prompt each; with demo-target and the draft demo-draft: k 4, temperature 0, 16 new tokens" in status
    assert [r[0] for r in rows] == ["draft model", "prompt lookup"]
    baselines = [r[columns["baseline_tokens_per_s"]] for r in rows]
    assert all(b > 0 for b in baselines) and baselines[0] != baselines[1]  # two measurements, not one reused
    assert all(update[3] in (None, gr.skip()) for update in measuring)  # a file once it has ended (it had none)
    with open(csv_path, encoding="utf-8") as f:
        written = list(csv.DictReader(f))
    assert [(r["variant"], r["draft"], r["policy"]) for r in written] == [("draft model", "demo-draft", "fixed"),
                                                                         ("prompt lookup", "ngram", "fixed")]
    assert float(written[1]["baseline_tokens_per_s"]) == pytest.approx(baselines[1], rel=1e-3)
    assert written[0]["preset"] == "demo" and written[0]["max_new_tokens"] == "16" and written[0]["verdict"]
    settings.draft, settings.confidence = cascade("demo-draft"), 0.35  # the ways draft with its model, and their threshold
    first = next(experiments_tab.run_comparison(None, QUIET, ["adaptive: confidence"], "def f(x):",
                                                *page_inputs.inputs_from_settings(settings)))[0]
    assert "; with demo-target and the draft demo-draft: k 4, temperature 0, 16 new tokens, confidence 0.35<" in first


def test_the_draft_comparison_runs_under_the_playgrounds_constraint():
    """Compare drafts dropped the Playground's regex (a sweep kept it): it measured unconstrained text,
    1.6x, under a settings line that named the regex. Each way of drafting now writes `yes` or `no`."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens, settings.regex = 16, "(yes|no)"
    columns = {c: i for i, c in enumerate(sweeps.COMPARE_COLUMNS)}
    table = list(experiments_tab.run_comparison(None, QUIET, ["draft model", "prompt lookup"], "def f(x):",
                                                *page_inputs.inputs_from_settings(settings)))[-1][slot("metrics")]
    for row in table["data"]:  # at most 3 tokens and the end a run (`yes`: 1-3 tokens)
        assert 0 < row[columns["tokens"]] <= 4 * row[columns["measurements"]], row
    settings.regex = ""
    table = list(experiments_tab.run_comparison(None, QUIET, ["draft model"], "def f(x):",
                                                *page_inputs.inputs_from_settings(settings)))[-1][slot("metrics")]
    assert table["data"][0][columns["tokens"]] == 16 * table["data"][0][columns["measurements"]]


def test_the_comparisons_pace_counts_the_ways_measured(monkeypatch):
    """A way that cannot run is a row at once: counted as a point, the first one's time read halved ("about
    1 s a point so far", then 26 s)."""
    clock = iter([0, 26, 52])  # Pace's start; the first way measured at 26 s; the next call
    monkeypatch.setattr(experiments_tab, "monotonic", lambda: next(clock))
    pace, ways = experiments_tab.Pace(), ["cascade (lookup -> draft)", "draft model", "prompt lookup"]
    unrun = sweeps._unavailable(ways[0], "ngram+x", "fixed", "a feature draft")
    measured = {**unrun, "variant": ways[1], "note": "", "tokens_per_s": 5.0}
    assert experiments_tab.comparing([unrun], ways, pace) == "measuring draft model (2 of 3)"  # none measured yet
    assert experiments_tab.comparing([unrun, measured], ways, pace) == "measuring prompt lookup (3 of 3; about 26 s a point so far)"
    assert experiments_tab.comparing([unrun, measured, measured], ways, pace) == ""


def test_run_says_when_the_job_holding_the_device_gives_way(monkeypatch):
    """Run clicked while another job holds the device (every place of it): said under Run, with when that job
    gives way to a waiting run; nothing where none holds it, or where this page's own job does (None)."""
    import weakref

    import playground.ui.turn as turn_module
    monkeypatch.setattr(turn_module, "_holding", weakref.WeakSet())  # (no other test's job)
    now = [100.0]
    monkeypatch.setattr(turn_module, "monotonic", lambda: now[0])
    assert playground_tab.waits_for_device("") == gr.skip()
    holding = turn_module.Turn(900, 1, 120, "run")
    now[0] = 130.0
    said = playground_tab.waits_for_device("")
    assert said == ('<div class="progress-note" id="run-waits-device">This run waits for the model, which another run '
                    "holds (one at a time here): it gives way to a waiting run within about 1 min 30 s.</div>")
    assert playground_tab.waits_for_device(None) == gr.skip()  # this page's own run or experiment
    holding.share = 0  # measuring its speedup again: it gives way at once (live._run)
    assert "it gives way to a waiting run at its next round" in playground_tab.waits_for_device("")
    sweep = turn_module.Turn(900, 1, 120, "experiment")  # another job beside it (from 130 s), on a host of two places
    monkeypatch.setattr(playground_tab, "CONCURRENCY", 2)
    assert "which 2 other jobs hold (2 at a time here): the first gives way to a waiting run at its next round" in \
        playground_tab.waits_for_device("")
    holding.release()  # its run ended
    assert playground_tab.waits_for_device("") == gr.skip()  # a place free
    monkeypatch.setattr(playground_tab, "CONCURRENCY", 1)
    assert "which another experiment holds (one at a time here): it gives way to a waiting run within about 2 min 0 s" \
        in playground_tab.waits_for_device("")
    sweep.why = " at this host's limit of 900 s for one experiment"  # it ended
    assert playground_tab.waits_for_device("") == gr.skip()


def test_the_pace_says_where_an_experiment_will_stop_at_its_time_limit(monkeypatch):
    """A default sweep on a busy CPU host ran its 15 minutes to the limit with 3 of 6 points, its pace ("about 3 min
    7 s a point") never compared with the limit (a Space host's review): past it, the pace says how many of the
    points left it will measure, their pace timed from the models' load on; a way that cannot run is no point."""
    import playground.ui.turn as turn_module
    clock = iter([0, 100, 314, 400, 500, 0, 350])  # a sweep: its start, models loaded, its first point; another
    # sweep's start and first point (loaded at once); a comparison's start, its first way measured
    monkeypatch.setattr(experiments_tab, "monotonic", lambda: next(clock))
    monkeypatch.setattr(turn_module, "monotonic", lambda: 0)
    pace = experiments_tab.Pace(turn_module.Turn(900, 1, 120, "experiment"))
    pace.loaded()
    assert pace(0, 6) == ""
    assert pace(1, 5) == ("; about 5 min 14 s a point so far; at that pace it stops at this host's limit of 15 min 0 s, "
                          "with about 2 of the 5 left measured")  # 314 s, then 214 s a point: 2 more fit in 900 s
    within = experiments_tab.Pace(turn_module.Turn(900, 1, 120, "experiment"))
    assert within(1, 2) == "; about 1 min 40 s a point so far"  # 100 s and 2 x 100 s more: within the limit
    ways = ["cascade (lookup -> draft)", "draft model", "prompt lookup"]
    compared = experiments_tab.Pace(turn_module.Turn(900, 1, 120, "experiment"))
    unrun = sweeps._unavailable(ways[0], "ngram+x", "fixed", "a feature draft")
    measured = {**unrun, "variant": ways[1], "note": "", "tokens_per_s": 5.0}
    assert experiments_tab.comparing([unrun, measured], ways, compared) == (  # 350 s, one way left: 700 s in all
        "measuring prompt lookup (3 of 3; about 5 min 50 s a point so far)")


def test_a_tree_run_draws_its_trees_and_a_chain_its_chain():
    wide = run_preset("demo", max_new_tokens=24, tree="4,4,2", compare=False)[-1]
    view = wide[slot("tree")]
    assert view.count('class="tnode') >= 52 and "52 nodes verified in one pass" in view  # 4 + 16 + 32 nodes a round
    assert 'class="tnode kept"' in view and 'class="tnode refused"' in view
    chain = run_preset("demo", max_new_tokens=24, k=3, compare=False)[-1][slot("tree")]
    assert "nodes verified in one pass" in chain and 'class="tnode' in chain
    constrained = run_preset("demo-json", tree="2,2")[-1]  # each node under its own path's constraint state
    report = json.loads(open(constrained[slot("download")]["value"]).read())
    assert report["valid"] is True and report["identical_to_baseline"] is True and "nodes verified" in constrained[slot("tree")]


def test_a_share_links_model_is_not_looked_for_on_disk(tmp_path, monkeypatch):
    """A link's target was tested for a feature draft's folder (its config.json read, unbounded) before
    the presets' models were checked: any path was read, and the notice told whether such a folder was there."""
    (tmp_path / "config.json").write_text(json.dumps({"playground_feature_draft": True}))
    read, read_text = [], pathlib.Path.read_text
    monkeypatch.setattr(pathlib.Path, "read_text", lambda self, *a, **k: (
        read.append(self) if tmp_path in self.parents else None) or read_text(self, *a, **k))
    got, notices = from_query({"preset": "demo", "target": str(tmp_path), "draft": str(tmp_path)}, allow_custom=False)
    assert not read and got.target == "demo-target" and got.draft == page_inputs.PRESETS["demo"].draft
    assert notices == [f"ignored {key}={str(tmp_path)!r}: this host only runs the models of its presets" for key in ("target", "draft")]
    monkeypatch.undo()  # a host that runs custom models is told a feature draft is no target
    _, notices = from_query({"preset": "demo", "target": str(tmp_path)}, allow_custom=True)
    assert notices == [f"ignored target={str(tmp_path)!r}: a way of drafting, not a model that writes on its own"]


def test_a_link_pairing_models_that_cannot_draft_for_each_other_says_so_on_opening():
    """A link mixing tokenizer families opened without a word; Run refused it only after loading both
    models (on a GPU Space, after downloading them). Each preset's own pair opens without a notice."""
    got, notices = from_query({"preset": "qwen3-8b", "draft": "Qwen/Qwen2.5-0.5B-Instruct"}, allow_custom=False)
    assert got.draft == "Qwen/Qwen2.5-0.5B-Instruct"  # kept: the sender mends the link, the page says why
    assert notices == ["draft 'Qwen/Qwen2.5-0.5B-Instruct' cannot draft for target 'Qwen/Qwen3-8B', and Run will "
                       "refuse the pair: its tokenizer (qwen2.5) is not the target's (qwen3); pick a draft of the target's family"]
    assert "qwen3" in from_query({"preset": "qwen2.5-7b", "draft": "ngram+Qwen/Qwen3-0.6B"}, False)[1][0]
    assert "feature draft" in from_query({"preset": "smollm2", "target": "demo-target"}, False)[1][0]
    for name in page_inputs.PRESETS:
        assert from_query({"preset": name}, False)[1] == []
    assert from_query({"preset": "demo", "draft": "ngram"}, False)[1] == []


@pytest.mark.parametrize("changes, said", [
    ({"target": "smollm2-draft", "draft": "demo-draft"}, "cannot draft for target 'smollm2-draft'"),
    ({"target": "demo-target", "draft": "smollm2-feature-draft"}, "a feature draft reads the hidden states"),
    ({"draft": "ngram", "policy": "confidence"}, "ignored policy='confidence'"),
])
def test_share_link_refuses_a_link_that_would_open_with_a_notice(changes, said):
    """Share link made, in silence, links that opened with a notice and that /generate refused (a pair Run
    refuses, a feature draft of another target, a policy prompt lookup cannot use; an API review)."""
    sent = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), **changes)
    with pytest.raises(gr.Error, match=re.escape(said)):
        page_inputs.make_share_link(None, *page_inputs.inputs_from_settings(sent))


def test_share_link_refuses_compiled_passes_a_host_turned_off(monkeypatch):
    sent = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), compile=True)
    assert "compile=true" in page_inputs.make_share_link(None, *page_inputs.inputs_from_settings(sent))
    monkeypatch.setenv("PLAYGROUND_COMPILED_PASSES", "0")
    with pytest.raises(gr.Error, match="this host runs eager passes"):
        page_inputs.make_share_link(None, *page_inputs.inputs_from_settings(sent))


def test_a_share_link_carries_the_tree():
    sent = Settings.from_preset(page_inputs.PRESETS["demo"])
    sent.tree = "1,2,1,1"
    got, notices = from_query(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(
        page_inputs.make_share_link(None, *page_inputs.inputs_from_settings(sent))).query)), False)
    assert got.tree == "1,2,1,1" and not notices
    got, notices = from_query({"preset": "demo", "target": "demo-draft", "draft": "ngram"}, False)
    assert (got.target, got.draft, notices) == ("demo-draft", "ngram", [])  # a draft model may write alone
    assert got.target in page_inputs.TARGETS  # (the page's list accepts it: Gradio refuses values outside it)
    got, notices = from_query({"preset": "demo", "target": "ngram"}, True)
    assert got.target == "demo-target" and "a way of drafting" in notices[0]
    _, notices = from_query({"preset": "demo", "tree": "9,<b>"}, False)
    assert notices and "tree" in notices[0]
    for big in ("9,9,9,9,9,9", "8,8,8", "2,2/80"):  # sizes the page would refuse at Run: said when the link opens
        got, notices = from_query({"preset": "demo", "tree": big}, False)
        assert got.tree == "" and len(notices) == 1 and "tree" in notices[0]
    typed, notices = from_query(dict(urllib.parse.parse_qsl("preset=demo&tree=2,2+3")), False)  # '+' typed, not %2B
    assert typed.tree == "2,2+3" and not notices
    spaced, notices = from_query(dict(urllib.parse.parse_qsl("preset=demo&tree=2%2C+2")), False)  # typed '2, 2'
    assert spaced.tree == "2, 2" and not notices
    _, notices = from_query({"preset": "demo", "tree": "2, x 3"}, False)  # the tree as given, not as read with '+'
    assert "got '2, x 3'" in html.unescape(notices[0]).replace("\\", "") and "+" not in notices[0].split("got")[1]
    for odd in ("\u0664", "1_0", " 4"):  # int() reads an Arabic-Indic 4, underscores and spaces
        got, notices = from_query({"preset": "demo", "k": odd}, False)
        assert got.k == Settings.from_preset(page_inputs.PRESETS["demo"]).k and "ASCII digits" in notices[0]
    got, notices = from_query({"preset": "demo", "schema": '{"type": "string"}', "regex": "a+"}, False)
    assert got.regex == "" and "ignored regex" in notices[0]  # one constraint, said, not dropped silently


def test_api_export_gives_the_settings_commands(client):
    sent = Settings.from_preset(page_inputs.PRESETS["qwen2.5-7b"])
    sent.k, sent.regex = 5, "[a-z]+"
    notes, vllm, sglang, code = client.predict(*page_inputs.inputs_from_settings(sent), api_name="/export")
    assert vllm.startswith("vllm serve Qwen/Qwen2.5-7B-Instruct ") and '"num_speculative_tokens":5' in vllm
    assert "--speculative-num-draft-tokens 6" in sglang and '"regex": "[a-z]+"' in sglang
    assert "assistant_model=draft" in code and "no JSON-schema, regex or grammar constraint" in notes
    assert "export-preset-note" not in notes  # the preset's own models
    default = page_inputs.DEFAULT  # (a CLI review: a preset named alone, the page's default pair exported, unsaid)
    other = next(name for name, p in page_inputs.PRESETS.items() if (p.target, p.draft) != (default.target, default.draft))
    notes = client.predict(preset=other, k=3, api_name="/export")[0]
    assert f"These are the settings' models, {default.target} with {default.draft}, not those of the preset {other}" in notes


def test_a_thinking_run_folds_its_reasoning_and_judges_the_answer(tmp_path, monkeypatch):
    """A tiny model whose tokenizer has think tokens, on the page's own run callback: the reasoning is
    greyed in a fold, the answer after </think> judged and shown in the JSON-free text; the run's
    download says how many tokens were thinking."""
    from tests import tiny
    monkeypatch.setenv("PLAYGROUND_ALLOW_CUSTOM_MODELS", "1")
    tok = tiny.byte_bpe_tokenizer()
    tok.add_tokens(["<think>", "</think>"])
    target = tiny.tiny_model("qwen2", vocab=len(tok), seed=5, eos_id=tok.eos_token_id)
    paths = [str(tiny.save(m, tok, tmp_path / name)) for m, name in ((target, "t"), (tiny.perturbed_copy(target, 0.3), "d"))]
    settings = Settings(preset="demo", target=paths[0], draft=paths[1], k=3, max_new_tokens=40, prompt="n = ",
                        regex="[0-9]{2}", compare=False, think_budget=8)
    outputs = list(playground_tab.run(None, QUIET, *page_inputs.inputs_from_settings(settings)))
    final = outputs[-1]
    report = json.loads(open(final[slot("download")]["value"]).read())
    assert report["valid"] is True and report["reasoning_tokens"] == 9 and re.fullmatch("[0-9]{2}", report["answer"])
    stream = final[slot("stream")]
    assert stream.count('<details class="thinking"') == 1 and "thought for 9 tokens" in stream
    assert " open>" not in stream.split("</summary>")[0]  # folded once the answer has started
    folded = stream.split("</details>")[0]
    assert folded.count('class="tok ') >= 9 and report["answer"][-1] in html.unescape(stream.split("</details>")[1])
    assert "valid" in final[slot("badge")]


def test_the_api_sets_a_thinking_budget(tmp_path, monkeypatch):
    """/generate had no think_budget: a caller could not let a reasoning model think before a constraint,
    nor turn a link's thinking off."""
    from playground.ui import api, share
    from tests import tiny
    monkeypatch.setenv("PLAYGROUND_ALLOW_CUSTOM_MODELS", "1")
    tok = tiny.byte_bpe_tokenizer()
    tok.add_tokens(["<think>", "</think>"])
    target = tiny.tiny_model("qwen2", vocab=len(tok), seed=5, eos_id=tok.eos_token_id)
    paths = [str(tiny.save(m, tok, tmp_path / name)) for m, name in ((target, "t"), (tiny.perturbed_copy(target, 0.3), "d"))]
    link = share.share_url("http://x/", Settings(preset="demo", target=paths[0], draft=paths[1], k=3, max_new_tokens=40,
                                                 prompt="n = ", regex="[0-9]{2}", compare=False, think_budget=8))
    thought = list(api.generate(link=link))[-1]
    assert thought["reasoning_tokens"] == 9 and re.fullmatch("[0-9]{2}", thought["answer"])  # the link's budget
    plain = list(api.generate(link=link, think_budget=0))[-1]
    assert plain["reasoning_tokens"] is None and re.fullmatch("[0-9]{2}", plain["text"])
    shorter = list(api.generate(link=link, think_budget=3))[-1]
    assert shorter["reasoning_tokens"] == 4 and shorter["valid"] is True
    for bad in (-2, 10**6):
        with pytest.raises(gr.Error, match=f"think_budget must be from 0 to .*; got {bad}\\b"):
            list(api.generate(link=link, think_budget=bad))


def test_a_link_too_long_is_refused_in_a_popup_that_stays():
    """Its reason (shorten the prompt, and by how much) faded after 10 s, far from the button."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.prompt = "é" * 2000
    with pytest.raises(gr.Error, match="servers accept") as refused:
        page_inputs.make_share_link(None, *page_inputs.inputs_from_settings(settings))
    assert refused.value.duration is None
    with pytest.raises(gr.Error) as faded:  # other refusals fade as Gradio's do
        page_inputs.apply_preset("no-such-preset")
    assert faded.value.duration == 10


def test_a_links_policy_its_way_of_drafting_cannot_use_is_said_on_opening():
    """policy=schedule with a tree opened in silence and Run refused it; policy=confidence under prompt
    lookup did nothing, unsaid (the CLI says it; a review)."""
    restored, notices = from_query({"preset": "demo", "tree": "2,2", "policy": "schedule"}, allow_custom=False)
    assert restored.policy == "fixed" and notices == ["ignored policy='schedule': a token tree drafts with the fixed policy"]
    restored, notices = from_query({"preset": "demo-ngram", "policy": "confidence", "confidence": "0.3"}, allow_custom=False)
    assert restored.policy == "fixed" and notices == ["ignored policy='confidence': prompt lookup's guesses have no probabilities to be unsure of"]
    assert from_query({"preset": "demo", "policy": "confidence"}, allow_custom=False)[1] == []


def test_a_links_tree_that_run_would_refuse_is_dropped_with_a_notice_on_opening():
    """A tree under prompt lookup or a cascade, or a dynamic tree or lookup branch at a temperature, opened in
    silence, the k slider saying the tree set each round, and Run refused it (a review)."""
    for query, why in (({"preset": "demo-ngram", "tree": "2,2,1"}, "a token tree is drafted by a draft model"),
                       ({"preset": "demo-cascade", "tree": "2,2,1"}, "a token tree is drafted by a draft model"),
                       ({"preset": "demo", "tree": "2,2/3", "temperature": "0.7"}, "a dynamic tree is for greedy decoding"),
                       ({"preset": "demo", "tree": "2,2+3", "temperature": "0.7"}, "a prompt-lookup branch is for greedy")):
        restored, notices = from_query(query, allow_custom=False)
        assert restored.tree == "" and len(notices) == 1, query
        assert notices[0].startswith(f"ignored tree={query['tree']!r}: {why}"), notices
        assert restored.temperature == float(query.get("temperature", 0))  # (the rest as the link has it)
    for tree in ("2,2/3", "2,2+3", "2,2,1"):  # greedy, with a draft model: kept
        assert from_query({"preset": "demo", "tree": tree}, allow_custom=False) == (
            dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), tree=tree), [])
    restored, notices = from_query({"preset": "demo", "tree": "2,2", "temperature": "0.7"}, allow_custom=False)
    assert restored.tree == "2,2" and notices == []  # (a static tree samples exactly)


def test_the_confidence_policy_under_prompt_lookup_runs_as_fixed_and_says_so():
    """The page ran it as fixed and its card said "of at most k = 3 (the confidence policy)" over rounds that
    drafted k each; the Experiments' rows recorded it as confidence (the CLI and links said it; a review)."""
    final = run_preset("demo", draft="ngram", policy="confidence", confidence=0.9, max_new_tokens=24, compare=False)[-1]
    report = json.loads(open(final[slot("download")]["value"]).read())
    metrics = html.unescape(final[slot("metrics")])
    assert report["settings"]["policy"] == "fixed" and "the confidence policy)" not in metrics
    assert "the confidence policy is not used: prompt lookup's guesses have no probabilities to be unsure of" in metrics
    assert "confidence threshold" not in metrics  # (its own note as well, once the policy was read as the run's)
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.draft, settings.policy = "ngram", "confidence"
    assert experiments_tab.measured_with(settings)["policy"] == "fixed"


def test_a_share_link_carries_a_dynamic_tree_and_refuses_a_bad_one():
    restored, notices = from_query({"preset": "demo", "tree": "3,3,3/12"}, allow_custom=False)
    assert restored.tree == "3,3,3/12" and notices == []
    restored, notices = from_query({"preset": "demo", "tree": "3,3/0"}, allow_custom=False)
    assert restored.tree == "" and "1 to 64 nodes" in notices[0]


def test_a_links_values_open_as_they_were_made_or_not_at_all():
    """A links fuzzer's finds: a tree Run refuses ('2,2 3') went into a link that opened as another tree
    ('2,2+3': a prompt-lookup branch), unsaid; a cascade the Draft box does not offer opened in it, and
    Run refused the box's value; '--5' or a 5,000-digit k noticed in Python's own words; /generate read a
    bare query holding a '?' as an address and ran the default preset."""
    from playground.ui import share
    with pytest.raises(PlaygroundError, match="it would open as '2,2\\+3'"):
        share.to_query(Settings(preset="demo", tree="2,2 3"))
    made = dict(urllib.parse.parse_qsl(share.to_query(Settings(preset="demo", tree="2,2+3"))))
    assert from_query(made, False)[0].tree == "2,2+3"  # (a tree with a branch goes in as it is)
    page, notices = from_query({"preset": "demo", "draft": "ngram+demo-target"}, False, page_inputs.DRAFTS)
    assert page.draft == "demo-draft" and "the Draft box does not offer it" in notices[0]
    assert from_query({"preset": "demo", "draft": "ngram+demo-target"}, False) == (
        Settings(**{**dataclasses.asdict(page), "draft": "ngram+demo-target"}), [])  # the API runs what the host runs
    for k in ("--5", "9" * 5000):
        assert from_query({"k": k}, False)[1][0].endswith(("must be a whole number in ASCII digits", "must be between 1 and 16"))
    blank = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    blank[page_inputs.SETTING_NAMES.index("kind")], blank[page_inputs.SETTING_NAMES.index("constraint")] = "regex", "  \n"
    with pytest.raises(gr.Error, match="the constraint is empty"):  # (its link opened on no constraint, unsaid)
        page_inputs.make_share_link(None, *blank)
    no_prompt = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    no_prompt[page_inputs.SETTING_NAMES.index("prompt")] = " \n "
    with pytest.raises(gr.Error, match="the prompt is empty"):  # (made in silence: Run refuses it)
        page_inputs.make_share_link(None, *no_prompt)
    from playground.ui.experiment_link import Experiment
    from playground.ui.experiments_tab import make_experiment_link
    for policy in ("schedule", "confidence"):  # (made in silence, opened as fixed with a notice; a review)
        tree = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
        tree[page_inputs.SETTING_NAMES.index("tree")], tree[page_inputs.SETTING_NAMES.index("policy")] = "1,2,1,1", policy
        with pytest.raises(gr.Error, match="fixed") as refused:
            page_inputs.make_share_link(None, *tree)
        assert refused.value.duration is None  # a popup that stays
        with pytest.raises(gr.Error, match="fixed"):
            make_experiment_link(None, *Experiment().inputs(), *tree)
    with pytest.raises(gr.Error, match="the constraint is empty"):  # an Experiments link too (it was made)
        make_experiment_link(None, *Experiment().inputs(), *blank)
    asked = page_api._base_settings("", "preset=demo&k=7&prompt=Why?")
    assert (asked.preset, asked.k, asked.prompt) == ("demo", 7, "Why?")
    assert page_api._base_settings("", "http://host:7860/?preset=demo&k=5&prompt=a?b").k == 5


@pytest.mark.parametrize("answer", ['"abc"', '"{\\"injected\\": [1, 2, 3]}"', "3", "true", "null", '{"a": [1]}', "[1, 2]",
                                    '{"a": {}, "b": [[], [{"c": "x,:{}\\"y"}]]}'])
def test_the_json_view_shows_any_json_value_as_written(answer):
    """A schema whose answer is a string (`{"enum": ["abc"]}`) lost the whole run: gr.JSON parsed the
    parsed string again. Every JSON value now reaches the view as itself, indented."""
    shown = json_view.indented(answer)
    assert json.loads(shown) == json.loads(answer) and json_view.indented(shown) == shown
    assert json_view.indented(answer[:-1] if len(answer) > 1 else "[") is None  # not whole JSON: empty


@pytest.mark.parametrize("answer", ["9007199254740993", "1e999", '"\\ud800"', '{"a": "\\ud800"}', '{"a": ' + "1" * 30 + "}",
                                    '[2.50, 1E+5, -0]', '{"a": ' + "1" * 5000 + "}"])
def test_the_json_view_keeps_every_number_and_string_as_written(answer):
    """The tree view (gr.JSON) read numbers as the browser does: 9007199254740993 showed as ...992
    beside the valid badge (a review); infinity, lone surrogates and integers past 64 bits emptied it; one past
    the 4,300 digits int() reads emptied the view of ours."""
    shown = json_view.indented(answer)
    assert re.sub(r"\s", "", shown) == re.sub(r"\s", "", answer)
    assert json_view.indented("[" * 500 + "]" * 500).count("\n") == 998  # deep: indented (the innermost "[]" one line), each level at most
    assert max(map(len, json_view.indented("[" * 500 + "]" * 500).splitlines())) == 2 * json_view.DEEPEST + 2  # so deep


def test_measuring_again_says_how_long_each_takes_and_that_stop_keeps_the_estimate(monkeypatch):
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread is too wide: it measures again, up to 4 times
    outputs = run_preset("demo", max_new_tokens=96, compare=True)
    notes = [m for out in outputs if isinstance(m := out[slot("metrics")], str) and "measuring again" in m]
    assert notes and re.search(r"of at most 4, about \d+ s each; Stop, Run again, or another run waiting for the model, keeps "
                             r"the estimate so far", notes[0])
    # while it measures, the stream and both texts are the finished runs' (the stream's last update used
    # to be skipped by the pacing: the page showed fewer tokens than its counts, and no target-alone text)
    final, again = outputs[-1], next(out for out in outputs if "measuring again" in str(out[slot("metrics")]))
    shown = lambda out: [out[slot(name)] for name in ("stream", "text", "baseline_text")]  # noqa: E731
    assert shown(again) == shown(final) and final[slot("baseline_text")]
    alone = [out for out in outputs if "measuring the target alone" in str(out[slot("metrics")])][:1]  # when paced in
    assert all((out[slot("stream")], out[slot("text")]) == (final[slot("stream")], final[slot("text")]) for out in alone)


@pytest.mark.parametrize("target, draft, then", [
    ("demo-target", "smollm2-feature-draft", "demo-draft"),  # the walkthrough's mismatched pair, failing on Run
    ("Qwen/Qwen2.5-7B-Instruct", "demo-draft", "Qwen/Qwen2.5-0.5B-Instruct"),  # a preset's pairing first
    ("Qwen/Qwen3-8B", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen3-0.6B"),  # Qwen3's tokenizer differs from Qwen2.5's
    ("Qwen/Qwen3-0.6B", "demo-draft", "ngram"),  # never a larger model of its family (Qwen3-8B) as its draft
    ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "smollm2-feature-draft", "HuggingFaceTB/SmolLM2-135M-Instruct"),  # a
    ("smollm2-135m-instruct", "smollm2-feature-draft", None),  # feature draft drafts for its own target only
    ("demo-target", "demo-draft", None), ("demo-target", "ngram", None), ("acme/custom", "demo-draft", None),
])
def test_a_target_picked_by_hand_gets_a_draft_of_its_tokenizer(target, draft, then):
    picked = page_inputs.draft_for(target, draft)
    assert picked == (gr.skip() if then is None else then)


def test_a_begun_runs_constraint_badge_is_checked_again_with_its_backend():
    """After each run the badge was checked again with the default backend: an xgrammar run of a schema
    llguidance refuses showed that refusal beside its own valid output."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo-json"])
    settings.schema, settings.backend = '{"type": "string", "pattern": "^(?!a)[a-z]{1,5}$"}', "xgrammar"
    badge = playground_tab._messages(settings)["run_check"]
    assert "looks fine" in badge and "Lookahead assertion is not supported and is ignored" in badge
    settings.schema = ""
    assert '<template data-about=""></template>' in playground_tab._messages(settings)["run_check"]


def test_each_runs_check_of_its_constraint_is_new_to_the_page():
    """The run's check goes to the page's hidden run_check, which draws it beside the editor where the editor still
    holds that constraint (RUN_CHECK_JS, on its change): the same check twice made no change, and was not drawn."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo-json"])
    settings.max_new_tokens = 8
    values = page_inputs.inputs_from_settings(settings)
    first, again = (list(playground_tab.run(None, QUIET, *values))[0][slot("run_check")] for _ in range(2))
    kind, text, backend = (values[page_inputs.SETTING_NAMES.index(name)] for name in ("kind", "constraint", "backend"))
    about = playground_tab.constraint_tag(kind, text, backend)  # said of the constraint the run read (RUN_CHECK_JS)
    assert first.startswith(f'<template data-about="{about}">') and "looks fine" in first and first != again  # inert
    # there, and new
    assert first.split("<!--")[0] == again.split("<!--")[0]


def test_the_calculator_and_theory_card_keep_to_runs_their_formula_describes():
    """The formula is a draft model's chain of a fixed k: a schedule's run (k changing each round), a
    tree's (acceptance over its nodes) or prompt lookup's, drawn at the k asked for, or carded with
    it, would read as the formula failing."""
    def last(name="demo", **overrides):
        final = run_preset(name, max_new_tokens=24, **overrides)[-1]
        metrics_html = next(v for v in final if isinstance(v, str) and 'class="metrics"' in v)
        return final[slot("measured")], "<small>theory</small>" in metrics_html
    measured, theory = last()
    assert measured["k"] == 4 and 0 <= measured["alpha"] <= 1 and theory and 0 < measured["cost_ratio"] < 5
    history = playground_tab.remember_run(measured, [])
    a, k, c, text = calculator.from_last_run(history)  # the calculator's sliders from this run: its curve
    assert (a, k, text) == (round(min(measured["alpha"], 0.99), 2), 4, gr.skip())
    assert c == round(min(max(measured["cost_ratio"], 0.01), 1), 3)  # to the 0.001 the calculator's text says
    told = f"Your last compared run, demo-target + demo-draft: α {measured['alpha']:.2f}, k 4, c {measured['cost_ratio']:.3f}, measured "
    assert told in calculator.calculator(a, k, c, history)[0] and measured["verdict"]  # its own, unclamped
    assert calculator.from_last_run([])[:3] == (gr.skip(),) * 3
    assert "No run to take them from yet" in calculator.from_last_run([])[3]
    even = dict(measured, speedup=1.04, speedup_low=0.97, speedup_high=1.12)  # said as its card says it (a bare 1.04x
    assert "measured no clear difference, 1.04x (0.97-1.12x)" in calculator.calculator(a, k, c, [even])[0]  # read as faster)
    sweep = {"temperature": 0.0, "rows": [{"k": 2, "speedup": 1.5, "speedup_low": 1.4, "speedup_high": 1.6,
                                           "speedup_estimate": 1.5, "verdict": "faster", "token_acceptance": 0.6}]}
    word = calculator.from_last_run([], sweep, 0.7, 4, 0.1)[3]  # after a K sweep alone: the word above the
    assert word.startswith("**No run to take them from yet") and word.endswith(  # result, which stays
        calculator.calculator(0.7, 4, 0.1, [], sweep)[0]) and "Your last K sweep (temperature 0, α 0.60)" in word
    for name, overrides, beyond in (("demo", {"policy": "schedule"}, "the schedule policy"),
                                    ("demo", {"tree": "2,2"}, "a token tree"), ("demo-ngram", {}, "prompt lookup")):
        assert last(name, **overrides) == ({"beyond": beyond}, False), (name, overrides)
    # a later such run is said, and the calculator takes the run before it by its pair, not as "your last" (a review:
    # after a prompt-lookup run it called the older run "Your last compared run" and set its α and k without a word)
    later = playground_tab.remember_run({"beyond": "prompt lookup"}, history)
    assert later == history + [{"beyond": "prompt lookup"}]
    assert calculator.from_last_run(later)[:2] == (a, k)
    text, figure = calculator.calculator(a, k, c, later)
    assert "; your last compared run, with prompt lookup, is not one the formula describes (a draft model drafting a chain " \
           "of fixed k). Your last compared run the formula describes, demo-target + demo-draft: α" in text
    assert [list(t.y) for t in figure.data if t.name == "measured runs"] in ([[measured["speedup"]]], [])
    assert playground_tab.remember_run({"beyond": "a token tree"}, later) == history + [{"beyond": "a token tree"}]
    assert playground_tab.remember_run(measured, later) == history + [measured]  # (the word goes once a chain run comes)
    alone = calculator.from_last_run([{"beyond": "a token tree"}])
    assert alone[:3] == (gr.skip(),) * 3 and "your last compared run, with a token tree, is not one the formula" in alone[3]
    paged = calculator.from_last_run([{"beyond": "a token tree"}], None, 0.7, 4, 0.1)[3]  # as the page calls it
    assert paged.count("is not one the formula describes") == 1  # (the word and the calculator's text both said it)


def test_an_experiment_link_restores_the_experiments_tab_and_opens_on_it():
    """Share links carried the Playground's settings alone: a K sweep sent to a colleague arrived as
    the page's default sweep, on the Playground tab."""
    from playground.ui.experiment_link import Experiment
    sent = Experiment(sweep_axis="temperature", sweep_values="0,0.5", sweep_prompts="def f():\\n\nclass A:",
                      compare_drafts=("prompt lookup", "draft model"), calc_alpha=0.55, calc_k=6, calc_c=0.2)
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.k = 3
    link = experiments_tab.make_experiment_link(None, *sent.inputs(), *page_inputs.inputs_from_settings(settings))
    restored = page_inputs.restore_from_url(_request(link))
    assert restored[:len(page_inputs.SETTING_NAMES)] == page_inputs.inputs_from_settings(settings)
    assert restored[-9:-2] == sent.inputs() and restored[-2].selected == "experiments" and restored[-1] == ""
    untouched_link = experiments_tab.make_experiment_link(None, *Experiment().inputs(), *page_inputs.inputs_from_settings(settings))
    fingerprint = share.preset_fingerprint(Settings.from_preset(page_inputs.PRESETS["demo"]))
    assert urllib.parse.urlparse(untouched_link).query == f"preset=demo&k=3&preset_hash={fingerprint}&tab=experiments"  # short
    untouched = page_inputs.restore_from_url(_request(untouched_link))
    assert untouched[-9:-2] == Experiment().inputs() and untouched[-2].selected == "experiments"
    temperature_only = page_inputs.restore_from_url(_request("/?tab=experiments&sweep_axis=temperature"))
    assert temperature_only[-9:-7] == ["temperature", "0,0.3,0.7,1.0"]  # the axis' own values, as the page resets them
    playground_link = page_inputs.restore_from_url(_request(page_inputs.make_share_link(
        None, *page_inputs.inputs_from_settings(settings))))
    assert playground_link[-2] == gr.skip() and playground_link[-9:-2] == Experiment().inputs()


def test_an_experiment_links_wrong_values_are_notices_and_its_maker_refuses_what_no_link_carries():
    """Values or prompts Run sweep refuses were carried silently: the colleague met the refusal at Run."""
    restored = page_inputs.restore_from_url(_request(
        "/?tab=results&calc_k=99&calc_alpha=nan&calc_c=1.5&compare_drafts=x,draft+model&sweep_axis=seed"
        "&sweep_values=" + "1," * 150 + "&sweep_prompts=" + "a" * 20_001 + "&k=3"))
    notices = html.unescape(restored[-1]).replace("\\", "")
    for said in ("tab='results': a link opens on playground or experiments", "calc_k='99': must be between 1 and 16",
                 "calc_alpha='nan': must be a number in ASCII digits, such as 0.7", "calc_c='1.5'", "compare_drafts='x': not one of draft model",
                 "sweep_axis='seed': must be one of k, temperature", "sweep_values='1,1,", "longer than 200 characters",
                 "sweep_prompts='aaa", "longer than 20000 characters"):
        assert said in notices, said
    first = experiments_tab.Experiment()
    assert restored[-9:-2] == [*first.inputs()[:3], ["draft model"], *first.inputs()[4:]]  # the known draft kept
    assert restored[-2] == gr.skip() and restored[3] == 3  # the Playground's k still applies
    refused = page_inputs.restore_from_url(_request("/?tab=Experiments&sweep_values=1,99&sweep_prompts="
                                                    + urllib.parse.quote("p\n" * 33)))
    notices = html.unescape(refused[-1]).replace("\\", "")
    assert "sweep_values='1,99': sweep values for k must be between 1 and 16 (the slider's range), not 99" in notices
    from playground.ui.experiment_link import sweep_values
    with pytest.raises(PlaygroundError, match=r"not 0, 20$"):  # it named 0 alone
        sweep_values("k", "0,20")
    for axis, typed in (("k", "1_0"), ("k", "\u0663"), ("temperature", "nan"), ("temperature", "0x1p-2")):
        with pytest.raises(ValueError, match="is not a (whole )?number"):  # int() and float() read the first three
            sweep_values(axis, typed)
    with pytest.raises(ValueError, match="is a number of more than 30 digits"):  # (not "not a whole number")
        sweep_values("k", "9" * 5000)
    with pytest.raises(ValueError, match="^'abc' is not a whole number in ASCII digits; 'x' is not"):  # each named
        sweep_values("k", "1,abc,2,x")
    assert sweep_values("temperature", "0, .5, 1., 2e0, +0.25") == [0, 0.5, 1, 2, 0.25]
    assert [math.copysign(1, v) for v in sweep_values("temperature", "-0.0,0.7")] == [1, 1]  # (shown "-0")
    assert "the number of prompts is 33, more than this host allows (32)" in notices
    assert refused[-2].selected == "experiments" and refused[-9:-7] == ["k", first.sweep_values]  # tab=Experiments opens it
    odd = page_inputs.restore_from_url(_request("/?tab=playground&sweep_axis=Temperature&compare_drafts=nope"))
    assert odd[-9:-6] == ["temperature", "0,0.3,0.7,1.0", ""] and odd[-6] == list(first.compare_drafts)  # the page's drafts
    assert odd[-2] == gr.skip() and "compare_drafts='nope'" in odd[-1].replace("\\", "") and "tab" not in odd[-1]
    playground = page_inputs.inputs_from_settings(page_inputs.DEFAULT)
    for bad, said in ((["k", "1", "", ["a,b"], 0.5, 4, 0.1], "compare_drafts must be a list of names"),
                      (["k", "1", "", "draft model", 0.5, 4, 0.1], "compare_drafts must be a list of names"),
                      (["k", "1", "", ["nope"], 0.5, 4, 0.1], "no link made: Drafts 'nope': not one of"),
                      (["k", "1", "", [], float("nan"), 4, 0.1], "no link made: per-token acceptance α 'nan': must be a number in ASCII digits"),
                      (["k", "1", "", [], 0.5, 4.5, 0.1], "calc_k must be a whole number"),
                      (["k", 3, "", [], 0.5, 4, 0.1], "sweep_values must be a str"),
                      (["k", "1,99", "", [], 0.5, 4, 0.1], "no link made: Values '1,99': sweep values for k must be between 1 and 16"),
                      (["temperature", "0,3", "", [], 0.5, 4, 0.1], "not 3.0; a comma separates values: write 0.3 with a point"),
                      (["k", "1", "p\n" * 33, [], 0.5, 4, 0.1], "the number of prompts is 33, more than this host allows (32)"),
                      (["k", "1", "é" * 2000, [], 0.5, 4, 0.1], "shorten the prompt, system prompt, sweep prompts or")):
        with pytest.raises(gr.Error, match=re.escape(said)) as refused:
            experiments_tab.make_experiment_link(None, *bad, *playground)
        assert refused.value.duration is None  # as the Playground's link: a popup that stays


def test_a_temperature_run_refuses_is_refused_by_links_and_sweeps_too():
    """0.005 opened from a link without a word, Share link made one of it, and a sweep of 0.005,0.5 was
    refused whole at Run sweep: Run takes 0 or 0.01 to 2, and so does each of them now."""
    from playground.ui.experiment_link import sweep_values
    opened = page_inputs.restore_from_url(_request("/?temperature=0.005&k=3"))
    assert "temperature='0.005': must be 0 (greedy) or from 0.01 to 2" in html.unescape(opened[-1]).replace("\\", "")
    assert opened[3] == 3 and opened[4] == page_inputs.DEFAULT.temperature
    assert page_inputs.restore_from_url(_request("/?temperature=0.01"))[4] == 0.01
    with pytest.raises(PlaygroundError, match=r"temperature='0.005' cannot go into a link: must be 0 \(greedy\) or from 0.01"):
        to_query(dataclasses.replace(page_inputs.DEFAULT, temperature=0.005))
    with pytest.raises(PlaygroundError, match=r"sweep values for temperature must be 0 \(greedy\) or from 0.01 to 2, not 0.005$"):
        sweep_values("temperature", "0.005,0.5")
    assert sweep_values("temperature", "0,0.01,2") == [0, 0.01, 2]


def test_what_a_user_typed_shows_as_typed_in_a_popup():
    """Gradio's popup reads its message as HTML: a link typed into Values was a live link there, and
    `<img src=x onerror=...>` made the browser fetch x. The popup's words are escaped."""
    playground = page_inputs.inputs_from_settings(page_inputs.DEFAULT)
    typed = '<a href="https://evil.example">click</a>'
    with pytest.raises(gr.Error) as refused:
        experiments_tab.make_experiment_link(None, "k", typed, "", [], 0.5, 4, 0.1, *playground)
    assert "&lt;a href=\"https://evil.example\"&gt;click&lt;/a&gt;" in refused.value.message
    assert "<a" not in refused.value.message and "<" not in refused.value.message
    with pytest.raises(gr.Error) as refused:
        gr.Slider(1, 16, label="<b>k</b>").preprocess("<img src=x onerror=alert(1)>")
    assert "<" not in refused.value.message and "&lt;img src=x onerror=alert(1)&gt;" in refused.value.message


def test_an_api_caller_reads_its_error_as_written_and_the_page_escaped(client, app_url):
    """The page's popup reads an error as HTML, so its words are escaped; an API caller read them escaped
    too (`tree='2,&lt;b&gt;&amp;'` for what it sent, and Gradio's own `&lt;class 'str'&gt;`: an API review).
    gradio_client's calls and the /call/ routes get them as written; a join as the page makes it, escaped.
    So does a value a component refuses before the function runs (k='<b>&': Gradio set no request there, and
    the API caller read it escaped as for a page, an API review)."""
    import app
    with pytest.raises(Exception) as refused:
        client.predict(tree="2,<b>&", api_name="/share_link")
    assert "&lt;" not in str(refused.value) and "'2,<b>&'" in str(refused.value), refused.value
    for endpoint in ("/share_link", "/export"):
        with pytest.raises(Exception) as refused:
            client.predict(k="<b>&", api_name=endpoint)
        assert "&lt;" not in str(refused.value) and "'<b>&'" in str(refused.value), (endpoint, refused.value)
    share = next(fn for fn in app.demo.fns.values() if fn.api_name == "share_link")
    names = list(share.input_parameter_names)
    started = json.loads(urllib.request.urlopen(urllib.request.Request(
        f"{app_url}gradio_api/call/v2/share_link", data=json.dumps({"tree": "2,<b>&"}).encode(),
        headers={"Content-Type": "application/json"}), timeout=30).read())
    streamed = urllib.request.urlopen(f"{app_url}gradio_api/call/share_link/{started['event_id']}", timeout=60).read()
    assert b"2,<b>&" in streamed and b"&lt;" not in streamed, streamed
    from tests.test_hostile_app import _join
    page = [getattr(component, "value", None) for component in share.inputs]  # (each box's own, as the page sends)
    page[names.index("tree")] = "2,<b>&"
    index = next(i for i, fn in app.demo.fns.items() if fn.api_name == "share_link")
    status, joined = _join(app_url, index, page, "198.51.100.81")
    session = "s-198.51.100.81"
    streamed = urllib.request.urlopen(f"{app_url}gradio_api/queue/data?session_hash={session}", timeout=60).read()
    assert status == 200 and b"2,&lt;b&gt;&amp;" in streamed and b"<b>" not in streamed, streamed
    page[names.index("tree")], page[names.index("k")] = "", "<b>&"  # a box's refusal, to a page: escaped
    status, joined = _join(app_url, index, page, "198.51.100.82")
    streamed = urllib.request.urlopen(f"{app_url}gradio_api/queue/data?session_hash=s-198.51.100.82", timeout=60).read()
    assert status == 200 and b"&lt;b&gt;&amp;" in streamed and b"<b>" not in streamed, streamed


def test_the_experiment_link_endpoint_round_trips_through_the_page(client):
    url = client.predict(sweep_axis="temperature", sweep_values="0,1", compare_drafts=["prompt lookup"],
                         calc_k=8, k=6, prompt="x = ", api_name="/share_experiment")
    restored = page_inputs.restore_from_url(_request(url))
    assert restored[3] == 6 and restored[9] == "x = " and restored[-1] == ""
    assert restored[-9:-2] == ["temperature", "0,1", "", ["prompt lookup"], 0.7, 8, 0.1]
    assert restored[-2].selected == "experiments"


def _request(link: str):
    class Request:
        query_params = QueryParams(urllib.parse.urlparse(link).query)
    return Request()


def test_a_lone_surrogate_in_a_link_is_said_where_it_is():
    """A sweep prompt's lone surrogate was said to be in "the settings" (an Experiments review)."""
    from playground.ui.share import share_url
    with pytest.raises(PlaygroundError, match="^the Experiments tab's values or prompts hold text that is not valid UTF-8"):
        share_url("http://host/", Settings(preset="demo"), {"sweep_prompts": "a\ud800"})
    with pytest.raises(PlaygroundError, match="^the settings hold text that is not valid UTF-8 .* at character 1"):
        share_url("http://host/", Settings(preset="demo", prompt="a\ud800"), {"sweep_prompts": "fine"})


def test_a_cascade_under_a_constraint_says_it_drafts_with_its_model_alone(capsys):
    """A review: under a constraint a cascade's prompt lookup is off (its guesses are not checked against the
    constraint), and the run, its notes and the CLI said nothing: a cascade asked for ran as its draft alone."""
    from playground.cli import main
    settings = Settings.from_preset(page_inputs.PRESETS["demo-cascade"])
    settings.max_new_tokens, settings.compare, settings.regex = 8, False, "[a-z_ (),]{1,40}"
    final = list(live.live_run(settings, every=0))[-1]
    assert "prompt lookup is not used under a constraint" in final.note
    settings.regex = ""
    assert "prompt lookup" not in list(live.live_run(settings, every=0))[-1].note
    assert main(["generate", "--preset", "demo-cascade", "--regex", "[a-z_ (),]{1,40}", "--max-new-tokens", "8"]) == 0
    assert "note: prompt lookup is not used under a constraint" in capsys.readouterr().err


def test_each_entry_point_that_runs_models_holds_a_gpu_lease_and_only_those():
    """On ZeroGPU a callback gets the GPU only inside spaces.GPU (ui/gpu.on_gpu); a refactor once moved the
    sweep's and Compare drafts' decorators onto their input checks, leaving both generators without a lease
    (a review). The decorated functions of playground/ui are exactly Run, /generate, the sweep and Compare drafts."""
    import ast
    import pathlib
    leased = set()
    for path in (pathlib.Path(__file__).resolve().parents[1] / "playground" / "ui").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", None) == "on_gpu" for d in node.decorator_list):
                leased.add(f"{path.stem}.{node.name}")
    assert leased == {"playground_tab.run", "api.generate", "experiments_tab.run_sweep", "experiments_tab.run_comparison"}


def test_the_sweeps_axis_resets_its_values_in_the_browser():
    """From the server, the axis's reset of the Values box was queued behind a loaded host's events and came
    after values typed meanwhile: the sweep ran the axis's defaults (browser tests raced it, 2026-12-04)."""
    from playground.ui.page import demo
    values = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "Values")
    axis = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "Sweep")
    resets = [fn for fn in demo.fns.values() if values in fn.outputs and (axis._id, "input") in fn.targets]
    assert len(resets) == 1 and resets[0].fn is None and "1,2,3,4,6,8" in resets[0].js  # no server call


def test_the_stream_is_sent_as_its_new_tokens_while_a_run_goes_on(app_url):
    """The page's Run, joined as the page joins it: while the run goes on each update of the token stream is
    sent as the spans new since the last (Gradio's append; the value leaves its box open, the browser closes
    it), not whole: a 2,000-token run's updates came to 13 MB, 1.1 MB each at its end (a streaming review)."""
    import uuid
    from tests.test_hostile_app import _join
    from playground.ui import page
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens, settings.compare = 1000, False  # (some 15 s here: updates come at most twice a second)
    index = next(i for i, fn in page.demo.fns.items() if fn.api_name == "run")
    address = f"198.51.100.{uuid.uuid4().int % 200 + 20}"
    status, _ = _join(app_url, index, page_inputs.inputs_from_settings(settings), address)
    assert status == 200
    at, edits, final = playground_tab.RUN_SLOTS.index("stream"), [], None
    with urllib.request.urlopen(f"{app_url}gradio_api/queue/data?session_hash=s-{address}", timeout=300) as answer:
        for line in answer:
            message = json.loads(line[5:]) if line.startswith(b"data:") else {}
            if message.get("msg") == "process_generating" and (sent := message["output"]["data"][at]):
                edits.append(sent)
            elif message.get("msg") == "process_completed":
                final = message["output"]["data"][at]
                break
    assert final is not None and final.count('class="tok ') > 200 and final.endswith("</div>"), str(final)[-300:]
    later = [edit for sent in edits[2:] for edit in sent]  # (the first: the last run's box cleared, then its spans)
    assert len(later) >= 3 and all(action == "append" for action, _, _ in later), [e[:2] for e in later]
    assert sum(len(json.dumps(sent)) for sent in edits) < 2 * len(json.dumps(final))  # each span sent about once
