"""The CLI contract: one JSON object with --json, and every bad input gives status 2 and exactly one
line `error: ...` on stderr (never a traceback)."""
import json
import os
import re
import subprocess
import sys

import pytest

from playground.cli import format_text, main
from playground.events import KINDS
from playground.measure.speedup import ONE_MEASUREMENT
from playground.errors import PlaygroundError
from tests import tiny


@pytest.fixture(scope="module")
def other_tokenizer_model(tmp_path_factory):
    tok = tiny.byte_bpe_tokenizer(vocab_size=290)
    model = tiny.tiny_model("qwen2", vocab=len(tok), seed=4, eos_id=tok.eos_token_id)
    return tiny.save(model, tok, tmp_path_factory.mktemp("other") / "model")


def run_cli(capsys, *args):
    code = main(["generate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_report_with_baseline(capsys, saved_pair):
    target, draft = saved_pair
    code, out, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "def f(x):",
                             "--k", "3", "--max-new-tokens", "17", "--baseline", "--json")
    assert code == 0 and err == ""
    report = json.loads(out)
    assert len(report["token_ids"]) == 17
    assert report["identical_to_baseline"] is True
    assert report["baseline"]["token_ids"] == report["token_ids"]
    assert set(report["baseline"]) == {"text", "token_ids", "stats", "finish_reason", "form"}  # the page's download has the same shape
    assert report["baseline"]["stats"]["generated_tokens"] == 17 and report["baseline"]["stats"]["proposed"] == 0
    # the run's keys are the page's download's (built apart, the CLI's had no rounds, its reasoning keys only when set)
    assert {"rounds", "reasoning_tokens", "answer", "open_end", "constraint_notes"} <= set(report)
    from playground.presets import Settings  # and what ran, as the download says it (a stored JSON said neither the
    ran = report["settings"]  # models, k nor the constraint; a scripting review)
    assert set(ran) == set(Settings().as_dict()) and report["note"] == ""
    assert (ran["target"], ran["draft"], ran["k"], ran["max_new_tokens"], ran["prompt"], ran["compare"], ran["regex"]) == (
        str(target), str(draft), 3, 17, "def f(x):", True, "")
    assert len(report["rounds"]) == report["stats"]["rounds"] and sum(len(r["tokens"]) for r in report["rounds"]) >= 17
    assert {t["kind"] for r in report["rounds"] for t in r["tokens"]} <= set(KINDS)
    measured = report["speedup_measure"]  # a number, or none with the reason (a loaded machine: too noisy)
    assert report["speedup"] > 0 if report["speedup"] is not None else measured["reason"]
    stats = report["stats"]
    for key in ("rounds", "target_passes", "draft_passes", "proposed", "accepted", "acceptance_rate",
                "mean_accepted_per_round", "tokens_per_target_pass", "wall_s", "tokens_per_s"):
        assert key in stats
    assert stats["acceptance_rate"] == pytest.approx(stats["accepted"] / stats["proposed"])
    assert stats["target_passes"] == stats["rounds"] + 1  # the prompt pass is counted


def test_the_text_report_says_what_ran_and_why_a_speedup_is_not_one_number(capsys, saved_pair):
    """The text began mid-code from nowhere, and a noisy speedup read "cannot tell (the ratio ranged ...
    (...); about 1.15x)": what produced it now ends the report, and why there is no number is a line."""
    target, draft = saved_pair
    code, out, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "def f(x):",
                             "--k", "3", "--max-new-tokens", "9")
    assert code == 0 and re.fullmatch(re.escape(f"-- {target} with {draft}, k 3, greedy, at most 9 new tokens; prompt "
                                                "'def f(x):' (") + r"\d+ tokens\)", err.rstrip().splitlines()[-1])
    text = json.loads(run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "def f(x):", "--k", "3",
                              "--max-new-tokens", "9", "--json")[1])["text"]
    assert out == text + "\n" and "-- " not in out  # the text alone on stdout: `generate > answer.txt` kept the report
    err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt-ids", "5,6,7", "--max-new-tokens", "4")[2]
    assert err.rstrip().endswith("; prompt given as token ids (3 tokens)")  # not the preset's prompt, unused
    report = json.loads(run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "def f(x):",
                                "--max-new-tokens", "9", "--baseline", "--json")[1])
    measured = report["speedup_measure"]
    rates = f"-- speculation {measured['spec_tokens_per_s']:.1f} tok/s against the target alone's {measured['base_tokens_per_s']:.1f} "
    assert said_line(report, "-- speculation ").startswith(rates)  # the ratio's own rates (the first line's tok/s: the run's)
    report["speedup_measure"] |= {"speedup": None, "estimate": 1.15, "side": "", "reason": "the ratio ranged 0.96-1.33x",
                                  "caveat": ""}
    said = said_line(report, "-- speedup: ")
    assert said.startswith("-- speedup: cannot tell") and "(" not in said and "1.15" not in said
    assert report["identical_to_baseline"] and said.endswith("; its text identical to the target alone's")  # the page's words
    differs = said_line(report | {"token_ids": report["token_ids"][:2] + [-1]}, "-- speedup: ")
    assert differs.endswith("; its text differs from the target alone's from token 3")
    assert said_line(report, "-- no single number") == "-- no single number: the ratio ranged 0.96-1.33x; about 1.15x"  # (not
    report["speedup_measure"]["estimate"] = 0.0  # always noise: too few tokens; a Stop before a token read "about 0.00x"; a review)
    assert said_line(report, "-- no single number") == "-- no single number: the ratio ranged 0.96-1.33x"
    report["speedup_measure"]["estimate"] = 1.15
    report["speedup_measure"] |= {"side": "faster", "low": 1.16, "high": 2.79}  # all of it above 1x: the range, no number
    assert said_line(report, "-- speedup: ").startswith("-- speedup: faster, 1.16-2.79x")
    report["speedup_measure"] |= {"speedup": 1.04, "low": 0.98, "high": 1.09}  # told, and its interval holds 1x
    assert said_line(report, "-- speedup: ").startswith("-- speedup: no clear difference, 1.04x (0.98-1.09x) over the target alone")
    assert not said_line(report, "-- note: the speedup is")  # (several measurements: nothing more to say)
    report["speedup_measure"] |= {"blocks": 1, "caveat": ONE_MEASUREMENT}  # one: its interval is its rounds' (a review:
    assert said_line(report, "-- note: the speedup is") == f"-- note: the speedup is {ONE_MEASUREMENT}"  # 8 runs, 1.04-1.35x)
    assert report["baseline"]["form"] == ""  # plain one-token passes (a small float32 model): nothing more to say
    report["baseline"]["form"] = "the target alone runs exact"  # (session.baseline_form: how, where slower than plain)
    assert format_text(report).splitlines()[-1] == "-- baseline: the target alone runs exact"


def said_line(report: dict, start: str) -> str:
    """The text report's line that starts so ('' where none)."""
    return next((line for line in format_text(report).splitlines() if line.startswith(start)), "")


def test_the_ran_with_line_names_the_tree_and_the_policy():
    """It said "k 4" for a token tree (whose k is unused) and nothing of a policy."""
    from playground import session
    from playground.cli import ran_with
    from playground.config import tree_fields
    line = ran_with("t", "d", session.spec_config(k=4, **tree_fields("2,2,2/5+3")), "p", [1])
    assert line.startswith("-- t with d, token tree 2,2,2/5+3, greedy,") and "k 4" not in line
    assert ", k 4, confidence policy at 0.3, greedy," in ran_with("t", "d", session.spec_config(k=4, policy="confidence", confidence=0.3), "p", [1])
    assert ", k 3, greedy," in ran_with("t", "d", session.spec_config(k=3), "p", [1])


def test_a_json_value_is_read_as_itself_and_a_folder_is_named(tmp_path):
    """--prompts '["a","b"]' (its help: "a JSON list of prompts") and --schema true said "no such file",
    and a folder given for a file "no such file '/tmp'"."""
    from playground.cli_args import read_prompts, read_text_arg
    assert read_prompts('["a", "b"]', None, "t") == ["a", "b"]
    assert read_text_arg("true", "schema") == "true" and read_text_arg('{"type": "string"}', "schema") == '{"type": "string"}'
    (tmp_path / "true").write_text('{"type": "integer"}')  # a file of that name is the file
    assert read_text_arg(str(tmp_path / "true"), "schema") == '{"type": "integer"}'
    for read in (lambda: read_prompts(str(tmp_path), None, "t"), lambda: read_text_arg(str(tmp_path), "schema")):
        with pytest.raises(PlaygroundError, match="is a folder, not a file"):
            read()
    with pytest.raises(PlaygroundError, match="no such file 'nope.json'"):
        read_text_arg("nope.json", "schema")
    assert read_prompts(json.dumps(["a" * 300]), None, "t") == ["a" * 300]  # a name too long for a file: a traceback
    for given, said in (('["a", 3]', "prompt 2 is not a text: 3"), ('["a", " "]', 'prompt 2 is empty: " "'),
                        ("[]", "holds no prompts")):  # (the first two "held no prompts")
        with pytest.raises(PlaygroundError, match=re.escape(said)):
            read_prompts(given, None, "t")
    with pytest.raises(PlaygroundError, match=r"no such file 'a{80}' \(File name too long\)"):
        read_text_arg("a" * 300, "schema")


def test_a_grammar_is_a_file_or_its_text(capsys, saved_pair, tmp_path):
    """--schema took the text or a file, --grammar a file alone: --grammar 'root ::= "yes" | "no"' said
    "no such file" (a newcomer's pass); the API's grammar is text too."""
    from playground.cli_args import read_text_arg
    for text in ('root ::= "yes" | "no"', 'start: "yes" | "no"', 'start: answer\nanswer: "yes" | "no"\n',
                 '?start:"yes"', "root::=[0-9]+", "start:/[0-9]+/", 'start: NUMBER\nNUMBER:/\\d+/'):
        assert read_text_arg(text, "grammar") == text, text
    (tmp_path / "g.gbnf").write_text('root ::= "no"\n')
    assert read_text_arg(str(tmp_path / "g.gbnf"), "grammar") == 'root ::= "no"\n'  # a file is read
    for missing in ("g.lark", str(tmp_path / "nope.gbnf"), "C:\\grammars\\g.lark", "D:/g.lark"):  # a file's name
        with pytest.raises(PlaygroundError, match="no such file"):
            read_text_arg(missing, "grammar")
    target, draft = saved_pair
    code, out, _ = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "x", "--max-new-tokens", "8",
                           "--grammar", 'root ::= "yes" | "no"', "--json")
    assert code == 0 and json.loads(out)["text"] in ("yes", "no") and json.loads(out)["valid"] is True


def test_a_target_alone_names_its_draft_or_preset(capsys, saved_pair, monkeypatch):
    """--target without --draft took the default preset's draft, prompt and k: "draft
    'smollm2-feature-draft' could not be loaded for target 'demo-target'", a draft never asked for
    (a preset set in PLAYGROUND_PRESET is one asked for, as --preset)."""
    monkeypatch.delenv("PLAYGROUND_PRESET", raising=False)
    target, _ = saved_pair
    code, out, err = run_cli(capsys, "--target", str(target), "--prompt", "x")
    assert code == 2 and out == "" and err.startswith("error: --target needs a --draft (a model, 'ngram' for prompt lookup")
    assert run_cli(capsys, "--target", str(target), "--draft", "ngram", "--prompt", "x", "--max-new-tokens", "2")[0] == 0


def test_samples_are_seeded_runs(capsys, saved_pair):
    target, draft = saved_pair
    args = ["--target", str(target), "--draft", str(draft), "--prompt-ids", "5,6,7", "--temperature", "1",
            "--max-new-tokens", "6", "--json"]
    report = json.loads(run_cli(capsys, *args, "--seed", "3", "--num-samples", "3")[1])
    samples = report["samples"]
    assert [x["seed"] for x in samples] == [3, 4, 5] and samples[0]["token_ids"] == report["token_ids"]
    assert samples[0]["text"] == report["text"]
    second = json.loads(run_cli(capsys, *args, "--seed", "4")[1])
    assert samples[1]["token_ids"] == second["token_ids"] and samples[1]["text"] == second["text"]
    assert samples[0]["stats"] == report["stats"] and samples[1]["stats"]["proposed"] == second["stats"]["proposed"]  # each
    assert samples[1]["stats"]["accepted"] == second["stats"]["accepted"]  # draw's acceptance (a scripting review)
    code, text, _ = run_cli(capsys, *args[:-1], "--seed", "3", "--num-samples", "3")  # as text: every sample, not the first
    assert code == 0 and text.count("-- sample with seed ") == 3 and text.startswith("-- sample with seed 3:\n")


def test_a_sampled_speedup_rests_on_two_draws(capsys, saved_pair, monkeypatch):
    """One sampled measurement's interval is a bootstrap over its own rounds: it said nothing of another
    seed's draw (one draw told 1.22x where another of the same setting measured 0.89-1.13x; a maths
    review). Sampled, on one prompt, a speedup rests on two draws at least; greedy, one may do."""
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1e9)  # any interval is tight enough: only the least count measures again
    monkeypatch.setattr(speedup, "MIN_ROUNDS", 1)
    monkeypatch.setattr(speedup, "MIN_TOKENS", 1)
    monkeypatch.setattr(speedup, "SLACK", 1e9)
    target, draft = saved_pair
    args = ["--target", str(target), "--draft", str(draft), "--prompt-ids", "5,6,7", "--max-new-tokens", "12",
            "--baseline", "--json"]
    sampled = json.loads(run_cli(capsys, *args, "--temperature", "1", "--seed", "3")[1])["speedup_measure"]
    greedy = json.loads(run_cli(capsys, *args)[1])["speedup_measure"]
    assert sampled["blocks"] == 2 and greedy["blocks"] == 1, (sampled, greedy)


def test_prompt_lookup_draft(capsys, saved_pair):
    target, _ = saved_pair
    code, out, _ = run_cli(capsys, "--target", str(target), "--draft", "ngram", "--prompt", "a = 1\nb = 1\na = 1\n",
                           "--max-new-tokens", "12", "--baseline", "--json")
    assert code == 0 and json.loads(out)["identical_to_baseline"] is True


BAD_INPUTS = {
    "unknown model path": (["--target", "/nonexistent/model", "--draft", "ngram"], "not found"),
    "hub id offline": (["--target", "no-such-org/no-such-model", "--draft", "ngram"], "hf download"),
    "k too small": (["--k", "0"], "k must be between 1 and 16"),
    "k too large": (["--k", "17"], "k must be between 1 and 16"),
    "negative temperature": (["--temperature", "-0.5"], "temperature must be 0 (greedy) or between"),
    "temperature past the page's and the API's range": (["--temperature", "2.5"], "between 0.01 and 2, got 2.5"),
    "empty prompt": (["--prompt", "  "], "prompt is empty"),
    "non-integer prompt ids": (["--prompt-ids", "1,x,3"], "comma-separated integers"),
    "unknown preset": (["--preset", "nope"], "unknown preset"),
    "misspelt preset": (["--preset", "demoo"], "unknown preset 'demoo'; did you mean 'demo'? (available: deepseek-coder-6.7b, "),
    "unknown flag": (["--frobnicate"], "unrecognized arguments"),
    "top-p out of range": (["--top-p", "1.5"], "top-p"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_status_2(capsys, saved_pair, case):
    args, message = BAD_INPUTS[case]
    target, draft = saved_pair
    base = ["--target", str(target), "--draft", str(draft), "--prompt", "x"]
    code, out, err = run_cli(capsys, *base, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err


def test_no_command_names_the_commands_and_where_to_look(capsys):
    """'python -m playground' alone said 'the following arguments are required: command' and no more."""
    for argv, said in (([], "the following arguments are required: {generate,bench,export}"),
                       (["frob"], "invalid choice: 'frob'")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and err.rstrip().endswith("(python -m playground --help for more)")


def test_a_mistyped_command_or_flag_gets_the_name_meant_and_the_commands_help(capsys):
    """'genrate' and '--kk 3' were refused without a guess, the flag pointed at the top's help (a CLI review)."""
    assert main(["genrate", "--preset", "demo"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("; did you mean generate? (python -m playground --help for more)")
    assert main(["generate", "--preset", "demo", "--kk", "3"]) == 2
    assert capsys.readouterr().err == ("error: unrecognized arguments: --kk 3; did you mean --k? "
                                       "(python -m playground generate --help for more)\n")
    assert main(["bench", "--zzz"]) == 2  # nothing near: no guess
    assert capsys.readouterr().err == "error: unrecognized arguments: --zzz (python -m playground bench --help for more)\n"


def test_models_named_without_a_prompt_are_told_to_give_one(capsys, saved_pair):
    """'the prompt is empty' where no prompt was given: models named without a preset have none (a newcomer's pass)."""
    target, draft = saved_pair
    code, _, err = run_cli(capsys, "--target", str(target), "--draft", str(draft))
    assert code == 2 and err.strip() == ("error: the prompt is empty: give --prompt or --prompt-ids (models named "
                                         "without a --preset have no prompt of their own)")


def test_mismatched_tokenizers_named(capsys, saved_pair, other_tokenizer_model):
    target, _ = saved_pair
    code, _, err = run_cli(capsys, "--target", str(target), "--draft", str(other_tokenizer_model), "--prompt", "x")
    assert code == 2 and err.count("\n") == 1
    assert "tokenizers differ" in err and str(target) in err and str(other_tokenizer_model) in err


def test_subprocess_has_no_traceback(saved_pair):
    target, _ = saved_pair
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-m", "playground", "generate", "--target", str(target), "--draft",
                           "ngram", "--prompt-ids", "1,2,oops"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: --prompt-ids must be comma-separated integers, got '1,2,oops'"]


@pytest.mark.parametrize("command", [["export", "--preset", "demo"], ["generate", "--preset", "demo", "--max-new-tokens", "8"]])
def test_a_reader_that_goes_away_ends_it_quietly(command):
    """`... | head -1` printed a BrokenPipeError traceback after the output it did not read."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-m", "playground", *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # read nothing
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141 and "Traceback" not in err and "BrokenPipe" not in err, err
    if command[0] == "generate":  # its report still said (it was lost after a whole run; a scripting review)
        assert "-- demo-target with demo-draft, k 4, greedy, at most 8 new tokens" in err, err


def test_a_closed_standard_output_is_refused_before_the_run():
    """`generate ... >&-` ran, lost its text, then printed a traceback with status 1 (kept for an invalid output)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    for command in (["generate", "--preset", "demo", "--max-new-tokens", "8"], ["export", "--preset", "demo", "--json"]):
        proc = subprocess.run([sys.executable, "-m", "playground", *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, env=env, timeout=300, preexec_fn=lambda: os.close(1))
        assert proc.returncode == 2 and proc.stderr.splitlines() == ["error: standard output is closed: nowhere to write"], \
            proc.stderr[-2000:]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full (a device every write to fails)")
def test_an_output_the_machine_cannot_write_is_one_error_line():
    """`> /dev/full` (a full disk) printed a traceback, status 1; a run at max new tokens 1 was also told its
    (absent) thinking budget left no room for an answer. The report is still said above the error."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "playground", "generate", "--preset", "demo", "--max-new-tokens", "1"],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    said = proc.stderr.splitlines()  # the report first: it is written where the text could not be
    assert proc.returncode == 2 and said[-1] == "error: No space left on device" and "Traceback" not in proc.stderr, said
    assert said[-2].startswith("-- demo-target with demo-draft") and not any("thinking budget" in line for line in said)


def test_a_bad_size_in_the_environment_is_one_line():
    """The limits read PLAYGROUND_* as they are imported, before main() catches anything: a 17-line
    traceback, even for --help."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PLAYGROUND_MAX_NEW_TOKENS="abc")
    proc = subprocess.run([sys.executable, "-m", "playground", "--help"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["error: environment variable PLAYGROUND_MAX_NEW_TOKENS must be an integer, got 'abc'"]
    env["PLAYGROUND_MAX_NEW_TOKENS"] = "-1"  # (every request was refused: "must be between 1 and -1")
    proc = subprocess.run([sys.executable, "-m", "playground", "--help"], capture_output=True, text=True, env=env)
    assert proc.stderr.splitlines() == ["error: environment variable PLAYGROUND_MAX_NEW_TOKENS must be 1 or more, got '-1'"]


@pytest.mark.parametrize("setting, said", [
    ("PLAYGROUND_CPU_DTYPE=fp16", "PLAYGROUND_CPU_DTYPE must be float32 or bfloat16, got 'fp16'"),  # was a visitor's error
    ("PLAYGROUND_WARM_UP=maybe", "PLAYGROUND_WARM_UP must be 1 or 0 (or true/false, yes/no, on/off), got 'maybe'"),
    ("PLAYGROUND_GQA_ATTENTION=Triton", "PLAYGROUND_GQA_ATTENTION must be one of matmul, sdpa, triton, got 'Triton'"),
    ("PLAYGROUND_FUSE_PROJECTIONS=maybe", "PLAYGROUND_FUSE_PROJECTIONS must be 1 or 0 (or true/false, yes/no, on/off), got 'maybe'"),
    ("PLAYGROUND_REGIONAL_COMPILE=true-ish", "PLAYGROUND_REGIONAL_COMPILE must be 1 or 0 (or true/false, yes/no, on/off), got 'true-ish'"),
    ("PLAYGROUND_FUSED_LAYERS=bogus", "PLAYGROUND_FUSED_LAYERS must be one of off, draft, both, got 'bogus'"),  # (a review: the
    # first visitor's run met it)
    ("PLAYGROUND_DECODE_THREADS=two", "PLAYGROUND_DECODE_THREADS must be 1 or all, got 'two'"),  # (read as a model
    ("PLAYGROUND_ROW_KERNEL=maybe", "PLAYGROUND_ROW_KERNEL must be 1 or 0 (or true/false, yes/no, on/off), got 'maybe'"),
    ("PLAYGROUND_ROW_LAYERS=maybe", "PLAYGROUND_ROW_LAYERS must be 1 or 0 (or true/false, yes/no, on/off), got 'maybe'"),
    # loaded, these two passed the start: the warm-up logged a traceback and the page was served, a docs review)
    ("PLAYGROUND_COMPILED_PASSES=never", "PLAYGROUND_COMPILED_PASSES must be 1 or 0 (or true/false, yes/no, on/off), got 'never'"),
    ("PLAYGROUND_MAX_NEW_TOKENS=-1", "PLAYGROUND_MAX_NEW_TOKENS must be 1 or more, got '-1'"),  # was a traceback
    ("PLAYGROUND_OPEN_PER_CLIENT=4", "PLAYGROUND_OPEN_PER_CLIENT must be 8 or more, got '4'"),  # (taken as 8, unsaid)
    ("PLAYGROUND_CACHE=/dev/null/x", "PLAYGROUND_CACHE: cannot write into /dev/null/x: Not a directory (converted models "
                                     "and built kernels are kept there: name a writable folder in PLAYGROUND_CACHE)")])
# (the cache: served, then every visitor's run of the default pair failed naming the server's path; a host review)
def test_the_app_refuses_a_bad_host_setting_in_one_line_before_serving(setting, said):
    name, value = setting.split("=")
    env = dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_SERVER_PORT="7949", **{name: value})
    proc = subprocess.run([sys.executable, "app.py"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1 and proc.stderr.splitlines()[-1] == f"error: environment variable {said}", proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Running on" not in proc.stdout + proc.stderr


def test_a_host_flag_reads_the_usual_words(monkeypatch):
    from playground.limits import env_flag
    for raw, meant in (("1", True), ("true", True), ("ON", True), ("0", False), ("False", False), ("no", False), ("", None)):
        monkeypatch.setenv("PLAYGROUND_TEST_FLAG", raw)
        assert env_flag("PLAYGROUND_TEST_FLAG", None) is meant
    import torch
    from playground.models.fused_projections import fuses_on
    monkeypatch.setenv("PLAYGROUND_FUSE_PROJECTIONS", "false")  # (only "0" turned it off)
    assert not fuses_on(torch.device("cuda"))


def test_a_mistyped_preset_in_the_environment_is_refused_by_the_cli(capsys, monkeypatch):
    """The page starts on its own default (a warning); the CLI ran that default without a word."""
    monkeypatch.setenv("PLAYGROUND_PRESET", "demoo")
    assert main(["generate", "--prompt", "hi", "--max-new-tokens", "8"]) == 2
    assert "error: environment variable PLAYGROUND_PRESET: unknown preset 'demoo'; did you mean 'demo'?" in \
        capsys.readouterr().err  # (named: the user typed no preset)
    assert main(["generate", "--preset", "demoo", "--prompt", "hi"]) == 2  # one typed: the flag's refusal, as before
    assert "error: unknown preset 'demoo'" in capsys.readouterr().err


def test_the_apps_help_says_where_its_settings_are_and_serves_nothing():
    """`python app.py --help` started the server on port 7860 (a red-team pass). A misspelt setting is warned of as
    the app starts (it was ignored without a word; a host review)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PLAYGROUND_WARM_UP="0", PLAYGROUND_CONCURENCY="2")
    proc = subprocess.run([sys.executable, "app.py", "--help"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "Its settings are environment variables" in proc.stdout, proc.stderr[-2000:]
    assert "Running on" not in proc.stdout + proc.stderr
    assert ("warning: environment variable PLAYGROUND_CONCURENCY is no setting of this app, so it is ignored (did you "
            "mean PLAYGROUND_CONCURRENCY?)") in proc.stderr.splitlines()


def test_help_and_a_mistyped_flag_answer_before_torch_is_imported():
    """torch and transformers take seconds to import (7-10 s for `--help` on a 2-core machine): the
    parser answers without them."""
    code = """
import contextlib, io, sys
from playground.cli import main
for argv in (["--help"], ["generate", "--help"], ["bench", "--help"], ["export", "--help"], ["generate", "--k", "x"]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)  # a bad flag: status 2, one line
        except SystemExit as exc:  # help
            code = exc.code
    assert code == (2 if argv[-1] == "x" else 0), (argv, code)
    assert ("--preset" in out.getvalue() or argv[0] == "--help") if code == 0 else "is not a whole number in ASCII digits" in err.getvalue()
    assert "torch" not in sys.modules and "transformers" not in sys.modules, argv
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_flags_the_run_does_not_use_are_said(capsys, saved_pair):
    """--system on a tokenizer without a chat template, --think-budget without a constraint, ... were
    accepted and did nothing, in silence (a newcomer's pass)."""
    target, draft = saved_pair
    base = ["--target", str(target), "--draft", str(draft), "--prompt", "x", "--max-new-tokens", "3", "--json"]
    code, out, err = run_cli(capsys, *base, "--system", "be brief", "--schema-in-prompt", "--think-budget", "16",
                             "--confidence", "0.7")
    assert code == 0 and len(json.loads(out)["token_ids"]) == 3  # stdout stays one JSON object
    assert err.splitlines() == [
        "note: --think-budget is not used: it ends a reasoning model's thinking before a schema, regex or grammar, and "
        "the run has none (the model thinks as long as it likes)",
        "note: --schema-in-prompt is not used: the run has no schema to show",
        "note: --confidence is not used: only the confidence policy reads it",
        f"note: --system is not used: {target}'s tokenizer has no chat template"]
    code, _, err = run_cli(capsys, *base, "--policy", "confidence", "--confidence", "0.7", "--schema-in-prompt",
                           "--schema", '{"type": "integer"}')
    assert code == 0 and err == ""  # used: said nothing
    code, _, err = run_cli(capsys, *base[:4], "--prompt-ids", "5,6", *base[6:], "--schema-in-prompt", "--schema",
                           '{"type": "integer"}')
    assert code == 0 and err == "note: --schema-in-prompt is not used: --prompt-ids are sent as given\n"
    code, _, err = run_cli(capsys, *base[:4], "--prompt-ids", "5,6", *base[6:], "--raw")
    assert code == 0 and err == "note: --raw is not used: --prompt-ids are sent as given, with no chat template to leave out\n"
    code, _, err = run_cli(capsys, *base, "--tree", "2,1", "--k", "5")  # (said nothing: a CLI review)
    assert code == 0 and err == "note: --k is not used: a token tree drafts the shape it names; k is a chain's length\n"


def test_a_trees_acceptance_is_said_per_node_and_has_no_chain_theory(capsys, saved_pair):
    """--tree printed "acceptance 0.21", read as a chain's, and its JSON kept the chain formula's tokens per round
    at k = the tree's depth (0.02 of an 8,8/64 tree's nodes are kept while it writes 2.5 tokens a pass)."""
    target, draft = saved_pair
    base = ["--target", str(target), "--draft", str(draft), "--prompt", "def f(x):", "--max-new-tokens", "12"]
    code, _, err = run_cli(capsys, *base, "--tree", "2,2")
    assert code == 0 and re.search(r"acceptance \d\.\d\d of the tree's nodes,", err), err[-300:]
    code, out, _ = run_cli(capsys, *base, "--tree", "2,2", "--json")
    assert json.loads(out)["stats"]["theory_tokens_per_round"] is None
    code, out, _ = run_cli(capsys, *base, "--k", "2", "--json")
    assert json.loads(out)["stats"]["theory_tokens_per_round"] > 0  # a chain's


def test_one_token_is_said_so_and_an_unusable_device_is_one_line(capsys, saved_pair):
    """A CLI review: '-- 1 tokens in 0.03 s', 'acceptance 0.00' where nothing was drafted; --device mps
    or meta (names torch knows) ended in a 30-line traceback where 'gpu' was one line."""
    target, draft = saved_pair
    code, out, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "x", "--max-new-tokens", "1")
    assert code == 0 and "at most 1 new token; prompt 'x' (" in err and err.startswith("-- 1 token in "), err
    assert "acceptance n/a (nothing was drafted), 1.00 tokens per target pass" in err
    code, out, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "x", "--max-new-tokens", "1", "--json")
    stats = json.loads(out)["stats"]  # null, as bench's rows have it (0.0 read as every guess refused: a review)
    assert stats["proposed"] == 0 and stats["acceptance_rate"] is None and stats["token_acceptance"] is None
    for device in ("mps", "meta", "xpu:0", "gpu"):
        code, out, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "x", "--device", device)
        assert code == 2 and err == f"error: unknown device '{device}': use auto, cpu or cuda\n", (device, err)


def test_a_prompt_of_a_dash_is_read_from_standard_input(capsys, monkeypatch, saved_pair):
    """A CLI review: `echo ... | generate` ran the preset's prompt, and `--prompt -` the text "-"."""
    import io
    target, draft = saved_pair
    monkeypatch.setattr("sys.stdin", io.StringIO("def f(x):\n"))  # (echo's line end is not the prompt's)
    code, _, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "-", "--max-new-tokens", "2")
    assert code == 0 and "; prompt 'def f(x):' (" in err.rstrip().splitlines()[-1]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbfdef f(x):\r\n\r\n")))  # one line end dropped, a
    code, _, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "-", "--max-new-tokens", "2")
    assert code == 0 and "; prompt 'def f(x):\\n' (" in err.rstrip().splitlines()[-1], err  # typed blank line kept,
    # Windows' line ends read as text mode reads them (its bytes read as UTF-8 kept \r\n), its byte-order mark no character
    monkeypatch.setattr("sys.stdin", io.StringIO("def g(y):"))
    assert main(["export", "--preset", "demo", "--prompt", "-"]) == 0  # export's --prompt too (a review: it sent "-")
    out = capsys.readouterr().out
    assert "def g(y):" in out and '"prompt": "-"' not in out
    monkeypatch.setattr("sys.stdin", io.StringIO("x" * 10**6))  # read up to the bound, then refused as a typed one is
    code, _, err = run_cli(capsys, "--target", str(target), "--draft", str(draft), "--prompt", "-", "--max-new-tokens", "2")
    assert code == 2 and "the prompt from standard input is longer than this host allows (20000 characters" in err, err
    assert "20001" not in err  # (its length was said as the bound plus one: all that was read)


def test_a_schema_comes_from_a_pipe_standard_input_or_a_file_with_a_byte_order_mark(capsys, monkeypatch, tmp_path):
    """A CLI review: `--schema /dev/stdin`, `<(...)` and `-` said "no such file", and a schema saved by a
    Windows editor (a byte-order mark first) was "not valid JSON". A pipe is read up to the bound alone."""
    import io
    marked = tmp_path / "marked.json"
    marked.write_bytes(b'\xef\xbb\xbf{"type": "string", "maxLength": 7}')
    assert main(["export", "--preset", "demo", "--schema", str(marked), "--json"]) == 0
    assert re.search(r"maxLength\W+7", capsys.readouterr().out)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"type": "integer", "maximum": 5}')))
    assert main(["export", "--preset", "demo", "--schema", "-", "--json"]) == 0
    assert re.search(r"maximum\W+5", capsys.readouterr().out)
    read, write = os.pipe()  # what /dev/stdin and <(...) are
    os.write(write, b'start: "yes" | "no"\n')
    os.close(write)
    assert main(["export", "--preset", "demo", "--grammar", f"/dev/fd/{read}", "--json"]) == 0
    assert re.search(r'start: \W+yes\W+ \| \W+no', capsys.readouterr().out)
    os.close(read)
    assert main(["export", "--preset", "demo", "--grammar", "/dev/zero"]) == 2  # endless: read to the bound, refused
    assert "--grammar: the size of /dev/zero (bytes) is" in capsys.readouterr().err
    for schema in ("-", "/dev/stdin"):  # (/dev/stdin: the schema's text was read as the prompt, then "empty")
        monkeypatch.setattr("sys.stdin", io.StringIO("hi"))
        assert main(["export", "--preset", "demo", "--prompt", "-", "--schema", schema]) == 2
        assert "--prompt and --schema both read standard input" in capsys.readouterr().err
    from playground.cli_args import read_prompts  # a list piped in is a list (it was one prompt per line: '[', ...)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'[\n "def f(x):",\n "class A:"\n]\n')))
    assert read_prompts("-", None, "t") == ["def f(x):", "class A:"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"def f(x):\nclass A:\n")))
    assert read_prompts("-", None, "t") == ["def f(x):", "class A:"]  # and lines are lines


def test_flags_a_run_never_reads_are_said(capsys):
    """A CLI review: --top-p, --top-k and --seed on a greedy run, --num-samples writing one text three times,
    --policy confidence under prompt lookup (it has no probabilities: the stats matched fixed's), a backend
    without a constraint, and export's --device and --compile were taken in silence."""
    base = ["--preset", "demo", "--max-new-tokens", "4"]
    assert main(["generate", *base, "--top-p", "0.5", "--top-k", "3", "--seed", "9", "--num-samples", "2"]) == 0
    err = capsys.readouterr().err
    assert "note: --top-p, --top-k and --seed are not used: the run is greedy (temperature 0)" in err
    assert "note: --num-samples 2 under greedy decoding writes the same text each time" in err
    assert main(["generate", *base, "--draft", "ngram", "--policy", "confidence", "--constraint-backend", "xgrammar"]) == 0
    out, err = capsys.readouterr()
    assert "note: --policy confidence is not used: prompt lookup's guesses have no probabilities" in err
    assert ", k 4, greedy," in err and "confidence policy" not in err  # the line under the text: what ran (a review)
    assert "note: --constraint-backend is not used: the run has no schema, regex or grammar" in err
    assert main(["generate", *base, "--temperature", "0.7", "--seed", "3", "--top-k", "5"]) == 0
    assert "note:" not in capsys.readouterr().err  # sampled: each one read
    assert main(["generate", *base, "--temperature", "0.7", "--seed", "3", "--policy", "schedule"]) == 0
    assert "note: --policy schedule pauses drafting by measured pass times, so a seeded sampled run may not" in (
        capsys.readouterr().err)  # (the page's help said so; the CLI did not: 4 runs of one seed wrote 3 texts)
    assert main(["generate", *base, "--draft", "ngram", "--temperature", "0.7", "--seed", "3", "--policy", "schedule"]) == 0
    assert "note:" not in capsys.readouterr().err  # prompt lookup's schedule never pauses (its guesses cost no
    # pass to time): a seeded run repeats (3 runs of one seed, one text; a review)
    assert main(["export", "--preset", "demo", "--device", "tpu", "--no-compile"]) == 0
    assert "note: --device and --compile are not used: export writes the engines' commands" in capsys.readouterr().err
    assert main(["export", "--preset", "demo", "--seed", "3", "--top-p", "0.5"]) == 0  # (in silence; a scripting review)
    assert "note: --top-p and --seed are not used: the run is greedy (temperature 0)" in capsys.readouterr().err
    assert main(["export", "--preset", "demo", "--seed", "3", "--top-p", "0.5", "--temperature", "0.5"]) == 0
    assert "note:" not in capsys.readouterr().err
    assert main(["export", "--preset", "demo", "--raw", "--system", "be brief", "--think-budget", "5"]) == 0
    said = capsys.readouterr()  # (export wrote neither anywhere and said nothing)
    assert "note: --think-budget is not used: it ends a reasoning model's thinking before a schema, regex or grammar" in said.err
    assert "--system" not in said.err  # said with the engines' notes, as the page's export says it:
    assert "- The system prompt is not sent: the playground gives it to the model only through a chat template" in said.out
    assert main(["export", "--preset", "qwen3-8b", "--system", "be brief", "--think-budget", "5", "--regex", "[ab]"]) == 0
    assert "note:" not in capsys.readouterr().err  # both carried: a chat template, a constraint after the thinking
    assert main(["generate", *base, "--temperature", "0.5", "--seed", str(2**63 - 1), "--num-samples", "2"]) == 2
    assert "seeds 9223372036854775807..9223372036854775808: the last is past 2^63 - 1" in capsys.readouterr().err


def test_bench_out_naming_a_file_says_so(capsys, tmp_path):
    """A CLI review: `--out /etc/passwd` said "cannot write into /etc/passwd: File exists"."""
    (tmp_path / "rows").write_text("x")
    assert main(["bench", "--preset", "demo", "--out", str(tmp_path / "rows")]) == 2
    assert "is a file; name a folder (it is created if missing)" in capsys.readouterr().err


def test_a_gpu_preset_on_a_cpu_is_said_before_its_models_load(capsys, monkeypatch):
    """A CLI review: a GPU preset on a CPU host told of a 15 GB download first, nothing of the GPU."""
    from playground import session

    def load_pair(*args, **kwargs):
        raise PlaygroundError("not loaded here")
    monkeypatch.setattr(session, "load_pair", load_pair)
    code = main(["generate", "--preset", "qwen2.5-7b", "--device", "cpu", "--max-new-tokens", "4"])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines() == [
        "note: the preset qwen2.5-7b is made for a GPU; on this CPU it runs very slowly (and its weights, if not cached, "
        "are a download of several GB)", "error: not loaded here"]
    assert main(["generate", "--preset", "demo", "--device", "cpu", "--max-new-tokens", "4"]) == 2
    assert capsys.readouterr().err == "error: not loaded here\n"  # (a CPU preset: nothing to say)


def test_models_named_alone_get_their_chat_template(capsys, saved_pair):
    """Models named without a --preset got the prompt as raw text, their chat template and --system
    unused (an instruct model answered a bare "List three primes"); --raw still sends it as is."""
    from playground import session
    target, draft = saved_pair
    pair = session.load_pair(str(target), str(draft), "cpu")  # the CLI's load_pair returns this one (cached)
    pair.tokenizer.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                                    "{% if add_generation_prompt %}<assistant>{% endif %}")
    base = ["--target", str(target), "--draft", str(draft), "--device", "cpu", "--prompt", "hi", "--max-new-tokens", "2"]
    try:
        shown = {}
        for name, extra in (("chat", ["--system", "be brief"]), ("raw", ["--raw", "--system", "be brief"])):
            code, out, err = run_cli(capsys, *base, *extra)
            notes, report = err.split("-- ", 1) if not err.startswith("-- ") else ("", err[3:])
            shown[name] = (code, report.rstrip().splitlines()[-1].rsplit("(", 1)[1], notes)
    finally:
        pair.tokenizer.chat_template = None
    chat_ids = pair.tokenizer("<system>be brief<user>hi<assistant>", add_special_tokens=False).input_ids
    assert shown["chat"] == (0, f"{len(chat_ids)} tokens)", "")
    raw_ids = pair.tokenizer("hi", add_special_tokens=False).input_ids
    assert shown["raw"] == (0, f"{len(raw_ids)} token{'s' * (len(raw_ids) != 1)})",
                            "note: --system is not used: --raw sends the prompt without the chat template\n")


def test_an_export_of_models_named_alone_says_it_assumes_their_chat_template(capsys):
    """export loads nothing, so it cannot see whether the tokenizer has a template that generate would apply."""
    base = ["export", "--target", "acme/base-model", "--draft", "acme/small", "--prompt", "hi", "--json"]
    assert main(base) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["endpoint"] == "/v1/chat/completions" and err.startswith("note: models named without a --preset")
    assert main(base + ["--raw"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["endpoint"] == "/v1/completions" and err == ""


@pytest.mark.parametrize("flags, cut_at", [([], 4), (["--num-samples", "3", "--temperature", "1"], 4), (["--baseline"], 4),
                                            (["--baseline"], 20), (["--baseline"], 60)])
def test_ctrl_c_prints_what_came(capsys, monkeypatch, flags, cut_at):
    """Ctrl-C during generate lost the whole run (about 130 rounds in a review's try) and said only
    "interrupted": the run ends at its next round and prints what came (finish_reason 'stopped'), with
    --baseline the measurement keeps its estimate so far, no further sample starts, status 130. With
    --baseline (the demo pair, 32 tokens) events 1-9 are the warm-up (nothing written yet: only
    "interrupted"), 10-56 the text's block, then the measurement's further blocks."""
    import signal
    from playground import session
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread too wide: it measures again, so event 60 comes
    real = session.generate  # on a quiet machine too (its first block was tight enough: 56 events, no Ctrl-C; a review)

    def ctrl_c_after(*args, **kwargs):  # every call's events counted together: the cut falls in call 1 or later
        for event in real(*args, **kwargs):
            if len(events_seen) == cut_at:
                os.kill(os.getpid(), signal.SIGINT)
            events_seen.append(event)
            yield event
    events_seen: list = []
    monkeypatch.setattr(session, "generate", ctrl_c_after)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a job run in the
    try:  # background ignores Ctrl-C, and the CLI leaves it so)
        code = main(["generate", "--preset", "demo", "--max-new-tokens", "32", "--json", *flags])
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    out, err = capsys.readouterr()
    assert after is signal.default_int_handler  # Ctrl-C quits again after the run
    if flags == ["--baseline"] and cut_at == 4:
        assert code == 130 and out == "" and err.strip().endswith("interrupted (Ctrl-C)")
        return
    run = json.loads(out)
    assert code == 130 and err.strip().endswith("interrupted: the output is what came before Ctrl-C"), err
    if cut_at < 60:
        assert run["finish_reason"] == "stopped" and 1 <= len(run["rounds"]) <= 4 and run["text"]
        if "--baseline" in flags:  # greedy, cut where the target alone went on: the same as far as both went (it
            base = run["baseline"]["token_ids"]  # said "differs from token 9" of an exact prefix, a review)
            n = min(len(base), len(run["token_ids"]))
            assert run["token_ids"][:n] == base[:n] and len(base) != len(run["token_ids"])
            assert run["identical_to_baseline"] and run["first_difference"] is None
            assert "its text identical to the target alone's as far as both went (stopped)" in format_text(run)
    else:
        assert run["finish_reason"] != "stopped" and run["speedup_measure"]["blocks"] >= 1
    assert len(run.get("samples", [None])) == 1  # (no sample after the cut one)


def test_ctrl_c_as_the_output_is_written_lets_it_be_written_whole(capsys, monkeypatch):
    """Ctrl-C as a whole run's text was printed lost its report ("interrupted (Ctrl-C)" alone; a scripting review):
    the output is written whole, and the status says Ctrl-C came."""
    import signal
    from playground import cli
    real = cli.written

    def ctrl_c_while_written(out):
        os.kill(os.getpid(), signal.SIGINT)
        return real(out)
    monkeypatch.setattr(cli, "written", ctrl_c_while_written)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        code = main(["generate", "--preset", "demo", "--max-new-tokens", "8"])
    finally:
        signal.signal(signal.SIGINT, before)
    out, err = capsys.readouterr()
    assert code == 130 and out.strip() and "-- demo-target with demo-draft, k 4" in err, err
    assert err.strip().endswith("interrupted as the run ended: the output above is whole"), err


def test_ctrl_c_before_a_sampled_runs_second_draw_keeps_the_first_estimate(capsys, monkeypatch):
    """A sampled run measures two draws; Ctrl-C before the second was counted yielded no estimate at all, and
    the text report failed on it with a traceback (a commit review). The first draw's estimate stands."""
    import signal
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1e9)  # told after one block but for the least count of draws
    real = speedup.engine_block

    def ctrl_c_in_the_second_draw(*args, **kwargs):
        make, made = real(*args, **kwargs), []

        def block():
            made.append(True)
            if len(made) == 2:  # (the first is the text's own block)
                os.kill(os.getpid(), signal.SIGINT)
            return make()
        return block
    monkeypatch.setattr(speedup, "engine_block", ctrl_c_in_the_second_draw)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(["generate", "--preset", "demo", "--max-new-tokens", "24", "--baseline", "--temperature", "1"])
    finally:
        signal.signal(signal.SIGINT, before)
    out, err = capsys.readouterr()
    assert code == 130 and "Traceback" not in err and out.strip(), err
    assert re.search(r"-- speedup: .*1 interleaved measurement|-- no single number: ", err), err


def test_a_run_whose_ctrl_c_is_ignored_leaves_it_so(capsys, monkeypatch):
    """A job started in the background ignores Ctrl-C (SIG_IGN): generate does not take it back."""
    import signal
    from playground import session
    real = session.generate

    def ctrl_c_at_once(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        yield from real(*args, **kwargs)
    monkeypatch.setattr(session, "generate", ctrl_c_at_once)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = main(["generate", "--preset", "demo", "--max-new-tokens", "16", "--json"])
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    run = json.loads(capsys.readouterr().out)
    assert code == 0 and after is signal.SIG_IGN and run["finish_reason"] != "stopped"
