"""Constrained generation with both backends: every output valid (schemas and regexes of real-world
shape, greedy and sampled), speculative greedy equal to constrained target-only greedy, the matcher
rolled back exactly, sampling exact relative to the masked target distribution, clean errors."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

from playground import session
from playground.cli import main
from playground.config import tree_fields
from playground.constraints import ConstraintSpec, from_user
from playground.constraints.compile import compile_constraint, stop_ids
from playground.constraints.reading import read_constraint
from playground.errors import PlaygroundError
from playground.events import FORCED, REJECTED, Round, round_json
from playground.ui.tree_view import round_tree
from tests import tiny
from tests.constraint_cases import INEXACT, REGEXES, SCHEMAS
from tests.test_engine_sampling import chi_square_p, reference_warp

BACKENDS = ["llguidance", "xgrammar"]
RUNS = [(0.0, 0), (1.0, 1), (1.0, 2), (1.0, 3)]  # greedy, then sampled at temperature 1 with three seeds
JSON_PROMPT = "# the settings, as JSON\nconfig = "


@pytest.fixture(scope="module")
def pair(target, noisy_draft, tokenizer):
    return tiny.make_pair(target, noisy_draft, tokenizer)


@pytest.fixture(scope="module")
def closing_pair(tokenizer):
    """A random pair biased towards closing tokens, so outputs end within the budget (a random model
    left alone can write digits forever); what it writes in between is still random."""
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=41, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.5, seed=42)
    closing = tiny.closing_tokens(tokenizer)
    return tiny.make_pair(tiny.prefer_tokens(target, closing, 0.6), tiny.prefer_tokens(draft, closing, 0.6), tokenizer)


def constrained(pair, kind, text, backend):
    return session.constrain(pair, ConstraintSpec(kind, text, backend))


def strip_strings(text: str) -> str:
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_outputs_are_valid(closing_pair, tokenizer, backend, name):
    pair = closing_pair
    note, caught = INEXACT[backend].get(name, (None, None))
    constraint = constrained(pair, "json", json.dumps(SCHEMAS[name]), backend)
    assert (note in " ".join(constraint.notes)) if note else not constraint.notes, constraint.notes
    prompt = tokenizer(JSON_PROMPT).input_ids
    for temperature, seed in RUNS:
        cfg = session.spec_config(k=4, temperature=temperature, seed=seed, max_new_tokens=320)
        result = session.run(pair, prompt, cfg, constraint=constraint)
        assert result.constraint_notes == list(constraint.notes)
        if caught and not result.valid:  # what xgrammar let through is caught by the check, never called valid
            assert caught in result.validation_error, result.validation_error
            continue
        assert result.valid, (temperature, seed, result.text, result.validation_error)
        assert result.finish_reason == "eos"
        assert not re.search(r"\s\s", strip_strings(result.text)), result.text  # no runs of whitespace


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", REGEXES)
def test_regex_outputs_are_valid(closing_pair, tokenizer, backend, name):
    pair = closing_pair
    constraint = constrained(pair, "regex", REGEXES[name], backend)
    prompt = tokenizer("value = ").input_ids
    for temperature, seed in RUNS:
        cfg = session.spec_config(k=4, temperature=temperature, seed=seed, max_new_tokens=96)
        result = session.run(pair, prompt, cfg, constraint=constraint)
        assert result.valid, (temperature, seed, result.text, result.validation_error)
        assert re.fullmatch(REGEXES[name], result.text)


IDENTITY_CASES = [("json", json.dumps(SCHEMAS["order"])), ("json", json.dumps(SCHEMAS["recursive_tree"])),
                  ("json", json.dumps(SCHEMAS["event"])), ("regex", REGEXES["email"]), ("regex", REGEXES["url"])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 3, 8])
@pytest.mark.parametrize("case", range(len(IDENTITY_CASES)))
def test_speculative_equals_constrained_target_only(pair, tokenizer, target, backend, k, case):
    kind, text = IDENTITY_CASES[case]
    constraint = constrained(pair, kind, text, backend)
    prompt = tokenizer(JSON_PROMPT).input_ids
    cfg = session.spec_config(k=k, max_new_tokens=200)
    speculative = session.run(pair, prompt, cfg, constraint=constraint)
    alone = session.run(pair, prompt, cfg, speculative=False, constraint=constraint)
    assert speculative.token_ids == alone.token_ids
    assert speculative.valid and alone.valid
    # with the same draft as target every guess is accepted: the bonus path under constraints
    same = session.run(tiny.make_pair(target, target, tokenizer), prompt, cfg, constraint=constraint)
    assert same.token_ids == alone.token_ids


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_valid_output_cut_where_it_could_go_on_says_so(pair, tokenizer, backend, capsys, saved_pair):
    """A number cut at max new tokens (`0.00000000100002...`, JSONSchemaBench o89151) was reported
    valid like a finished value; one cut where only an end could follow is plainly valid."""
    prompt, cfg = tokenizer("n = ").input_ids, session.spec_config(k=4, max_new_tokens=2)
    cut = session.run(pair, prompt, cfg, constraint=constrained(pair, "regex", "[0-9]{2,}", backend))
    assert (cut.finish_reason, cut.valid, cut.open_end) == ("length", True, True), cut.text
    closed = session.run(pair, prompt, cfg, constraint=constrained(pair, "regex", "[0-9]{2}", backend))
    assert closed.valid and not closed.open_end, closed.text
    target, draft = saved_pair
    main(["generate", "--target", str(target), "--draft", str(draft), "--prompt", "n = ", "--regex", "[0-9]{2,}",
          "--max-new-tokens", "2", "--constraint-backend", backend])
    assert "-- valid as far as it goes: max new tokens ran out where the output could have gone on" in capsys.readouterr().err


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_output_cut_inside_a_character_is_judged_by_the_text_it_shows(pair, tokenizer, backend):
    """The budget ended a run a byte into a character (日 is three byte tokens here): its text leaves those bytes out
    and matches the regex whole, yet it was "invalid: truncated" (the matcher waits on the character; a review)."""
    prompt = tokenizer("n = ").input_ids
    for max_new, text, valid in [(4, "日", True), (2, "", False), (6, "日日", True)]:
        cut = session.run(pair, prompt, session.spec_config(k=4, max_new_tokens=max_new),
                          constraint=constrained(pair, "regex", "日{1,3}", backend))
        assert (cut.finish_reason, cut.text, cut.valid) == ("length", text, valid), (max_new, cut.validation_error)
        assert cut.open_end == valid and (valid or "it ended inside a character" in cut.validation_error)


@pytest.mark.parametrize("backend", BACKENDS)
def test_prompt_lookup_guessing_past_an_eos_keeps_the_target_alone(closing_pair, tokenizer, backend):
    """A chat prompt holds the EOS after the user's text: a looked-up guess can be '1', EOS, 'z'. The
    guide keeps the EOS where the constraint allows it and nothing after it (the rows after an EOS
    allow every token: the 'z' was fed to the matcher, which refused it, and the run crashed)."""
    lookup = tiny.make_pair(closing_pair.target, None, tokenizer)
    constraint = constrained(lookup, "regex", "1[0-9]{0,3}", backend)
    words = lambda text: tokenizer(text).input_ids  # noqa: E731
    prompt = words("n = ") + words("1") + [tokenizer.eos_token_id] + words("z") + words(" n = ")
    cfg = session.spec_config(k=4, max_new_tokens=8)
    speculative = session.run(lookup, prompt, cfg, constraint=constraint)
    alone = session.run(lookup, prompt, cfg, speculative=False, constraint=constraint)
    assert speculative.token_ids == alone.token_ids == words("1") + [tokenizer.eos_token_id]
    assert speculative.valid


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 3])
def test_a_pair_naming_no_eos_ends_where_the_constraint_ends(tokenizer, backend, k):
    """A pair whose model names no EOS (eos_ids empty): the backends fall back to the tokenizer's EOS
    as the structure's end, so the guide and the run must stop at it too. They did not: drafted EOS
    tokens reached the matcher (llguidance's rollback drifted, 17 letters against [a-z]{3,12};
    xgrammar crashed asking a stopped matcher for its jump)."""
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id)
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, noise=0.4, seed=3), tokenizer, eos_ids=[])
    constraint = constrained(pair, "regex", "[a-z]{3,12}", backend)
    prompt, cfg = tokenizer("def f(x):\n    return").input_ids, session.spec_config(k=k, max_new_tokens=20)
    speculative = session.run(pair, prompt, cfg, constraint=constraint)
    alone = session.run(pair, prompt, cfg, speculative=False, constraint=constraint)
    assert speculative.token_ids == alone.token_ids and speculative.token_ids[-1] == tokenizer.eos_token_id
    assert speculative.finish_reason == "eos" and speculative.valid, speculative.text
    nameless = type("NoEos", (), {"eos_token_id": None})()
    with pytest.raises(PlaygroundError, match="names no end-of-sequence token"):
        stop_ids(nameless)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sentencepiece_tokenizer_writes_valid_output(backend):
    """Llama 2 / Mistral tokenizers put '▁' in front of a text tokenized alone: xgrammar's jump-forward
    text '"name": "' became '▁"', which the grammar refuses; it was forced anyway, refused by the
    matcher, and forced again: 60 spaces, invalid. A jump whose first token the grammar refuses is
    not taken."""
    tokenizer = tiny.sentencepiece_style_tokenizer()
    assert tokenizer.tokenize('"name"')[0].startswith("▁")
    target = tiny.tiny_model("llama", vocab=len(tokenizer), seed=3, eos_id=tokenizer.eos_token_id)
    closing = tiny.closing_tokens(tokenizer)
    draft = tiny.prefer_tokens(tiny.perturbed_copy(target, noise=0.3, seed=4), closing, 0.6)
    pair = tiny.make_pair(tiny.prefer_tokens(target, closing, 0.6), draft, tokenizer)
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}, "tag": {"enum": ["alpha", "beta"]}},
              "required": ["name", "tag"], "additionalProperties": False}
    constraint = constrained(pair, "json", json.dumps(schema), backend)
    prompt, cfg = tokenizer("Person: ").input_ids, session.spec_config(k=3, max_new_tokens=60)
    speculative = session.run(pair, prompt, cfg, constraint=constraint)
    alone = session.run(pair, prompt, cfg, speculative=False, constraint=constraint)
    assert speculative.token_ids == alone.token_ids
    assert speculative.finish_reason == "eos" and speculative.valid
    assert set(json.loads(speculative.text)) == {"name", "tag"}


@pytest.mark.parametrize("backend, regex", [("llguidance", r"a[^\s\S]b"), ("llguidance", r"x(?:[^\x00-\U0010FFFF])y"),
                                            ("xgrammar", r"x(?:[^\x00-\U0010FFFF])y")])
def test_a_constraint_nothing_can_complete_is_named_so(pair, tokenizer, backend, regex):
    """A regex with a part that matches nothing: refused before the run where the backend sees it at
    once (llguidance: it said "gave up ... NoExtensionBias"), else stopped where the mask allows
    nothing (xgrammar: the run ended on a forced EOS with an invalid output)."""
    prompt = tokenizer("x = ").input_ids
    if backend == "llguidance":  # refused as it compiles
        with pytest.raises(PlaygroundError, match="never be satisfied") as refused:
            constrained(pair, "regex", regex, backend)
    else:  # compiled, then stopped where nothing is allowed
        constraint = constrained(pair, "regex", regex, backend)
        with pytest.raises(PlaygroundError, match="no output can match this constraint") as refused:
            session.run(pair, prompt, session.spec_config(max_new_tokens=8), constraint=constraint)
    assert "NoExtensionBias" not in str(refused.value)


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("kind, text", [("regex", "x{0}"), ("regex", "(?:)"), ("grammar", 'root ::= ""')])
def test_a_constraint_only_the_empty_output_meets_is_refused(pair, tokenizer, backend, kind, text):
    """x{0} passed every check: the run wrote nothing and called it valid (a newcomer's pass)."""
    with pytest.raises(PlaygroundError, match=f"this {kind} allows only the empty output: the model would write nothing"):
        constrained(pair, kind, text, backend)


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
@pytest.mark.parametrize("kind, text, empty", [("regex", "(ab)?", True), ("regex", "a*", True), ("regex", "a+", False),
                                               ("grammar", 'start: "yes" |', True), ("grammar", 'start: "yes" | "no"', False)])
def test_a_constraint_the_empty_output_meets_says_so(pair, tokenizer, backend, kind, text, empty):
    """'start: "yes" |' (a stray bar) let the model end at once, said valid with nothing in it, silently (a
    review): the page's check as typed and Run's constraint both note it."""
    said = f"this {kind} accepts an empty output"
    spec = ConstraintSpec(kind, text, backend)
    for notes in (read_constraint(spec), constrained(pair, kind, text, backend).notes):
        assert any(note.startswith(said) for note in notes) is empty, notes


def test_a_packed_mask_is_read_past_its_end_tokens():
    from playground.constraints.guide import allows_besides
    mask = torch.zeros(2, dtype=torch.int32)
    mask[0] = -2**31  # token 31 alone (bit 31: the sign bit)
    assert not allows_besides(mask, {31}) and allows_besides(mask, {0, 32}) and not allows_besides(mask, {31, 10**6})
    mask[1] = 1  # and token 32
    assert allows_besides(mask, {31}) and not allows_besides(mask, {31, 32})


@pytest.mark.parametrize("draft, tree", [("ngram", ()), ("demo-draft", ()), ("demo-draft", (2, 2))])
def test_a_dead_end_only_a_guess_reaches_leaves_the_target_alones_output(draft, tree):
    """xgrammar allows a token whose continuation can match nothing. A guess stepping into it is
    rejected as any other; a dead end where the target itself writes next stops the run, in the
    speculative run and the target alone alike (the first version stopped only the speculative one)."""
    from playground.constraints.guide import NoWayOn
    from playground.presets import get_preset
    pair, rejected = session.load_pair(get_preset("demo").target, draft), 0
    for prompt, regex in (("x = 1\nx = 1\nx", r"( = [^\x00-\U0010FFFF]|[0-9]{1,3})"),
                          ("print(a)\nprint(a)\nprint", r"(\(a[^\x00-\U0010FFFF]|\(b\))"),
                          ("return n\nreturn n\nreturn", r"( n[^\x00-\U0010FFFF]| [0-9]{1,2})")):
        ids = session.encode_prompt(pair, prompt)
        constraint = session.constrain(pair, ConstraintSpec("regex", regex, "xgrammar"))
        outcomes = []
        for speculative in (True, False):
            cfg = session.spec_config(k=4, max_new_tokens=8, tree=tree if speculative else ())
            try:
                result = session.run(pair, ids, cfg, speculative=speculative, constraint=constraint)
                outcomes.append(result.token_ids)
                rejected += speculative and any(t.kind == REJECTED for r in result.rounds for t in r.tokens)
            except NoWayOn:
                outcomes.append("no way on")
        assert outcomes[0] == outcomes[1], (prompt, outcomes)
    assert rejected  # a guess was refused on the way (the case this test is about was met; a review)


@pytest.mark.parametrize("settings", [{}, {"compile": True}, {"policy": "confidence"}, {"temperature": 0.2, "seed": 1}])
def test_a_draft_model_stops_drafting_where_the_constraint_allows_nothing(settings):
    """A draft model guessing into an xgrammar dead end drew from an all-masked row: an EOS (token 0)
    the target then "accepted" (an invalid output where the target alone stops), a bare RuntimeError,
    or NaN probabilities when sampling."""
    from playground.constraints.guide import NoWayOn
    from playground.presets import get_preset
    preset = get_preset("demo")
    pair = session.load_pair(preset.target, preset.draft)
    ids = session.encode_prompt(pair, "for i in range(10):\n    print")
    constraint = session.constrain(pair, ConstraintSpec("regex", r"(\(x[^\x00-\U0010FFFF]|QQQ)", "xgrammar"))
    for speculative in (True, False):
        with pytest.raises(NoWayOn):  # "(x" is the likelier start for both: then nothing is allowed
            session.run(pair, ids, session.spec_config(k=4, max_new_tokens=8, **settings), speculative=speculative,
                        constraint=constraint)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jump_forward_emits_forced_tokens(pair, tokenizer, backend):
    constraint = constrained(pair, "json", json.dumps(SCHEMAS["config"]), backend)
    result = session.run(pair, tokenizer(JSON_PROMPT).input_ids, session.spec_config(k=4, max_new_tokens=200),
                         constraint=constraint)
    forced = [t for r in result.rounds for t in r.tokens if t.kind == FORCED]
    assert result.stats["forced"] == len(forced) > 0
    verified = [r for r in result.rounds if r.target_passes]  # the theory's tokens per round: verification's own
    judged = [t for r in verified for t in r.tokens if t.kind in ("accepted", "corrected", "bonus")]
    assert result.stats["tokens_per_round"] == pytest.approx(len(judged) / len(verified))
    assert result.stats["tokens_per_round"] <= 4 + 1  # k = 4 drafts and the target's own token, at most
    assert result.stats["mean_accepted_per_round"] == pytest.approx(result.stats["accepted"] / len(verified))
    from playground.ui import render
    card = render.metrics(result.stats, 4)
    assert f"; {len(forced)} tokens forced" in card and "(forced tokens not counted)" in card
    assert '"debug": ' in "".join(t.text for t in forced) or '"debug"' in "".join(t.text for t in forced)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_draft_the_constraint_allowed_alone_is_forced_not_a_kept_guess(pair, tokenizer, target, backend):
    """Inside a round the draft also writes where the mask allows one token (a key's jump-forward text,
    `</think>` past the budget): it was shown and counted as an accepted guess (p 1.00), raising the
    acceptance; it is forced, and the acceptance counts the guesses alone. The text is unchanged."""
    constraint = constrained(pair, "json", json.dumps(SCHEMAS["config"]), backend)
    prompt = tokenizer(JSON_PROMPT).input_ids
    chain, tree = session.spec_config(k=8, max_new_tokens=200), session.spec_config(max_new_tokens=200, **tree_fields("2,2,2,2"))
    for drafter, cfg in ((pair, chain), (tiny.make_pair(target, target, tokenizer), chain), (pair, tree)):
        result = session.run(drafter, prompt, cfg, constraint=constraint)  # noisy, a draft that guesses right, a tree
        assert result.token_ids == session.run(drafter, prompt, cfg, speculative=False, constraint=constraint).token_ids
        assert any(r.forced_drafts for r in result.rounds)  # forced tokens inside rounds, not only at their start
        kinds = [t.kind for r in result.rounds for t in r.tokens]
        assert result.stats["accepted"] == kinds.count("accepted") and result.stats["forced"] == kinds.count(FORCED)
        refusals = sum(r.refused for r in result.rounds)
        assert result.stats["token_acceptance"] == pytest.approx(kinds.count("accepted") / (kinds.count("accepted") + refusals))
        for r in result.rounds:
            assert r.accepted - r.forced_drafts == [t.kind for t in r.tokens].count("accepted")
            assert all(t.kind == FORCED for t in r.tokens[:r.forced_first])  # forced before drafting, then the drafts:
            drawn = round_tree(r)  # the Tree tab drew a round without its forced drafts (a kept path with gaps)
            assert len(drawn["path"]) == r.accepted and round_json(r)["forced_drafts"] == r.forced_drafts
            assert r.tree or drawn["tokens"] == [t.token_id for t in r.drafts]
        if drafter is not pair:
            assert result.stats["token_acceptance"] == 1.0  # the target as its own draft: every guess kept


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_committed_token_the_constraint_refuses_is_an_error_not_a_silent_skip(tokenizer, backend):
    """Every committed token is drawn under its mask; a refusal means a mask that was not the state's.
    It returned False, which two callers ignored: xgrammar names no error, so the matcher was left a
    token behind the output, unseen (a reviewer's reading; no path to it was found)."""
    spec = from_user(schema='{"type": "integer"}', backend=backend)
    guide = compile_constraint(spec, tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id})).guide(2)
    with pytest.raises((RuntimeError, PlaygroundError), match="was not allowed by the mask|constraint engine gave up"):
        guide.settle(kept=0, target_token=tokenizer('"', add_special_tokens=False).input_ids[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_cut_inside_a_character_leaves_it_out_and_says_so(pair, tokenizer, backend):
    """Max new tokens ending inside a character (3 byte tokens each here) wrote U+FFFD into the text, the download
    and the CLI, and the verdict said no more than "truncated" (an outside review in Chinese)."""
    constraint = constrained(pair, "regex", "[\u4e00-\u9fff]{4,12}", backend)
    result = session.run(pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=7), constraint=constraint)
    assert result.finish_reason == "length" and len(result.text) == 2 and "\ufffd" not in result.text
    assert result.valid is False and result.validation_error.endswith(
        "(it ended inside a character, whose first bytes are not shown)")
    whole = session.run(pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=6), constraint=constraint)
    assert len(whole.text) == 2 and "inside a character" not in whole.validation_error


def test_a_unicode_class_is_refused_with_its_ranges_named():
    """\\p{Han} was refused as "bad escape \\p at position 0" (a schema's as "is not a 'regex'"): the user blamed,
    no way on (an outside review in Chinese)."""
    for kwargs in ({"regex": r"\p{Han}+"}, {"schema": json.dumps({"type": "string", "pattern": r"^\P{Arabic}+$"})}):
        with pytest.raises(PlaygroundError, match=r"a \\p\{\.\.\.\} class is not read here .* such as \[\\u4e00-\\u9fff\] for Han"):
            from_user(**kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind, text", [("json", '{"type": "string"}'), ("json", '{"type": "string", "maxLength": 9}'),
                                        ("regex", '".*"'), ("regex", '"[^a]*"'), ("regex", '"[\u0100-\uffff]*"')])
def test_no_surrogate_is_written_as_utf8(tokenizer, backend, kind, text):
    """xgrammar's character classes let U+D800-U+DFFF through as UTF-8 bytes (ED A0-BF xx), which no
    reader takes: a string read back as U+FFFD, too long for its bound (a reviewer's random walks).
    No allowed token holds ED A0-BF, and after ED (a byte-level vocabulary has it alone) none starts
    with A0-BF; ED 80-9F (U+D000-U+D7FF) stays allowed."""
    from playground.constraints.compile import _token_bytes
    spec = ConstraintSpec(kind, text, backend)
    guide = compile_constraint(spec, tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id})).guide(2)
    token_bytes = _token_bytes(tokenizer, len(tokenizer)).token_bytes
    allowed = lambda mask: [t for t in range(len(token_bytes)) if (int(mask[t // 32]) >> (t % 32)) & 1]  # noqa: E731
    lead = token_bytes.index(b"\xed")
    guide._commit([token_bytes.index(b'"')])
    inside = allowed(guide.next_mask())
    assert lead in inside and not [t for t in inside if b"\xed\xa0" <= token_bytes[t][:2] <= b"\xed\xbf"]
    guide.rows = 0
    guide._commit([lead])
    after = [token_bytes[t] for t in allowed(guide.next_mask())]
    assert after and not [data for data in after if 0xA0 <= data[0] <= 0xBF]
    assert b"\x80" in after and b"\x9f" in after  # U+D000-U+D7FF


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_rollback_leaves_the_matcher_as_if_fed_only_committed_tokens(target, tokenizer, backend, temperature):
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, noise=2.0), tokenizer)  # rejects often
    constraint = constrained(pair, "json", json.dumps(SCHEMAS["product"]), backend)
    cfg = session.spec_config(k=5, temperature=temperature, seed=4, max_new_tokens=200)
    guide = constraint.guide(cfg.k + 2)
    committed, checked = [], 0
    for event in session.generate(pair, tokenizer(JSON_PROMPT).input_ids, cfg, guide=guide):
        if not isinstance(event, Round):
            continue
        committed += [t.token_id for t in event.committed]
        if event.accepted < event.proposed and event.finish_reason is None:
            fresh = constraint.guide(2)
            assert fresh._commit(committed)
            assert torch.equal(fresh.next_mask(), guide.next_mask())
            guide.rows = 0  # undo the probe's row
            assert fresh.accepting() == guide.accepting()
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("draft_vocab", ["full", "reduced"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_constrained_sampling_matches_masked_target(tokenizer, backend, draft_vocab):
    """Thousands of seeded runs under the regex [0-9]{2}: the joint distribution of the emitted
    tokens equals the target's distribution renormalised over what the grammar allows; also with a
    draft that writes only every other token id (so some allowed digits are never drafted)."""
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), hidden=32, layers=1, seed=31,
                             eos_id=tokenizer.eos_token_id, init_std=0.3)
    kept = list(range(len(tokenizer))) if draft_vocab == "full" else list(range(0, len(tokenizer), 2))
    draft = tiny.tiny_model("qwen2", vocab=len(kept) + (draft_vocab == "reduced"), hidden=32, layers=1, seed=32,
                            eos_id=tokenizer.eos_token_id, init_std=0.3)
    if draft_vocab == "reduced":
        draft.playground_vocab_map = torch.tensor(kept)
        digits = [t for t in range(len(tokenizer)) if tokenizer.decode([t]).isdigit()]
        assert {t % 2 for t in digits} == {0, 1}  # the draft can write some digits and not others
    pair = tiny.make_pair(target, draft, tokenizer)
    constraint = constrained(pair, "regex", "[0-9]{2}", backend)
    prompt = tokenizer("n = ").input_ids
    expected = masked_joint(target, constraint, prompt, tokenizer.eos_token_id)
    counts, n = sampled_counts(pair, prompt, constraint, 2000, k=3, max_new_tokens=4)
    assert set(counts) <= set(expected)
    assert chi_square_p(counts, expected, n) > 1e-3


def test_warped_constrained_sampling_keeps_the_masked_targets_law(tokenizer):
    """Temperature, top-k and top-p under a grammar: the mask comes first, then the warp over what
    it allows (as vLLM samples). A close draft keeps many guesses, so the accept branch is judged.
    (One backend: the test above holds each backend's masks to the law; this one, the warp's order.)"""
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), hidden=32, layers=1, seed=31,
                             eos_id=tokenizer.eos_token_id, init_std=0.3)
    pair = tiny.make_pair(target, tiny.perturbed_copy(target, 0.3, seed=5), tokenizer)
    constraint = constrained(pair, "regex", "[0-9]{2}", "llguidance")
    prompt = tokenizer("n = ").input_ids
    warped = dict(temperature=1.3, top_k=6, top_p=0.95)  # 26 outputs are left of the plain law's 100
    expected = masked_joint(target, constraint, prompt, tokenizer.eos_token_id, warped)
    counts, n = sampled_counts(pair, prompt, constraint, 1500, k=3, max_new_tokens=4, **warped)
    assert set(counts) <= set(expected)
    assert 10 < len(expected) < 100  # the warp cuts, and leaves a law worth testing
    kept = sum(session.run(pair, prompt, session.spec_config(seed=s, k=3, max_new_tokens=4, **warped),
                           constraint=constraint).stats["accepted"] for s in range(50))
    assert kept > 25, kept  # half a guess kept a run at least
    assert chi_square_p(counts, expected, n) > 1e-3


def sampled_counts(pair, prompt, constraint, n: int, **settings) -> tuple[dict, int]:
    """How often each output came out of n runs seeded 0..n-1 (temperature 1 unless given) -> (counts, n)."""
    counts = {}
    settings = {"temperature": 1.0, **settings}
    for seed in range(n):
        cfg = session.spec_config(seed=seed, **settings)
        ids = tuple(session.run(pair, prompt, cfg, constraint=constraint).token_ids)
        counts[ids] = counts.get(ids, 0) + 1
    return counts, n


def masked_joint(model, constraint, prompt, eos_id, warped: dict | None = None):
    """Exact probability of every complete constrained output, by walking the grammar: each step's
    logits masked, then plain softmax, or `warped` (temperature, top_k, top_p) over the allowed."""
    out, frontier = {}, [((), 1.0)]
    while frontier:
        seq, prob = frontier.pop()
        if seq and seq[-1] == eos_id:
            out[seq] = prob
            continue
        guide = constraint.guide(2)
        guide._commit(list(seq))
        mask = guide.next_mask()
        allowed = [t for t in range(model.config.vocab_size) if (mask[t // 32].item() >> (t % 32)) & 1]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([prompt + list(seq)])).logits[0, -1].double()
        if warped:
            masked = torch.full_like(logits, float("-inf"))
            masked[allowed] = logits[allowed]
            probs = reference_warp(masked[None], **warped)[0][allowed]
        else:
            probs = torch.softmax(logits[allowed], -1)
        frontier += [(seq + (t,), prob * p.item()) for t, p in zip(allowed, probs) if p > 0]
    return out


BAD_CONSTRAINTS = {
    "malformed schema": (["--schema", '{"type": "object",'], "not valid JSON"),
    "invalid regex": (["--regex", "([0-9]"], "the regex is not a valid regular expression"),
    "regex the backend refuses": (["--regex", "a(?=b)"], "look-around"),
    "unsatisfiable": (["--schema", '{"type": "string", "minLength": 5, "maxLength": 2}'],
                      "no JSON value can satisfy this schema: minLength (5) is greater than maxLength (2)"),
    "unsatisfiable pattern": (["--schema", '{"type": "string", "pattern": "^a$", "minLength": 3}'],
                              "no string can follow all of its string rules"),
    "unsatisfiable xgrammar": (["--schema", '{"type": "string", "minLength": 5, "maxLength": 2}',
                                "--constraint-backend", "xgrammar"], "minLength"),
    "grammar does not parse": (["--grammar", "GRAMMAR"], "cannot use this grammar"),
    "invalid schema": (["--schema", '{"type": "strin"}'], "not a valid JSON Schema (draft 2020-12) at type: 'strin' is "
                       "not valid under any of the given schemas; 'strin' is no type: did you mean 'string'?"),
}


@pytest.mark.parametrize("case", BAD_CONSTRAINTS)
def test_bad_constraints_are_one_line_errors(capsys, saved_pair, tmp_path, case):
    args, message = BAD_CONSTRAINTS[case]
    grammar = tmp_path / "bad.lark"
    grammar.write_text('start: "x" NUM\nNUM: /[0-9]+\n')
    args = [str(grammar) if a == "GRAMMAR" else a for a in args]
    target, draft = saved_pair
    code = main(["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err


@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_not_enforced_while_writing_are_named_and_checked_after(capsys, saved_pair, backend):
    """uniqueItems cannot be enforced token by token by either backend: the run goes ahead, the
    note says so next to the verdict, and the check still holds the output to it."""
    target, draft = saved_pair
    schema = {"type": "array", "items": {"enum": [1, 2]}, "minItems": 3, "maxItems": 3, "uniqueItems": True}
    code = main(["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x = ", "--json",
                 "--schema", json.dumps(schema), "--constraint-backend", backend, "--max-new-tokens", "40"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 1 and report["constraint_notes"] == ["not enforced while writing (checked after the run): uniqueItems"]
    assert err.endswith("invalid: the output does not meet the constraint (" + report["validation_error"] + ")\n"), err
    assert report["valid"] is False and "non-unique" in report["validation_error"], report  # 3 items from 2 values


def test_cli_reports_validity_and_forced(capsys, saved_pair):
    target, draft = saved_pair
    schema = json.dumps(SCHEMAS["flags"])
    code = main(["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x = ",
                 "--schema", schema, "--max-new-tokens", "120", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["valid"] is True and report["validation_error"] is None
    assert report["stats"]["forced"] > 0
    json.loads(report["text"])


def test_truncated_output_is_reported(capsys, saved_pair):
    target, draft = saved_pair
    code = main(["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x = ",
                 "--schema", json.dumps(SCHEMAS["api_response"]), "--max-new-tokens", "5", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["valid"] is False and report["validation_error"].startswith("truncated")


def test_each_sample_is_judged_and_an_invalid_one_fails_the_command(capsys, saved_pair):
    """Samples after the first were printed without a verdict, and an INVALID output exited 0."""
    target, draft = saved_pair
    args = ["generate", "--target", str(target), "--draft", str(draft), "--prompt", "x = ", "--temperature", "1",
            "--schema", json.dumps(SCHEMAS["api_response"]), "--num-samples", "3", "--seed", "1"]
    code = main([*args, "--max-new-tokens", "5", "--json"])
    report = json.loads(capsys.readouterr().out)
    samples = report["samples"]
    assert code == 1 and [s["valid"] for s in samples] == [False] * 3
    assert all(s["validation_error"].startswith("truncated") and s["finish_reason"] == "length" for s in samples)
    code, text = main([*args, "--max-new-tokens", "5"]), capsys.readouterr()
    assert code == 1 and text.err.count(": INVALID: truncated") == 3 and "-- sample with seed 1: INVALID: truncated" in text.err
    assert "-- sample with seed 2: INVALID: truncated" in text.err and text.out.count("-- sample with seed ") == 3
    assert text.err.endswith("invalid: the samples with seeds 1, 2 and 3 do not meet the constraint (" + samples[0]["validation_error"] + ")\n")
    code = main([*args, "--max-new-tokens", "120", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and [s["valid"] for s in report["samples"]] == [True] * 3, report["samples"]


def test_grammar_constraint(pair, tokenizer, tmp_path):
    lark = 'start: "let " NAME " = " NUM ";"\nNAME: /[a-z]{1,6}/\nNUM: /[0-9]{1,3}/\n'
    texts = {backend: [] for backend in BACKENDS}
    for backend in BACKENDS:  # Lark: llguidance's own, xgrammar's reader (as vLLM's xgrammar backend reads it)
        constraint = constrained(pair, "grammar", lark, backend)
        for temperature, seed in RUNS:
            result = session.run(pair, tokenizer("x").input_ids, session.spec_config(
                k=3, temperature=temperature, seed=seed, max_new_tokens=40), constraint=constraint)
            assert result.valid and re.fullmatch(r"let [a-z]{1,6} = [0-9]{1,3};", result.text), result.text
            texts[backend].append(result.text)
    assert texts["llguidance"] == texts["xgrammar"]  # the same masks: the same tokens, sampled ones too
    ebnf = 'root ::= "let " [a-z] [a-z]? " = " [0-9] [0-9]? ";"'
    texts = []
    for backend in BACKENDS:  # GBNF: xgrammar's own, converted to Lark by llguidance (as vLLM and SGLang read it)
        constraint = constrained(pair, "grammar", ebnf, backend)
        result = session.run(pair, tokenizer("x").input_ids, session.spec_config(k=3, max_new_tokens=40), constraint=constraint)
        assert result.valid and re.fullmatch(r"let [a-z]{1,2} = [0-9]{1,2};", result.text), result.text
        texts.append(result.text)
    assert texts[0] == texts[1]


MAX_TOKENS_GRAMMAR = 'start: word "!"\nword[max_tokens=3]: /[a-z ]+/\n'  # (xgrammar reads max_tokens too)
STOP_GRAMMAR = 'start: word "!"\nword[stop="z"]: /[a-y ]+/\n'


@pytest.mark.parametrize("grammar, text, backs", [
    (MAX_TOKENS_GRAMMAR, "ab c", range(1, 4)), (STOP_GRAMMAR, "ab c", range(1, 4)),
    ('start: word+ "!"\nword[max_tokens=3]: /[a-z]+ /\n', "ab cd " * 20, (1, 7, 20, 40, 70, 81))])  # past the copies
def test_a_rule_llguidance_cannot_roll_back_is_replayed(tokenizer, grammar, text, backs):
    """llguidance refuses to roll back a grammar with a rule's max_tokens= or stop=, and a rejected
    guess stopped the run ("rollback not supported"): the matcher replays from a copy instead, its
    masks those of a matcher fed only the kept tokens."""
    from playground.constraints.llg import LLGuidanceBackend
    backend = LLGuidanceBackend(tokenizer, len(tokenizer), stop_ids(tokenizer))
    compiled, _ = backend.compile(ConstraintSpec("grammar", grammar))
    words = (len(tokenizer) + 31) // 32

    def mask(matcher):
        row = torch.zeros(words, dtype=torch.int32)
        matcher.fill_bitmask(row)
        return row

    written = tokenizer(text).input_ids
    for back in backs:
        matcher = backend.matcher(compiled)
        assert all(matcher.consume(t) for t in written)
        matcher.rollback(back)
        reference = backend.matcher(compiled)
        assert all(reference.consume(t) for t in written[:len(written) - back])
        assert matcher.error() is None and torch.equal(mask(matcher), mask(reference))


@pytest.mark.parametrize("grammar", [MAX_TOKENS_GRAMMAR, STOP_GRAMMAR])
def test_a_run_through_a_rule_llguidance_cannot_roll_back(pair, tokenizer, grammar):
    """Speculation with refused guesses inside such a rule: greedy, the target alone's tokens."""
    rejected = 0
    for temperature, seed in RUNS:
        cfg = session.spec_config(k=3, temperature=temperature, seed=seed, max_new_tokens=40)
        constraint = constrained(pair, "grammar", grammar, "llguidance")
        speculative = session.run(pair, tokenizer("x").input_ids, cfg, constraint=constraint)
        alone = session.run(pair, tokenizer("x").input_ids, cfg, speculative=False, constraint=constraint)
        if temperature == 0:  # greedy: the same tokens (sampled runs share a law, not their tokens: tests/test_law_*)
            assert speculative.token_ids == alone.token_ids
        assert speculative.valid or speculative.finish_reason == "length", speculative.validation_error
        rejected += sum(e.kind == "rejected" for r in speculative.rounds for e in r.tokens)
    assert rejected, "no guess was refused: nothing rolled back"


class Counted:
    """An llguidance.LLMatcher that counts the tokens it consumes (its copies count into the same list)."""

    def __init__(self, inner, counts: list):
        self.inner, self.counts = inner, counts

    def consume_token(self, token: int) -> bool:
        self.counts.append(token)
        return self.inner.consume_token(token)

    def deep_copy(self):
        return self.inner.deep_copy()


def test_a_dead_end_is_left_behind_with_the_abandoned_copy(tokenizer):
    """A guess into a Lark dead end leaves llguidance's matcher in error; a rollback copies the clean
    matcher instead, fed each kept token once across rollbacks (a replay from the start cost the
    output's length each time); a new matcher only for a rollback past what it holds. Masks match
    a matcher fed the kept tokens."""
    from playground.constraints.llg import LLGuidanceBackend
    (a,), (b,) = tokenizer("a").input_ids, tokenizer("b").input_ids
    backend = LLGuidanceBackend(tokenizer, len(tokenizer), stop_ids(tokenizer))
    grammar, _ = backend.compile(ConstraintSpec("grammar", 'start: item+ "."\nitem: "b" | "a" NOTHING\nNOTHING: /[^\\x00-\\U0010ffff]/\n'))
    words = (len(tokenizer) + 31) // 32

    def mask(matcher):
        row = torch.zeros(words, dtype=torch.int32)
        matcher.fill_bitmask(row)
        return row

    matcher, fed, fresh_calls = backend.matcher(grammar), [], []
    fresh = matcher.fresh
    matcher.fresh = lambda: fresh_calls.append(1) or Counted(fresh(), fed)
    matcher.clean = matcher.fresh()
    kept = 0
    for written, back in ((40, 1), (30, 7), (5, 1), (0, 30)):  # the last one past what the clean one holds
        fed.clear()
        assert all(matcher.consume(b) for _ in range(written)) and matcher.consume(a)
        mask(matcher)  # (an error's mask allows EOS alone; the guide zeroes a dead end's)
        assert matcher.error() == "no token can continue the output"
        matcher.rollback(back)
        kept_before, kept = kept, kept + written + 1 - back
        reference = backend.matcher(grammar)
        assert all(reference.consume(b) for _ in range(kept))
        assert torch.equal(mask(matcher), mask(reference)) and matcher.error() is None
        assert len(fed) == (kept if back > written else kept - kept_before)  # each kept token fed once
    assert len(fresh_calls) == 2  # the first clean matcher, then the rollback past it


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    from transformers import AutoTokenizer
    from playground.models import packaged
    return AutoTokenizer.from_pretrained(packaged.local_dir("smollm2-135m-instruct"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mask_after_a_rollback_is_that_of_the_kept_tokens(smollm2_tokenizer, backend):
    """llguidance 1.9.1 rolled back in place kept a mask's reading from the abandoned branch: masked
    inside `{"source": {"name": "`, rolled back to the key and fed `uri": "`, it allowed `",` (a key
    after `uri`, the last one), which its matcher then refused: a run over a real schema
    (JSONSchemaBench's Github_hard o89726) stopped with "token doesn't satisfy the grammar"."""
    tok = smollm2_tokenizer
    source = {"type": "object", "properties": {"name": {"type": "string"}, "uri": {"type": "string"}},
              "additionalProperties": False}
    schema = {"type": "object", "properties": {"source": source}, "additionalProperties": False}
    constraint = compile_constraint(ConstraintSpec("json", json.dumps(schema), backend), tok, len(tok), stop_ids(tok))
    ids = lambda text: tok(text, add_special_tokens=False).input_ids  # noqa: E731
    prefix, guess, kept = ids('{"source": {"'), ids('name": "'), ids('uri": "')
    matcher, row = constraint.guide(1).matcher, torch.empty((len(tok) + 31) // 32, dtype=torch.int32)
    assert all(matcher.consume(t) for t in prefix)
    for token in guess:
        assert matcher.consume(token)
        matcher.fill_bitmask(row)
    matcher.rollback(len(guess))
    for token in kept:
        assert matcher.consume(token)
        matcher.fill_bitmask(row)
    reference = constraint.guide(1)
    assert reference._commit(prefix + kept)
    assert torch.equal(row, reference.next_mask())
    (comma,) = ids('",')
    assert not (row[comma // 32].item() >> (comma % 32)) & 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("setting", [dict(k=3), dict(k=3, temperature=1.0, seed=5), dict(k=2, tree=(2, 2)),
                                     dict(k=3, compile=True)])
def test_a_guess_into_a_lark_dead_end_is_only_rejected(tokenizer, setting, backend):
    """A Lark grammar can allow a token that leads where nothing may follow (here "a", then a rule
    that matches nothing), under either backend; llguidance's matcher then stays in error through rollback. A draft that
    guesses "a" where the target writes "b" stopped the whole run; it is refused as any wrong guess,
    and the target alone's output comes out."""
    (a,), (b,) = tokenizer("a").input_ids, tokenizer("b").input_ids
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=21, eos_id=tokenizer.eos_token_id)
    draft = tiny.prefer_tokens(tiny.perturbed_copy(target, noise=0.3, seed=22), [a], 8.0)
    pair = tiny.make_pair(tiny.prefer_tokens(target, [b], 8.0), draft, tokenizer)
    constraint = constrained(pair, "grammar", 'start: item+ "."\nitem: "b" | "a" NOTHING\nNOTHING: /[^\\x00-\\U0010ffff]/\n',
                             backend)
    prompt, cfg = tokenizer("x = ").input_ids, session.spec_config(max_new_tokens=12, **setting)
    speculative = session.run(pair, prompt, cfg, constraint=constraint)
    alone = session.run(pair, prompt, cfg, speculative=False, constraint=constraint)
    assert speculative.token_ids == alone.token_ids and set(alone.token_ids) == {b}
    assert any(e.kind == "rejected" and e.token_id == a for r in speculative.rounds for e in r.tokens)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_target_writing_into_a_lark_dead_end_stops_both_runs(tokenizer, backend):
    """Where the target itself takes the token into the dead end, both runs stop there, named so."""
    (a,) = tokenizer("a").input_ids
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=21, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.3, seed=22)
    pair = tiny.make_pair(tiny.prefer_tokens(target, [a], 8.0), tiny.prefer_tokens(draft, [a], 8.0), tokenizer)
    constraint = constrained(pair, "grammar", 'start: "b" | "a" NOTHING\nNOTHING: /[^\\x00-\\U0010ffff]/\n', backend)
    for speculative in (True, False):
        with pytest.raises(PlaygroundError, match="no output can match this constraint from here"):
            session.run(pair, tokenizer("x = ").input_ids, session.spec_config(k=3, max_new_tokens=8),
                        speculative=speculative, constraint=constraint)


def test_the_constraint_caches_forget_a_tokenizer_past_the_newest_few(tmp_path, tokenizer):
    """The model LRU makes a new tokenizer each time it loads a model again; the caches here kept each one's
    tables and backends (151k token bytes, both backends' own) for the process's life: tens of MB a switch."""
    import gc
    import weakref

    from transformers import AutoTokenizer
    from playground.constraints import compile as compiled
    tokenizer.save_pretrained(tmp_path)
    spec = ConstraintSpec("json", '{"type": "object", "properties": {"a": {"type": "integer"}}}', "xgrammar", think_budget=0)
    first = AutoTokenizer.from_pretrained(tmp_path)
    gone = weakref.ref(first)
    constraint = compile_constraint(spec, first, len(first), frozenset([first.eos_token_id]))
    assert constraint.name_tables is not None and id(first) in compiled._tokenizers
    del first, constraint
    for _ in range(compiled.TOKENIZERS_KEPT):  # the same model loaded again, each time a tokenizer of its own
        again = AutoTokenizer.from_pretrained(tmp_path)
        compile_constraint(spec, again, len(again), frozenset([again.eos_token_id]))
    gc.collect()
    assert gone() is None  # nothing kept it: its tables and backend went with it
    kept = set(compiled._tokenizers)
    assert len(kept) == compiled.TOKENIZERS_KEPT and id(again) in kept
    for cache, its in ((compiled._backends, lambda key: key[1]), (compiled._bytes, lambda key: key[0]),
                       (compiled._surrogates, lambda key: key[0]), (compiled._compiled, lambda key: key[0][1])):
        assert {its(key) for key in cache} <= kept


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_tokenizer_llguidance_cannot_read_is_said_not_raised(backend):
    """A WordLevel tokenizer has no decoder: llguidance's reading raised a bare ValueError through Run (a fuzzer)."""
    tok = tiny.letters_tokenizer(30)
    pair = tiny.make_pair(tiny.tiny_model("qwen2", vocab=len(tok), seed=0, eos_id=tok.eos_token_id), None, tok)
    with pytest.raises(PlaygroundError, match="llguidance cannot read its tokens' bytes"):
        session.constrain(pair, from_user(regex="[a-e]{1,3}", backend=backend))


def test_a_python_caller_may_give_a_schema_as_a_dict():
    """from_user(schema={...}) raised AttributeError ('dict' object has no attribute 'strip') where the
    README promises a PlaygroundError for every refusal."""
    from playground.constraints import from_user
    assert from_user(schema={"type": "string"}) == from_user(schema='{"type": "string"}')
    assert from_user(schema={}).text == "{}" and from_user(schema=None) is None  # {} is any JSON value, not none
    loop: dict = {"type": "object"}
    loop["properties"] = {"self": loop}
    for bad, said in (({"type": "number", "maximum": float("nan")}, "cannot be written as JSON"),
                      (loop, "cannot be written as JSON"), ({"type": {1, 2}}, "cannot be written as JSON"),
                      (["type"], "must be JSON text or a dict, not list")):
        with pytest.raises(PlaygroundError, match=said):
            from_user(schema=bad)
    with pytest.raises(PlaygroundError, match="the regex must be a str, not int"):
        from_user(regex=5)
    for backend in (None, 5):  # (a TypeError: the message sliced the name; a review)
        with pytest.raises(PlaygroundError, match="the constraint backend must be a str, not (NoneType|int)"):
            from_user(regex="a", backend=backend)


def test_a_reading_that_passed_forks_no_worker_again(monkeypatch):
    """The page's check as typed and its Export tab each read a setting's constraint in a forked worker: the same
    text read again (its notes too) comes from the last reading; a refusal is read again, with its message."""
    from playground.constraints import reading, worker
    spec = from_user(regex=r"(yes|no) \d{3} read once", backend="xgrammar")
    first = reading.read_constraint(spec)
    refused = from_user(regex="(?=a)b read again")
    with pytest.raises(PlaygroundError, match="look-around"):
        reading.read_constraint(refused)
    forks = []
    real = worker.bounded
    monkeypatch.setattr(worker, "bounded", lambda *args, **kwargs: forks.append(1) or real(*args, **kwargs))
    assert reading.read_constraint(spec) == first and forks == []
    assert reading.read_constraint(from_user(regex=spec.text)) is not None and forks == [1]  # another backend
    with pytest.raises(PlaygroundError, match="look-around"):
        reading.read_constraint(refused)
    assert forks == [1, 1]


@pytest.mark.parametrize("backend", ["llguidance", "xgrammar"])
def test_a_key_said_twice_in_a_schema_is_noted_and_the_last_one_is_read(backend):
    """{"type": "string", "type": "number"} ran as a number schema without a word (a review). Two of
    JSONSchemaBench's 9,557 schemas say a key twice: noted, not refused; the last one is read, as JSON readers do."""
    from playground.constraints.reading import read_constraint
    from playground.strict_json import keys_said_twice
    assert keys_said_twice('{"a": {"b": 1, "b": 2}, "a": 3, "c": [{"d": 1, "d": 1}]}') == ["b", "d", "a"]
    assert keys_said_twice('{"a": 1, "b": {"a": 2}}') == []  # the same key in two objects: once in each
    text = '{"type": "string", "type": "integer", "minimum": 5, "maximum": 9}'
    said = "the schema gives 'type' twice in one object: the last one is read"
    assert any(note.startswith(said) for note in read_constraint(from_user(schema=text, backend=backend)))
    pair = session.load_pair("demo-target", "demo-draft", "cpu")
    result = session.run(pair, session.encode_prompt(pair, "x = "), session.spec_config(k=3, max_new_tokens=8),
                         constraint=session.constrain(pair, from_user(schema=text, backend=backend)))
    assert any(note.startswith(said) for note in result.constraint_notes) and result.valid and 5 <= int(result.text) <= 9


def test_a_schema_that_is_not_json_is_told_where_once():
    """A truncated schema in a link read "Unterminated string starting at at line 1, column 9" (a review:
    Python's message ends in "starting at"); the output check and the web API's body reading say it the same way."""
    from playground.constraints.reading import read_constraint
    from playground.constraints.validate import validate_json
    from playground.ui.calls import unreadable
    with pytest.raises(PlaygroundError) as refused:
        read_constraint(from_user(schema='{"type":"obj'))
    assert str(refused.value) == "the schema is not valid JSON: Unterminated string starting at line 1, column 9"
    assert validate_json('{"a": "b', {}) == (False, "not valid JSON: Unterminated string starting at line 1, column 7")
    assert unreadable('{"data": "x') == "the request's body is not JSON: Unterminated string starting at line 1, column 10"


@pytest.mark.parametrize("grammar, rule, needing", [
    ('root ::= "a" root', "root", ""),
    ('root ::= "y" r | "y" "z"\nr ::= "a" r', "r", ""),
    ('start: "y" r | "y" "z"\nr: "a" r', "r", ""),
    ('root ::= x*\nx ::= "a" x', "x", ""),
    ('start: [r] "b"\nr: "a" r', "r", ""),
    ('start: "a" (r "b")\nr: "a" r', "r", " (nor can 'start', which need it)"),
    ('root ::= r\nr ::= s\ns ::= r', "s", " (nor can 'root', 'r', which need it)"),
    ('start: "y" r | "y" "z"\nr: "a" r\n?s: "q"', "r", ""),  # (Lark's ?rule, not r's last item made optional)
    ('start: "y" r{01} | "z"\nr: "a" r', "r", ""),  # (a count of 01 is one; a second fuzzing review)
    ('start: "y" r ~ 01 | "z"\nr: "a" r', "r", ""),
])
def test_a_grammar_with_a_rule_no_finite_text_completes_is_refused_before_the_run(grammar, rule, needing):
    """root ::= "a" root: llguidance gave up at run time in its own words ("Too many items (limit 50000;
    ff_tokens)"); behind a choice (root ::= "y" r | "y" "z") every check passed, and xgrammar's search for the
    text it forces after "ya" never returned, growing to 15 GB in 45 s (a fuzzing review). Both refuse it first."""
    for backend in BACKENDS:
        with pytest.raises(PlaygroundError, match=re.escape(f"no finite text completes rule '{rule}' of the grammar{needing}:")):
            from_user(grammar=grammar, backend=backend)


@pytest.mark.parametrize("grammar", ['root ::= a\na ::= a a | "x"', 'root ::= "a" root | "b"', 'root ::= "a" | b?\nb ::= "b"',
                                     'start: r{0,3} "b"\nr: "a" r | "c"', 'start: WORD\n%import common.WORD',
                                     '?start: value\n?value: object | "x"\nobject: "{" [value ("," value)*] "}"',
                                     'start: list\nlist: item -> list | item "," list\nitem: "x"'])  # (an alias names no rule)
def test_a_grammar_whose_rules_each_can_end_is_not_refused_for_it(grammar):
    assert from_user(grammar=grammar).kind == "grammar"


def test_a_parser_that_gave_up_following_forced_text_is_said_in_words():
    """llguidance's own words, "Too many items (limit 50000; ff_tokens)", said what a person can mend."""
    from playground.constraints.guide import gave_up_why
    assert "forces text forever" in gave_up_why("parser error: Too many items (limit 50000; ff_tokens)")


def test_the_backends_offered_are_the_backends_built():
    """config.BACKENDS names what the page, links and CLI offer; reading's table builds them (one list each, tied)."""
    from playground.config import BACKENDS as OFFERED
    from playground.constraints.reading import BACKEND_CLASSES
    assert tuple(BACKEND_CLASSES) == OFFERED == tuple(BACKENDS)


@pytest.mark.parametrize("grammar, said", [
    ('\ufeffroot ::= "a"', "the grammar holds a byte-order mark (U+FEFF): delete it (line 1, column 1)"),
    ('root ::= x\u202e\nx\u202e ::= "a"', "the grammar holds U+202E, outside a string, class or regex, where the grammar's "
                                           "syntax is ASCII (line 1, column 11)"),
    ('root ::= "yes"\0 | "no"', "the grammar holds a NUL (U+0000), where xgrammar stops reading the grammar"),
    ('start: xé\nxé: "a"', "U+00E9 'é', outside a string"),
])
def test_a_grammar_character_a_backend_misreads_is_refused_where_it_stands(grammar, said):
    """A byte-order mark or a bidi control in a name made xgrammar raise UnicodeDecodeError (its message cut inside
    the character), said as "compiling this constraint failed" under both backends (llguidance's own refusal lost);
    xgrammar stopped reading at a NUL, "no" never allowed (a fuzzing review)."""
    for backend in BACKENDS:
        with pytest.raises(PlaygroundError, match=re.escape(said)):
            from_user(grammar=grammar, backend=backend)
    read_constraint(from_user(grammar='root ::= "é" [ü-ÿ]+  # café', backend="xgrammar"))  # (in literals and comments: any)


def test_a_refusal_says_the_other_backend_reads_it_without_calling_a_note_a_gap():
    """'reads it without enforcing all of it' was said where the other backend's one note was that the grammar accepts
    an empty output (a fuzzing review)."""
    with pytest.raises(PlaygroundError) as refused:
        read_constraint(from_user(grammar='start: A\nA: ~"a"', backend="xgrammar"))
    assert "(the llguidance backend reads it: pick it as the constraint backend; note: this grammar accepts an empty output" \
        in str(refused.value) and "without enforcing" not in str(refused.value)


@pytest.mark.parametrize("grammar", ['root ::= "\\x41b"', 'root ::= [\\x41] "b"', 'start: /\\x41b/', 'start: /[\\x41]b/'])
def test_a_grammars_hex_escape_takes_two_digits_under_both_backends(grammar):
    """xgrammar read \\x on past two digits in a GBNF string or class and a Lark regex: "\\x41b" wrote U+041B, called
    valid (its check replays the output on the same backend; a fuzzing review)."""
    pair = session.load_pair("demo-target", "demo-draft", "cpu")
    for backend in BACKENDS:
        result = session.run(pair, session.encode_prompt(pair, "x"), session.spec_config(k=3, max_new_tokens=8),
                             constraint=session.constrain(pair, from_user(grammar=grammar, backend=backend)))
        assert (result.text, result.valid) == ("Ab", True), backend


@pytest.mark.parametrize("grammar, said", [
    ("start: /[\\^a]{3}/", "xgrammar reads a class opening with an escaped caret as negated"),
    ("start: /x\\Z/", "holds an anchor (^, $, \\A or \\Z), which xgrammar drops"),  # (it read \\Z as the letter: "xZ")
    ("start: /\\D/", "xgrammar reads \\D with ASCII classes"),
    ("start: /[^\\d]/", "xgrammar reads \\d with ASCII classes"),
    ("start: /[\\p{L}]+/", "is not one Python's re reads (bad escape \\p"),  # (it wrote "p}}}", valid)
    ("start: /\\x{e9}/", "is not one Python's re reads (incomplete escape"),
    ("start: /a$b/", "holds an anchor (^, $, \\A or \\Z), which xgrammar drops"),  # (it wrote "ab", valid)
])
def test_a_lark_regex_xgrammar_reads_otherwise_is_refused_as_a_regex_constraint_is(grammar, said):
    """A Lark regex terminal is Python's re: xgrammar wrote "fff" for /[\\^a]{3}/ and "xZ" for /x\\Z/, each called
    valid, and let \\D take ٤ (a fuzzing review); a regex constraint's own refusals now hold in a grammar."""
    with pytest.raises(PlaygroundError, match=re.escape(said)):
        read_constraint(from_user(grammar=grammar, backend="xgrammar"))
    assert any("as ASCII" in note for note in read_constraint(from_user(grammar="start: /[a-c]\\d/", backend="xgrammar")))


def test_a_grammar_naming_the_end_token_is_met_by_the_output_that_writes_it():
    """`start: "a" <[0]>` (0 the demo model's end): the model wrote "a" and the end, as asked, and the check,
    replaying the output without its end tokens, called it no match (a fuzzing review)."""
    pair = session.load_pair("demo-target", "demo-draft", "cpu")
    end = pair.tokenizer.eos_token_id
    constraint = session.constrain(pair, from_user(grammar=f'start: "a" <[{end}]>', backend="llguidance"))
    result = session.run(pair, session.encode_prompt(pair, "x"), session.spec_config(k=3, max_new_tokens=8), constraint=constraint)
    assert (result.text, result.valid, result.validation_error) == ("a", True, None)


FORCED_FOREVER = [("regex", "b|a+[^\\x00-\\U0010ffff]"), ("schema", '{"type": "string", "pattern": "^(b|a+[^\\\\s\\\\S])$"}'),
                  ("grammar", 'start: "y" r | "y" "z"\nr: "a" r | <|endoftext|>')]


@pytest.mark.parametrize("kind, text", FORCED_FOREVER)
def test_xgrammars_forced_text_is_found_within_a_bound(kind, text):
    """After "a", each of these forces "a" for ever: xgrammar's own search for the forced text never returned,
    growing to 15 GB in 45 s, then std::bad_alloc out of the run (a fuzzing review; a schema's pattern and a grammar
    whose loop ends only at a token no byte spells pass every check). Found over bytes, FORCED_BYTES at most: the run
    writes its tokens and ends, unfinished. Run in a child held to 3 GB, so that a search without bound fails alone."""
    script = f"""
import resource, torch
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
torch.set_num_threads(1)
from playground import session
from playground.constraints import from_user
pair = session.load_pair("demo-target", "demo-draft", "cpu")
constraint = session.constrain(pair, from_user(**{{{kind!r}: {text!r}}}, backend="xgrammar"))
for seed in range(12):  # sampled until a run takes the branch forced for ever
    result = session.run(pair, session.encode_prompt(pair, "x"), session.spec_config(k=3, max_new_tokens=12, temperature=1.0,
                         seed=seed), constraint=constraint)
    print(repr(result.text), result.valid)
    if "aaaa" in result.text:
        break
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(pathlib.Path(__file__).parent.parent)})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert any("aaaa" in line and line.endswith("False") for line in lines), lines


def test_a_gbnf_strings_escaped_brackets_are_read_as_llama_cpp_reads_them():
    """llama.cpp's parse_char reads \\[ and \\] in a string; both backends refused the grammar ("lexer error", "Invalid
    escape sequence"; a fuzzing review). A class's escapes, and an escaped backslash before a bracket, stay as written."""
    pair = session.load_pair("demo-target", "demo-draft", "cpu")
    for grammar, text in (('root ::= "\\[" [n] "\\]"', "[n]"), ('root ::= "a\\\\" [\\[] "b"', "a\\[b")):
        for backend in BACKENDS:
            result = session.run(pair, session.encode_prompt(pair, "x"), session.spec_config(k=3, max_new_tokens=8),
                                 constraint=session.constrain(pair, from_user(grammar=grammar, backend=backend)))
            assert (result.text, result.valid) == (text, True), (grammar, backend)
    from playground.constraints.char_escapes import gbnf_bracket_escapes  # (xgrammar's Regex("..."): a regex's own)
    assert gbnf_bracket_escapes('root ::= Regex("\\[x\\]") "\\["', "<{}>".format) == 'root ::= Regex("\\[x\\]") "<91>"'


def test_a_grammar_naming_tokens_forces_nothing_over_bytes_under_xgrammar(tokenizer):
    """<[66]> compiled over bytes was the byte "B": after token 66 the over-bytes matcher forced what follows "B" in
    another alternative, and "cccccc" could never be written (a review). A grammar naming tokens has no such matcher."""
    from playground.constraints import xgr
    b = tokenizer("b", add_special_tokens=False).input_ids[0]
    grammar = f'start: <[{b}]> ("bbbbbb" | "cccccc") | "R" "bbbbbb"'
    compiled = xgr.XGrammarBackend(tokenizer, len(tokenizer), frozenset({tokenizer.eos_token_id})).compile(
        ConstraintSpec("grammar", grammar, "xgrammar"))[0]
    assert compiled.over_bytes is None and xgr.XGrammarBackend(tokenizer, len(tokenizer), frozenset()).matcher(
        compiled).forced_tokens() == []


@pytest.mark.parametrize("grammar", ['start: "a" <｜end▁of▁sentence｜>',  # (a token's own name, DeepSeek's)
                                     'root ::= a\na ::= "x" a\na ::= "y"'])  # (a rule written twice: two alternatives)
def test_a_grammar_the_new_checks_misread_is_read(grammar):
    """Both were refused by the checks of a fuzzing review's fixes (a second review): a token's name is not the grammar's
    syntax, and a GBNF rule defined twice is not one sequence of both."""
    assert from_user(grammar=grammar).kind == "grammar"


def test_a_deeply_nested_lark_regex_is_read_for_anchors_without_recursion():
    """500 nested groups ran past Python's recursion: "maximum recursion depth exceeded" (a review)."""
    read_constraint(from_user(grammar="start: /" + "(" * 400 + "a" + ")" * 400 + "/", backend="xgrammar"))
