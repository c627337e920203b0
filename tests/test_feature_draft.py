"""A feature draft (EAGLE-style: it reads the target's hidden states) keeps speculation exact, greedy
and sampled, with a constraint too; after every round its cache holds only pairs made from the
target's own features; it loads from a directory and refuses what it cannot serve."""
import weakref

import pytest
import torch

from playground import cli_report, session
from playground.measure.compared import compared_run
from playground.models import loading as models, row_layers, row_products
from playground.constraints import compile_constraint, from_user
from playground.engine.cache import new_cache
from playground.engine.proposers import DraftModelProposer
from playground.engine.speculative import speculate
from playground.engine.static import StaticRunner
from playground.engine.tree import TreeProposer
from playground.errors import PlaygroundError
from playground.models.feature_draft import FeatureDraft, draft_config, save_feature_draft, unrolled
from tests import tiny
from tests.test_engine_sampling import CASES, N_RUNS, P_MIN, PROMPT, V, chi_square_p, exact_joint, sample_counts


def feature_draft(target, d2t: list[int], seed: int = 0, std: float = 0.3) -> FeatureDraft:
    torch.manual_seed(seed)
    cfg = draft_config(target.config, 2 * target.config.hidden_size)
    cfg.initializer_range = std
    draft = FeatureDraft(cfg)
    with torch.no_grad():
        for p in draft.parameters():  # larger weights than the default init: peaked, varied guesses
            p.normal_(0, std) if p.dim() > 1 else None
    draft = draft.eval().attach(target, torch.tensor(d2t))
    draft.playground_vocab_map = torch.tensor(d2t)
    return draft


@pytest.fixture(scope="module")
def pair(tokenizer, target):
    d2t = list(range(0, len(tokenizer), 2))  # half the vocabulary, EOS (id 0) included
    return tiny.make_pair(target, feature_draft(target, d2t), tokenizer)


def test_greedy_output_is_the_target_alone(pair):
    prompt = pair.tokenizer("def parse(text):\n").input_ids
    for k in (1, 3, 5):
        cfg = session.spec_config(k=k, max_new_tokens=40)
        spec = session.run(pair, prompt, cfg)
        assert spec.token_ids == session.run(pair, prompt, cfg, speculative=False).token_ids
        assert spec.stats["proposed"] > 0 and spec.stats["draft_passes"] > 0


def test_the_schedules_pauses_keep_the_targets_features(pair):
    """Paused rounds (k=0) run the target alone; the draft still reads the features of what they
    committed (the target's next pass overwrites them: 'features skipped positions' otherwise)."""
    prompt = pair.tokenizer("def parse(text):\n").input_ids
    for k in (1, 2, 4):
        cfg = session.spec_config(k=k, max_new_tokens=48, policy="schedule")
        spec = session.run(pair, prompt, cfg)
        assert spec.token_ids == session.run(pair, prompt, cfg, speculative=False).token_ids
        paused = [i for i, r in enumerate(spec.rounds) if r.k == 0 and spec.rounds[i].finish_reason is None]
        assert paused and any(r.k for r in spec.rounds[paused[0]:]), k  # drafting again after a pause


@pytest.mark.parametrize("tree", [(2,), (2, 2), (1, 2, 1)])
def test_a_tree_drafted_from_a_one_token_prompt_is_the_target_alone(pair, tree):
    """One token: x_0 has no feature before it, so the draft guesses uniformly, and its next depth
    reads x_0's feature (the target's): that feature was never set, and a tree of depth 2 crashed."""
    prompt = pair.tokenizer("x").input_ids
    assert len(prompt) == 1
    cfg = session.spec_config(tree=tree, max_new_tokens=8)
    assert session.run(pair, prompt, cfg).token_ids == session.run(pair, prompt, cfg, speculative=False).token_ids


def test_the_cache_keeps_only_pairs_made_from_the_targets_features(pair):
    """After a run, the draft's cached keys equal one fresh pass over the committed tokens with the
    target's features: every guessed feature was replaced once the target's was known."""
    prompt = pair.tokenizer("import os\nimport sys\n").input_ids
    target_runner, draft_runner = session.eager_runners(pair)
    proposer = DraftModelProposer(draft_runner)
    rounds = list(speculate(target_runner, proposer, prompt, session.spec_config(k=4, max_new_tokens=30), set()))[1:]
    assert sum(r.proposed > r.accepted for r in rounds) >= 2  # rollbacks happened
    seq, n = proposer.seq, draft_runner.length
    assert draft_runner.exact == n and n >= len(seq) - 6
    with torch.no_grad():
        features = pair.target.get_decoder()(input_ids=torch.tensor([seq])).last_hidden_state[0]
        fresh = new_cache(pair.draft.config)
        pair.draft.step(torch.tensor(seq[1:n]), features[: n - 1], fresh)
    got, want = draft_runner.cache.layers[0], fresh.layers[0]
    assert torch.allclose(got.keys, want.keys, atol=1e-5) and torch.allclose(got.values, want.values, atol=1e-5)


def test_training_unrolls_drafting_as_the_runner_drafts(pair):
    """`unrolled` (the training's view of several drafted steps) gives, at every position, what
    drafting with the cache gives: an exact prefix, then steps that read the draft's own guesses."""
    seq = pair.tokenizer("def parse(text):\n    return text.split()\n").input_ids
    with torch.no_grad():
        features = pair.target.get_decoder()(input_ids=torch.tensor([seq])).last_hidden_state  # [1, T+1, H]
        ids, feats = torch.tensor([seq[1:]]), features[:, :-1]  # pair j: (f_j, x_{j+1})
        outs = unrolled(pair.draft, ids, feats, depth=3)
        for end in (0, 3, 7):  # exact pairs 0..end, then steps 2 and 3 on the draft's guesses
            cache = new_cache(pair.draft.config)
            guess = pair.draft.step(ids[0, : end + 1], feats[0, : end + 1], cache)[0][-1]
            assert torch.allclose(guess, outs[0][0, end], atol=1e-4)
            for s in (2, 3):
                j = end + s - 1
                guess = pair.draft.step(ids[0, j:j + 1], guess[None], cache)[0][-1]
                assert torch.allclose(guess, outs[s - 1][0, j], atol=1e-4)


def test_sampling_matches_the_target():
    tok = tiny.letters_tokenizer(V)
    target = tiny.tiny_model("qwen2", vocab=V, hidden=32, layers=1, seed=21, eos_id=V - 1, init_std=0.6)
    pair = tiny.make_pair(target, feature_draft(target, [0, 2, 3, 5, 7, 8, 10], std=0.6), tok, eos_ids=[])
    counts = sample_counts(pair, k=2, length=3, params=CASES["warped"])
    assert chi_square_p(counts, exact_joint(target, 3, CASES["warped"]), N_RUNS) > P_MIN


def test_tree_sampling_matches_the_target():
    """A static tree drafted by a feature draft: each node's pair reads its parent's guess; the
    output keeps the target's distribution."""
    tok = tiny.letters_tokenizer(V)
    target = tiny.tiny_model("qwen2", vocab=V, hidden=32, layers=1, seed=21, eos_id=V - 1, init_std=0.6)
    pair = tiny.make_pair(target, feature_draft(target, [0, 2, 3, 5, 7, 8, 10], std=0.6), tok, eos_ids=[])
    counts = {}
    for seed in range(N_RUNS):
        cfg = session.spec_config(max_new_tokens=3, seed=seed, tree=(2, 2), **CASES["warped"])
        ids = tuple(session.run(pair, PROMPT, cfg).token_ids)
        counts[ids] = counts.get(ids, 0) + 1
    assert chi_square_p(counts, exact_joint(target, 3, CASES["warped"]), N_RUNS) > P_MIN


def test_tree_rounds_keep_only_pairs_made_from_the_targets_features(pair):
    """After each tree round the feature draft's cache holds exact pairs only, and the target's
    features it reads are those of the kept branch (the output stays the target's)."""
    prompt = pair.tokenizer("def parse(text):\n").input_ids
    cfg = session.spec_config(max_new_tokens=30, tree=(3, 2))
    target, draft = session.eager_runners(pair)
    proposer = TreeProposer(draft, cfg.tree)
    for event in speculate(target, proposer, prompt, cfg, pair.eos_ids):
        if hasattr(event, "committed"):
            assert draft.length <= draft.exact <= len(proposer.seq)
    alone = session.run(pair, prompt, cfg, speculative=False).token_ids
    assert proposer.seq[len(prompt):] == alone


@pytest.mark.parametrize("text", ["x = ", "x"])  # "x": one token, no target feature before the forced ones
def test_constrained_runs_stay_exact_and_valid(pair, text):
    constraint = compile_constraint(from_user(regex="id: [0-9]{2,5}-[a-z]{3}"), pair.tokenizer, pair.vocab,
                                    pair.eos_ids)
    prompt = pair.tokenizer(text).input_ids
    for temperature in (0.0, 1.0):
        cfg = session.spec_config(k=3, temperature=temperature, max_new_tokens=16)
        result = session.run(pair, prompt, cfg, constraint=constraint)
        assert result.valid and result.stats["proposed"] > 0, result.text
        if temperature == 0:
            assert result.token_ids == session.run(pair, prompt, cfg, speculative=False, constraint=constraint).token_ids


def test_loads_from_a_directory_and_stays_eager_under_compile(tmp_path, tokenizer, target):
    t_dir = tiny.save(target, tokenizer, tmp_path / "target")
    save_feature_draft(feature_draft(target, list(range(0, len(tokenizer), 3))), torch.arange(0, len(tokenizer), 3),
                       tmp_path / "draft")
    pair = models.load_pair(str(t_dir), str(tmp_path / "draft"), "cpu")
    assert pair.feature_draft and pair.draft.head.shape == (len(range(0, len(tokenizer), 3)), 64)
    prompt = tokenizer("class A:\n").input_ids
    cfg = session.spec_config(k=3, max_new_tokens=20, compile=True)
    assert not any(isinstance(r, StaticRunner) for r in session.choice.runners(pair, len(prompt), cfg))
    assert session.run(pair, prompt, cfg).token_ids == session.run(pair, prompt, cfg, speculative=False).token_ids
    out = compared_run(pair, prompt, cfg, baseline=False)  # the user is told, not left guessing
    assert "feature draft" in out["compile_note"] and "feature draft" in cli_report.format_text(out)
    alone = session.choice.runners(pair, len(prompt), cfg, speculative=False)[0]  # the comparison: eager against eager
    assert not isinstance(alone, StaticRunner) and session.compile_fallback(pair, cfg, speculative=False)


def test_the_draft_lives_as_long_as_its_target(tmp_path, tokenizer, target):
    """Kept on the target: loaded once per target, freed with it when the LRU evicts the target."""
    t_dir = tiny.save(target, tokenizer, tmp_path / "target")
    save_feature_draft(feature_draft(target, [0, 1, 2]), torch.tensor([0, 1, 2]), tmp_path / "draft")
    first = models.load_pair(str(t_dir), str(tmp_path / "draft"), "cpu")
    assert models.load_pair(str(t_dir), str(tmp_path / "draft"), "cpu").draft is first.draft
    gone = weakref.ref(first.draft)
    for key in [k for k in models.CACHE.entries if k[0] == str(t_dir)]:  # the LRU evicts the target
        models.CACHE.entries.pop(key)
    again = models.load_pair(str(t_dir), str(tmp_path / "draft"), "cpu")
    assert again.draft.target_embedding is again.target.get_input_embeddings()
    del first
    assert gone() is None


def test_refuses_a_target_of_another_width_and_prompt_lookup_cascades(tmp_path, tokenizer, target):
    save_feature_draft(feature_draft(target, [0, 1, 2]), torch.tensor([0, 1, 2]), tmp_path / "draft")
    wider = tiny.tiny_model("qwen2", vocab=len(tokenizer), hidden=96, eos_id=tokenizer.eos_token_id)
    t_dir = tiny.save(wider, tokenizer, tmp_path / "wide")
    with pytest.raises(PlaygroundError, match="features of width 64"):
        models.load_pair(str(t_dir), str(tmp_path / "draft"), "cpu")
    narrow = tiny.save(target, tokenizer, tmp_path / "narrow")
    with pytest.raises(PlaygroundError, match="without 'ngram\\+'"):
        models.load_pair(str(narrow), "ngram+" + str(tmp_path / "draft"), "cpu")


def test_compare_drafts_says_which_ways_a_feature_draft_cannot_draft(tmp_path, tokenizer, target):
    """Every default way of drafting on a feature draft: the cascade cannot run (prompt lookup's
    guesses have no target features) and says so in its row; the others are measured."""
    from playground.measure import sweeps
    t_dir = tiny.save(target, tokenizer, tmp_path / "target")
    save_feature_draft(feature_draft(target, list(range(0, len(tokenizer), 3))), torch.arange(0, len(tokenizer), 3),
                       tmp_path / "draft")
    encode = lambda pair, text: pair.tokenizer(text).input_ids  # noqa: E731
    rows = list(sweeps.compare_drafts(str(t_dir), str(tmp_path / "draft"), ["class A:\n"],
                                           session.spec_config(k=3, max_new_tokens=16), list(sweeps.VARIANTS), encode))[-1]
    by_name = {r["variant"]: r for r in rows}
    assert set(by_name) == set(sweeps.VARIANTS)
    cascade = by_name["cascade (lookup -> draft)"]
    assert cascade["speedup"] is None and cascade["note"] == (  # in this tab's words (no 'ngram+' was typed)
        f"not run: a cascade feeds prompt lookup's guesses to a token draft; '{tmp_path / 'draft'}' reads the target's features instead")
    assert all(r["tokens_per_s"] > 0 for name, r in by_name.items() if name != "cascade (lookup -> draft)")


@pytest.mark.parametrize("arch", ["cohere", "gemma2"])
def test_a_feature_drafts_target_gives_its_own_logits(arch):
    """The target of a feature draft keeps its decoder's hidden states; its logits are still the model's
    own (they were its head applied to those states: a model whose head scales them, Cohere's logit_scale,
    or caps them, Gemma-2's softcapping, sampled from another distribution than the target alone's)."""
    import transformers

    from playground.engine.runner import ModelRunner
    config = {"cohere": transformers.CohereConfig, "gemma2": transformers.Gemma2Config}[arch](
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=128, initializer_range=0.5)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.tensor([3, 9, 27, 5, 11])
    plain, kept = ModelRunner(model, 64), ModelRunner(model, 64, keep_hidden=True)
    with torch.inference_mode():
        expected, logits = plain.prefill(ids), kept.prefill(ids)
        hidden = model.get_decoder()(input_ids=ids[None]).last_hidden_state[0]
    assert torch.allclose(logits, expected, atol=1e-5)
    assert kept.hidden.shape == (5, 32) and torch.allclose(kept.hidden, hidden, atol=1e-5)


def test_a_runs_features_are_its_own_while_another_run_passes_the_same_model():
    """A Space review (PLAYGROUND_CONCURRENCY=2, two SmolLM2 runs at once): the hook that keeps a target's
    features was on the shared model, so another thread's pass wrote its own features into this run's
    (acceptance 0.32 alone, 0.31 beside another run; the texts still the target's). Here thread A is held
    after its decoder ran and before its hook is taken off, while thread B makes a whole pass."""
    import threading

    from playground.engine.runner import ModelRunner
    model = tiny.tiny_model(vocab=64)
    mine, other = torch.tensor([3, 9, 27, 5, 11]), torch.tensor([7, 7, 1, 2])
    with torch.inference_mode():
        alone = ModelRunner(model, 64, keep_hidden=True)
        alone.prefill(mine)
        expected = alone.hidden.clone()
    a, b = ModelRunner(model, 64, keep_hidden=True), ModelRunner(model, 64, keep_hidden=True)
    decoded, passed = threading.Event(), threading.Event()

    def hold_a(module, args):  # on the head: A's decoder (and its hook) has run, its hook is still on
        if threading.current_thread().name == "A" and not decoded.is_set():
            decoded.set()
            assert passed.wait(60)
    held = model.lm_head.register_forward_pre_hook(hold_a)

    def run_a():
        with torch.inference_mode():
            a.prefill(mine)

    def run_b():
        assert decoded.wait(60)
        with torch.inference_mode():
            b.prefill(other)
        passed.set()
    threads = [threading.Thread(target=run_a, name="A"), threading.Thread(target=run_b, name="B")]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        held.remove()
    assert passed.is_set() and a.hidden.shape == expected.shape and torch.equal(a.hidden, expected)
    assert b.hidden.shape[0] == len(other)


@pytest.mark.skipif(not row_products.wanted(), reason="the row kernel is built on Linux x86-64 with AVX2 and FMA only")
def test_a_float32_draft_takes_the_row_kernel_where_faster_and_stays_exact(tmp_path, tokenizer, target, monkeypatch):
    """Where row_products' kernel beats F.linear on this machine (timed at load) a float32 CPU draft's products, its
    head's too, go through it, on a CPU with native bf16 too: its guesses as near F.linear's as float32 rounding allows,
    speculation still the target alone; where it does not, the draft keeps F.linear (from packed weights where the CPU
    has native bf16)."""
    t_dir = tiny.save(target, tokenizer, tmp_path / "target")
    d2t = torch.arange(0, len(tokenizer), 2)
    save_feature_draft(feature_draft(target, d2t.tolist()), d2t, tmp_path / "draft")
    monkeypatch.setattr(row_products, "faster_than_plain", lambda weights, threads: False)
    plain = models.load_pair(str(t_dir), str(tmp_path / "draft"), "cpu").draft
    assert not plain.head_by_kernel and not any(getattr(m.__dict__.get("forward"), "func", None) is row_products.module_forward
                                                for m in plain.modules())
    assert (plain.packed_head is not None) == models.placement.native_bf16()  # (packed there where the kernel is not)
    models.CACHE.entries.clear()
    monkeypatch.setattr(row_products, "faster_than_plain", lambda weights, threads: row_products.kernel() is not None)
    timed = []  # whether its fc went through the kernel when its decode threads were timed
    real = models.fastest_decode_threads
    monkeypatch.setattr(models, "fastest_decode_threads", lambda model: (
        timed.append("forward" in getattr(model, "fc", torch.nn.Module()).__dict__), real(model))[1])
    pair = models.load_pair(str(t_dir), str(tmp_path / "draft"), "cpu")
    assert timed[-2:] == [False, True] if row_products.kernel() is not None else timed[-1:] == [False]  # timed again
    linears = [m for m in pair.draft.modules() if isinstance(m, torch.nn.Linear)]
    assert pair.draft.head_by_kernel == (row_products.kernel() is not None)
    assert linears and all(("forward" in m.__dict__ and m.forward.func is row_products.module_forward)
                           == pair.draft.head_by_kernel for m in linears)
    assert [not row_layers.uninstalled(layer) for layer in pair.draft.model.layers] == [pair.draft.head_by_kernel]  # C
    ids, features = torch.tensor([5, 9, 2]), torch.randn(3, target.config.hidden_size)
    with torch.inference_mode():
        by_kernel = pair.draft.step(ids, features, new_cache(pair.draft.config))
        by_plain = plain.step(ids, features, new_cache(plain.config))
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(by_kernel, by_plain))
    prompt = tokenizer("def parse(text):\n").input_ids
    cfg = session.spec_config(k=3, max_new_tokens=30)
    alone = session.run(pair, prompt, cfg, speculative=False).token_ids
    assert session.run(pair, prompt, cfg).token_ids == alone
    assert session.run(pair, prompt, session.spec_config(max_new_tokens=30, tree=(2, 2, 1))).token_ids == alone
