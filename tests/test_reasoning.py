"""Think first, then answer under the constraint (playground.constraints.reasoning): the end marker
found when split over tokens, never finished inside a token, rollback across it, the thinking
budget forcing it, speculation across it identical to the target alone, and validity judged on the
answer alone; with both backends and tiny models whose tokenizer has think tokens."""
import json

import pytest
import torch

from playground import session
from playground.constraints import ConstraintSpec
from playground.constraints.guide import Guide
from playground.constraints.reasoning import MARKER, ThinkingMatcher, thinking_tables
from playground.errors import PlaygroundError
from playground.events import FORCED, REJECTED
from tests import tiny

BACKENDS = ["llguidance", "xgrammar"]
SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}},
                     "required": ["a"], "additionalProperties": False})
# token ids of a made-up vocabulary, to follow the marker's bytes exactly
PIECES = [b"</", b"think", b">", b"</think>", b"k>\n", b"x", b"<", b"/thin", b"k", b">{", b"{", b"<<", b"/", b"think>",
          b"t", b"h", b"i", b"n"]
ID = {piece: i for i, piece in enumerate(PIECES)}
EOS = len(PIECES)  # one more id, the end of sequence


def ids(*pieces: bytes) -> list[int]:
    return [ID[p] for p in pieces]


@pytest.fixture(scope="module")
def tables():
    def encode(text: str) -> list[int]:  # the longest piece first, as a tokenizer would
        out, data = [], text.encode()
        while data:
            piece = max((p for p in PIECES if data.startswith(p)), key=len)
            out.append(ID[piece])
            data = data[len(piece):]
        return out
    return thinking_tables(PIECES + [b""], encode, vocab=EOS + 1, eos_ids=frozenset({EOS}))


def allowed(t, state: int, token: int) -> bool:
    return bool((int(t.masks[state, token // 32]) >> (token % 32)) & 1)


def test_the_marker_is_found_whole_or_split_over_tokens(tables):
    assert tables.answer_start(ids(b"x", b"</think>", b"{")) == 2
    assert tables.answer_start(ids(b"</", b"think", b">", b"{")) == 3
    assert tables.answer_start(ids(b"<", b"/thin", b"k", b">{")) is None  # '>{' would finish it inside a token
    assert tables.answer_start(ids(b"<<", b"/", b"think>")) == 3  # overlapping starts: '<</think>'
    assert tables.answer_start(ids(b"</", b"x", b"think", b">")) is None  # broken by an x: still thinking
    assert tables.answer_start(ids(b"x", b"k", b">")) is None


def test_thinking_masks_forbid_eos_and_finishing_the_marker_inside_a_token(tables):
    for state in (0, 6):  # automaton states: nothing matched, '</thin' matched
        assert not allowed(tables, state, EOS)  # no end of output before the answer
        assert allowed(tables, state, ID[b"x"]) and allowed(tables, state, ID[b"</think>"])
    assert not allowed(tables, 6, ID[b"k>\n"]) and allowed(tables, 0, ID[b"k>\n"]) and allowed(tables, 7, ID[b"k>\n"])
    assert allowed(tables, 6, ID[b"k"]) and tables.step(6, ID[b"k"]) == 7 and tables.step(7, ID[b">"]) == len(MARKER)
    assert tables.finish == (ID[b"</think>"],)  # forced from any state, '</thin' included: '</thin</think>'
    assert tables.answer_start(ids(b"</", b"t", b"h", b"i", b"n", b"</think>")) == 6


@pytest.fixture(scope="module")
def think_tokenizer():
    tok = tiny.byte_bpe_tokenizer()
    tok.add_tokens(["<think>", MARKER])
    return tok


def thinking_pair(tok, end_bias: float, seed: int = 41):
    """A random pair biased towards closing JSON and, by `end_bias`, towards writing </think> itself."""
    end = tok.convert_tokens_to_ids(MARKER)
    target = tiny.tiny_model("qwen2", vocab=len(tok), seed=seed, eos_id=tok.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.3, seed=seed + 1)
    for model in (target, draft):
        tiny.prefer_tokens(model, tiny.closing_tokens(tok), 0.6)
        with torch.no_grad():
            model.get_output_embeddings().bias[end] = end_bias
    return tiny.make_pair(target, draft, tok)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rollback_across_the_boundary_returns_to_thinking(think_tokenizer, backend):
    tok = think_tokenizer
    pair = thinking_pair(tok, 0.0)
    guide = session.constrain(pair, ConstraintSpec("json", SCHEMA, backend, think_budget=50)).guide(16)
    thinking_row = guide.next_mask().clone()
    assert not (thinking_row[tok.eos_token_id // 32] >> (tok.eos_token_id % 32)) & 1
    words = tok("hmm </think>").input_ids + tok('{"a').input_ids  # drafts: thinking, the marker, an answer
    for token in words[:-1]:
        guide.consume_draft(token)
        guide.next_mask()
    assert guide.matcher.inner.thinking() is False and guide.matcher.inner.answered == len(tok('{"a').input_ids) - 1
    guide.settle(kept=1, target_token=tok(" ok").input_ids[0])  # refused after the first draft
    assert guide.matcher.inner.thinking() and guide.matcher.inner.answered == 0 and len(guide.matcher.inner.states) == 3
    assert torch.equal(guide.next_mask(), thinking_row)  # the thinking mask again, not the grammar's


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_budget_forces_the_marker_then_the_grammar_starts(think_tokenizer, backend):
    tok = think_tokenizer
    guide = session.constrain(thinking_pair(tok, 0.0), ConstraintSpec("json", SCHEMA, backend, think_budget=3)).guide(6)
    assert guide.forced(8) == []  # nothing forced while the budget lasts
    for token in tok("a b c").input_ids[:3]:
        guide.consume_draft(token)
    guide.settle(kept=3, target_token=None)
    forced = guide.forced(8)
    assert forced[0] == tok.convert_tokens_to_ids(MARKER) and tok.decode(forced[1:]).startswith('{"a": ')


def test_a_marker_of_several_tokens_is_forced_whole_once_the_budget_is_spent():
    """A tokenizer writing </think> as '</', 'think', '>': the budget spent, the first of them was
    forced again after every one ('</</</...'), the answer never reached."""
    pieces = [b"</", b"think", b">", b"x", b"{"]
    tables = thinking_tables(pieces + [b""], lambda text: [pieces.index(p) for p in (b"</", b"think", b">")],
                             vocab=len(pieces) + 1, eos_ids=frozenset({len(pieces)}))

    class AnyAnswer:  # the grammar after the marker: any token (its own tokens forced: none)
        def fill_bitmask(self, row): row.fill_(-1)
        def consume(self, token): return True
        def rollback(self, n): pass
        def forced_tokens(self): return []
        def accepting(self): return True
        def error(self): return None
    matcher = ThinkingMatcher(AnyAnswer(), tables, budget=2)
    for token in (3, 3):  # 'x', 'x': the budget spent
        assert matcher.consume(token)
    guide = Guide(matcher, len(pieces) + 1, frozenset({len(pieces)}), 4)
    assert guide.forced(20) == [0, 1, 2] and not matcher.thinking()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("temperature,seed", [(0.0, 0), (1.0, 1), (1.0, 2)])
def test_a_thinking_run_is_the_target_alone_and_its_answer_is_valid(think_tokenizer, backend, temperature, seed):
    """The draft proposes </think> itself: speculation crosses the boundary (a round keeps drafts on
    both sides of it); greedy equals the target alone; the answer alone is judged, while the thinking
    holds text that is no JSON at all."""
    tok = think_tokenizer
    pair, end = thinking_pair(tok, 0.6), tok.convert_tokens_to_ids(MARKER)
    constraint = session.constrain(pair, ConstraintSpec("json", SCHEMA, backend, think_budget=40))
    prompt = tok("def f(x):\n    return").input_ids
    cfg = session.spec_config(k=4, max_new_tokens=80, temperature=temperature, seed=seed)
    result = session.run(pair, prompt, cfg, constraint=constraint)
    assert result.valid, (result.validation_error, result.text)
    start = result.reasoning_tokens
    assert 0 < start < len(result.token_ids) and result.token_ids[start - 1] == end
    assert json.loads(result.answer) == json.loads(tok.decode(result.token_ids[start:], skip_special_tokens=True))
    with pytest.raises(ValueError):
        json.loads(result.text)  # the whole output is not JSON: only the answer is judged
    if temperature == 0:
        base = session.run(pair, prompt, cfg, speculative=False, constraint=constraint)
        assert base.token_ids == result.token_ids
        crossing = [r for r in result.rounds if end in [t.token_id for t in r.committed[:-1]]]
        assert crossing, "no round kept drafts on both sides of </think>"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_budget_ends_a_thinking_model_that_never_stops(think_tokenizer, backend):
    tok = think_tokenizer
    pair = thinking_pair(tok, -5.0)  # never writes </think> by itself
    constraint = session.constrain(pair, ConstraintSpec("json", SCHEMA, backend, think_budget=12))
    result = session.run(pair, tok("x = ").input_ids, session.spec_config(k=3, max_new_tokens=60), constraint=constraint)
    marker = [t for r in result.rounds for t in r.tokens if t.token_id == tok.convert_tokens_to_ids(MARKER)]
    assert [t.kind for t in marker] == [FORCED] and result.reasoning_tokens == 13 and result.valid
    short = session.run(pair, tok("x = ").input_ids, session.spec_config(k=3, max_new_tokens=8), constraint=constraint)
    assert short.valid is False and "still thinking" in short.validation_error and short.answer == ""


def test_a_budget_with_no_room_for_the_answer_is_said_before_the_run(think_tokenizer, tmp_path, capsys):
    """max new tokens at or under the thinking budget: the run was told 'still thinking' only at its end."""
    from playground.cli import main
    pair = thinking_pair(think_tokenizer, -5.0)
    target, draft = (tiny.save(model, think_tokenizer, tmp_path / name) for model, name in ((pair.target, "t"), (pair.draft, "d")))
    args = ["generate", "--target", str(target), "--draft", str(draft), "--prompt-ids", "5,6,7", "--schema", SCHEMA]
    assert main(args + ["--think-budget", "12", "--max-new-tokens", "8"]) == 1  # (printed, and told invalid)
    said = capsys.readouterr()
    err = said.err
    assert "-- thought for 8 tokens: still thinking when it ended, no </think> yet (raise max new tokens)" in said.err
    assert "the answer after </think> is what the constraint judged" not in said.err  # (read as thinking ended: a review)
    assert ("note: the thinking budget (12 tokens) and </think> leave no room for an answer within max new tokens (8): a "
            "model that thinks that long ends before its answer") in err
    assert main(args + ["--think-budget", "12", "--max-new-tokens", "13"]) == 1  # the budget, then the marker: no answer
    assert "leave no room for an answer within max new tokens (13)" in capsys.readouterr().err
    assert main(args + ["--think-budget", "12", "--max-new-tokens", "40"]) == 0
    said = capsys.readouterr()
    assert "note:" not in said.err  # room left: nothing said
    assert "-- thought for 13 tokens (the thinking budget ran out: </think> forced); the answer" in said.err  # (a review:
    # it read as a model that ended its thinking itself)
    from playground.presets import Settings, get_preset
    from playground.ui import live
    settings = Settings.from_preset(get_preset("demo"))  # the page's run: beside its metrics from the first snapshot
    settings.target, settings.draft, settings.schema, settings.think_budget, settings.max_new_tokens = str(target), str(draft), SCHEMA, 16, 8
    first, *_, last = live.live_run(settings, allow_custom=True, every=0)
    assert first.note.startswith("the thinking budget (16 tokens) and </think> leave no room for an answer within max new tokens (8)") and "still thinking" in last.result.validation_error
    from playground.ui import render
    assert "thinking… 8 tokens" in render.token_stream(last.events, last.eos_ids, last.reasoning)
    settings.think_budget, settings.max_new_tokens = 12, 13  # the run ends on the forced </think>: thinking is over
    *_, ended = live.live_run(settings, allow_custom=True, every=0)
    shown = render.token_stream(ended.events, ended.eos_ids, ended.reasoning)
    assert "thought for 13 tokens" in shown and "thinking…" not in shown  # it read "thinking…", the fold open
    from playground.ui import playground_tab  # the budget that ran out said as the CLI says it (a review)
    assert ("thought for 13 tokens (the thinking budget ran out: &lt;/think&gt; forced) (the constraint judges what "
            "follows)") in playground_tab._stream(ended)


def test_thinking_needs_a_tokenizer_with_the_marker(tokenizer, target, noisy_draft):
    pair = tiny.make_pair(target, noisy_draft, tokenizer)
    with pytest.raises(PlaygroundError, match="no </think> token"):
        session.constrain(pair, ConstraintSpec("json", SCHEMA, "llguidance", think_budget=10))
    with pytest.raises(PlaygroundError, match="thinking budget"):
        ConstraintSpec("json", SCHEMA, "llguidance", think_budget=-1)


def test_a_rejected_draft_past_the_marker_is_never_in_the_answer(think_tokenizer):
    """Sampled runs refuse drafts; none of them may reach the text either side of the boundary."""
    tok = think_tokenizer
    pair = thinking_pair(tok, 0.6, seed=7)
    constraint = session.constrain(pair, ConstraintSpec("regex", "[0-9]{3}", "llguidance", think_budget=30))
    result = session.run(pair, tok("n = ").input_ids, session.spec_config(k=4, max_new_tokens=60, temperature=1.0, seed=5),
                         constraint=constraint)
    committed = [t.token_id for r in result.rounds for t in r.tokens if t.kind != REJECTED]
    assert committed == result.token_ids and result.valid and len(result.answer) == 3 and result.answer.isdigit()


def test_the_matcher_refuses_a_rollback_past_its_start():
    class Inner:
        def rollback(self, n):
            assert n == 0
    tables = thinking_tables([b"a", b"</think>"], lambda text: [1], vocab=2, eos_ids=frozenset())
    matcher = ThinkingMatcher(Inner(), tables, budget=10)
    matcher.consume(0)
    with pytest.raises(RuntimeError):
        matcher.rollback(2)


def test_sampling_across_the_boundary_keeps_the_masked_target_law(think_tokenizer):
    """2,000 seeded runs thinking at most one token, then one digit: the joint law of what they write
    equals the target's renormalised over each state's mask (thinking: no EOS; then the forced
    marker; then the grammar), walked exactly by tests.test_constraints.masked_joint."""
    from tests.test_constraints import masked_joint, sampled_counts
    from tests.test_engine_sampling import chi_square_p
    tok = think_tokenizer
    target = tiny.tiny_model("qwen2", vocab=len(tok), hidden=32, layers=1, seed=31, eos_id=tok.eos_token_id, init_std=0.3)
    draft = tiny.tiny_model("qwen2", vocab=len(tok), hidden=32, layers=1, seed=32, eos_id=tok.eos_token_id, init_std=0.3)
    with torch.no_grad():
        for model in (target, draft):  # make </think> likely, so both ways into the answer are taken
            tiny.prefer_tokens(model, [tok.convert_tokens_to_ids(MARKER)], 2.0)
    pair = tiny.make_pair(target, draft, tok)
    constraint = session.constrain(pair, ConstraintSpec("regex", "[0-9]", "llguidance", think_budget=1))
    prompt = tok("n = ").input_ids
    expected = masked_joint(target, constraint, prompt, tok.eos_token_id)
    counts, n = sampled_counts(pair, prompt, constraint, 2000, k=3, max_new_tokens=5)
    assert set(counts) <= set(expected)
    assert {len(ids) for ids in counts} == {3, 4}  # '</think>' digit EOS, and one thought before it
    assert chi_square_p(counts, expected, n) > 1e-3


# The generation prompts the presets' chat templates render for a system and a user message (read off
# Qwen3-8B's and the updated DeepSeek-R1-Distill-Qwen template, 2026-11-25), written as small templates:
# Qwen3 lets the model open <think> itself; R1's prompt opens it.
TEMPLATES = {
    "qwen3-8b": ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
                 "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"),
    "deepseek-r1-distill-7b": ("{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}{% else %}<｜User｜>"
                               "{{ m.content }}{% endif %}{% endfor %}{% if add_generation_prompt %}<｜Assistant｜><think>\n"
                               "{% endif %}", "Be brief.<｜User｜>Hi?<｜Assistant｜><think>\n"),
}


@pytest.mark.parametrize("preset", sorted(TEMPLATES))
def test_the_presets_chat_templates_think_then_answer(think_tokenizer, preset):
    from playground.presets import get_preset
    tok = think_tokenizer
    template, rendered = TEMPLATES[preset]
    tok.chat_template = template
    pair = thinking_pair(tok, 0.6)
    assert session.encode_prompt(pair, "Hi?", chat=True, system="Be brief.") == tok(rendered).input_ids
    budget = get_preset(preset).think_budget
    spec = ConstraintSpec("json", SCHEMA, "llguidance", think_budget=budget)
    cfg = session.spec_config(k=4, max_new_tokens=budget + 48)
    result = session.run(pair, session.encode_prompt(pair, "Hi?", chat=True), cfg, constraint=session.constrain(pair, spec))
    assert result.valid and 0 < result.reasoning_tokens < len(result.token_ids) and json.loads(result.answer)["a"] in range(10)
    tok.chat_template = None


QWEN3_THINKING_SWITCH = (TEMPLATES["qwen3-8b"][0] + "{% if add_generation_prompt and enable_thinking is defined and "
                         "enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}")  # as Qwen3's own template ends


def test_under_a_constraint_without_a_budget_qwen3_is_asked_not_to_think(think_tokenizer):
    """Without a thinking budget the constraint holds from the first token, where Qwen3 wants to open
    <think>: its template's enable_thinking=False (an empty think block) lets it answer instead."""
    from playground.presets import Settings, get_preset
    tok = think_tokenizer
    tok.chat_template = QWEN3_THINKING_SWITCH
    try:
        pair = thinking_pair(tok, 0.6)
        asked = "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"
        settings = Settings.from_preset(get_preset("qwen3-8b-json"))
        settings.schema_in_prompt = False
        assert session.prompt_ids_of(pair, settings, "Hi?") == tok(asked).input_ids  # a budget: it thinks first
        settings.think_budget = 0
        assert session.prompt_ids_of(pair, settings, "Hi?") == tok(asked + "<think>\n\n</think>\n\n").input_ids
        settings.schema = ""
        assert session.prompt_ids_of(pair, settings, "Hi?") == tok(asked).input_ids  # no constraint: it thinks as it likes
    finally:
        tok.chat_template = None


def test_an_answer_the_template_starts_inside_thinking_is_said_before_the_run(think_tokenizer, tmp_path, capsys):
    """DeepSeek-R1's template opens <think> whatever it is asked: with no thinking budget the JSON was
    written as the chain of thought, never closed, and judged valid without a word. Qwen3, asked not to
    think, closes the block first: nothing to say."""
    from playground.cli import main
    from playground.presets import Settings, get_preset
    from playground.ui import live
    pair = thinking_pair(think_tokenizer, -5.0)
    tok = think_tokenizer
    told = "the chat template opens <think> before the answer whatever it is asked (DeepSeek-R1's does)"
    for name, template, said in (("deepseek-r1-distill-7b", TEMPLATES["deepseek-r1-distill-7b"][0], True),
                                 ("qwen3-8b-json", QWEN3_THINKING_SWITCH, False)):
        tok.chat_template = template
        try:  # (a folder per template: loaded pairs are kept by path)
            target, draft = (tiny.save(model, tok, tmp_path / name / part) for model, part in ((pair.target, "t"), (pair.draft, "d")))
            args = ["generate", "--target", str(target), "--draft", str(draft), "--prompt", "Hi?",
                    "--schema", SCHEMA, "--max-new-tokens", "24"]
            assert main(args + ["--think-budget", "0"]) == 0
            assert (told in capsys.readouterr().err) == said
            assert main(args + ["--think-budget", "8"]) == 0
            assert told not in capsys.readouterr().err  # a budget: it thinks, closes, then answers
            settings = Settings.from_preset(get_preset(name))
            settings.target, settings.draft, settings.schema, settings.think_budget = str(target), str(draft), SCHEMA, 0
            settings.max_new_tokens, settings.schema_in_prompt, settings.compare = 16, False, False
            first = next(iter(live.live_run(settings, allow_custom=True, every=0)))
            assert (told in first.note) == said
        finally:
            tok.chat_template = None


def test_a_free_runs_thinking_is_found_in_its_text(think_tokenizer):
    """Without a constraint there is no thinking matcher: a reasoning model's <think> ... </think> was
    shown as plain text, never folded, and the JSON had no reasoning_tokens."""
    from playground.session.thinking import free_thinking
    tok = think_tokenizer
    asked, opened = tok("Hi?").input_ids, tok("Hi?<think>\n").input_ids
    assert free_thinking(tok, asked, tok("<think>ab</think>cd").input_ids) == len(tok("<think>ab</think>").input_ids)
    assert free_thinking(tok, opened, tok("ab</think>cd").input_ids) == len(tok("ab</think>").input_ids)
    assert free_thinking(tok, opened, tok("abcd").input_ids) == len(tok("abcd").input_ids)  # still thinking
    assert free_thinking(tok, asked, tok("ab</think>cd").input_ids) is None  # nothing opened it
    assert free_thinking(tok, tok("Hi?<think>\n\n</think>\n\n").input_ids, tok("abcd").input_ids) is None  # closed
    # not a reasoning model's: the user's text quoting <think> (the template's tokens after it), or a tokenizer
    # without the markers as tokens of their own (a review: a Qwen2.5 answer read as 21 tokens of thinking)
    assert free_thinking(tok, tok("Hi <think>, then\nassistant:").input_ids, tok("abcd").input_ids) is None
    plain = tiny.byte_bpe_tokenizer()
    assert free_thinking(plain, plain("Hi?<think>\n").input_ids, plain("ab</think>cd").input_ids) is None
    assert free_thinking(plain, plain("Hi?").input_ids, plain("<think>ab</think>cd").input_ids) is None
    assert free_thinking(tok, asked, tok(" \n<think>ab</think>cd").input_ids) == len(tok(" \n<think>ab</think>").input_ids)


def test_a_free_thinking_run_is_folded_on_the_page_and_counted_in_the_cli(think_tokenizer, tmp_path, capsys, monkeypatch):
    """The page folds it (no constraint to judge what follows), the CLI counts it, or says it never closed.
    (The pair is handed to both as loaded: a saved model loses the output bias that makes it write </think>.)"""
    from playground.cli import main
    from playground.presets import Settings
    from playground.ui import live, playground_tab
    tok = think_tokenizer
    tok.chat_template = TEMPLATES["deepseek-r1-distill-7b"][0]  # opens <think> whatever it is asked
    end = tok.convert_tokens_to_ids(MARKER)
    try:
        for bias, temperature in ((2.5, 1.0), (0.0, 0.0)):  # writes </think> early (seed 3); never does
            pair = thinking_pair(tok, bias)
            target, draft = (tiny.save(m, tok, tmp_path / str(bias) / part) for m, part in ((pair.target, "t"), (pair.draft, "d")))
            monkeypatch.setattr(session, "load_pair", lambda *args, **kwargs: pair)
            settings = Settings(preset="demo", target=str(target), draft=str(draft), k=3, max_new_tokens=40, prompt="Hi?",
                                temperature=temperature, seed=3, compare=False, chat=True)
            final = list(live.live_run(settings, allow_custom=True, every=0))[-1]
            ids = final.result.token_ids
            thought = ids.index(end) + 1 if end in ids else len(ids)
            assert final.result.reasoning_tokens == final.reasoning == thought
            stream = playground_tab._stream(final)
            assert stream.count('<details class="thinking"') == 1 and "the constraint judges" not in stream
            args = ["generate", "--target", str(target), "--draft", str(draft), "--prompt", "Hi?", "--k", "3",
                    "--max-new-tokens", "40", "--temperature", str(temperature), "--seed", "3"]
            assert main(args) == 0
            printed = capsys.readouterr().err  # (the report, under the text on stdout)
            assert (end in ids) == (bias > 0), (bias, ids)  # each branch below runs (a test audit)
            if end in ids:
                assert 0 < thought < 40 and f"thought for {thought} tokens" in stream and " open>" not in stream.split("</summary>")[0]
                assert final.result.answer and final.result.text.endswith(final.result.answer)
                assert f"-- thought for {thought} tokens\n" in printed
            else:
                assert "thinking… 40 tokens" in stream and final.result.answer == ""
                assert "-- thought for 40 tokens: still thinking when it ended, no </think> yet" in printed
    finally:
        tok.chat_template = None


def test_a_forced_draft_the_target_never_kept_is_no_guess_either(think_tokenizer, monkeypatch):
    """A review: the thinking budget spent mid-round, the draft writes </think> with no choice; after a refused
    draft it was shown refused and counted as a guess (17 of 138 drafts over 18 runs), lowering the acceptance."""
    rows = []
    real = Guide.no_choice

    def seen(self):  # each round's rows: whether its mask allowed one token alone
        rows.append(real(self))
        return rows[-1]
    monkeypatch.setattr(Guide, "no_choice", seen)
    forced_refused = 0
    for seed in range(41, 47):
        pair = thinking_pair(think_tokenizer, -5.0, seed=seed)
        for budget in (2, 3, 5):
            constraint = session.constrain(pair, ConstraintSpec("regex", "[0-9]{2}", "llguidance", think_budget=budget))
            rows.clear()
            result = session.run(pair, think_tokenizer("x = ").input_ids, session.spec_config(k=4, max_new_tokens=30),
                                 constraint=constraint)
            drafting = [r for r in result.rounds if r.target_passes]
            assert len(drafting) == len(rows)
            for r, alone in zip(drafting, rows):
                assert r.forced_drafts + r.forced_refused == sum(alone[:r.proposed])  # every forced draft judged
                assert r.guesses == r.proposed - sum(alone[:r.proposed])
                forced_refused += r.forced_refused
            assert result.stats["proposed"] == sum(r.guesses for r in drafting)
    assert forced_refused > 0  # (the case was met)


def test_a_thinking_that_ends_by_itself_is_not_said_cut_by_its_budget(think_tokenizer):
    from playground.cli_report import _budget_spent
    tok = think_tokenizer
    ended = {}
    for bias in (-5.0, 8.0):  # </think> forced by the budget; written by the model itself
        pair = thinking_pair(tok, bias)
        constraint = session.constrain(pair, ConstraintSpec("json", SCHEMA, "llguidance", think_budget=12))
        out = session.run(pair, tok("x = ").input_ids, session.spec_config(k=3, max_new_tokens=60), constraint=constraint).as_json()
        assert out["reasoning_tokens"], out
        ended[bias] = _budget_spent(out)
    assert ended == {-5.0: " (the thinking budget ran out: </think> forced)", 8.0: ""}
    # A review: the target as its own draft keeps every guess, so with the budget at k the forced marker falls on
    # the target's own row (that round's bonus), and the CLI read the marker's kind: not said cut.
    pair = thinking_pair(tok, -5.0)
    pair = tiny.make_pair(pair.target, pair.target, tok)
    constraint = session.constrain(pair, ConstraintSpec("json", SCHEMA, "llguidance", think_budget=4))
    out = session.run(pair, tok("x = ").input_ids, session.spec_config(k=4, max_new_tokens=30), constraint=constraint).as_json()
    marker = [t for t in out["rounds"][0]["tokens"] if t["kind"] != "rejected"][4]
    assert marker["kind"] == "bonus" and "</think>" in marker["text"], out["rounds"][0]
    assert out["thinking_cut"] is True and _budget_spent(out) == " (the thinking budget ran out: </think> forced)"
