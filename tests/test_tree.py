"""Token trees (playground.engine.tree): the tree pass against each branch run alone, the cache
compacted to the accepted branch, greedy output identical to the target alone, and the sampling law
kept exactly (chi-square, with a broken rule the test must catch)."""
import json

import pytest
import torch

from playground import session
from playground.config import tree_nodes
from playground.constraints import from_user
from playground.engine import speculative
from playground.engine.runner import ModelRunner
from playground.engine.runner import tree_runs
from playground.engine.static import StaticRunner
from playground.engine.tree import TreeProposal, ancestors, depth_first, depths, verify_rows
from playground.engine.tree_verify import TreeVerdict, _normalized
from playground.errors import PlaygroundError
from playground.models import batch_invariant
from playground.models.batch_invariant import ATTENTION, ROW_INVARIANT, make_batch_invariant, tree_batches
from playground.models.placement import native_bf16
from playground.models.packed_linear import pack_linears
from tests import tiny
from tests.test_engine_sampling import (CASES, N_RUNS, P_MIN, PROMPT, chi_square_p, exact_joint,  # noqa: F401
                                        first_tokens_counts, small)

# root's children a, b; a has c, d; b has e; c has f: paths a-c-f, a-d, b-e
PARENTS = [-1, -1, 0, 0, 1, 2]
TOKENS = [40, 41, 50, 51, 52, 60]
BRANCHES = [[0, 2, 5], [0, 3], [1, 4]]
DEPTH_FIRST = ([-1, 0, 1, 0, -1, 4], [40, 50, 60, 51, 41, 52], [[0, 1, 2], [0, 3], [4, 5]])  # the same tree: a c f d b e


def test_tree_shape_helpers():
    assert depths(PARENTS) == [1, 1, 2, 2, 2, 3]
    assert ancestors(PARENTS)[5].nonzero().flatten().tolist() == [0, 2, 5]
    positions, visible = verify_rows(PARENTS, pending=2, cached=7)
    assert positions.tolist() == [7, 8, 9, 9, 10, 10, 10, 11]  # the root (the last pending token) is at 8
    assert visible.shape == (8, 15) and visible[:, :7].all()
    assert visible[0, 7:].tolist() == [True] + [False] * 7  # pending tokens: causal
    assert visible[7, 7:].tolist() == [True, True, True, False, True, False, False, True]  # f: pending, a, c, f
    assert tree_nodes((3, 2, 1)) == 15
    assert depth_first(PARENTS) == [0, 2, 5, 3, 1, 4]


def test_a_depth_first_tree_pass_runs_one_chain_per_branch():
    """The pending tokens and the first branch attend as one chain over the first keys (no copy);
    each other branch as one chain over its gathered keys."""
    _, visible = verify_rows(DEPTH_FIRST[0], pending=2, cached=7)
    runs = tree_runs(visible)
    assert [(start, end) for start, end, _ in runs] == [(0, 5), (5, 6), (6, 8)]
    assert runs[0][2] == 12
    assert runs[1][2].tolist() == list(range(10)) + [12]  # d: cached, pending, a, then d itself
    assert runs[2][2].tolist() == list(range(9)) + [13, 14]  # b, e
    assert len(tree_runs(verify_rows(PARENTS, pending=2, cached=7)[1])) == 6  # depth by depth: pending + a, then one node each


def test_the_runs_go_through_attention_as_padded_batches_of_chains(monkeypatch):
    """bfloat16 eager path: the runs as one batch, run b's rows and keys at the front of its slots,
    padded with its last row and key; each real row's mask is its chain's (future keys masked),
    padding keys masked. A first run much wider than the others (many pending or forced tokens)
    attends alone over the first keys; long contexts split the batch (KEY_SLOTS keys at most)."""
    _, visible = verify_rows(DEPTH_FIRST[0], pending=1, cached=7)
    (batch,) = tree_batches(tree_runs(visible), torch.bfloat16, "cpu")
    assert batch.rows.view(3, 4).tolist() == [[0, 1, 2, 3], [4] * 4, [5, 6, 6, 6]]  # root, a, c, f; d; b, e
    assert batch.out.tolist() == [0, 1, 2, 3, 4, 8, 9]
    assert batch.keys.view(3, 11).tolist() == [list(range(11)), list(range(9)) + [11, 11], list(range(8)) + [12, 13, 13]]
    seen = batch.mask[:, 0] == 0  # [runs, width, n]
    assert seen[0].sum(-1).tolist() == [8, 9, 10, 11]  # a chain over 11 keys
    assert seen[1].tolist() == [[True] * 10 + [False]] * 4  # d and its padding rows: d's 10 keys, the padded key masked
    assert seen[2, :2].sum(-1).tolist() == [9, 10]  # b, then e
    _, visible = verify_rows(DEPTH_FIRST[0], pending=5, cached=7)  # first run 5 + 3 rows, the others 1 and 2
    first, rest = tree_batches(tree_runs(visible), torch.bfloat16, "cpu")
    assert (first.start, first.end, first.keys) == (0, 8, 15) and rest.rows.view(2, 2).tolist() == [[8, 8], [9, 10]]
    monkeypatch.setattr(batch_invariant, "KEY_SLOTS", 16)
    assert [type(part).__name__ for part in tree_batches(tree_runs(visible), torch.bfloat16, "cpu")] == \
        ["FirstRun", "BranchBatch", "BranchBatch"]


def row_invariant_model(seed: int = 0, dtype=torch.float32, attention: str | None = None):
    """A tiny model on a batch-invariant path SmolLM2 takes on CPUs: float32 (packed products, each
    attention row alone), bfloat16 with native bf16 (eager attention, a tree's rows alone; packed
    products) or emulated (each attention row alone): rows do not depend on the pass's width."""
    model = tiny.tiny_model("llama", vocab=320, hidden=64, layers=2, seed=seed, init_std=0.3, dtype=dtype)
    model.set_attn_implementation(attention or (ROW_INVARIANT if dtype == torch.float32 else ATTENTION))
    if dtype == torch.float32 or native_bf16():
        pack_linears(model)
    return make_batch_invariant(model)


@pytest.mark.parametrize("pending", [1, 2, 5])  # 5: the first run goes alone (tree_batches)
@pytest.mark.parametrize("order", ["depth-first", "depth-by-depth"])
@pytest.mark.parametrize("kind", ["row-invariant", "bf16-eager", "bf16-row-invariant", "sdpa"])
def test_a_tree_pass_gives_each_branch_its_own_logits(kind, order, pending):
    """Every node's logits equal those of its branch run alone after the same cache: bitwise on
    the batch-invariant paths, to float rounding on transformers' attention."""
    model = {"row-invariant": row_invariant_model, "bf16-eager": lambda: row_invariant_model(dtype=torch.bfloat16),
             "bf16-row-invariant": lambda: row_invariant_model(dtype=torch.bfloat16, attention=ROW_INVARIANT),
             "sdpa": lambda: tiny.tiny_model("llama", vocab=320, seed=0, init_std=0.3)}[kind]()
    prompt = torch.tensor([5, 9, 17, 3, 22, 7, 30, 11])
    runner = ModelRunner(model, 320)
    parents, tokens, branches = DEPTH_FIRST if order == "depth-first" else (PARENTS, TOKENS, BRANCHES)
    with torch.inference_mode():
        runner.forward(prompt[:-pending], keep=1)
        positions, visible = verify_rows(parents, pending=pending, cached=runner.length)
        tree = runner.forward_tree(torch.cat([prompt[-pending:], torch.tensor(tokens)]), positions, visible)  # [p + 6, V]
        for branch in branches:
            alone = ModelRunner(model, 320)
            alone.forward(prompt[:-pending], keep=1)
            rows = [alone.forward(prompt[len(prompt) - pending + i:][:1], keep=1)[0] for i in range(pending)]
            rows += [alone.forward(torch.tensor([tokens[n]]), keep=1)[0] for n in branch]  # one token a pass
            want, got = torch.stack(rows), tree[list(range(pending)) + [pending + n for n in branch]]
            if kind != "sdpa":
                assert torch.equal(got, want), (got - want).abs().max()
            else:
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_the_cache_keeps_the_accepted_branch_only():
    """After a tree pass, keep() leaves the cache a branch run alone would have: same keys and
    values, and the same next logits."""
    model = row_invariant_model(seed=3)
    prompt = torch.tensor([5, 9, 17, 3, 22])
    runner, alone = ModelRunner(model, 320), ModelRunner(model, 320)
    with torch.inference_mode():
        runner.forward(prompt[:-1], keep=1)
        positions, visible = verify_rows(PARENTS, pending=1, cached=runner.length)
        runner.forward_tree(torch.cat([prompt[-1:], torch.tensor(TOKENS)]), positions, visible)
        start = len(prompt)
        runner.keep(start, [start + n for n in BRANCHES[0][:2]])  # a, c kept; b, d, e, f forgotten
        alone.forward(torch.cat([prompt, torch.tensor([TOKENS[0], TOKENS[2]])]), keep=1)
        assert runner.length == alone.length == start + 2
        for mine, theirs in zip(runner.cache.layers, alone.cache.layers):
            assert torch.equal(mine.keys, theirs.keys) and torch.equal(mine.values, theirs.values)
        nxt = torch.tensor([77])
        assert torch.equal(runner.forward(nxt, keep=1), alone.forward(nxt, keep=1))


@pytest.fixture(scope="module")
def pair():
    tok = tiny.byte_bpe_tokenizer(320)
    target = tiny.tiny_model("qwen2", vocab=len(tok), hidden=64, layers=2, seed=1, init_std=0.3)
    return tiny.make_pair(target, tiny.perturbed_copy(target, 0.05), tok), tok


@pytest.mark.parametrize("tree", [(1, 1, 1), (2,), (3, 2, 1), (2, 2, 2, 2), (4, 1, 1, 1, 1)])
def test_greedy_tree_output_is_the_target_alone(pair, tree):
    pair, tok = pair
    for text, n in (("def fib(n):", 40), ("import os\n", 7), ("x = ", 1)):
        prompt = tok(text).input_ids
        alone = session.run(pair, prompt, session.spec_config(max_new_tokens=n), speculative=False)
        result = session.run(pair, prompt, session.spec_config(max_new_tokens=n, tree=tree))
        assert result.token_ids == alone.token_ids
        trees = [r for r in result.rounds if r.tree is not None]  # a round with one token left drafts none
        assert trees == result.rounds[:len(trees)] and len(result.rounds) - len(trees) <= 1
        assert all(len(r.tree["tokens"]) <= tree_nodes(tree) and len(r.tree["path"]) == r.accepted for r in trees)
    assert result.stats["target_passes"] <= alone.stats["target_passes"]


def test_a_round_near_the_token_budget_drafts_no_deeper_than_it_can_keep(pair):
    """With b tokens left a round keeps at most b - 1 drafts and the target's token: its tree is cut
    to b - 1 levels (no draft passes or verified nodes past them; b = 1: no tree), and every
    round's drafts are judged, the target's token a bonus with no draft probability."""
    pair, tok = pair
    tree = (1, 1, 1, 1)
    prompt = tok("def fib(n):").input_ids
    full = session.run(pair, prompt, session.spec_config(max_new_tokens=40, tree=tree))
    before = next(i for i, r in enumerate(full.rounds) if r.accepted >= 3)  # start where a round keeps 3+ nodes
    ids = prompt + full.token_ids[:sum(len(r.committed) for r in full.rounds[:before])]
    for budget in (1, 2, 3, 4):
        result = session.run(pair, ids, session.spec_config(max_new_tokens=budget, tree=tree))
        alone = session.run(pair, ids, session.spec_config(max_new_tokens=budget), speculative=False)
        assert result.token_ids == alone.token_ids and len(result.rounds) == 1
        first = result.rounds[0]
        assert first.k == budget - 1 and first.draft_passes == budget - 1 and first.proposed == budget - 1
        assert [t.kind for t in first.tokens] == ["accepted"] * (budget - 1) + ["bonus"]
        assert all(t.p_draft for t in first.tokens[:-1]) and first.tokens[-1].p_draft is None
        if budget > 1:
            assert first.tree["tokens"] == full.token_ids[len(ids) - len(prompt):][:budget - 1]
            assert first.tree["path"] == list(range(budget - 1)) and result.stats["acceptance_rate"] == 1
        else:
            assert first.tree is None
        assert result.stats["theory_tokens_per_round"] is None  # a tree's (a one-token run said the chain's 1.0)
    for cfg in (dict(tree=(3, 3, 3), tree_budget=7), dict(tree=(2, 2), tree_lookup=4)):
        assert session.run(pair, ids, session.spec_config(max_new_tokens=1, **cfg)).stats["theory_tokens_per_round"] is None
    assert session.run(pair, ids, session.spec_config(max_new_tokens=1)).stats["theory_tokens_per_round"] == 1.0  # a chain's


def test_a_wide_tree_takes_more_tokens_per_pass_than_its_chain(pair):
    pair, tok = pair
    prompt = tok("def fib(n):").input_ids
    chain = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=60))
    tree = session.run(pair, prompt, session.spec_config(max_new_tokens=60, tree=(3, 2, 2)))
    assert tree.token_ids == chain.token_ids
    assert tree.stats["tokens_per_target_pass"] > chain.stats["tokens_per_target_pass"]


def test_a_trees_acceptance_counts_refusals_and_its_positions_are_its_levels(pair):
    """α (kept / judged) counted a tree round as a refusal whenever it kept fewer tokens than its
    nodes (every round: 0.72 where the events said 0.91), and the chart of acceptance by draft
    position drew a depth-3 tree's 21 nodes as 21 positions, 0 past the third (a correctness audit)."""
    from playground.events import ACCEPTED, CORRECTED
    from playground.ui.plots import position_counts
    pair, tok = pair
    result = session.run(pair, tok("def fib(n):").input_ids, session.spec_config(max_new_tokens=60, tree=(3, 2, 2)))
    kinds = [t.kind for r in result.rounds for t in r.tokens]
    assert any(r.accepted == 3 and not r.refused for r in result.rounds)  # a round walked to a leaf: nothing refused
    assert result.stats["token_acceptance"] == kinds.count(ACCEPTED) / (kinds.count(ACCEPTED) + kinds.count(CORRECTED))
    assert len(position_counts(result.rounds)) == 3 and max(r.depth for r in result.rounds) == 3
    chain = session.run(pair, tok("def fib(n):").input_ids, session.spec_config(k=3, max_new_tokens=60))
    assert sum(r.refused for r in chain.rounds) == sum(r.accepted < r.proposed for r in chain.rounds)  # a chain's as before


def test_a_trees_refused_siblings_are_each_judged_and_read_alone(pair):
    """A tree's refused tokens in a round are siblings, each judged in the same place: they kept their p_target
    and each reads after the kept text alone (read after the sibling before it: 'G' showed as '�G'; a review)."""
    import copy
    from playground.detok import with_text
    from playground.events import REJECTED
    pair, tok = pair
    result = session.run(pair, tok("def fib(n):").input_ids, session.spec_config(max_new_tokens=60, tree=(3, 2, 2)))
    siblings = [[t for t in r.tokens if t.kind == REJECTED] for r in result.rounds]
    assert any(len(refused) > 1 for refused in siblings)
    assert all(t.p_target is not None for refused in siblings for t in refused)
    reread = copy.deepcopy(result.rounds)  # the siblings in the other order: each reads as before
    for r in reread:
        refused = [t for t in r.tokens if t.kind == REJECTED][::-1]
        r.tokens = [t for t in r.tokens if t.kind != REJECTED][:r.accepted] + refused + r.tokens[r.accepted + len(refused):]
    reread = list(with_text(reread, tok, tok("def fib(n):").input_ids))
    texts = lambda rounds: [sorted((t.token_id, t.text) for t in r.tokens if t.kind == REJECTED) for r in rounds]  # noqa: E731
    assert texts(reread) == texts(result.rounds)



def test_a_tree_rounds_json_holds_every_node(pair):
    """A tree round's JSON (the download, generate --json, the web API) held only its kept path and the refused
    children judged: "proposed": 6 beside three tokens, the other drafts nowhere (a review of the API)."""
    from playground.events import ACCEPTED, REJECTED
    pair, tok = pair
    prompt = tok("def fib(n):").input_ids
    result = session.run(pair, prompt, session.spec_config(max_new_tokens=40, tree=(3, 2, 2)))
    rounds = json.loads(json.dumps(result.as_json()))["rounds"]
    drafted = [r for r in rounds if r["tree"]]
    assert drafted and any(len(r["tree"]["tokens"]) > len(r["tokens"]) for r in drafted)
    for r in drafted:
        tree = r["tree"]
        assert len(tree["tokens"]) == len(tree["parents"]) == len(tree["p_target"]) == len(tree["p_draft"]) == r["proposed"]
        assert [tree["tokens"][node] for node in tree["path"]] == [t["id"] for t in r["tokens"] if t["kind"] == ACCEPTED]
        refused = {t["id"] for t in r["tokens"] if t["kind"] == REJECTED}
        assert refused <= set(tree["tokens"]) and all(-1 <= parent < node for node, parent in enumerate(tree["parents"]))
    chain = session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=12)).as_json()
    assert all(r["tree"] is None for r in chain["rounds"])

def tree_counts(pair, tree: tuple, params: dict) -> dict:
    return first_tokens_counts(pair, 3, 3, tree=tree, **params)


@pytest.mark.parametrize("tree,case", [((3, 2), "plain"), ((2, 2, 2), "warped")])
def test_tree_sampling_matches_the_target(small, tree, case):  # noqa: F811
    tok, target, draft = small
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])  # no EOS: every run writes 3 tokens
    counts = tree_counts(pair, tree, CASES[case])
    assert chi_square_p(counts, exact_joint(target, 3, CASES[case]), N_RUNS) > P_MIN


def walk_without_residual(tree: TreeProposal, p: torch.Tensor, generator) -> TreeVerdict:
    """A broken rule: after a child is refused, the next child is judged against the same p
    (no residual), as a naive multi-candidate check would."""
    path, node = [], -1
    while True:
        kids, target = tree.children(node), p[node + 1]
        for child in kids:
            q = tree.probs[tree.q_row[child]]
            if torch.rand((), generator=generator) * q[tree.tokens[child]] < target[tree.tokens[child]]:
                path.append(child)
                node = child
                break
        else:
            race = torch.empty_like(target).exponential_(generator=generator)
            residual = _normalized((target - tree.probs[tree.q_row[kids[0]]]).clamp(min=0), target) if kids else target
            return TreeVerdict(path, int((residual / race).argmax()), kids)


def test_the_sampling_test_catches_a_broken_tree_rule(small, monkeypatch):  # noqa: F811
    tok, target, draft = small
    pair = tiny.make_pair(target, draft, tok, eos_ids=[])  # no EOS: every run writes 3 tokens
    monkeypatch.setattr(speculative, "walk_sampled", walk_without_residual)
    counts = tree_counts(pair, (3, 2), CASES["plain"])
    assert chi_square_p(counts, exact_joint(target, 3, CASES["plain"]), N_RUNS) < 1e-6


@pytest.mark.parametrize("tree,message", [((9,), "1 to 8 children"), ((8, 8), "at most 64"), ((), None)])
def test_tree_settings_are_checked(tree, message):
    if message is None:
        assert session.spec_config(tree=tree).tree == ()
        return
    with pytest.raises(PlaygroundError, match=message):
        session.spec_config(tree=tree)


def test_a_tree_under_compiled_passes_runs_eager_and_says_so(pair):
    """Compiled passes are the default with CUDA: a tree asked for with them runs eager (it was
    refused), the target alone beside it too, and the run says so."""
    pair, tok = pair
    prompt = tok("x = ").input_ids
    cfg = session.spec_config(tree=(2, 2), compile=True, max_new_tokens=12)
    assert session.compile_fallback(pair, cfg, prompt_len=len(prompt)).startswith("a token tree runs eager passes")
    assert not session.choice.fuses(pair, cfg, True, True, len(prompt))
    target, draft = session.choice.runners(pair, len(prompt), cfg)
    assert not isinstance(target, StaticRunner) and not isinstance(draft, StaticRunner)
    spec = session.run(pair, prompt, cfg)
    assert spec.token_ids == session.run(pair, prompt, cfg, speculative=False).token_ids
    assert any(r.tree for r in spec.rounds)


def test_a_tree_refuses_what_it_cannot_do_yet(pair):
    pair, tok = pair
    prompt = tok("x = ").input_ids
    with pytest.raises(PlaygroundError, match="fixed draft policy"):
        session.spec_config(tree=(2,), policy="schedule")
    lookup = tiny.make_pair(pair.target, None, tok)
    with pytest.raises(PlaygroundError, match="drafted by a draft model"):
        session.run(lookup, prompt, session.spec_config(tree=(2,)))
    with pytest.raises(PlaygroundError, match="drafted by a draft model"):
        session.run(lookup, prompt, session.spec_config(tree=(2,)), constraint=session.constrain(lookup, from_user(regex="[0-9]+")))
    windowed = tiny.tiny_model("qwen2", vocab=len(tok), seed=1, use_sliding_window=True, sliding_window=8,
                               layer_types=["sliding_attention", "full_attention"])
    for target, draft, name in ((windowed, pair.draft, "tiny-target"), (pair.target, windowed, "tiny-draft")):
        with pytest.raises(PlaygroundError, match=f"'{name}' has sliding-window layers.*use a chain"):
            session.run(tiny.make_pair(target, draft, tok), prompt, session.spec_config(tree=(2,)))


TREE_SCHEMA = json.dumps({"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 999},
                                                           "tags": {"type": "array", "items": {"enum": ["a", "bb"]}, "maxItems": 3}},
                          "required": ["id", "tags"], "additionalProperties": False})


@pytest.fixture(scope="module")
def closing_tree_pair():
    """A random pair biased to close JSON soon (tests.tiny.prefer_tokens), so outputs end in budget."""
    tok = tiny.byte_bpe_tokenizer(320)
    target = tiny.tiny_model("qwen2", vocab=len(tok), seed=41, eos_id=tok.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.3, seed=42)
    closing = tiny.closing_tokens(tok)
    return tiny.make_pair(tiny.prefer_tokens(target, closing, 0.6), tiny.prefer_tokens(draft, closing, 0.6), tok), tok


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("tree", [(2, 2, 1), (3, 1, 1, 1)])
def test_a_constrained_tree_is_the_constrained_target_alone(closing_tree_pair, backend, tree):
    """Every node drafted and verified under its own path's constraint state: greedy output equals
    the constrained target alone, valid; sampled outputs valid; forced tokens still shown."""
    pair, tok = closing_tree_pair
    for kind, text in (("json", TREE_SCHEMA), ("regex", "[a-z]{2,6}-[0-9]{2}")):
        constraint = session.constrain(pair, from_user(**{"schema" if kind == "json" else "regex": text}, backend=backend))
        prompt = tok("config = ").input_ids
        alone = session.run(pair, prompt, session.spec_config(max_new_tokens=60), speculative=False, constraint=constraint)
        result = session.run(pair, prompt, session.spec_config(max_new_tokens=60, tree=tree), constraint=constraint)
        assert result.token_ids == alone.token_ids and result.valid, (result.text, result.validation_error)
        assert any(r.tree for r in result.rounds)
        if kind == "json":
            assert any(t.kind == "forced" for r in result.rounds for t in r.tokens)
        for seed in (1, 2):
            sampled = session.run(pair, prompt, session.spec_config(max_new_tokens=60, tree=tree, temperature=1.0, seed=seed),
                                  constraint=constraint)
            assert sampled.valid, (sampled.text, sampled.validation_error)


def test_each_node_is_masked_by_its_own_paths_state(closing_tree_pair):
    """The guide's masks for a tree's nodes equal the masks of each branch consumed alone, and leave
    the state where it was."""
    pair, tok = closing_tree_pair
    constraint = session.constrain(pair, from_user(regex="(ab|cd)[0-9]{2}"))
    a, b, c, d = (tok.convert_tokens_to_ids(x) for x in "abcd")
    one, two = tok.convert_tokens_to_ids("1"), tok.convert_tokens_to_ids("2")
    paths = [[], [a], [a, b], [c], [c, d], [c, d, one], [a, b, two]]
    guide = constraint.guide(4)
    masks = guide.path_masks(paths)
    for path, mask in zip(paths, masks):
        alone = constraint.guide(len(path) + 2)
        for token in path:
            alone.next_mask()
            alone.consume_draft(token)
        assert torch.equal(alone.next_mask(), mask)
    assert torch.equal(guide.next_mask(), masks[0])  # the state is where it started
    allowed = lambda mask, t: bool((int(mask[t // 32]) >> (t % 32)) & 1)  # noqa: E731
    assert allowed(masks[1], b) and not allowed(masks[1], d) and allowed(masks[4], one) and not allowed(masks[3], b)


def test_constrained_tree_sampling_keeps_the_masked_target_law(tokenizer):
    """Thousands of seeded tree runs under [0-9]{2}: the joint law of the output is the target's
    renormalised over each state's mask (walked exactly by tests.test_constraints.masked_joint)."""
    from tests.test_constraints import masked_joint, sampled_counts
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), hidden=32, layers=1, seed=31,
                             eos_id=tokenizer.eos_token_id, init_std=0.3)
    draft = tiny.tiny_model("qwen2", vocab=len(tokenizer), hidden=32, layers=1, seed=32,
                            eos_id=tokenizer.eos_token_id, init_std=0.3)
    pair = tiny.make_pair(target, draft, tokenizer)
    constraint = session.constrain(pair, from_user(regex="[0-9]{2}"))
    prompt = tokenizer("n = ").input_ids
    expected = masked_joint(target, constraint, prompt, tokenizer.eos_token_id)
    counts, n = sampled_counts(pair, prompt, constraint, 2000, max_new_tokens=4, tree=(3, 2))
    assert set(counts) <= set(expected)
    assert chi_square_p(counts, expected, n) > 1e-3


@pytest.mark.parametrize("tree,budget", [((4, 4, 4, 4), 16), ((2, 2, 2), 5), ((8, 8), 64), ((1, 1, 1), 2), ((3,), 1),
                                         ((2, 2, 2), 10)])
def test_a_dynamic_tree_is_the_target_alone(pair, tree, budget):
    """EAGLE-2's dynamic tree: at most `budget` nodes, each with its parent, the likeliest paths
    grown; greedy output equals the target alone. A budget of all the nodes it grows (config.dynamic_nodes,
    the most a budget may ask) fills its rounds."""
    from playground.config import dynamic_nodes
    pair, tok = pair
    if budget == dynamic_nodes(tree):
        result = session.run(pair, tok("def fib(n):").input_ids, session.spec_config(max_new_tokens=40, tree=tree, tree_budget=budget))
        assert max(len(r.tree["tokens"]) for r in result.rounds if r.tree) == budget
    for text, n in (("def fib(n):", 40), ("import os\n", 7)):
        prompt = tok(text).input_ids
        alone = session.run(pair, prompt, session.spec_config(max_new_tokens=n), speculative=False)
        result = session.run(pair, prompt, session.spec_config(max_new_tokens=n, tree=tree, tree_budget=budget))
        assert result.token_ids == alone.token_ids
        for r in result.rounds[:-1] if result.rounds[-1].tree is None else result.rounds:  # one token left: no tree
            assert len(r.tree["tokens"]) <= budget and all(p < i for i, p in enumerate(r.tree["parents"]))
            assert max(depths(r.tree["parents"])) <= len(tree)


def test_dynamic_trees_keep_the_likeliest_nodes_with_their_ancestors():
    from playground.engine.tree_dynamic import best_nodes
    parents = [-1, -1, 0, 0, 1, 2]
    score = [0.6, 0.3, 0.5, 0.05, 0.29, 0.5]
    assert best_nodes(score, parents, 3) == [0, 2, 5]  # ties: the earlier drawn
    assert best_nodes(score, parents, 4) == [0, 1, 2, 5]
    assert best_nodes([0.5, 0.4, 0.9], [-1, -1, 1], 2) == [0]  # a child is never kept without its parent


def test_a_constrained_dynamic_tree_is_the_constrained_target_alone(closing_tree_pair):
    pair, tok = closing_tree_pair
    constraint = session.constrain(pair, from_user(schema=TREE_SCHEMA))
    prompt = tok("config = ").input_ids
    alone = session.run(pair, prompt, session.spec_config(max_new_tokens=60), speculative=False, constraint=constraint)
    result = session.run(pair, prompt, session.spec_config(max_new_tokens=60, tree=(3, 3, 3), tree_budget=7),
                         constraint=constraint)
    assert result.token_ids == alone.token_ids and result.valid


@pytest.mark.parametrize("text,message", [("4,4/0", "1 to 64 nodes"), ("4,4/65", "1 to 64 nodes"), ("/8", "children per depth"),
                                          ("4,4/x", "dynamic tree with its node"), ("4,4/12345", "at most 8 deep, 8 children a node, 64 nodes"),
                                          ("99999,99999", "at most 8 deep"),  # (said as bad syntax: "children per depth, e.g.")
                                          (",".join(["1"] * 21), "at most 8 deep"),  # (so were 21 ones: 41 characters)
                                          ("/99999", "needs its children per depth first"), ("1,2+12345", "lookup branch at most 8"),
                                          ("100,100", "1 to 8 children per node, 64 nodes at most, e.g. 3,2,1; got 100,100"),
                                          ("2,2/100", "1 to 64 nodes, got 100"),  # (100,100 was called bad syntax)
                                          ("2,2/7", "the dynamic tree 2,2 grows at most 6 nodes, so a budget of 7 is more "
                                                    "than it can verify: give 2,2/6 or less"),  # (ran at 6, said as 7)
                                          ("2,2,2/11", "2,2,2 grows at most 10 nodes"),  # (each depth grows its best 2
                                          ("4,4,4/37", "4,4,4 grows at most 36 nodes")])  # paths: not a static tree's 14, 84)
def test_dynamic_tree_settings_are_checked(text, message):
    from playground.config import tree_budget, tree_shape
    with pytest.raises(PlaygroundError, match=message):
        session.spec_config(tree=tree_shape(text), tree_budget=tree_budget(text))
    with pytest.raises(PlaygroundError, match="greedy"):
        session.spec_config(tree=(4, 4), tree_budget=8, temperature=0.7)
    assert (tree_shape("00002,2/00006"), tree_budget("00002,2/00006")) == ((2, 2), 6)  # within the bounds, as written


def test_a_tree_round_whose_kept_branch_ends_in_eos_counts_every_node():
    """A review: the last round of a tree run ending in EOS counted only its kept branch as proposed (3 of 10
    nodes), so the run's acceptance read higher than its nodes say: every node was verified in that pass."""
    tok = tiny.byte_bpe_tokenizer()
    target = tiny.tiny_model("qwen2", vocab=len(tok), seed=5, eos_id=tok.eos_token_id, init_std=0.3)
    draft = tiny.perturbed_copy(target, noise=0.1, seed=6)
    for model in (target, draft):
        tiny.prefer_tokens(model, [tok.eos_token_id], 1.5)
    pair = tiny.make_pair(target, draft, tok)
    result = session.run(pair, tok("def f(x):").input_ids, session.spec_config(max_new_tokens=60, tree=(2, 2, 1)))
    last = result.rounds[-1]
    assert result.finish_reason == "eos" and last.committed[-1].token_id == tok.eos_token_id
    assert last.accepted == len(last.committed) and last.tree is not None  # its kept branch ended in the EOS
    assert [r.proposed for r in result.rounds] == [len(r.tree["tokens"]) for r in result.rounds]
    assert result.stats["proposed"] == sum(len(r.tree["tokens"]) for r in result.rounds)
