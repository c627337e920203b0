"""Prompt-lookup branches on token trees (playground.engine.tree_lookup): the graft follows the
draft's own nodes and hangs the rest as one branch; greedy output stays the target alone's (static
and dynamic trees, constrained too); looked-up nodes do get accepted; the settings are checked."""
import pytest
import torch

from playground import session
from playground.config import tree_fields, tree_text
from playground.constraints import from_user
from playground.engine.tree import TreeProposal
from playground.engine.tree_lookup import graft
from playground.errors import PlaygroundError
from playground.ui.tree_view import tree_view
from tests import tiny
from tests.test_tree import TREE_SCHEMA, closing_tree_pair, pair  # noqa: F401

# the drafted tree: a (c, d), b; numbered depth first: a=0, c=1, d=2, b=3
DRAFTED = TreeProposal([40, 50, 51, 41], [-1, 0, 0, -1], torch.zeros(2, 8), [0, 1, 1, 0], passes=2)


def test_the_guess_follows_drafted_nodes_then_hangs_as_a_branch():
    tree, renumber = graft(DRAFTED, [40, 51, 60, 61])  # a, d drafted; 60, 61 new under d
    assert tree.tokens == [40, 50, 51, 60, 61, 41] and tree.parents == [-1, 0, 0, 2, 3, -1]
    assert tree.q_row == [0, 1, 1, -1, -1, 0]  # looked-up nodes have no draft probability
    assert renumber == {0: 0, 1: 1, 2: 2, 3: 5}
    tree, renumber = graft(DRAFTED, [42, 50])  # nothing drafted matches: a third branch from the root
    assert tree.tokens == [40, 50, 51, 41, 42, 50] and tree.parents == [-1, 0, 0, -1, -1, 4]
    assert renumber == {0: 0, 1: 1, 2: 2, 3: 3}
    tree, _ = graft(DRAFTED, [40, 50])  # all drafted: the tree is unchanged
    assert (tree.tokens, tree.parents) == (DRAFTED.tokens, DRAFTED.parents)


@pytest.fixture(scope="module")
def cycling_pair():
    """A target whose attention writes nothing (o_proj zero): each token is a function of the one
    before, so its greedy output soon cycles and prompt lookup finds what comes next; the draft is an
    unrelated random model, so the looked-up branch is what gets accepted."""
    tok = tiny.byte_bpe_tokenizer(320)
    target = tiny.tiny_model("qwen2", vocab=len(tok), seed=3, init_std=0.3)
    with torch.no_grad():
        for layer in target.model.layers:
            layer.self_attn.o_proj.weight.zero_()
    return tiny.make_pair(target, tiny.tiny_model("qwen2", vocab=len(tok), seed=7, init_std=0.3), tok, eos_ids=[]), tok


@pytest.mark.parametrize("text", ["1,1,1+3", "2,2+4", "2,2,2/5+3", "1+8"])
def test_a_tree_with_a_lookup_branch_is_the_target_alone(pair, cycling_pair, text):  # noqa: F811
    for (model_pair, tok), n in ((pair, 40), (cycling_pair, 60)):
        prompt = tok("def fib(n):").input_ids
        alone = session.run(model_pair, prompt, session.spec_config(max_new_tokens=n), speculative=False)
        result = session.run(model_pair, prompt, session.spec_config(max_new_tokens=n, **tree_fields(text)))
        assert result.token_ids == alone.token_ids
    looked_up = [n for r in result.rounds if r.tree for n in r.tree["path"] if r.tree["p_draft"][n] is None]  # nobody drafted them
    plain = session.run(model_pair, prompt, session.spec_config(max_new_tokens=n, **tree_fields(text.partition("+")[0])))
    assert len(looked_up) > 10
    assert "prompt lookup (not drafted)" in tree_view(result.rounds)  # the Tree tab's hover on the last rounds
    assert result.stats["tokens_per_target_pass"] > plain.stats["tokens_per_target_pass"]


def test_a_constrained_tree_with_a_lookup_branch_is_the_constrained_target_alone(closing_tree_pair):  # noqa: F811
    pair, tok = closing_tree_pair
    constraint = session.constrain(pair, from_user(schema=TREE_SCHEMA))
    prompt = tok('config = {"id": 12, "name": "ab"}\nconfig = ').input_ids
    alone = session.run(pair, prompt, session.spec_config(max_new_tokens=60), speculative=False, constraint=constraint)
    result = session.run(pair, prompt, session.spec_config(max_new_tokens=60, **tree_fields("2,2+4")), constraint=constraint)
    assert result.token_ids == alone.token_ids and result.valid


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_guess_is_cut_where_the_constraint_stops_allowing_it(closing_tree_pair, backend):  # noqa: F811
    """Guide.allowed_path: the longest allowed prefix (an EOS ends it), the matcher left as it was."""
    pair, tok = closing_tree_pair
    guide = session.constrain(pair, from_user(regex="[a-z]{2,6}-[0-9]{2}", backend=backend)).guide(2)
    before = guide.path_masks([[]])
    good, eos = tok("ab-12").input_ids, tok.eos_token_id
    assert guide.allowed_path(good) == good
    assert guide.allowed_path(good[:-1] + tok("x").input_ids + good) == good[:-1]  # a letter where a digit must be
    assert guide.allowed_path(good + [eos] + good) == good + [eos]  # nothing after the end
    assert guide.allowed_path([eos]) == [] and guide.allowed_path([]) == []  # an empty match is not allowed
    assert guide.allowed_path([pair.vocab + 5]) == []
    assert torch.equal(guide.path_masks([[]]), before)


@pytest.mark.parametrize("text,message", [("2,2+0", "1 to 8 tokens"), ("2,2+9", "1 to 8 tokens"), ("8,7+8", "64 nodes"),
                                          ("+3", "children per depth first"), ("2+x", "looked-up tokens"),
                                          ("2+3/4", "looked-up tokens"), ("2,2+\u00b2", "looked-up tokens"),
                                          ("2,2+\u0663", "looked-up tokens")])
def test_lookup_branch_settings_are_checked(text, message):
    with pytest.raises(PlaygroundError, match=message):
        session.spec_config(**tree_fields(text))


def test_a_budget_or_a_lookup_branch_needs_a_tree():
    for fields in ({"tree_lookup": 3}, {"tree_budget": 5}, {"tree_lookup": -1}):
        with pytest.raises(PlaygroundError, match="needs a tree's children per depth"):
            session.spec_config(**fields)


def test_a_lookup_branch_is_greedy_only_and_its_text_round_trips():
    with pytest.raises(PlaygroundError, match="greedy"):
        session.spec_config(temperature=0.7, **tree_fields("2,2+3"))
    for text in ("2,2+3", "4,4,4/12+2", "1,2,1,1", "3/2"):
        assert tree_text(session.spec_config(**tree_fields(text))) == text
