"""The benchmark harness runs every method on a tiny pair in seconds (a smoke check: no thresholds
on time here; those live in BENCHMARKS.md) and its greedy rows agree on the tokens."""
import json

import pytest

from playground import session
from playground.measure import bench, report
from playground.cli import main
from tests import tiny


def smoke(pair, prompts: list[list[int]]) -> list[dict]:
    """A bench small enough for a test (seconds): every method once at k=4, greedy, 24 tokens."""
    cfg = session.spec_config(k=4, max_new_tokens=24)
    pairs = {"draft": pair, "ngram": bench.ngram_pair(pair)}
    return bench.bench_setting(pairs, prompts[:2], cfg, 1, bench.available_methods(pair, cfg), None)


def test_smoke_every_method(target, noisy_draft, tokenizer):
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    prompts = [tokenizer("def walk(path):\n    for name in ").input_ids, tokenizer("x = [1, 2, 3]\ny = [").input_ids]
    rows = smoke(pair, prompts)
    assert [r["method"] for r in rows] == list(bench.METHODS)
    for row in rows:
        assert row["tokens_per_s"] > 0 and row["identical"] is (None if row["method"] == "target" else True), row
    by_method = {r["method"]: r for r in rows}
    assert by_method["target"]["speedup"] == 1.0 and "identical" not in report.row_line(by_method["target"])  # (to itself)
    for row in rows[1:]:  # each row's own baseline, beside it (the target row pools them all)
        assert row["baseline_tokens_per_s"] > 0, row
    for row in rows:  # a speedup with its interval around it, or none and the reason
        if row["speedup"] is None:
            assert row["note"] and row["measurements"] == 4, row
        else:
            low, high = row["speedup_range"]
            assert low <= row["speedup"] <= high, row
    assert 0 <= by_method["engine"]["acceptance_rate"] <= 1
    assert by_method["engine"]["tokens_per_target_pass"] > by_method["target"]["tokens_per_target_pass"]
    alone = by_method["target"]  # its prompt pass counted, as every row's is (it was 1.00, written in)
    assert 0.9 < alone["tokens_per_target_pass"] < 1.0  # one pass a token, and each run's prompt pass


def test_cli_bench_json_and_outputs(capsys, saved_pair, tmp_path):
    from playground.measure import report
    target, draft = saved_pair
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def f(x):\\n    return\nclass A:\n")
    code = main(["bench", "--target", str(target), "--draft", str(draft), "--k", "2,3", "--prompts", str(prompts),
                 "--max-new-tokens", "12", "--repeat", "1", "--json", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0
    rows = json.loads(out)
    assert {(r["method"], r["k"]) for r in rows} == {(m, k) for m in bench.METHODS for k in (2, 3)}
    for row in rows:
        for key in ("method", "k", "temperature", "tokens_per_s", "speedup", "acceptance_rate", "tokens_per_target_pass"):
            assert key in row
        assert row["identical"] is (None if row["method"] == "target" else True)
        if row["method"].startswith("engine"):
            assert row["efficiency"] > 0
        if row["speedup"] is not None and row["method"] != "target":  # one measurement's interval: rounds, not runs
            one = row["measurements"] == 1
            assert (bench.ONE_MEASUREMENT in row["note"]) == one == report.verdict(row).endswith(", one measurement")
    assert len({tuple(row) for row in rows}) == 1  # one shape: what a method does not measure is null
    assert (tmp_path / "out" / "table.md").read_text().count("\n") >= 2 + len(rows)
    ran_on = json.loads((tmp_path / "out" / "machine.json").read_text())  # a figure names what it ran on
    assert {"cpu", "cpu_flags", "cores", "torch_threads", "device", "torch", "transformers", "load_average", "date"} <= set(ran_on)
    assert f"{ran_on['torch_threads']} torch threads" in (tmp_path / "out" / "table.md").read_text()
    assert ran_on["run"] | {"target": None, "draft": None} == {  # what was measured, beside what it ran on
        "target": None, "draft": None, "target_dtype": "float32", "draft_dtype": "float32", "k": [2, 3],
        "temperatures": [0.0], "prompts": 2, "max_new_tokens": 12, "repeat": 1, "seed": 0, "compile": False, "tree": "",
        "policies": [], "confidence": None}
    assert ran_on["run"]["target"] == str(target) and len(ran_on["load_average_after"]) == 3
    assert (tmp_path / "out" / "table.md").read_text().startswith(f"# {target} (float32) + {draft} (float32): 2 prompts")
    assert "machine: " in err  # (--json: the log goes to stderr)
    assert (tmp_path / "out" / "speedup.html").exists()


NOISY_ROW = {"method": "engine", "k": 2, "temperature": 0.0, "tokens_per_s": 10.0, "baseline_tokens_per_s": 8.0,
             "speedup": None, "speedup_estimate": 1.2, "speedup_range": [0.9, 1.5], "measurements": 4, "note": "wide",
             "side": "", "acceptance_rate": 0.5, "tokens_per_target_pass": 2.0, "seconds": 1.0, "tokens": 10}


def test_a_bench_in_a_used_folder_replaces_its_files_and_an_interrupt_says_what_it_kept(capsys, saved_pair, tmp_path,
                                                                                        monkeypatch):
    """A bench stopped before its chart left the last bench's chart beside its own rows (its machine.json
    beside the last one's rows, before its first), and said only "interrupted" (a CLI review)."""
    from playground.measure import report
    out = tmp_path / "out"
    out.mkdir()
    for name in report.OWN_FILES:
        (out / name).write_text("an earlier bench's")
    (out / "machine.json").write_text('{"cpu": "an earlier bench\'s"}')
    (out / "notes.txt").write_text("mine")

    def stopped_after_a_row(*args, on_row, **kwargs):
        on_row([NOISY_ROW])
        raise KeyboardInterrupt
    monkeypatch.setattr(bench, "run_bench", stopped_after_a_row)
    target, draft = saved_pair
    assert main(["bench", "--target", str(target), "--draft", str(draft), "--k", "2", "--num-prompts", "1",
                 "--out", str(out)]) == 130
    out_text, err = capsys.readouterr()
    assert "held an earlier bench's machine.json, rows.json, table.md, speedup.html, speedup.png: removed" in err
    assert out_text.strip() and out_text.strip() in (out / "table.md").read_text()  # the rows kept, as generate prints
    assert err.endswith(f"interrupted: 1 row measured whole kept in {out / 'rows.json'} and table.md; no chart\n")  # (once)
    assert json.loads((out / "rows.json").read_text()) == [NOISY_ROW] and "earlier" not in (out / "table.md").read_text()
    ran_on = json.loads((out / "machine.json").read_text())  # (it read as a finished bench's; a scripting review)
    assert ran_on["cpu"] and ran_on["interrupted"] is True and "load_average_after" in ran_on
    assert (out / "notes.txt").read_text() == "mine"
    assert main(["bench", "--target", str(target), "--draft", str(draft), "--k", "2", "--num-prompts", "1", "--json"]) == 130
    assert json.loads(capsys.readouterr().out) == [NOISY_ROW]  # (without --out: nothing at all was kept)
    assert not (out / "speedup.html").exists() and not list(out.glob("*.partial"))


def test_a_folder_holding_files_no_bench_wrote_is_refused_before_any_model_loads(saved_pair, tmp_path, capsys):
    """`--out` holding the user's own table.md, rows.json and speedup.png (no bench's machine.json beside
    them): they were removed as "an earlier bench's", and a host without kaleido wrote no chart in their place."""
    mine = {"table.md": "my table", "rows.json": "[1]", "speedup.png": "img"}
    for name, text in mine.items():
        (tmp_path / name).write_text(text)
    target, draft = saved_pair
    assert main(["bench", "--target", str(target), "--draft", str(draft), "--k", "2", "--num-prompts", "1",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds rows.json, table.md, speedup.png, which no bench wrote there" in err and "loading" not in err.lower()
    assert {name: (tmp_path / name).read_text() for name in mine} == mine


def test_rows_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """A bench stopped while writing could leave half a rows.json: each file is written beside, then moved."""
    from playground.measure import report
    report.write_rows([NOISY_ROW], tmp_path, "first")
    monkeypatch.setattr(report.os, "replace", lambda *args: (_ for _ in ()).throw(OSError("cut short")))
    with pytest.raises(OSError):
        report.write_rows([NOISY_ROW, NOISY_ROW], tmp_path, "second")
    assert json.loads((tmp_path / "rows.json").read_text()) == [NOISY_ROW]
    assert report.clear_earlier(tmp_path) == ["rows.json", "table.md"] and not list(tmp_path.iterdir())


def test_the_bench_chart_draws_noisy_points_at_their_estimate_with_the_interval():
    """Rows too noisy for one number (speedup None) were left out of the chart, and no point had its interval."""
    import plotly.graph_objects as go
    from playground.measure import report
    told = NOISY_ROW | {"k": 3, "speedup": 1.4, "speedup_estimate": 1.4, "speedup_range": [1.3, 1.5]}
    trace = report._trace(go, [NOISY_ROW, told], "engine T=0.0")
    assert list(trace.y) == [1.2, 1.4] and list(trace.marker.symbol) == ["circle-open", "circle"]
    assert [round(v, 6) for v in trace.error_y.array] == [0.3, 0.1]
    assert [round(v, 6) for v in trace.error_y.arrayminus] == [0.3, 0.1]


def test_cli_bench_bad_k(capsys, saved_pair):
    target, draft = saved_pair
    assert main(["bench", "--target", str(target), "--draft", str(draft), "--k", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: k must be between 1 and 16")


def test_cli_bench_bad_input_is_refused_before_loading(capsys, saved_pair, tmp_path):
    target, draft = saved_pair
    models = ["bench", "--target", str(target), "--draft", str(draft)]
    assert main(models + ["--temperature", "0,-1"]) == 2
    assert "temperature" in capsys.readouterr().err
    for name, text in (("bad.json", "[\"def f():\""), ("obj.json", '{"a": "b"}')):
        (tmp_path / name).write_text(text)
        assert main(models + ["--prompts", str(tmp_path / name)]) == 2
        assert capsys.readouterr().err.startswith("error: --prompts: ")
    (tmp_path / "long.json").write_text(json.dumps(["short", "word " * 600]))  # (past the tiny models' 512)
    assert main(models + ["--prompts", str(tmp_path / "long.json"), "--num-prompts", "2"]) == 2
    err = capsys.readouterr().err  # (it was refused once a run's costs were measured, 20 s on)
    assert err.startswith("error: --prompts: prompt 2: the prompt is ") and "measuring" not in err, err


def test_transformers_rows_ignore_the_models_own_generation_config(target, noisy_draft, tokenizer):
    """A checkpoint's generation_config.json (Qwen2.5-Instruct: repetition_penalty 1.05) must not
    change the transformers rows: they decode with the same settings as the engine."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    saved = target.generation_config.repetition_penalty, noisy_draft.generation_config.num_assistant_tokens
    target.generation_config.repetition_penalty = 3.0
    try:
        rows = smoke(pair, [tokenizer("x = [1, 2, 3]\ny = [").input_ids])
    finally:
        target.generation_config.repetition_penalty = saved[0]
    assert all(row["identical"] is True for row in rows[1:]), rows
    assert noisy_draft.generation_config.num_assistant_tokens == saved[1]  # the cached draft is left as it was


def test_rows_say_their_speedup_as_the_page_does():
    """bench's cells read "faster" with no range, a told interval holding 1x printed as a plain
    number, and a noisy line's reason sat in doubled brackets."""
    from playground.measure.report import markdown_table, row_line
    row = {"method": "engine", "k": 3, "temperature": 0.0, "tokens_per_s": 40.0, "tokens_per_target_pass": 2.0,
           "acceptance_rate": 0.5, "speedup": None, "speedup_range": [1.56, 2.15], "side": "faster",
           "note": "its 95% interval, 1.56-2.15x, over 4 interleaved measurements (the machine's other load)"}
    cells = lambda r: markdown_table([r]).splitlines()[-1].split(" | ")  # noqa: E731
    assert cells(row)[5] == "faster, 1.56-2.15x"
    assert "faster, 1.56-2.15x  " in row_line(row) and "((" not in row_line(row) and "))" not in row_line(row)
    assert cells(row | {"side": ""})[5] == "cannot tell, 1.56-2.15x"  # (the table has no note: "cannot tell" alone)
    assert "tok/s  cannot tell  acc" in row_line(row | {"side": ""})  # (the line's note says it)
    assert cells(row | {"speedup": 1.04, "speedup_range": [0.98, 1.09]})[5] == "no clear difference, 1.04x (0.98-1.09x)"
    assert cells(row | {"speedup": 1.32, "speedup_range": [1.19, 1.43]})[5] == "1.32x (1.19-1.43x)"
    # one measurement's interval is how its rounds varied: two identical benches gave 1.05x and 1.27x, apart
    assert cells(row | {"speedup": 1.32, "speedup_range": [1.19, 1.43], "measurements": 1})[5] == \
        "1.32x (1.19-1.43x), one measurement"
    assert cells(row | {"measurements": 1})[5] == "faster, 1.56-2.15x"  # (no number: nothing to mark)
    assert cells(row | {"method": "target", "speedup": 1.0, "speedup_range": [1.0, 1.0]})[5] == "1.00x (the baseline)"
    assert "too noisy for one number: its side and interval" in markdown_table([row]).splitlines()[0]
    assert cells(row)[1] == "3" and cells(row | {"method": "hf-target"})[1] == "-"  # k where it drafts with it
    assert cells(row | {"method": "target", "speedup": 1.0, "speedup_range": [1.0, 1.0]})[1] == "-"
    assert " k=-  " in row_line(row | {"method": "target", "speedup": 1.0, "speedup_range": [1.0, 1.0]})
    # tok/s of rows measured apart say nothing of each other on a loaded machine: each row's own baseline beside it
    assert cells(row | {"baseline_tokens_per_s": 24.4})[4] == "24.4" and "tok/s (alone beside it 24.4)" in row_line(
        row | {"baseline_tokens_per_s": 24.4})
    assert cells(row | {"method": "target", "baseline_tokens_per_s": 30.0})[4] == ""  # (the pooled baseline itself)
    assert cells(row | {"efficiency": 1.94})[8] == "1.94 (load changed: not a real efficiency)"  # (above 1: the costs
    assert cells(row | {"efficiency": 0.81})[8] == "0.81" and "eff 1.94 (load changed" in row_line(row | {"efficiency": 1.94})


def test_a_row_it_cannot_measure_is_said(target, noisy_draft, tokenizer):
    """--tree with prompt lookup (or --compile with it) added no row and said nothing."""
    import dataclasses
    from playground import session
    pair = dataclasses.replace(tiny.make_pair(target, noisy_draft, tokenizer), draft=None, draft_id="ngram")
    said = []
    methods = bench.available_methods(pair, session.spec_config(k=2, tree=(2, 2)), said.append, compiled=True)
    assert bench.TREE not in methods and bench.COMPILED not in methods
    assert any("no engine-tree row" in s for s in said) and any("no engine-compiled row" in s for s in said)


def test_transformers_and_the_target_alone_take_turns_going_first_over_blocks(monkeypatch):
    """The order alternated over prompts alone: with one prompt (or an odd count) transformers ran first
    in every block, so a drift in load always favoured the same side."""
    order = []
    monkeypatch.setattr(bench, "run_hf", lambda *args: order.append("hf") or bench.Sample([1], 0.1, 1, 0, 0))
    monkeypatch.setattr(bench.session, "generate", lambda *args, **kwargs: order.append("alone") or iter(()))
    seen = []
    for _ in range(4):
        bench._block("hf-assisted", {"draft": None}, [[1, 2]], session.spec_config(), seen)  # (each adds its runs to seen)
    assert order == ["hf", "alone", "alone", "hf", "hf", "alone", "alone", "hf"]


def test_the_target_alone_beside_transformers_is_timed_up_to_transformers_tokens(monkeypatch):
    """As beside the engine (speedup.Block.add): transformers' sampled text ending early (EOS) left the target
    alone timed to its end, and the row's note said the target alone's texts had ended first."""
    from playground.measure.speedup import Timed, estimate
    monkeypatch.setattr(bench, "run_hf", lambda *args: bench.Sample(list(range(8)), 1.0, 8, 0, 0))
    monkeypatch.setattr(bench.session, "generate", lambda *args, **kwargs: iter(()))
    monkeypatch.setattr(bench, "engine_sample", lambda events: None)
    monkeypatch.setattr(bench, "timed", lambda events: Timed([(0.5, 0)] + [(0.05, 1)] * 40))  # a prefill, 40 tokens
    seen = []
    blocks = [bench._block("hf-assisted", {"draft": None}, [[1, 2]], session.spec_config(), seen) for _ in range(2)]
    assert blocks[0].base.tokens == 8 and blocks[0].base.seconds == pytest.approx(0.5 + 8 * 0.05)
    told = estimate(blocks)
    assert told.estimate == pytest.approx(0.9) and not told.other_lengths  # (0.5 + 8 x 0.05) / 1.0


def test_a_tree_row_is_measured_once_per_temperature(monkeypatch, target, noisy_draft, tokenizer):
    """A CLI review: --k 2,4 --tree measured the same tree row once per k, and drew it against k."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer)
    measured, said = [], []
    monkeypatch.setattr(bench, "bench_setting", lambda pairs, prompts, cfg, repeat, methods, *rest: measured.append(
        (cfg.k, cfg.sampling.temperature, bench.TREE in methods)))
    bench.run_bench({"draft": pair}, [[1, 2, 3]], [2, 4], [0.0, 0.5], 1, 4, log=said.append, tree="2,1")
    assert measured == [(2, 0.0, True), (4, 0.0, False), (2, 0.5, True), (4, 0.5, False)]
    assert "(the engine-tree row is measured once per temperature, with k=2: a tree does not use k)" in said


def test_a_rows_efficiency_is_over_the_target_alones_beside_it():
    """A machine busier than when the pass costs were measured slowed both sides alike: the row read
    0.15 (as if 85% of its time were overhead) where the target alone beside it read 0.21."""
    row = _efficiency_row(slower=4.0)
    assert row["alone_efficiency"] == pytest.approx(0.25)  # both sides 4x slower than their passes
    assert row["efficiency"] == pytest.approx(1.0)  # no more overhead than the target alone's


def _efficiency_row(slower: float, prompt_pass: float = 0.0):
    """An engine row whose rounds took `slower` times their passes' measured costs, after prompt passes
    of `prompt_pass` s (the speculative side's draft prompt pass a fifth of it more)."""
    import types
    costs = {"verify": {1: 0.010, 2: 0.011, 3: 0.012}, "draft": 0.002}
    spec_rounds = [types.SimpleNamespace(proposed=2, draft_passes=2, wall_s=slower * 0.016)] * 10  # 0.012 (3 wide) + 2 x 0.002
    base_rounds = [types.SimpleNamespace(proposed=0, draft_passes=0, wall_s=slower * 0.010)] * 30  # each: one pass, 0.010
    spec = bench.Sample(ids=[1] * 30, seconds=1.2 * prompt_pass + slower * 10 * 0.016, target_passes=11, proposed=20,
                        accepted=20, rounds=spec_rounds)
    base = bench.Sample(ids=[1] * 30, seconds=prompt_pass + slower * 30 * 0.010, target_passes=31, proposed=0,
                        accepted=0, rounds=base_rounds)
    result = types.SimpleNamespace(spec_tokens_per_s=1.0, base_tokens_per_s=1.0, speedup=1.9, estimate=1.9, low=1.8, high=2.0,
                                   blocks=1, reason="", side="faster", other_lengths="", caveat="")
    return bench._row("engine", session.spec_config(k=2), result, [(spec, base)], costs)


def test_a_long_prompt_pass_is_not_read_as_the_engines_overhead():
    """Prompt passes were costed as one verify pass of k+1 tokens: a 0.5 s prompt pass (a long prompt)
    read as overhead, more on the speculative side (its draft's prompt pass too): 0.58 for rounds
    that ran at exactly their passes' cost."""
    row = _efficiency_row(slower=1.0, prompt_pass=0.5)
    assert row["alone_efficiency"] == pytest.approx(1.0) and row["efficiency"] == pytest.approx(1.0)


def test_a_rows_columns_pool_every_measurement_as_its_speedup_does(target, noisy_draft, tokenizer, monkeypatch):
    """identical, acceptance, tokens per pass and efficiency came from the last measurement alone,
    while the speedup beside them pooled all."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    cfg = session.spec_config(k=3, max_new_tokens=16)
    row_of, given = bench._row, []
    monkeypatch.setattr(bench, "_row", lambda method, cfg, result, samples, costs: given.append(samples) or row_of(
        method, cfg, result, samples, costs))
    rows = bench.bench_setting({"draft": pair}, [tokenizer("x = [1, 2, 3]\ny = [").input_ids], cfg, 2, ["target", "engine"])
    engine = rows[1]
    assert engine["measurements"] >= 2 and engine["tokens"] == 16 * engine["measurements"]
    assert len(given[0]) == engine["measurements"]  # every (run, target alone) pair of every measurement
    mine = [run for run, _ in given[0]]
    assert engine["acceptance_rate"] == sum(r.accepted for r in mine) / sum(r.proposed for r in mine)


@pytest.mark.parametrize("policy", ["schedule", "confidence"])
def test_a_policy_row_drafts_under_that_policy_beside_the_fixed_k(monkeypatch, target, noisy_draft, tokenizer, policy):
    """bench had no --policy: the schedule and the confidence stop were measured nowhere side by side with a
    fixed k. Its row runs every round under the policy (k the most), greedy and still the target's text."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    cfg = session.spec_config(k=4, max_new_tokens=16, confidence=0.3)
    methods = bench.available_methods(pair, cfg, policies=(policy,))
    assert methods[:3] == ["target", "engine", bench.POLICY_ROWS[policy]]
    policies, generate = [], session.generate
    monkeypatch.setattr(bench.session, "generate", lambda pair, ids, run_cfg, **kw: policies.append(
        (run_cfg.policy, run_cfg.confidence, kw.get("speculative", True))) or generate(pair, ids, run_cfg, **kw))
    costs = {"verify": {w: 0.01 for w in range(1, 6)}, "draft": 0.002}
    pairs = {"draft": pair, "ngram": bench.ngram_pair(pair)}
    rows = bench.bench_setting(pairs, [tokenizer("x = [1, 2, 3]\ny = [").input_ids], cfg, 1, methods[:3], costs)
    row = rows[2]
    assert row["method"] == bench.POLICY_ROWS[policy] and row["identical"] is True and row["efficiency"] > 0
    assert row["confidence"] == (0.3 if policy == "confidence" else None) and rows[1]["confidence"] is None
    assert (policy, 0.3, True) in policies and ("fixed", 0.3, True) in policies  # (its row, the engine row's)
    assert report.label(row) == ("engine-confidence 0.3" if policy == "confidence" else "engine-schedule")


def test_cli_bench_policy_row_and_what_it_cannot_measure(capsys, saved_pair, tmp_path):
    target, draft = saved_pair
    args = ["bench", "--target", str(target), "--k", "2", "--num-prompts", "1", "--max-new-tokens", "6", "--repeat", "1"]
    assert main([*args, "--draft", str(draft), "--policy", "confidence,schedule", "--confidence", "0.4", "--json",
                 "--out", str(tmp_path / "out")]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["method"], r["confidence"]) for r in rows[:3]] == [("engine", None), ("engine-confidence", 0.4),
                                                                  ("engine-schedule", None)]
    assert json.loads((tmp_path / "out" / "machine.json").read_text())["run"]["policies"] == ["confidence", "schedule"]
    assert "| engine-confidence 0.4 | 2 |" in (tmp_path / "out" / "table.md").read_text()
    assert main([*args, "--draft", "ngram", "--policy", "schedule", "--confidence", "0.4", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "engine-schedule" not in {r["method"] for r in json.loads(out)}
    said = "note: --policy schedule adds no row: a policy sets a draft model's length, and this bench drafts by prompt lookup alone"
    assert said in err and err.index(said) < err.index("measuring pass costs")  # (before loading: the name says it)
    assert "note: --confidence is not used: only the confidence policy reads it" in err
    assert main([*args, "--draft", "ngram", "--tree", "2,1", "--compile", "--json", "--out", str(tmp_path / "ngram")]) == 0
    out, err = capsys.readouterr()
    assert not {"engine-tree", "engine-compiled"} & {r["method"] for r in json.loads(out)}
    assert "note: --tree adds no engine-tree row" in err and "note: --compile adds no engine-compiled row" in err
    assert "(no engine-tree row" not in err and "(no engine-compiled row" not in err  # (said once, not per setting)
    run = json.loads((tmp_path / "ngram" / "machine.json").read_text())["run"]
    assert (run["tree"], run["compile"]) == ("", False)  # what was measured, not what was asked
    assert main([*args, "--draft", str(draft), "--policy", "confidence", "--confidence", "1.5"]) == 2  # checked before loading
    assert "confidence must be above 0 and below 1" in capsys.readouterr().err
    assert main([*args, "--draft", str(draft), "--policy", "fixed"]) == 2  # (the engine row is the fixed k's)
    assert "one of schedule, confidence, or both comma-separated" in capsys.readouterr().err


def test_bench_says_a_seed_and_raw_it_does_not_use(saved_pair, monkeypatch, capsys):
    """generate said them; bench took --seed under greedy rows and --raw for a model without a chat template in
    silence (a CLI review)."""
    seeds = []

    def measured(pairs, prompts, ks, temperatures, repeat, max_new_tokens, seed, *args, **kwargs):
        seeds.append(seed)
        return [NOISY_ROW]
    monkeypatch.setattr(bench, "run_bench", measured)
    target, draft = saved_pair
    models = ["bench", "--target", str(target), "--draft", str(draft), "--k", "2", "--num-prompts", "1"]
    assert main(models + ["--seed", "3", "--raw"]) == 0
    err = capsys.readouterr().err
    assert "note: --seed is not used: every --temperature is 0 (greedy), which draws nothing" in err
    assert f"note: --raw is not used: {target} has no chat template, so its prompts are sent as written anyway" in err
    assert main(models + ["--temperature", "0,0.7", "--seed", "3"]) == 0 and "is not used" not in capsys.readouterr().err
    assert main(models) == 0 and seeds == [3, 3, 0]  # (no seed given: 0, as before)
