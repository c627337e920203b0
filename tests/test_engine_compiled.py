"""Compiled passes on static caches (settings(compile=True)) keep every promise of the eager engine:
greedy output identical to transformers' own greedy decoding of the target, the target's sampling
distribution (chi-square), constraints, EOS inside a round, exact rollback; and no run
compiles inside its clock. Real torch.compile (inductor's C++ backend on this CPU), tiny real models."""
import gc
import weakref

import pytest
import torch

from playground import session
from playground.constraints import from_user
from playground.engine.runner import ModelRunner
from playground.engine.static import StaticRunner, capacity_bucket
from tests import tiny
from tests.test_engine_greedy import NO_EOS, PROMPT, hf_greedy
from tests.test_engine_sampling import N_RUNS, P_MIN, PROMPT as SAMPLING_PROMPT, chi_square_p, exact_joint


def compiled(k: int, max_new_tokens: int, **kw):
    return session.spec_config(k=k, max_new_tokens=max_new_tokens, compile=True, **kw)


@pytest.mark.parametrize("arch", ["qwen2", "qwen3", "llama"])
def test_greedy_identity_compiled(arch, tokenizer):
    target = tiny.tiny_model(arch, vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3)
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    expected = hf_greedy(target, prompt, 40, eos_id=NO_EOS)
    for k in (2, 5):
        result = session.run(pair, prompt, compiled(k, 40))
        assert result.token_ids == expected, (arch, k)
        assert result.stats["accepted"] > 0  # the draft was really verified, not bypassed
    assert session.run(pair, prompt, compiled(2, 40), speculative=False).token_ids == expected


def test_eos_inside_a_round_compiled(target, noisy_draft, tokenizer):
    prompt = tokenizer(PROMPT).input_ids
    free = hf_greedy(target, prompt, 30, eos_id=NO_EOS)
    eos = free[6]  # a token the target writes 7th: the run must stop there, mid-round or not
    expected = hf_greedy(target, prompt, 30, eos_id=eos)
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[eos])
    for k in (3, 4):
        result = session.run(pair, prompt, compiled(k, 30))
        assert result.token_ids == expected and result.finish_reason == "eos", k


def test_sampling_distribution_compiled():
    tok = tiny.letters_tokenizer(12)
    target = tiny.tiny_model("qwen2", vocab=12, hidden=32, layers=1, seed=21, eos_id=11, init_std=0.6)
    draft = tiny.tiny_model("qwen2", vocab=12, hidden=32, layers=1, seed=22, eos_id=11, init_std=0.6)
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    params = dict(temperature=1.0, top_k=0, top_p=1.0)
    counts = {}
    for seed in range(N_RUNS):
        ids = tuple(session.run(pair, SAMPLING_PROMPT, compiled(2, 3, seed=seed, **params)).token_ids)
        counts[ids] = counts.get(ids, 0) + 1
    assert chi_square_p(counts, exact_joint(target, 3, params), N_RUNS) > P_MIN


def test_constrained_run_compiled(target, noisy_draft, tokenizer):
    pair = tiny.make_pair(target, noisy_draft, tokenizer)
    constraint = session.constrain(pair, from_user(regex=r"[a-z]{3,12}"))
    prompt = tokenizer(PROMPT).input_ids
    eager = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=20), constraint=constraint)
    result = session.run(pair, prompt, compiled(3, 20), constraint=constraint)
    assert result.valid, result.validation_error
    assert result.token_ids == eager.token_ids


def test_rollback_leaves_no_trace(target):
    """After passes that are rolled back, the next pass sees only the kept prefix: its logits equal
    those of an eager runner that never saw the rejected tokens."""
    static = StaticRunner(target, target.config.vocab_size, 64, {(4, 4), (1, 1)})
    eager = ModelRunner(target, target.config.vocab_size)
    prefix, rejected = torch.arange(10, 20), torch.tensor([7, 8, 9, 10])
    static.forward(prefix, keep=1)
    eager.forward(prefix, keep=1)
    static.forward(rejected, keep=4)  # a verify pass whose tokens are all rejected
    static.crop(len(prefix))
    assert static.length == len(prefix)
    for token in (3, 5):
        a = static.forward(torch.tensor([token]), keep=1)
        b = eager.forward(torch.tensor([token]), keep=1)
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    static.reset()
    assert static.length == 0


def test_runs_compile_nothing_after_compile_graphs(target, noisy_draft, tokenizer):
    """compile_graphs compiles what the runs call, in the state they call it (inference mode, an
    allocated cache): neither the first run nor a second one compiles inside its clock."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    cfg = compiled(3, 24)
    session.compile_graphs(pair, len(prompt), cfg)
    graphs = dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs")
    assert isinstance(graphs, int) and graphs > 0  # (dynamo's counter by this name: None == None held nothing)
    first = session.run(pair, prompt, cfg)
    assert dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") == graphs
    assert session.compile_graphs(pair, len(prompt), cfg) == 0.0
    second = session.run(pair, prompt, cfg)
    assert dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") == graphs
    assert second.token_ids == first.token_ids


def test_each_model_runs_its_own_graphs():
    """Compiled calls check only guards on their arguments (guards_on_arguments), so models must not
    share graphs: two models with the same cache and input shapes but other weights and vocabularies
    each give their own eager logits."""
    models = [tiny.tiny_model(vocab=320, seed=0), tiny.tiny_model(vocab=400, seed=1)]
    prefix, step = torch.arange(10, 20), torch.tensor([7])
    for model in models + models:  # the second model's pass may not take the first's graph, nor the reverse
        static = StaticRunner(model, model.config.vocab_size, 64, {(1, 1)})
        eager = ModelRunner(model, model.config.vocab_size)
        static.forward(prefix, keep=1), eager.forward(prefix, keep=1)
        torch.testing.assert_close(static.forward(step, keep=1), eager.forward(step, keep=1), rtol=1e-4, atol=1e-4)


def test_a_compiled_model_is_freed_with_its_graphs():
    """Neither the model nor its graphs outlive it: dynamo keeps graphs on the code object of the
    model's own forward, which outlives the model, so they are dropped when the model is freed."""
    model = tiny.tiny_model(seed=2)
    static = StaticRunner(model, model.config.vocab_size, 64, {(1, 1)})
    static.warm()
    static.forward(torch.tensor([5]), keep=1)
    code = static.compiled._torchdynamo_orig_callable.__code__
    assert len(torch._C._dynamo.eval_frame._debug_get_cache_entry_list(code)) == 1
    gone = weakref.ref(model)
    del model, static
    gc.collect()
    assert gone() is None
    assert torch._C._dynamo.eval_frame._debug_get_cache_entry_list(code) == []


def test_capacity_buckets():
    assert [capacity_bucket(n) for n in (1, 200, 256, 257, 1000)] == [256, 256, 256, 512, 1024]


def test_a_gpu_run_past_the_long_cache_goes_eager_and_says_so(target, noisy_draft, tokenizer, monkeypatch):
    """A pair whose context is past MAX_GPU_CONTEXT (Qwen3-8B: 40,960) with a run longer than it:
    eager, said, instead of compiling a cache of that run's own length (GB each, kept)."""
    from playground.session import choice
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    monkeypatch.setattr(type(pair), "device", property(lambda self: torch.device("cuda")))  # as the choice sees it
    monkeypatch.setattr(pair, "context", 40960)
    cfg = session.spec_config(k=4, max_new_tokens=2048, compile=True)
    assert session.compile_fallback(pair, cfg, prompt_len=30000) == ""
    note = session.compile_fallback(pair, cfg, prompt_len=32000)
    assert note.startswith("compiled passes hold 32768 positions on a GPU; this run needs 34048")
    assert not session.choice.fuses(pair, cfg, True, True, 32000) and choice.past_gpu_caches(pair, 32000 + 2048 + 6)
    target_runner, draft_runner = session.choice.runners(pair, 32000, cfg)
    assert not isinstance(target_runner, StaticRunner) and not isinstance(draft_runner, StaticRunner)


def test_cli_compile_flag(capsys, saved_pair, tmp_path):
    import json

    from playground.cli import main
    target, draft = saved_pair
    common = ["--target", str(target), "--draft", str(draft), "--k", "2"]
    assert main(["generate", *common, "--prompt", "def f(x):", "--max-new-tokens", "12", "--json"]) == 0
    eager = json.loads(capsys.readouterr().out)
    assert main(["generate", *common, "--prompt", "def f(x):", "--max-new-tokens", "12", "--json", "--compile"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["token_ids"] == eager["token_ids"] and out["compile_s"] >= 0
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def f(x):\n")
    assert main(["bench", *common, "--prompts", str(prompts), "--max-new-tokens", "10", "--repeat", "1", "--json",
                 "--compile"]) == 0
    rows = {r["method"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["engine-compiled"]["identical"] is True and rows["engine-compiled"]["efficiency"] > 0


def test_compiled_passes_are_the_default_with_cuda_only(monkeypatch):
    """The host's default: on with CUDA (the compiled path measured far faster there), off on ZeroGPU,
    on a CPU and with --device cpu; --compile / --no-compile and a share link's value win."""
    from playground.cli_args import build_parser, compiles
    from playground.models import placement
    from playground.presets import Settings
    from playground.ui.share import from_query, to_query
    parse = lambda *flags: build_parser().parse_args(["generate", *flags])  # noqa: E731
    assert not placement.compiles_by_default() and not Settings().compile  # this machine has no CUDA
    assert not compiles(parse()) and compiles(parse("--compile"))
    cpu_link = to_query(Settings(preset="demo", compile=True))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert placement.compiles_by_default() and Settings().compile
    assert compiles(parse()) and not compiles(parse("--no-compile")) and not compiles(parse("--device", "cpu"))
    assert "compile" not in to_query(Settings(preset="demo"))  # the host's default: no need to carry it
    assert from_query({"preset": "demo"}, False)[0].compile  # ... so a link without it compiles here
    off_link = to_query(Settings(preset="demo", compile=False))
    assert "compile=false" in off_link and "compile=true" in cpu_link
    monkeypatch.setenv("SPACES_ZERO_GPU", "1")
    assert not placement.compiles_by_default() and not Settings().compile and not compiles(parse())


def test_a_host_that_turns_compiled_passes_off_runs_every_run_eager_and_says_so(target, noisy_draft, tokenizer,
                                                                                 monkeypatch):
    """PLAYGROUND_COMPILED_PASSES=0 (a hostile review: on a public CPU Space a visitor's compile of each new k held
    the device 45-60 s and kept 10-40 MB): a run, a link and the default ask for compiled passes in vain,
    and a run that asked is told why it ran eager."""
    from playground.models import placement
    from playground.presets import Settings
    from playground.ui.share import from_query
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("PLAYGROUND_COMPILED_PASSES", "off")
    assert not placement.compiles_by_default() and not Settings().compile
    pair = tiny.make_pair(target, noisy_draft, tokenizer)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = session.spec_config(k=2, max_new_tokens=8, compile=True)
    assert session.compile_graphs(pair, 6, cfg) == 0.0
    runners = session.choice.runners(pair, 6, cfg)
    assert not any(isinstance(r, StaticRunner) for r in runners)
    assert session.compile_fallback(pair, cfg) == "compiled passes are off on this host (PLAYGROUND_COMPILED_PASSES=0); this run is eager"
    opened, notices = from_query({"preset": "demo", "compile": "true"}, False)
    assert not opened.compile and notices == ["ignored compile=true: this host runs eager passes (PLAYGROUND_COMPILED_PASSES=0)"]
    from playground.cli_args import build_parser
    from playground.cli_notes import rows_bench_cannot_measure  # bench's compiled pass costs and row: not made
    assert rows_bench_cannot_measure(build_parser().parse_args(["bench", "--compile"]), "demo-draft") == {
        "compile": "--compile adds no engine-compiled row: compiled passes are off on this host (PLAYGROUND_COMPILED_PASSES=0)"}
    monkeypatch.delenv("PLAYGROUND_COMPILED_PASSES")
    assert isinstance(session.choice.runners(pair, 6, cfg)[0], StaticRunner)  # the same run where the host allows it
    opened, notices = from_query({"preset": "demo", "compile": "true"}, False)
    assert opened.compile and notices == []


def test_the_page_locks_compiled_passes_off_where_the_host_turned_them_off():
    import os
    import subprocess
    import sys
    code = "from playground.ui import page; print(page.ui.compile_passes.interactive, page.ui.compile_passes.value)"
    for setting, said in (("0", "False False"), ("1", f"True {torch.cuda.is_available()}")):  # (on with CUDA)
        env = dict(os.environ, HF_HUB_OFFLINE="1", PLAYGROUND_COMPILED_PASSES=setting)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0 and run.stdout.strip().splitlines()[-1] == said, run.stderr[-2000:]


def test_a_compiled_run_takes_caches_that_finished_runners_left_in_a_cycle(target, noisy_draft, tokenizer):
    """A finished run's runners can wait in a reference cycle (frames kept by a traceback) until the
    collector runs, holding both of a model's caches: the next compiled run went eager, silently."""
    import gc
    pair = tiny.make_pair(target, noisy_draft, tokenizer)
    cfg = session.spec_config(k=2, max_new_tokens=8, compile=True)
    gc.disable()
    try:
        for _ in range(2):  # the model's two caches of this capacity, each held by a runner in a cycle
            held = session.choice.runners(pair, 6, cfg)
            held[0].me = held
            del held
        target_runner, _ = session.choice.runners(pair, 6, cfg)
    finally:
        gc.enable()
    assert isinstance(target_runner, StaticRunner)


def test_runs_sharing_the_device_each_get_compiled_runners_for_both_sides(target, noisy_draft, tokenizer, monkeypatch):
    """With PLAYGROUND_CONCURRENCY 2, a second run's target alone found the target's two caches held
    (the first run's sides) and ran eager: its speedup set compiled speculation against an eager target."""
    from playground import limits
    monkeypatch.setattr(limits, "CONCURRENCY", 2)
    pair = tiny.make_pair(target, noisy_draft, tokenizer)
    cfg = session.spec_config(k=2, max_new_tokens=8, compile=True)
    held = [session.choice.runners(pair, 6, cfg, speculative) for _ in range(2) for speculative in (True, False)]
    assert all(isinstance(runner, StaticRunner) for runners in held for runner in runners if runner is not None)
    assert not isinstance(session.choice.runners(pair, 6, cfg, False)[0], StaticRunner)  # past them: eager, as before
