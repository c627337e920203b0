"""The fused round (playground.engine.fused: the draft's k steps and the verify pass with the
acceptance rule as two device programs, captured as CUDA graphs on a GPU) keeps every promise of the
engine. Here the same programs run without capture on this CPU (session.choice.FUSED_DEVICES); the
tests marked `gpu` run them captured on CUDA (scripts/gpu_check.py runs those)."""
import pytest
import torch

from playground import session
from playground.engine import fused
from playground.engine.verify import accept_sampled
from tests import tiny
from tests.test_engine_greedy import NO_EOS, PROMPT, hf_greedy
from tests.test_engine_sampling import N_RUNS, P_MIN, PROMPT as SAMPLING_PROMPT, chi_square_p, exact_joint


@pytest.fixture(autouse=True)
def fused_on_cpu(monkeypatch):
    monkeypatch.setattr(session.choice, "FUSED_DEVICES", {"cpu", "cuda"})


def compiled(k: int, max_new_tokens: int, **kw):
    return session.spec_config(k=k, max_new_tokens=max_new_tokens, compile=True, **kw)


def rounds_fused(pair, prompt, cfg, speculative=True) -> bool:
    return session.choice.fuses(pair, cfg, speculative, True, len(prompt))


def test_the_fused_target_alone_says_it_replays_the_verify_pass(tokenizer):
    """Fused, the target alone replays the k+1-token verify pass per token (0.94-0.96x one-token passes on an H200):
    its speedup says so (the card said only "over the target alone"; a maths review)."""
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id)
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, noise=0.4, seed=3), tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    alone = lambda cfg, guide=None: list(session.generate(pair, prompt, cfg, False, guide))  # noqa: E731  (its events)
    form = session.baseline_form(pair, compiled(3, 8), alone(compiled(3, 8)))
    assert form.startswith("the target alone replays verification's 4-token pass for each token")
    assert session.baseline_form(pair, session.spec_config(k=3), alone(session.spec_config(k=3))) == ""  # one-token passes


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_greedy_identity_fused(arch, tokenizer):
    target = tiny.tiny_model(arch, vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3)
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    expected = hf_greedy(target, prompt, 37, eos_id=NO_EOS)  # 37: the last round is cut by the budget
    for k in (1, 3, 5):
        assert rounds_fused(pair, prompt, compiled(k, 37))
        result = session.run(pair, prompt, compiled(k, 37))
        assert result.token_ids == expected, (arch, k)
        assert 0 < result.stats["accepted"] < result.stats["proposed"]  # drafts were judged, some refused
    alone = session.run(pair, prompt, compiled(3, 37), speculative=False)
    assert alone.token_ids == expected and alone.stats["proposed"] == 0


def test_adaptive_k_fused(target, noisy_draft, tokenizer):
    """The schedule policy drafts k' <= k tokens into programs made for k: only k' are judged."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    result = session.run(pair, prompt, compiled(6, 40, policy="schedule"))
    assert result.token_ids == hf_greedy(target, prompt, 40, eos_id=NO_EOS)
    asked = {r.k for r in result.rounds}
    assert len(asked) > 1 and max(r.proposed for r in result.rounds) <= 6
    assert all(r.proposed <= r.k for r in result.rounds)


class Scripted:
    """A draft-length policy that asks for these k, in order (then the last)."""

    def __init__(self, ks):
        self.ks = list(ks)

    def next_k(self) -> int:
        return self.ks.pop(0) if len(self.ks) > 1 else self.ks[0]

    def observe(self, proposed: int, accepted: int, cost=None) -> None:
        pass


@pytest.mark.parametrize("fused_rounds", [True, False])
def test_rounds_without_drafting_keep_the_drafts_cache(fused_rounds, target, tokenizer, monkeypatch):
    """Paused rounds (k=0) commit the target's token without the draft; the next round that drafts
    feeds the draft what it missed first (fused: one padded catch-up pass). A draft equal to the
    target then guesses every token right: a draft cache left behind would guess from a stale context."""
    from playground.engine import speculative
    if not fused_rounds:
        monkeypatch.setattr(session.choice, "FUSED_DEVICES", set())
    script = [2, 0, 0, 0, 2, 0, 3] + [0] * (fused.CATCH_UP + 3) + [3, 0, 1, 2]
    monkeypatch.setattr(speculative, "make_schedule", lambda policy, k: Scripted(script))
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, noise=0.0), tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    cfg = compiled(3, 44, policy="schedule")
    assert rounds_fused(pair, prompt, cfg) == fused_rounds
    result = session.run(pair, prompt, cfg)
    assert result.token_ids == hf_greedy(target, prompt, 44, eos_id=NO_EOS)
    ks = [r.k for r in result.rounds]
    assert ks[:len(script)] == script[:len(ks)] and ks.count(0) > fused.CATCH_UP  # a pause longer than one catch-up pass
    drafted = [r for r in result.rounds if r.k]
    assert all(r.accepted == r.proposed == r.k for r in drafted), [(r.k, r.proposed, r.accepted) for r in drafted]
    if fused_rounds:  # each drafting round after p paused ones first feeds them, CATCH_UP a pass
        paused, catch_ups = 0, 0
        for r in result.rounds:
            catch_ups += -(-paused // fused.CATCH_UP) if r.k else 0
            paused = paused + 1 if not r.k else 0
        assert sum(r.draft_passes for r in drafted) == sum(r.k for r in drafted) + catch_ups and catch_ups >= 4


def test_greedy_rounds_show_the_probabilities_the_plain_rounds_show(target, noisy_draft, tokenizer, monkeypatch):
    """Greedy fused rounds take the probabilities shown beside each token (the target's p and the
    draft's q, at the drafts and at the target's own next token) from logits at those entries alone,
    not from a whole softmax per row: they are the plain rounds' softmax values."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    cfg = compiled(4, 40)
    assert rounds_fused(pair, prompt, cfg)
    fused_tokens = [t for r in session.run(pair, prompt, cfg).rounds for t in r.tokens]
    monkeypatch.setattr(session.choice, "FUSED_DEVICES", set())
    assert not rounds_fused(pair, prompt, cfg)
    plain_tokens = [t for r in session.run(pair, prompt, cfg).rounds for t in r.tokens]
    assert [(t.kind, t.token_id) for t in fused_tokens] == [(t.kind, t.token_id) for t in plain_tokens]
    for name in ("p_target", "p_draft"):
        fused_p, plain_p = ([getattr(t, name) for t in tokens] for tokens in (fused_tokens, plain_tokens))
        assert [p is None for p in fused_p] == [p is None for p in plain_p]
        shown = [(a, b) for a, b in zip(fused_p, plain_p) if b is not None]
        assert len(shown) > 10 and len({round(b, 6) for _, b in shown}) > 5, (name, shown)  # varied, not all 1
        assert [a for a, _ in shown] == pytest.approx([b for _, b in shown], rel=1e-5, abs=1e-7), name
    kinds = {t.kind for t in fused_tokens}
    assert {"accepted", "rejected", "corrected"} <= kinds, kinds


def test_eos_inside_a_round_fused(target, noisy_draft, tokenizer):
    prompt = tokenizer(PROMPT).input_ids
    free = hf_greedy(target, prompt, 30, eos_id=NO_EOS)
    eos = free[6]
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[eos])
    for k in (3, 4):
        result = session.run(pair, prompt, compiled(k, 30))
        assert result.token_ids == hf_greedy(target, prompt, 30, eos_id=eos) and result.finish_reason == "eos"


def test_reduced_vocabulary_draft_fused(target, tokenizer):
    """A draft predicting only some tokens (SmolLM2's drafts): its ids are mapped in the programs."""
    keep = torch.arange(0, len(tokenizer), 2)  # every other token
    draft = tiny.tiny_model(vocab=len(keep) + 1, seed=4)
    draft.playground_vocab_map = keep
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    result = session.run(pair, prompt, compiled(3, 24))
    assert result.token_ids == hf_greedy(target, prompt, 24, eos_id=NO_EOS)
    drafted = [t.token_id for r in result.rounds for t in r.tokens if t.kind in ("accepted", "rejected")]
    assert drafted and all(t % 2 == 0 for t in drafted)


@pytest.fixture(scope="module")
def letters():
    tok = tiny.letters_tokenizer(12)
    target = tiny.tiny_model("qwen2", vocab=12, hidden=32, layers=1, seed=21, eos_id=11, init_std=0.6)
    draft = tiny.tiny_model("qwen2", vocab=12, hidden=32, layers=1, seed=22, eos_id=11, init_std=0.6)
    return tok, target, draft


def sampled_counts(pair, k: int, params: dict, speculative: bool = True) -> dict:
    counts = {}
    for seed in range(N_RUNS):
        ids = tuple(session.run(pair, SAMPLING_PROMPT, compiled(k, 3, seed=seed, **params), speculative).token_ids)
        counts[ids] = counts.get(ids, 0) + 1
    return counts


@pytest.mark.parametrize("params", [dict(temperature=1.0), dict(temperature=0.7, top_k=6, top_p=0.9)])
def test_sampling_distribution_fused(letters, params):
    tok, target, draft = letters
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    assert rounds_fused(pair, SAMPLING_PROMPT, compiled(2, 3, **params))
    full = dict(temperature=1.0, top_k=0, top_p=1.0) | params
    assert chi_square_p(sampled_counts(pair, 2, params), exact_joint(target, 3, full), N_RUNS) > P_MIN


def test_a_new_temperature_replays_the_same_programs_with_its_own_law(letters):
    """Temperature and top-p are device buffers: a run at 1.3 then one at 0.7 (same top-k, top-p cutting)
    share one program set (on a GPU: no capture for a new value), and the second samples at 0.7."""
    tok, target, draft = letters
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    session.run(pair, SAMPLING_PROMPT, compiled(2, 3, temperature=1.3, top_k=6, top_p=0.8))
    made = {key: id(p) for key, p in pair.programs.items()}
    warped = dict(temperature=0.7, top_k=6, top_p=0.9)
    assert chi_square_p(sampled_counts(pair, 2, warped), exact_joint(target, 3, warped), N_RUNS) > P_MIN
    assert {key: id(p) for key, p in pair.programs.items()} == made


def test_sampling_target_alone_fused(letters):
    tok, target, draft = letters
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    params = dict(temperature=1.0, top_k=0, top_p=1.0)
    counts = sampled_counts(pair, 2, dict(temperature=1.0), speculative=False)
    assert chi_square_p(counts, exact_joint(target, 3, params), N_RUNS) > P_MIN


def test_a_broken_fused_rule_is_caught(letters, monkeypatch):
    """Negative control: the fused rule with its uniform noise at 0 accepts every draft the target
    allows (the draft's distribution, not the target's), and the same chi-square test rejects it."""
    def accepts_all(p, q, x, u, race, limit=None):
        return accept_sampled(p, q, x, torch.zeros_like(u), race, limit)
    monkeypatch.setattr(fused, "accept_sampled", accepts_all)
    tok, target, draft = letters
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])
    params = dict(temperature=1.0, top_k=0, top_p=1.0)
    assert chi_square_p(sampled_counts(pair, 2, dict(temperature=1.0)), exact_joint(target, 3, params), N_RUNS) < P_MIN


def test_one_host_sync_per_round(target, noisy_draft, tokenizer, monkeypatch):
    """A fused round reads the device once: every host read of a tensor (.tolist, .item, bool, int)
    after the prefill is counted, and there is one per round (the report)."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    cfg = compiled(4, 30)
    session.compile_graphs(pair, len(prompt), cfg)
    reads = []
    for name in ("tolist", "item", "__bool__", "__int__", "__float__", "__index__"):
        original = getattr(torch.Tensor, name)
        def counted(self, *a, _original=original, _name=name, **kw):
            reads.append(_name)
            return _original(self, *a, **kw)
        monkeypatch.setattr(torch.Tensor, name, counted)
    events = session.generate(pair, prompt, cfg)
    next(events)  # the prefill (eager passes, whose mask code may read the device)
    reads.clear()
    rounds = sum(1 for _ in events)
    monkeypatch.undo()
    assert rounds > 3 and reads == ["tolist"] * rounds, reads


def test_programs_are_kept_per_pair(target, noisy_draft, tokenizer):
    """A second run, of another prompt length and budget, makes no program and compiles nothing."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    ids = tokenizer(PROMPT).input_ids
    session.run(pair, ids, compiled(3, 20))
    made = {key: id(p) for key, p in pair.programs.items()}
    graphs = dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs")
    assert isinstance(graphs, int) and graphs > 0  # (dynamo's counter by this name: None == None held nothing)
    assert session.compile_graphs(pair, len(ids) - 5, compiled(3, 50)) == 0.0
    session.run(pair, ids[:-5], compiled(3, 50))
    assert {key: id(p) for key, p in pair.programs.items()} == made
    assert dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") == graphs


def test_concurrent_runs_do_not_share_a_cache(target, noisy_draft, tokenizer):
    """While one run holds a model's persistent cache, a second runs eager on its own; both right."""
    pair = tiny.make_pair(target, noisy_draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    expected = hf_greedy(target, prompt, 16, eos_id=NO_EOS)
    first = session.generate(pair, prompt, compiled(2, 16))
    head = [next(first), next(first)]
    second = session.run(pair, prompt, compiled(2, 16))
    rest = list(first)
    ids = [t.token_id for e in head[1:] + rest for t in e.committed]
    assert ids == expected and second.token_ids == expected


class StubPass:
    """A model pass stand-in of pure tensor work: logits from a fixed table, the pointer advanced."""

    def __init__(self, vocab: int, seed: int):
        self.vocab, self.device = vocab, torch.device("cpu")
        with torch.inference_mode():
            self.cache = type("Cache", (), {"pointer": torch.zeros((), dtype=torch.long)})()
            self.table = torch.randn(vocab, vocab, generator=torch.Generator().manual_seed(seed)) * 3

    def __call__(self, ids: torch.Tensor, keep: int) -> torch.Tensor:
        self.cache.pointer.add_(ids.shape[0])
        return self.table[ids][-keep:]  # [keep, V]


class HostReads(torch.utils._python_dispatch.TorchDispatchMode):
    """Fails on any operator that reads a tensor's value back to the host (forbidden while a CUDA
    graph is captured; t[i] with a 0-d index tensor is one)."""
    FORBIDDEN = {"aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero",
                 "aten::masked_select", "aten::equal"}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        assert func._schema.name not in self.FORBIDDEN, f"{func._schema.name} reads the device inside a program"
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("sampling", [dict(temperature=0.0), dict(temperature=0.8, top_k=5, top_p=0.9)])
@pytest.mark.parametrize("with_draft", [True, False])
def test_programs_never_read_the_device(sampling, with_draft):
    """Everything the captured programs run besides the model passes (drafting, the acceptance rule,
    the report) stays on the device: CUDA graph capture would fail on a host read."""
    from playground.config import SamplingParams
    params = SamplingParams(**sampling)
    programs = fused.Programs(StubPass(40, 1), StubPass(40, 2) if with_draft else None, 3, params, capture=False)
    programs.set_meta(7, 8, 8, 2, 5, 6)
    if not params.greedy:
        programs.draw_noise(torch.Generator().manual_seed(0))
    with torch.inference_mode(), HostReads():
        if with_draft:
            programs.drafting(3)()
            programs.drafting(2)()
        report = programs.verifying()()
    assert report.shape == (3 * 3 + 4 if with_draft else 2 * 3 + 3,)
    n = int(report[0])
    assert 0 <= n <= (2 if with_draft else 0)  # k' = 2 of k = 3 judged
