"""Careless or hostile CLI input and broken files: status 2 and one `error:` line naming the cause,
never a traceback, never a silent wrong answer."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from playground import presets
from playground.models import loading as models
from playground.cli import main
from playground.constraints import compile_constraint, from_user
from playground.errors import PlaygroundError


def one_line_error(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out[:200], err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def gen(saved_pair, *args) -> list[str]:
    target, draft = saved_pair
    return ["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x", *args]


@pytest.mark.parametrize("args, message", [
    (["--seed", str(2**63)], "seed must be between"),
    (["--temperature", "inf"], "'inf' is not a number in ASCII digits"),  # (read as links read it: typed.decimal)
    (["--temperature", "1e308"], "temperature must be 0"),
    (["--temperature", "1e-45"], "temperature must be 0"),
    (["--temperature", "nan"], "'nan' is not a number in ASCII digits"),
    (["--max-new-tokens", "1000000000"], "max new tokens must be between 1 and 2048 on this host (PLAYGROUND_MAX_NEW_TOKENS)"),
    (["--num-samples", "10000"], "--num-samples is 10000"),
    (["--schema", "false"], "the schema `false` allows no value at all"),  # JSON, not a file name
    (["--schema", '{"items":' * 99 + "{}" + "}" * 99], "nested more than"),
    (["--regex", " "], "--regex is empty"),  # these ran unconstrained, or dropped the text prompt
    (["--prompt-ids", "1,2"], "give --prompt or --prompt-ids, not both"),
])
def test_bad_values_are_one_line_errors(capsys, saved_pair, args, message):
    assert message in one_line_error(capsys, *gen(saved_pair, *args))


def test_prompt_longer_than_the_context_is_refused(capsys, saved_pair):
    target, _ = saved_pair
    context = json.loads((target / "config.json").read_text())["max_position_embeddings"]
    ids = ",".join(["5"] * context)
    argv = [a for a in gen(saved_pair, "--prompt-ids", ids, "--max-new-tokens", "8") if a not in ("--prompt", "x")]
    assert "context" in one_line_error(capsys, *argv)


def test_numbers_are_read_alike_everywhere(capsys, saved_pair):
    """One reading (playground.typed) for token ids, sweep values and links: --prompt-ids took
    '1_0' and Arabic-Indic digits (int()'s), a sweep value and a link's k zero-padded past 4,300
    digits were refused in Python's own words, or as "not a whole number"."""
    from playground.measure.sweeps import parse_values
    from playground.ui.share import whole_number
    for ids in ("1_0", "\u0664", "2,+-3"):
        argv = [a for a in gen(saved_pair, "--prompt-ids", ids) if a not in ("--prompt", "x")]
        assert "--prompt-ids must be comma-separated integers" in one_line_error(capsys, *argv)
    padded = "0" * 5000 + "4"
    assert parse_values(f"2, {padded}", int) == [2, 4] and whole_number(1, 16)(padded) == 4
    with pytest.raises(ValueError, match="'9{40}' is a number of more than 30 digits"):
        parse_values("9" * 5000, int)
    with pytest.raises(ValueError, match="'1_0' is not a whole number"):
        parse_values("1_0", int)
    argv = [a for a in gen(saved_pair, "--prompt-ids", "9" * 10**6 + "x") if a not in ("--prompt", "x")]
    assert len(one_line_error(capsys, *argv)) < 200  # (the million digits were echoed whole)



@pytest.mark.parametrize("flag, value", [("--k", "\u0663"), ("--num-samples", "1_0"), ("--max-new-tokens", " 8"), ("--seed", "+\u0664")])
def test_a_whole_number_flag_is_read_in_ascii_digits_as_every_number_is(capsys, saved_pair, flag, value):
    """int() read --k ٣ as 3 and --num-samples 1_0 as 10 (a CLI review): every whole-number flag reads as typed.whole does."""
    assert f"argument {flag}: {value!r} is not a whole number in ASCII digits" in one_line_error(capsys, *gen(saved_pair, flag, value))


@pytest.mark.parametrize("argv, said", [
    (["export", "--preset", "", "--prompt", "hi"], "--preset is empty"),
    (["export", "--target", "x", "--draft", "", "--prompt", "hi"], "--draft is empty"),
    (["generate", "--preset", "demo", "--target", "", "--prompt", "hi"], "--target is empty"),
    (["bench", "--preset", "demo", "--out", ""], "--out is empty"),
    (["export", "--target", "x", "--draft", "ngram+", "--prompt", "hi"], "the draft 'ngram+' is no cascade"),
    (["generate", "--preset", "demo", "--draft", "ngram+ngram+demo-draft", "--prompt", "hi"], "the draft 'ngram+ngram+demo-draft' is no cascade"),
    (["export", "--preset", "demo-cascade", "--tree", "2,2", "--prompt", "hi"], "a token tree is drafted by a draft model"),
    (["generate", "--preset", "demo", "--think-budget", "-3"], "--think-budget: the thinking budget must be a whole number of tokens >= 0, got -3"),
])
def test_a_setting_generate_refuses_is_refused_at_once_everywhere(capsys, argv, said):
    """An empty name ran the default in silence; export exported an empty or nested cascade and a tree over one, which
    generate refused after loading (a CLI review)."""
    assert said in one_line_error(capsys, *argv)


def test_generate_checks_the_prompt_and_the_grammar_before_loading_a_model(capsys):
    """A prompt one character too long, a grammar naming no rule, or a token tree over prompt lookup, was said after
    loading the pair (on a GPU preset, a download of GB first); export said it at once (a CLI review). A model that cannot be found shows which came first."""
    missing = ["generate", "--target", "/nonexistent/model", "--draft", "ngram"]
    assert "the prompt's length (characters) is 20001" in one_line_error(capsys, *missing, "--prompt", "a" * 20001)
    assert "Rule 'r' not found" in one_line_error(capsys, *missing, "--prompt", "hi", "--grammar", 'root ::= "a" r')
    assert "the system prompt is not valid UTF-8" in one_line_error(capsys, *missing, "--prompt", "hi", "--system", "\udcff")
    # (a token tree over prompt lookup: generate loaded the models first, export refused it at once; session.checks)
    assert "a token tree is drafted by a draft model" in one_line_error(capsys, *missing, "--prompt", "hi", "--tree", "2,2")
    assert "a token tree is drafted by a draft model" in one_line_error(capsys, *missing[:-1], "ngram+x", "--prompt", "hi",
                                                                        "--tree", "2,2")


def test_a_prompt_of_the_bound_from_standard_input_is_taken_with_its_line_end(monkeypatch, capsys):
    """20,000 characters and the line end `--prompt -` drops were refused, where typed they ran (a CLI review)."""
    import io
    from playground.limits import MAX_PROMPT_CHARS
    for text, code in (("a" * MAX_PROMPT_CHARS + "\n", 0), ("a" * (MAX_PROMPT_CHARS + 1) + "\n", 2)):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        assert main(["export", "--preset", "demo", "--prompt", "-"]) == code
        capsys.readouterr()


def test_a_number_too_small_to_tell_from_0_is_refused_not_run_greedy(capsys, saved_pair):
    """float('1e-400') is 0.0: a temperature asked to sample ran greedy, from the CLI, a link or a sweep."""
    from playground.measure.sweeps import parse_values
    from playground.ui.share import number
    tiny_ones = ("1e-400", "0." + "0" * 400 + "1")
    for text in tiny_ones:
        assert "is too small to be told from 0" in one_line_error(capsys, *gen(saved_pair, "--temperature", text))
        with pytest.raises(ValueError, match="too small to be told from 0"):
            number(0, 2)(text)
        with pytest.raises(ValueError, match="too small to be told from 0"):
            parse_values(f"0.5, {text}")
    assert number(0, 2)("0e-400") == 0.0 and number(0, 2)("-0.000") == 0.0 and parse_values("0e-400") == [0.0]


def test_a_long_number_is_refused_in_time_linear_in_its_length():
    """Read with '[0-9]+\\.?[0-9]*', 16,000 digits and a letter took 5.5 s to refuse (every split of the
    digits tried), holding the server: a sweep's values box takes 16 KiB. A million digits now take well
    under a second; the old pattern would take hours (the bound is that far from both)."""
    script = ("from playground.measure.sweeps import parse_values\n"
              "for kind in (float, int):\n"
              "    try: parse_values('1' * 10**6 + 'x', kind)\n"
              "    except ValueError as e: print(str(e)[:60])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.stdout.count("is not a") == 2, proc.stderr[-2000:]


def test_files_that_are_not_utf8_or_missing(capsys, saved_pair, tmp_path):
    latin = tmp_path / "schema.json"
    latin.write_bytes(b'{"description": "caf\xe9"}')
    assert "not UTF-8" in one_line_error(capsys, *gen(saved_pair, "--schema", str(latin)))
    grammar = tmp_path / "g.lark"
    grammar.write_bytes(b'start: "\xff"\n')
    assert "not UTF-8" in one_line_error(capsys, *gen(saved_pair, "--grammar", str(grammar)))
    assert "no such" in one_line_error(capsys, *gen(saved_pair, "--schema", "~nosuchuser/s.json"))
    blank = tmp_path / "blank.lark"
    blank.write_text("  \n")  # it ran unconstrained
    said = one_line_error(capsys, *gen(saved_pair, "--grammar", str(blank)))
    assert f"--grammar is empty (or only spaces): {str(blank)[:80]}" in said  # (a path is cut at 80 characters)
    for flag in ("--grammar", "--schema", "--regex"):  # (blank given, read as a file's name: "no such file '   '";
        for blank_text in ("   ", ""):  # empty, it ended in a stray ": ")
            assert one_line_error(capsys, *gen(saved_pair, flag, blank_text)) == f"error: {flag} is empty (or only spaces)\n"


def test_a_file_larger_than_its_text_may_be_is_refused_before_it_is_read(capsys, saved_pair, tmp_path):
    """A 2 GB --schema file was read whole (27 s, 4.6 GB) before its length was refused (a red-team pass)."""
    from playground.limits import MAX_GRAMMAR_CHARS, MAX_PROMPTS_FILE_CHARS, MAX_SCHEMA_TEXT_CHARS
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(2**31)  # sparse: takes no disk, and no time to read the size of
    for flag, most in (("--schema", MAX_SCHEMA_TEXT_CHARS), ("--grammar", MAX_GRAMMAR_CHARS)):
        said = one_line_error(capsys, *gen(saved_pair, flag, str(big)))
        assert f"{flag}: the size of {str(big)[:80]} (bytes) is 2147483648, more than this host allows ({4 * most})" in said  # (a
        # path is cut at 80 characters: a pytest worker's longer tmp path failed it)
    said = one_line_error(capsys, "bench", "--preset", "demo", "--prompts", str(big))
    assert f"({4 * MAX_PROMPTS_FILE_CHARS})" in said
    fits = tmp_path / "fits.json"
    fits.write_text('{"type": "integer"}')
    assert main(gen(saved_pair, "--schema", str(fits), "--max-new-tokens", "2")) == 0


def test_prompt_with_invalid_utf8_is_refused(capsys, saved_pair):
    broken = b"caf\xe9".decode("utf-8", "surrogateescape")  # what Python makes of such bytes in argv
    target, draft = saved_pair
    assert "not valid UTF-8" in one_line_error(capsys, "generate", "--target", str(target), "--draft", str(draft),
                                               "--prompt", broken)
    # export too: it wrote the lone surrogates into its commands, which the engines would refuse or garble
    assert "the prompt is not valid UTF-8" in one_line_error(capsys, "export", "--preset", "demo", "--prompt", broken)
    assert "the system prompt is not valid UTF-8" in one_line_error(capsys, "export", "--preset", "demo", "--prompt", "x",
                                                                    "--system", broken)


def test_a_standard_output_that_cannot_write_a_character_escapes_it(capsys, monkeypatch):
    """A standard output in cp1252 (Windows, redirected) wrote a traceback after the whole run, the output lost."""
    import io
    import sys
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["export", "--preset", "demo", "--prompt", "请用中文说 é"]) == 0
    stdout.flush()
    written = stdout.buffer.getvalue().decode("cp1252")
    assert "\\u8bf7\\u7528" in written and "é" in written  # escaped where it cannot be written, not lost


def test_utf8_arguments_and_input_under_an_ascii_locale_are_read_as_utf8():
    """Under LC_ALL=C without Python's UTF-8 mode, 日本語 on standard input was "not valid UTF-8" (a review): it is
    read as the UTF-8 it is. (Arguments stay the locale's: read as UTF-8, a file's non-ASCII path was not found.)"""
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "playground", "export", "--preset", "demo", "--prompt", "-",
                           "--regex", "[a-z]+"], input="日本語".encode(), env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b'"prompt": "\\u65e5\\u672c\\u8a9e"' in done.stdout and b'"regex": "[a-z]+"' in done.stdout


def test_bench_out_must_be_writable(capsys, saved_pair, tmp_path):
    target, draft = saved_pair
    blocker = tmp_path / "file"
    blocker.write_text("")
    err = one_line_error(capsys, "bench", "--target", str(target), "--draft", str(draft), "--out", str(blocker / "sub"))
    assert "--out: cannot write" in err
    err = one_line_error(capsys, "bench", "--target", str(target), "--draft", str(draft), "--k", ",".join(["2"] * 40))
    assert "more than this host allows" in err
    err = one_line_error(capsys, "bench", "--target", str(target), "--draft", str(draft), "--k", "1,2,3,4,5",
                         "--temperature", "0,0.5,1,1.5")
    assert "combinations is 20, more than this host allows (16) (PLAYGROUND_MAX_SWEEP_VALUES)" in err


@pytest.fixture(scope="module")
def broken_models(saved_pair, tmp_path_factory):
    good, root = saved_pair[0], tmp_path_factory.mktemp("broken")

    def variant(name, change):
        path = root / name
        shutil.copytree(good, path)
        change(path)
        return path
    weights = "model.safetensors"
    config = json.loads((good / "config.json").read_text())
    return {
        "empty weights": (variant("empty", lambda p: (p / weights).write_bytes(b"")), "damaged"),
        "truncated weights": (variant("trunc", lambda p: (p / weights).write_bytes((good / weights).read_bytes()[:4000])), "damaged"),
        "config mismatch": (variant("shape", lambda p: (p / "config.json").write_text(json.dumps({**config, "hidden_size": 96}))),
                            "disagree on tensor shapes"),
        "no tokenizer": (variant("notok", lambda p: [f.unlink() for f in p.glob("tokenizer*")]), "no usable tokenizer"),
        "weights are a directory": (variant("dir", lambda p: ((p / weights).unlink(), (p / weights).mkdir())), "Is a directory"),
        "dangling weights": (variant("dangling", lambda p: ((p / weights).unlink(), os.symlink("/nonexistent/w", p / weights))),
                             "No such file"),
    }


@pytest.mark.parametrize("case", ["empty weights", "truncated weights", "config mismatch", "no tokenizer",
                                  "weights are a directory", "dangling weights"])
def test_broken_model_directories_are_named(capsys, saved_pair, broken_models, case):
    path, message = broken_models[case]
    models.CACHE.entries.clear()
    err = one_line_error(capsys, "generate", "--target", str(path), "--draft", str(saved_pair[1]), "--prompt", "x")
    assert message in err and str(path) in err


def test_an_unreadable_preset_is_skipped_with_a_warning(tmp_path, caplog):
    shutil.copy(presets.PRESETS_DIR / "demo.toml", tmp_path / "demo.toml")
    (tmp_path / "broken.toml").write_bytes(b"name = \"x\"\npurpose = \"\xff\"\n")
    (tmp_path / "unknown.toml").write_text('name = "y"\nwhat = 1\n')
    with caplog.at_level("WARNING"):
        found = presets.all_presets(tmp_path)
    assert list(found) == ["demo"]
    assert "broken.toml" in caplog.text and "unknown.toml" in caplog.text


def test_a_matcher_error_is_a_clear_error_not_a_crash(saved_pair, tokenizer):
    """llguidance enters an error state when fed a token its mask forbids; the guide reports it."""
    spec = from_user(regex="[0-9]{2}")
    constraint = compile_constraint(spec, tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id}))
    guide = constraint.guide(4)
    letter = tokenizer("a", add_special_tokens=False).input_ids[0]
    with pytest.raises(PlaygroundError, match="gave up on this constraint"):
        guide.settle(0, letter)


def test_an_empty_value_between_commas_is_refused_not_dropped(capsys):
    """`--k 2,,4` ran 2 and 4, `--prompt-ids 1,,2` a prompt of two ids, each without a word (a
    review); a trailing comma is still only that."""
    from playground.cli_args import parse_prompt_ids
    from playground.measure.sweeps import parse_values
    assert "an empty value between commas" in one_line_error(capsys, "bench", "--preset", "demo", "--k", "2,,4")
    assert "--prompt-ids must be comma-separated integers, got '1,,2'" in one_line_error(
        capsys, "generate", "--preset", "demo", "--prompt-ids", "1,,2")
    assert parse_values("2, 4,", int) == [2, 4] and parse_prompt_ids("1,2,") == [1, 2]
    with pytest.raises(ValueError, match="empty value"):
        parse_values(",0.5", float)


def test_prompts_that_are_not_a_list_say_what_they_are(capsys, monkeypatch):
    """'[broken' was "no such file", '{"a": 1}' "held no prompts", bytes on standard input "- is not UTF-8"."""
    import io
    assert "'[broken' is no file, nor a JSON list of prompts: Expecting value" in one_line_error(
        capsys, "bench", "--preset", "demo", "--prompts", "[broken")
    assert '{"a": 1} holds a JSON object, not a list of prompts' in one_line_error(
        capsys, "bench", "--preset", "demo", "--prompts", '{"a": 1}')
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe")))
    assert "--prompts: standard input is not UTF-8 text (byte 0)" in one_line_error(
        capsys, "bench", "--preset", "demo", "--prompts", "-")
