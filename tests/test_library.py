"""The Python API as a library caller meets it (a review of it as one): the slips such a caller makes are said as
PlaygroundErrors naming the way, not raised from deep in the engine; what a caller finds in dir() and the tree's
text works as on the CLI."""
import numpy as np
import pytest
import torch

import playground
from playground import session
from playground.constraints import from_user
from playground.errors import PlaygroundError


@pytest.fixture(scope="module")
def demo():
    pair = session.load_pair("demo-target", "demo-draft")
    return pair, session.encode_prompt(pair, "def fib(n):\n"), session.spec_config(k=4, max_new_tokens=12)


def test_prompt_ids_as_a_tensor_or_an_array_run_as_the_list(demo):
    pair, ids, cfg = demo
    expected = session.run(pair, ids, cfg).token_ids
    assert len(expected) == 12
    assert session.run(pair, torch.tensor(ids), cfg).token_ids == expected  # (a RuntimeError: "Boolean value of
    assert session.run(pair, np.array(ids), cfg).token_ids == expected  # Tensor ... ambiguous")
    assert session.run(pair, tuple(ids), cfg, speculative=False).token_ids == expected  # greedy: the target alone's


@pytest.mark.parametrize("slip, said", [
    (lambda pair, ids, cfg: session.run(pair, "def fib(n):\n", cfg), "token ids, not text: encode text with session.encode_prompt"),
    (lambda pair, ids, cfg: session.run(pair, [ids], cfg), "a sequence of whole numbers (one prompt's token ids), got list"),
    (lambda pair, ids, cfg: session.run(pair, ids, {"k": 4}), "cfg must be a SpecConfig (session.spec_config(k=4, ...)), got dict"),
    (lambda pair, ids, cfg: session.constrain(pair, "[0-9]+"), "constrain takes a ConstraintSpec: playground.constraints.from_user"),
    (lambda pair, ids, cfg: session.run(pair, ids, cfg, constraint=from_user(regex="[a-z]+")),
     "run takes a constraint compiled for the pair: session.constrain(pair, spec)"),
    (lambda pair, ids, cfg: list(session.generate(pair, ids, cfg, guide=session.constrain(pair, from_user(regex="[a-z]+")))),
     "generate takes the constraint's guide: session.new_guide(constraint, cfg)"),
    (lambda pair, ids, cfg: session.load_pair("demo-target", None), "for the target alone, load any pair and run it with speculative=False"),
])
def test_a_library_callers_slips_are_said_with_the_way(demo, slip, said):
    """Each raised a TypeError, an AttributeError or a RuntimeError from inside the engine (a review)."""
    with pytest.raises(PlaygroundError) as refused:
        slip(*demo)
    assert said in str(refused.value)


def test_a_constraint_compiled_for_another_pair_is_refused_before_the_run(demo, saved_pair):
    """It ran, and failed mid-run: 'The size of tensor a (4096) must match the size of tensor b (49152)'."""
    pair, ids, cfg = demo
    other = session.load_pair(*map(str, saved_pair))
    constraint = session.constrain(pair, from_user(regex="[a-z]+"))
    for run in (lambda: session.run(other, [1, 2, 3], cfg, constraint=constraint),
                lambda: next(iter(session.generate(other, [1, 2, 3], cfg, guide=session.new_guide(constraint, cfg))))):
        with pytest.raises(PlaygroundError, match=rf"compiled for another tokenizer \(4096 tokens, this pair's {other.vocab}\)"):
            run()
    streamed = session.new_guide(constraint, cfg)  # the streaming recipe the README gives, its validity judged
    events = list(session.generate(pair, ids, cfg, guide=streamed))
    assert session.collect(pair, events, constraint=constraint, guide=streamed, prompt_ids=ids).valid is not None


def test_a_token_trees_text_reads_as_on_the_cli_and_the_lazy_names_are_listed():
    cfg = session.spec_config(tree="2,2/3+1")  # (read as the tuple ('2', ',', '2', ...) and refused in its words)
    assert (cfg.tree, cfg.tree_budget, cfg.tree_lookup) == ((2, 2), 3, 1)
    assert {"generate", "load_pair"} <= set(dir(playground))  # (a lazy module attribute: missing from completion)


def test_a_library_caller_gets_the_measured_speedup_and_the_identity_as_the_cli_does(demo):
    """The speedup, its interval and the identity with the target alone were the CLI's alone (cli.generate_report)."""
    from playground.measure.compared import compared_run
    pair, ids, cfg = demo
    out = compared_run(pair, np.array(ids), cfg)
    assert out["identical_to_baseline"] is True and out["first_difference"] is None  # greedy: the target's tokens
    assert out["token_ids"] == out["baseline"]["token_ids"] == session.run(pair, ids, cfg).token_ids
    measured = out["speedup_measure"]
    assert measured["blocks"] >= 1 and measured["low"] <= measured["estimate"] <= measured["high"]
    assert out["speedup"] is None or out["speedup"] == measured["speedup"]  # (null where too noisy for one number)
