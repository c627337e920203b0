"""What the stream shows: a rejected newline stays on its line as a visible, struck-through symbol."""
import html as html_text
import re

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from playground.events import ACCEPTED, BONUS, CORRECTED, FORCED, REJECTED, Round, TokenEvent
from playground.ui import render
from playground.ui.render import token_stream


def test_a_rejected_newline_is_a_symbol_not_a_line_break():
    tokens = [TokenEvent(ACCEPTED, 1, "x ="), TokenEvent(REJECTED, 2, "\n"), TokenEvent(CORRECTED, 3, " 1\n")]
    html = token_stream([Round(1, tokens, 1, 0, 1, 1, 0.0, 0.0, 0.0)])
    rejected = html.split('data-kind="rejected"')[1].split("</span>")[0]
    assert "↵" in rejected and "\n" not in rejected
    assert " 1\n" in html  # committed newlines are kept as they are


def test_stream_text_is_escaped():
    html = token_stream([Round(1, [TokenEvent(ACCEPTED, 1, "<img src=x onerror=alert(1)>")], 0, 0, 1, 0, 0.0, 0.0, 0.0)])
    assert "<img" not in html and "&lt;img" in html


def test_an_errors_quoted_command_is_code_and_the_rest_stays_text():
    """'Pre-download it ...: `hf download Qwen/Qwen3-8B`' showed its backticks on the page."""
    shown = render.error("offline. Pre-download it: `hf download Qwen/Qwen3-8B`; the schema `<b>` `", "model")
    assert shown.endswith("Pre-download it: <code>hf download Qwen/Qwen3-8B</code>; the schema <code>&lt;b&gt;</code> `</div>")


def test_the_theory_card_is_shown_only_for_draft_models():
    from playground.metrics import summarize
    from playground.ui.render import metrics
    stats = summarize([Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 2, "b")], 2, 1, 1, 2, 0.0, 0.0, 0.01)])
    assert "<small>theory</small>" in metrics(stats, 2) and "<small>theory</small>" not in metrics(stats, 2, theory=False)
    # its measured figure is a round's (the passes card beside it counts the prompt pass too)
    assert "measured 2.00 a round, the prompt pass not counted" in metrics(stats, 2)
    # compared: its tokens/s are its own time's (a newcomer watched 130 s of a run whose card said 50 s)
    assert "the target alone's turns, taken between its rounds, not counted" in metrics(stats, 2, interleaved=True)
    assert "target alone's turns" not in metrics(stats, 2)


def test_the_theory_card_takes_each_round_at_the_guesses_it_drafted():
    """The formula at the settings' k against rounds the token budget shortened: at α = 1, k = 5 and 32 tokens
    the card read theory 6.00 against 5.33 measured, as if independence had failed (a maths review)."""
    from playground.metrics import summarize
    from playground.ui.render import metrics
    whole = Round(1, [TokenEvent(ACCEPTED, 1, "a")] * 5 + [TokenEvent(BONUS, 2, "b")], 5, 5, 1, 5, 0.0, 0.0, 0.01, k=5)
    last = Round(6, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(BONUS, 2, "b")], 1, 1, 1, 1, 0.0, 0.0, 0.01, k=1)
    shown = metrics(summarize([whole] * 5 + [last]), 5)
    assert "theory</small><b>5.33</b>" in shown and "each round at the guesses it drafted" in shown and "measured 5.33 a round" in shown
    assert "each round at the guesses" not in metrics(summarize([whole] * 5), 5)  # no round shortened: the formula's
    # a confidence stop or a lookup drafts fewer than its k (a review: 8.21 read against 1.49 measured)
    stopped = Round(7, [TokenEvent(ACCEPTED, 1, "a")] * 2 + [TokenEvent(BONUS, 2, "b")], 2, 2, 1, 2, 0.0, 0.0, 0.01, k=8)
    unsure = Round(8, [TokenEvent(BONUS, 2, "b")], 0, 0, 1, 1, 0.0, 0.0, 0.01, k=8)  # (it drafted none)
    assert summarize([stopped, unsure])["theory_tokens_per_round"] == pytest.approx(2.0)  # (3 + 1) / 2, as measured


def test_an_adaptive_policys_cards_say_k_is_a_ceiling_and_how_little_was_drafted():
    """Confidence 0.95 at k = 8: "acceptance rate 1.00", "0.07 accepted per round, of k = 8", where 60 of 61
    rounds drafted nothing (a review): the rate rested on a handful of guesses and k was a ceiling."""
    from playground.metrics import summarize
    from playground.ui.render import metrics
    guessed = Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(BONUS, 2, "b")], 1, 1, 1, 1, 0.0, 0.0, 0.01, k=8)
    unsure = Round(2, [TokenEvent(BONUS, 2, "b")], 0, 0, 1, 1, 0.0, 0.0, 0.01, k=8)
    stats = summarize([guessed] + [unsure] * 3)
    assert stats["rounds_without_guesses"] == 3
    shown = metrics(stats, 8, policy="confidence")
    assert "of at most k = 8 (the confidence policy); 3 rounds drafted nothing" in shown and ">1 of 1 guesses kept" in shown
    assert "of k = 8</small>" in metrics(summarize([guessed] * 2), 8)  # fixed k: as before


def test_a_cascades_cards_say_what_its_lookup_level_did():
    """Prompt lookup's guesses, checked by the draft model in one pass: how many it offered and kept, on the page
    and the CLI (the metrics counted the cascade's proposals as the draft model's alone)."""
    from playground.cli import format_text
    from playground.metrics import summarize
    from playground.ui.render import metrics
    kept_two = Round(1, [TokenEvent(ACCEPTED, 1, "a")] * 3 + [TokenEvent(BONUS, 2, "b")], 3, 3, 1, 2, 0.0, 0.0, 0.01, k=4,
                     looked_up=3, lookup_kept=2)
    alone = Round(2, [TokenEvent(ACCEPTED, 1, "a")] * 4 + [TokenEvent(BONUS, 2, "b")], 4, 4, 1, 4, 0.0, 0.0, 0.01, k=4)
    stats = summarize([kept_two, alone, kept_two])
    assert (stats["looked_up"], stats["lookup_kept"]) == (6, 4)
    said = "prompt lookup offered the draft model 6 guesses and it kept 4 (67%; each one kept, a draft step not taken)"
    assert said in metrics(stats, 4) and f"-- {said}" in format_text({"text": "", "stats": stats, "valid": None,
                                                                       "finish_reason": "length"}).splitlines()
    plain = summarize([alone])
    assert "prompt lookup" not in metrics(plain, 4) and "prompt lookup" not in format_text(
        {"text": "", "stats": plain, "valid": None, "finish_reason": "length"})


def test_the_acceptance_card_names_alpha_beside_its_rate():
    """"acceptance rate 0.36" beside the theory card's "α = 0.57" read as two acceptances that disagree (a
    walk-through): the rate's card says which share α is."""
    from playground.metrics import summarize
    from playground.ui.render import metrics
    chain = Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(REJECTED, 3, "c"), TokenEvent(CORRECTED, 2, "b")], 3, 1, 1, 3,
                  0.0, 0.0, 0.01, k=3)  # one kept, one refused, the third never judged
    shown = metrics(summarize([chain] * 2), 3)
    assert "<b>0.33</b><small>2 of 6 guesses kept; α = 0.50</small>" in shown  # (how each is counted in its fold:)
    assert "accepted / proposed draft tokens" in shown and "α: of the guesses the target judged, the share it kept" in shown


def test_the_verdict_carries_what_the_engine_did_not_enforce():
    html_text = render.validity_badge(True, None, ["not enforced while writing (checked after the run): <uniqueItems>"])
    assert 'id="valid-badge">valid<' in html_text and 'class="constraint-note"' in html_text
    assert "&lt;uniqueItems&gt;" in html_text and "<uniqueItems>" not in html_text
    cut = render.validity_badge(True, None, [], open_end=True)
    assert 'id="valid-badge">valid as far as it goes</span><div class="constraint-note">max new tokens ran out where' in cut


def test_charts_show_a_speedup_that_could_not_be_told_as_its_range_not_a_gap():
    """Under noise every point can be 'cannot tell': the charts then drew nothing for them (one bar,
    the only sure one, stood out); they draw the estimate faintly with its 95% interval."""
    from playground.ui import plots
    told = {"variant": "prompt lookup", "k": 1, "speedup": 0.9, "speedup_low": 0.85, "speedup_high": 0.96,
            "speedup_estimate": 0.9, "acceptance_rate": 0.2, "token_acceptance": 0.3, "tokens_per_target_pass": 1.2}
    untold = told | {"variant": "draft model", "k": 2, "speedup": None, "speedup_low": 0.78, "speedup_high": 1.35,
                     "speedup_estimate": 1.1}
    for figure in (plots.draft_comparison([told, untold]), plots.sweep_chart([told, untold], "k")):
        faint = [t for t in figure.data if t.name == plots.UNTOLD]
        assert len(faint) == 1 and list(faint[0].y) == [1.1]
        assert list(faint[0].error_y.array) == [1.35 - 1.1] and list(faint[0].error_y.arrayminus) == [1.1 - 0.78]
    assert not [t for t in plots.draft_comparison([told]).data if t.name == plots.UNTOLD]
    alpha = next(t for t in plots.sweep_chart([told, untold], "k").data if t.name == plots.ALPHA)  # beside the
    assert list(alpha.y) == [0.3, 0.3]  # acceptance rate, which falls with k by construction (a maths review)
    for figure in (plots.draft_comparison([untold]), plots.sweep_chart([untold], "k")):  # a fresh-eyes pass: a legend
        assert "speedup (95% interval)" not in [t.name for t in figure.data]  # named bars none had; the 1x line unnamed
        assert plots.TARGET_ALONE in [t.name for t in figure.data] and plots.UNTOLD.startswith("speedup")
    sweep = plots.sweep_chart([told, untold], "k")  # the acceptance line drawn in the speedup's blue
    colour = {t.name: t.line.color for t in sweep.data}
    assert len({colour["speedup (95% interval)"], colour[plots.ACCEPTANCE], colour["tokens per pass"]}) == 3
    not_run = {key: None for key in told} | {"variant": "cascade (lookup -> draft)", "note": "not run: a feature draft"}
    assert "not run (see its row)" in [a.text for a in plots.draft_comparison([told, not_run]).layout.annotations]
    alone = plots.sweep_chart([untold], "k")  # its legend named a 95% interval no point had; no 1x line (the calculator's has)
    assert "speedup (95% interval)" not in [t.name for t in alone.data]
    assert [(h.y0, h.yref) for h in alone.layout.shapes] == [(1.0, "y")]
    faster = untold | {"variant": "cascade", "k": 3, "speedup_low": 1.12, "speedup_high": 1.53, "speedup_estimate": 1.32,
                       "verdict": "faster"}
    few_rounds = untold | {"variant": "lookup", "k": 5, "speedup_low": 4.0, "speedup_high": 4.0, "speedup_estimate": 4.0,
                           "verdict": "cannot tell"}  # one forced round: a range of no width, clear of 1x, saying nothing
    rows = [told, untold, faster, few_rounds]
    figures = (plots.draft_comparison(rows), plots.sweep_chart(rows, "k"),
               plots.speedup_curve(0.7, 4, 0.1, [{**r, "alpha": 0.5} for r in rows]))
    for figure, told_colour in zip(figures, (render.COLOURS["bonus"], render.COLOURS["bonus"], plots.MEASURED_COLOUR)):
        groups = {t.name: t for t in figure.data if t.name in (plots.UNTOLD, plots.ONE_SIDE)}
        assert list(groups[plots.ONE_SIDE].y) == [1.32] and list(groups[plots.UNTOLD].y) == [1.1, 4.0]  # clear of 1x:
        assert groups[plots.ONE_SIDE].marker.color == told_colour != groups[plots.UNTOLD].marker.color  # apart, in the
        # told colour


def test_the_cost_ratio_is_drafting_per_guess_over_a_verify_pass():
    """c of (1 - a^(k+1)) / (1 - a) / (k c + 1): k c is a round's drafting (a cascade's looked-up guesses
    cost nothing), in verify passes; rounds of forced tokens alone and the prompt pass do not count."""
    from playground.events import Prefill
    from playground.metrics import cost_ratio
    rounds = [Round(1, [], 4, 4, 1, 5, 0.010, 0.040, 0.05), Round(2, [], 4, 1, 1, 4, 0.008, 0.040, 0.05),
              Round(3, [], 0, 0, 0, 0, 0.0, 0.0, 0.001)]  # a catch-up pass in the first; the last one forced
    assert cost_ratio([Prefill(1, 1, 0.5, 0.1), *rounds]) == pytest.approx((0.018 / 8) / 0.040)
    cascade = [Round(1, [], 4, 4, 1, 2, 0.004, 0.040, 0.05)]  # 2 of its 4 guesses looked up
    assert cost_ratio(cascade) == pytest.approx((0.004 / 4) / 0.040)
    assert cost_ratio(rounds[2:]) is None and cost_ratio([]) is None


def test_a_sweep_rows_speedup_cell_says_which_side_of_1x_and_its_csv_keeps_the_estimate():
    """The CSV's speedup was empty for every noisy row (every one on a loaded 2-core machine), with no
    estimate, and a told 0.96 over 0.87-1.04 read as slower."""
    from playground.measure import sweeps
    from playground.measure.speedup import Speedup
    from playground.ui import experiments_tab
    at = sweeps.COLUMNS.index("speedup")
    rows = []
    for sp in (Speedup(None, 1.32, 1.12, 1.53, 4, "the ratio ranged", side="faster"), Speedup(None, 1.13, 0.9, 1.4, 4, "ranged"),
               Speedup(0.956, 0.956, 0.867, 1.037, 2), Speedup(1.4, 1.4, 1.3, 1.5, 1)):
        row = {c: None for c in sweeps.COLUMNS} | {"speedup": sp.speedup, "speedup_estimate": sp.estimate,
                                                   "speedup_low": sp.low, "speedup_high": sp.high, "verdict": sp.verdict,
                                                   "note": sweeps._note(sp)}
        rows.append(row)
    table = experiments_tab._table(rows)
    cells = [row[at] for row in table["data"]]
    assert cells == ["≈1.32 (faster, noisy)", "≈1.13 (noisy)", "0.96 (no clear difference)", 1.4]
    assert [row[at] for row in table["metadata"]["display_value"]][3] == "1.40"
    assert rows[2]["note"].startswith("no clear difference: the 95% interval holds 1x") and rows[3]["note"] == ""
    csv_text = sweeps.to_csv(rows, {"target": "acme/target", "max_new_tokens": 32})
    header, *lines = csv_text.splitlines()
    assert header.endswith(",speedup_estimate,verdict,identical,target,max_new_tokens")
    assert lines[0].endswith(",1.3200,faster,,acme/target,32") and lines[2].endswith(",0.9560,no clear difference,,acme/target,32")


def test_a_noisy_speedup_wholly_above_one_is_shown_as_faster_with_its_range():
    """Four measurements of 1.41-2.29x under load: "cannot tell" read as "no evidence it is faster"."""
    from playground.measure.speedup import Speedup
    faster = Speedup(None, 1.75, 1.41, 2.29, 4, "the ratio ranged 1.41-2.29x over 4 interleaved measurements", side="faster")
    name, value, detail, more = render._speedup_card(faster, "its text identical to the target alone's")
    assert value == "faster, 1.41-2.29x" and detail.startswith("too noisy for one number") and "about 1.75x" in detail
    assert more.startswith("the ratio ranged 1.41-2.29x")  # why, in its fold
    either = Speedup(None, 1.1, 0.8, 1.4, 4, "the ratio ranged 0.80-1.40x over 4 interleaved measurements")
    assert render._speedup_card(either, "sampled")[1] == "cannot tell"


def test_a_told_speedup_whose_interval_holds_one_is_no_clear_difference():
    """"1.06x" with 0.97-1.15x under it was read as faster (a newcomer's pass)."""
    from playground.measure.speedup import Speedup
    even = render._speedup_card(Speedup(1.06, 1.06, 0.97, 1.15, 2), "its text identical to the target alone's")
    assert even[1] == "no clear difference" and even[2].startswith(
        "1.06x, but its 95% interval, widened to each measurement&#x27;s own ratio, 0.97-1.15x, holds 1x")
    cut = render._speedup_card(Speedup(2.37, 2.37, 2.27, 2.40, 1, top_cut=True), "sampled")[2]  # (cut unsaid: a review)
    assert "2.27-2.40x (95% interval, its top cut at the most its passes allow)" in cut
    assert render._speedup_card(Speedup(1.2, 1.2, 1.05, 1.3, 2), "sampled")[1] == "1.20x"
    assert render._speedup_card(Speedup(0.8, 0.8, 0.7, 0.95, 2), "sampled")[1] == "0.80x"
    once = render._speedup_card(Speedup(1.2, 1.2, 1.15, 1.25, 1), "its text identical to the target alone's")
    assert once[1] == "1.20x" and once[2] == "1.15-1.25x (95% interval), one interleaved measurement; its text identical to the target alone&#x27;s"
    assert once[3].startswith("from one interleaved measurement: its interval is how its rounds varied; a run under other "
                              "load can differ beyond it")  # its rounds'
    from playground.metrics import summarize
    stats = summarize([Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 2, "b")], 2, 1, 1, 2, 0.0, 0.0, 0.01)])
    exact = render.metrics(stats, 4, Speedup(1.2, 1.2, 1.1, 1.3, 2), "sampled", baseline="the target alone runs <exact>")
    assert ("1.10-1.30x (95% interval), 2 interleaved measurements; sampled; "
            "the target alone runs &lt;exact&gt;</small>") in exact  # on the card's line, not in its fold (a review)
    assert "the 95% interval, widened to each measurement&#x27;s own ratio" in exact
    drawn = render._speedup_card(Speedup(1.2, 1.2, 1.15, 1.25, 1), "sampled")[3]  # (a sampled run cut to one draw)
    assert drawn.startswith("from one interleaved measurement: its interval is how its rounds varied; another draw or a run "
                            "under other load can differ beyond it")


def test_a_sweep_row_too_noisy_to_tell_shows_its_estimate_and_whole_ks():
    """The speedup cell was empty when it could not be told (every row of a loaded machine's sweep)."""
    from playground.measure import sweeps
    from playground.ui import experiments_tab, plots
    row = {c: None for c in sweeps.COLUMNS} | {"k": 2, "temperature": 0.0, "acceptance_rate": 0.5,
                                               "tokens_per_target_pass": 1.9, "speedup_low": 0.94, "speedup_high": 1.29,
                                               "speedup_estimate": 1.1}
    told = row | {"k": 4, "speedup": 1.31, "speedup_estimate": 1.31}
    table = experiments_tab._table([row, told])
    at = sweeps.COLUMNS.index("speedup")
    assert table["data"][0][at] == "≈1.10 (noisy)" and table["data"][1][at] == 1.31
    assert "tokens (all measurements)" in experiments_tab.column_headers(sweeps.COLUMNS)
    for axis, held in (("k", "temperature"), ("temperature", "k")):  # the axis held still: one value down a column
        columns = experiments_tab.sweep_columns(axis)
        assert held not in columns and axis in columns and len(columns) == len(sweeps.COLUMNS) - 1
        shown = experiments_tab._sweep_table([row, told], axis)
        assert shown.headers == experiments_tab.column_headers(columns) and all(len(r) == len(columns) for r in shown.value["data"])
    assert "tokens per target pass (prompt passes too)" in experiments_tab.column_headers(sweeps.COMPARE_COLUMNS)
    assert plots.sweep_chart([row, told], "k").layout.xaxis.dtick == 1


def test_a_sweep_tables_columns_each_show_their_own_decimals():
    """A sweep showed speedup 1.635 with high 1.811 beside high 1.9 (round to 3 places), and the run's
    card 1.64x for the speedup this table showed as 1.635."""
    from playground.measure import sweeps
    from playground.ui import experiments_tab
    row = {c: None for c in sweeps.COLUMNS} | {"k": 4, "temperature": 0.7, "speedup": 1.635, "speedup_estimate": 1.635,
                                               "speedup_low": 1.5, "speedup_high": 1.9, "acceptance_rate": 0.4166,
                                               "token_acceptance": 0.537, "tokens_per_target_pass": 2.0,
                                               "tokens_per_s": 31.25, "baseline_tokens_per_s": 19.0, "measurements": 2,
                                               "note": ""}
    table = experiments_tab._table([row])
    shown = dict(zip(sweeps.COLUMNS, table["metadata"]["display_value"][0]))
    assert shown == {"k": "4", "temperature": "0.7", "speedup": "1.64", "speedup_low": "1.50", "speedup_high": "1.90",
                     "note": "", "acceptance_rate": "0.42", "token_acceptance": "0.54", "tokens_per_target_pass": "2.00",
                     "tokens_per_s": "31.2", "baseline_tokens_per_s": "19.0", "measurements": "2", "prompts": "",
                     "tokens": ""}
    assert dict(zip(sweeps.COLUMNS, table["data"][0]))["speedup_high"] == 1.9  # the number itself, for sorting and the API


def test_a_sweep_stars_a_best_only_where_its_interval_clears_the_others():
    """k=2 at 1.20 (1.06-1.32) was starred 'best' beside a noisy k=4 at about 1.32 (1.16-1.50): only
    because k=2's interval was tight. A star needs an interval above every other row's."""
    from playground.ui import plots
    k2 = {"k": 2, "speedup": 1.2, "speedup_low": 1.06, "speedup_high": 1.32, "speedup_estimate": 1.2,
          "acceptance_rate": 0.5, "token_acceptance": 0.6, "tokens_per_target_pass": 1.8}
    k4 = k2 | {"k": 4, "speedup": None, "speedup_low": 1.16, "speedup_high": 1.5, "speedup_estimate": 1.32}
    stars = lambda fig: [t.name for t in fig.data if t.name.startswith("best")]  # noqa: E731
    overlapping = plots.sweep_chart([k2, k4], "k")
    assert not stars(overlapping) and "no clear best" in overlapping.layout.annotations[0].text
    clear = k2 | {"k": 3, "speedup": 1.6, "speedup_low": 1.51, "speedup_high": 1.7, "speedup_estimate": 1.6}
    assert stars(plots.sweep_chart([k2, k4, clear], "k")) == ["best k measured = 3"]
    alone = plots.sweep_chart([k2], "k")  # a sweep stopped after one point: nothing it is best among
    assert not stars(alone) and not alone.layout.annotations


def test_the_tree_view_says_when_it_shows_only_the_last_rounds():
    from playground.events import BONUS
    from playground.ui.tree_view import ROUNDS_SHOWN, tree_view
    rounds = [Round(i, [TokenEvent(ACCEPTED, 5, "x"), TokenEvent(BONUS, 6, "y")], 1, 1, 1, 1, 0.0, 0.0, 0.0)
              for i in range(1, ROUNDS_SHOWN + 4)]
    html = tree_view(rounds)
    assert f"the last {ROUNDS_SHOWN} of {ROUNDS_SHOWN + 3} rounds" in html and html.count('class="tround"') == ROUNDS_SHOWN
    assert "the last" not in tree_view(rounds[:ROUNDS_SHOWN])


def test_the_tree_view_tells_refused_from_never_judged_and_ends_in_the_targets_token():
    """Every node off the kept path was struck through and read "refused", those under a refused node too (the
    walk never reached them; one had p_target 0.998), and the target's own token was not drawn."""
    from playground.events import CORRECTED
    from playground.ui.tree_view import tree_view
    tree = {"tokens": [1, 2, 3, 4, 5], "parents": [-1, -1, 0, 1, 1], "path": [0],  # 0 kept; 1 refused; 2 refused
            "text": ["a", "b", "c", "d", "e"], "p_target": [0.9, 0.1, 0.2, 0.998, 0.3], "p_draft": [0.5] * 5}  # 3, 4 unjudged
    r = Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 9, "Z", p_target=0.7)], 5, 1, 1, 1, 0.0, 0.0, 0.0,
              tree=tree)
    view = tree_view([r])
    kinds = re.findall(r'class="tnode (\w+)"[^>]*>([^<]*)<', view)
    assert kinds == [("kept", "a"), ("refused", "c"), ("corrected", "Z"), ("refused", "b"), ("unjudged", "d"),
                     ("unjudged", "e")], kinds  # the target's token after the kept path, beside a's refused child
    assert "the target's own token (corrected) · p_target 0.700" in html_text.unescape(view)
    assert 'tabindex="0" role="region"' in view  # (it scrolls: reachable from the keyboard)


def test_the_tree_view_draws_the_end_of_sequence_as_the_stream_does():
    """A drafted end of sequence (no text) was drawn as a part of a character a later token completes."""
    from playground.events import BONUS
    from playground.ui.tree_view import tree_view
    drafted = Round(1, [TokenEvent(ACCEPTED, 5, "."), TokenEvent(ACCEPTED, 2, "")], 2, 2, 1, 1, 0.0, 0.0, 0.0)
    ended = Round(1, [TokenEvent(ACCEPTED, 5, "."), TokenEvent(BONUS, 2, "")], 1, 1, 1, 1, 0.0, 0.0, 0.0)
    for r in (drafted, ended):
        view = html_text.unescape(tree_view([r], frozenset({2})))
        assert "⏎eos" in view and "· end of sequence" in view and "part of a character" not in view
        assert "⏎eos" not in tree_view([r]) and "◦" in tree_view([r])  # another id with no text: a part


def test_a_rounds_title_names_a_tree_by_its_nodes_and_depth():
    from playground.events import BONUS
    tokens = [TokenEvent(ACCEPTED, 5, "x"), TokenEvent(BONUS, 6, "y")]
    tree = Round(2, tokens, 6, 1, 1, 2, 0.0, 0.0, 0.0, k=5, tree={"tokens": [5, 7, 8, 9, 3, 4], "parents": [-1, 0, 0, -1, 3, 3],
                                                                     "path": [0]})  # k: a ceiling, the tree 2 deep
    chain = Round(3, tokens, 3, 1, 1, 3, 0.0, 0.0, 0.0, k=4, stop_reason="draft unsure (p=0.31 < 0.5)")
    html = token_stream([chain, tree, chain])
    assert 'title="round 2: a token tree of 6 nodes, 2 deep, accepted 1"' in html
    assert 'title="round 3: drafted 3 of k=4 (draft unsure (p=0.31 &lt; 0.5)), accepted 1"' in html


def test_the_speedup_card_shows_the_rates_it_divides():
    """The page showed 34.8 tok/s (wall time) and 1.78x with neither engine-timed rate behind it."""
    from playground.measure.speedup import Speedup
    told = Speedup(1.78, 1.78, 1.59, 1.95, 2, spec_tokens_per_s=37.9, base_tokens_per_s=21.35)
    detail = render._speedup_card(told, "its text identical to the target alone's")[3]
    assert "speculation 37.9 tokens/s against the target alone&#x27;s 21.4 over the interleaved measurements" in detail
    assert "tokens/s" not in render._speedup_card(Speedup(1.5, 1.5, 1.4, 1.6, 1), "sampled")[3]  # rates unknown: none shown
    assert "ended before speculation" not in html_text.unescape(detail)  # 37.9 / 21.35 is the 1.78x
    sampled = Speedup(1.33, 1.33, 1.2, 1.45, 1, spec_tokens_per_s=50.0, base_tokens_per_s=9.1)  # the target alone's text shorter
    assert "the target alone&#x27;s texts ended before speculation&#x27;s, so the speedup costs it at speculation&#x27;s length" in (
        render._speedup_card(sampled, "sampled")[3])


def test_an_experiment_says_how_long_a_point_takes_once_one_is_measured(monkeypatch):
    from playground.ui import experiments_tab
    clock = [1000.0]
    monkeypatch.setattr(experiments_tab, "monotonic", lambda: clock[0])
    pace = experiments_tab.Pace()
    clock[0] += 50
    assert pace(0) == ""
    clock[0] += 80
    assert pace(2) == "; about 1 min 5 s a point so far"  # two points in 130 s
    clock[0] += 60  # the third point runs: the figure stays (it grew to 95 s a point before)
    assert pace(2) == "; about 1 min 5 s a point so far"
    clock[0] += 20
    assert pace(3) == "; about 1 min 10 s a point so far"


def test_the_position_chart_labels_whole_positions():
    from playground.ui import plots
    rounds = [Round(index=i, tokens=[], proposed=3, accepted=a, target_passes=1, draft_passes=3, draft_s=0.0,
                    target_s=0.0, wall_s=0.0, k=3) for i, a in enumerate((0, 2, 3))]
    assert plots.acceptance_by_position(rounds).layout.xaxis.dtick == 1



def test_the_position_chart_says_how_many_rounds_each_rate_is_over():
    """Survival 0.33 at 2, the conditional 1.00 at 3, yet survival 0.25 at 3 read as a contradiction (a review):
    each rate is over the rounds that drafted that far (the last round drafted 2, cut by max new tokens)."""
    from playground.ui import plots
    rounds = [Round(index=i, tokens=[], proposed=p, accepted=a, target_passes=1, draft_passes=p, draft_s=0.0,
                    target_s=0.0, wall_s=0.0, k=3) for i, (p, a) in enumerate(((3, 0), (3, 0), (3, 3), (2, 2)))]
    assert plots.position_counts(rounds) == [(2, 4, 4), (2, 4, 2), (1, 3, 1)]
    survival, conditional = plots.acceptance_by_position(rounds).data
    assert survival.hovertext[2] == "kept 1..3 in 1 of 3 rounds that drafted 3"
    assert conditional.hovertext[2] == "kept 3 in 1 of 1 round that drafted 3 and kept 1..2"
    assert "hover: rounds" in plots.acceptance_by_position(rounds).layout.xaxis.title.text


def test_the_run_charts_write_their_numbers():
    """A screen reader read a chart as its tick labels and title alone (an accessibility review), and a reader of
    the figure guessed each value from its axis: each bar, point and line's end carries its number."""
    from playground.ui import plots
    rounds = [Round(index=i, tokens=[TokenEvent(ACCEPTED, 1, "a")] * a + [TokenEvent(CORRECTED, 2, "b")], proposed=3,
                    accepted=a, target_passes=1, draft_passes=3, draft_s=0.1, target_s=0.2, wall_s=0.4, k=3)
               for i, a in enumerate((0, 2, 3, 2))]
    assert list(plots.accepted_histogram(rounds, 3).data[0].text) == ["1", "0", "2", "1"]
    survival, conditional = plots.acceptance_by_position(rounds).data
    assert list(survival.text) == ["0.75", "0.75", "0.25"] and list(conditional.text) == ["", "1.00", "0.33"]  # (one
    # number where both are the same: two ran into each other)
    line = plots.cumulative_tokens(rounds).data[0]
    assert line.name == "speculative: 11 tokens, 4 passes"  # (in the legend: two lines' ends written on them collided)
    none = [Round(index=i, tokens=[TokenEvent(CORRECTED, 2, "b")], proposed=3, accepted=0, target_passes=1, draft_passes=3,
                  draft_s=0.1, target_s=0.2, wall_s=0.4, k=3) for i in range(2)]
    survival, conditional = plots.acceptance_by_position(none).data  # all 0: the conditional's numbers above it
    assert list(survival.text) == ["0.00"] * 3 and not any(conditional.text) and list(conditional.textposition) == ["top center"] * 3
    stats = {"wall_s": 1.6, "draft_s": 0.4, "target_s": 0.8}
    assert [bar.text[0] for bar in plots.time_split(stats).data] == ["0.40 s", "0.80 s", "0.40 s"]


def test_the_metrics_say_what_a_tree_counts_and_nothing_before_a_round():
    from playground.metrics import summarize
    from playground.ui.render import metrics
    before = summarize([])
    shown = metrics(before, 4)
    assert "theory" not in shown and ("0 passes" in shown or "1 pass," in shown)  # no "measured 0.00" yet
    one = summarize([Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 2, "b")], 6, 1, 1, 2, 0.0, 0.0, 0.01)])
    assert "1 pass, prompt pass included" in metrics(one, 4)
    assert "accepted / verified tree nodes" in metrics(one, "the tree 2,2", theory=False) and "draft tokens" in metrics(one, 4)
    assert "1 of 6 tree nodes kept" in metrics(one, "the tree 2,2", theory=False)
    forced = summarize([Round(1, [TokenEvent(FORCED, 3, "{")] * 5, 0, 0, 0, 0, 0.0, 0.0, 0.01)])
    shown = metrics(forced, 4)  # an output the constraint forced whole: no guess was ever judged
    assert "<b>n/a</b><small>nothing was drafted</small>" in shown and "<small>theory</small>" not in shown
    assert forced["acceptance_rate"] is None and forced["token_acceptance"] is None  # no rate of no guess (it read 0.0)
    single = summarize([Round(1, [TokenEvent(FORCED, 3, "{")], 0, 0, 0, 0, 0.0, 0.0, 0.01)])
    assert "1 token in 0.01 s" in metrics(single, 4) and "5 tokens in 0.01 s" in shown  # ("1 tokens" before)
    from playground.ui.render import stopped
    assert "stopped after 1 token: " in stopped(1) and "stopped after 2 tokens: " in stopped(2)


def test_runs_joined_count_each_ones_prompt_pass():
    """A sweep joins its measurements' events: counting the first prompt pass alone gave 2.595 tokens
    per target pass where each greedy run (and the Playground) had 2.40."""
    from playground.events import Prefill
    from playground.metrics import summarize
    run = [Prefill(1, 1, 0.01, 0.01),
           Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 2, "b")], 2, 1, 1, 2, 0.0, 0.0, 0.01)]
    one, three = summarize(run), summarize(run * 3)
    assert one["tokens_per_target_pass"] == three["tokens_per_target_pass"] == 1.0
    assert (three["target_passes"], three["draft_passes"]) == (6, 9) and round(three["draft_s"], 9) == 0.03


def test_a_paused_round_is_titled_the_target_alone_and_left_out_of_the_histogram():
    """The schedule's pauses (k=0) are rounds of the target alone: no draft 'accepted 0' there."""
    from playground.events import BONUS, REJECTED
    from playground.ui.plots import accepted_histogram
    paused = Round(2, [TokenEvent(BONUS, 6, "y")], 0, 0, 1, 0, 0.0, 0.0, 0.0, k=0,
                   stop_reason="the schedule paused drafting")
    refused = Round(1, [TokenEvent(REJECTED, 5, "x"), TokenEvent(CORRECTED, 7, "z")], 1, 0, 1, 1, 0.0, 0.0, 0.0, k=1)
    assert 'title="round 2: the target alone (the schedule paused drafting)"' in token_stream([refused, paused])
    assert list(accepted_histogram([refused, paused, paused], 2).data[0].y) == [1, 0, 0]
    assert accepted_histogram([refused], 4).layout.xaxis.dtick == 1  # every count labelled, 1 and 3 too


def test_a_token_ending_one_character_and_starting_the_next_shows_the_first(tokenizer):
    """SmolLM2's token 10003 is "о" and the first byte of the next letter: the stream held the whole token back,
    so a run cut after it showed "предл" where its output read "предло" (a review); and an output cut after tokens
    that each end inside a character (日本語 here) kept a U+FFFD. Cut after any token, the stream's text is the
    output's; all of it, the text decoded whole."""
    from playground.detok import Detokenizer, whole_characters, with_text
    text = "Напиши одно предложение по-русски. Это хорошо, оно простое. 日本語のテキスト 😀👍 é"
    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trained.decoder = decoders.ByteLevel()
    trained.train_from_iterator([text] * 20, trainers.BpeTrainer(
        vocab_size=330, special_tokens=["<eos>"], show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    mixed = PreTrainedTokenizerFast(tokenizer_object=trained, eos_token="<eos>")
    ids = mixed(text, add_special_tokens=False).input_ids
    straddling = [i for i in ids if len(mixed.decode([i])) > 1 and mixed.decode([i]).endswith("\ufffd")]
    assert straddling, "the trained merges hold no token ending inside a character"
    for n in range(1, len(ids) + 1):
        detok = Detokenizer(mixed, [])
        shown = "".join(detok.push(i) for i in ids[:n])
        assert shown == whole_characters(mixed, ids[:n])[0] and "\ufffd" not in shown, n
    assert shown == text
    tokens = [TokenEvent(ACCEPTED, i, "") for i in ids]
    [filled] = with_text([Round(1, tokens, len(ids), len(ids), 1, 1, 0.0, 0.0, 0.0, k=len(ids))], mixed, [])
    assert "".join(t.text for t in filled.tokens) == text
    from playground.detok import dangling  # a prompt of ids that ends inside a character (`--prompt-ids`): its
    for n in range(1, len(ids)):  # output's stream lost that character, and its text began with U+FFFD
        prompt, output = ids[:n], ids[n:]
        tokens = [TokenEvent(ACCEPTED, i, "") for i in output]
        [filled] = with_text([Round(1, tokens, len(output), len(output), 1, 1, 0.0, 0.0, 0.0, k=len(output))],
                             mixed, prompt)
        streamed, (written, _) = "".join(t.text for t in filled.tokens), whole_characters(mixed, output, dangling(mixed, prompt))
        assert whole_characters(mixed, prompt)[0] + written == text and streamed == written, n


def byte_level_tokenizer(text: str) -> PreTrainedTokenizerFast:
    """A byte-level BPE (GPT-2's, as Qwen's and SmolLM2's) trained on `text`."""
    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trained.decoder = decoders.ByteLevel()
    trained.train_from_iterator([text] * 20, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<eos>"], show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=trained, eos_token="<eos>")


@pytest.mark.parametrize("scheme", ["byte-level", "sentencepiece"])
def test_a_replacement_character_written_whole_is_text_not_a_cut(scheme):
    """A U+FFFD is a character too: a prompt ending in one had it copied onto the output (whose check then
    failed), a run writing one lost it from the stream, and a run cut after one was said to end inside a character
    (a review). Whether a character is cut is read from the tokens' bytes, not from a U+FFFD at the end."""
    from playground.detok import Detokenizer, dangling, whole_characters, with_text
    from tests import tiny
    text = "x = \"\ufffd\ufffd 日\ufffd"
    tok = byte_level_tokenizer(text) if scheme == "byte-level" else tiny.sentencepiece_style_tokenizer()
    ids = tok(text, add_special_tokens=False).input_ids
    assert tok.decode(ids) == text
    pieces = tok.convert_ids_to_tokens(ids)  # each piece's count of bytes: a byte-level piece's characters, or one byte
    sizes = [1 if p.startswith("<0x") else len(p.replace("▁", " ").encode()) if scheme == "sentencepiece" else len(p)
             for p in pieces]
    lead = int(scheme == "sentencepiece")  # (the space SentencePiece puts in front, dropped when decoded)
    whole_at = {lead + len(text[:i].encode()) for i in range(len(text) + 1)}  # where a character ends, in bytes
    first = tok.decode(ids[:1])  # (a prompt of one: SentencePiece's first space is dropped where nothing is before it)
    for n in range(2, len(ids) + 1):
        detok = Detokenizer(tok, ids[:1])
        shown = first + "".join(detok.push(i) for i in ids[1:n])
        assert shown == whole_characters(tok, ids[:n])[0], n
        assert whole_characters(tok, ids[:n])[1] == (sum(sizes[:n]) not in whole_at), n
    assert whole_characters(tok, ids) == (text, False) and shown == text
    assert dangling(tok, ids) == []  # a text prompt ending in U+FFFD ends whole
    half = tok("日", add_special_tokens=False).input_ids[:-1]  # (the first bytes of 日 alone)
    assert dangling(tok, half) == half[-4:] and whole_characters(tok, half) == ("", True)
    for n in range(2, len(ids)):  # a prompt of ids cut anywhere: the output's text and stream are the rest
        prompt, output = ids[:n], ids[n:]
        tokens = [TokenEvent(ACCEPTED, i, "") for i in output]
        [filled] = with_text([Round(1, tokens, len(output), len(output), 1, 1, 0.0, 0.0, 0.0, k=len(output))], tok, prompt)
        streamed, (written, cut) = "".join(t.text for t in filled.tokens), whole_characters(tok, output, dangling(tok, prompt))
        rest = text[len(whole_characters(tok, prompt)[0]):]  # (SentencePiece drops a first space decoded alone)
        assert rest.lstrip(" ") == written.lstrip(" ") == streamed.lstrip(" ") and not cut, n


def test_a_character_split_over_refused_drafts_reads_as_guessed(tokenizer):
    """Each refused draft was decoded alone after the kept text: a character the draft guessed over three
    byte tokens read '� � �', and a kept byte joined a later refused one into a character never guessed (an
    outside review in Chinese). Refused drafts read on from each other; a tree's nodes from their ancestors."""
    from playground.detok import with_text
    ids = lambda text: tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    guessed = ids("乐")  # three byte tokens here
    assert len(guessed) == 3
    tokens = [TokenEvent(ACCEPTED, ids("a")[0], ""), *(TokenEvent(REJECTED, t, "") for t in guessed),
              TokenEvent(CORRECTED, ids("b")[0], "")]
    [filled] = with_text([Round(1, tokens, 4, 1, 1, 4, 0.0, 0.0, 0.0, k=4)], tokenizer, ids("x = "))
    assert [t.text for t in filled.tokens] == ["a", "", "", "乐", "b"]  # (it read a, �, �, �, b)
    tree = Round(2, [], 4, 0, 1, 4, 0.0, 0.0, 0.0, k=4, tree={"tokens": guessed + [guessed[0]], "parents": [-1, 0, 1, -1]})
    [filled] = with_text([tree], tokenizer, ids("x = "))
    assert filled.tree["text"] == ["", "", "乐", ""]
    from playground.detok import whole_characters  # a run cut inside a character: that character's bytes left out,
    assert whole_characters(tokenizer, ids(" 好")[:-1]) == (" ", True)  # not the whole token (its space kept)
    assert whole_characters(tokenizer, ids(" 好")) == (" 好", False)


def test_a_blank_token_and_a_part_of_a_character_are_named_for_a_screen_reader():
    """A newline and its indent, focused, was heard as its kind and probabilities alone; '◦' as "white bullet"
    (an accessibility review)."""
    from playground.events import TokenEvent
    assert render.spoken_blank("\n    ") == "newline, 4 spaces" and render.spoken_blank(" ") == "space"
    assert render.spoken_blank("\n\n\t") == "2 newlines, tab"
    blank = render._token_html(TokenEvent(ACCEPTED, 5, "\n  "), frozenset())
    assert 'aria-label="newline, 2 spaces"' in blank and blank.endswith(">\n  </span>")
    assert 'aria-label="part of a character"' in render._token_html(TokenEvent(ACCEPTED, 6, ""), frozenset())
    assert "aria-label" not in render._token_html(TokenEvent(ACCEPTED, 7, "x = 1"), frozenset())


def test_a_bidi_control_in_a_token_or_a_message_reorders_nothing_after_it():
    """A forced U+202E drew every chip after it backwards (`ab soe⏎1 enod dc`), and a schema's property name holding
    one reversed the rest of the page's error message, in words a link's author chose (a review). Tokens draw it as
    its name, messages write it as an escape; a chip drawing nothing (a zero-width joiner) is named."""
    from playground.errors import PlaygroundError
    from playground.events import TokenEvent
    from playground.ui.tree_view import tree_view
    chips = token_stream([Round(1, [TokenEvent(FORCED, 1, "ab\u202e"), TokenEvent(FORCED, 2, "cd done")], 0, 0, 1, 0,
                                0.0, 0.0, 0.0, k=0)])
    assert "\u202e" not in chips and ">ab⟨RLO⟩</span>" in chips and "U+202E RIGHT-TO-LEFT OVERRIDE" in chips
    joiner = render._token_html(TokenEvent(ACCEPTED, 3, "\u200d"), frozenset())
    assert 'aria-label="zero width joiner"' in joiner and "U+200D ZERO WIDTH JOINER" in joiner
    refused = PlaygroundError("the pattern at /properties/\u202eNOTICE: visit evil.example is refused")
    assert str(refused) == "the pattern at /properties/\\u202eNOTICE: visit evil.example is refused"
    for shown in (render.error("at \u2067x\u2069", "constraint"), render.validity_badge(False, "'\u202dab' does not match", ["\u202en"])):
        assert not any(c in shown for c in "\u202d\u202e\u2067\u2069") and ("\\u202d" in shown or "\\u2067" in shown), shown
    drawn = tree_view([Round(1, [TokenEvent(REJECTED, 1, "\u202ex", 0.1, 0.2), TokenEvent(CORRECTED, 2, "y")], 1, 0, 1, 1,
                             0.0, 0.0, 0.0, k=1)])
    assert "\u202e" not in drawn and "⟨RLO⟩x" in drawn, drawn


def test_each_card_says_one_line_and_folds_how_it_is_counted():
    """A newcomer's review: the captions ran to 90 words (the speedup's), 1.5 phone screens of them; and a structured
    run's 3.88 tokens a pass sat beside "about 0.89x" with nothing to reconcile them (the target alone writes forced
    tokens without a pass too)."""
    import re as regex
    from playground.measure.speedup import Speedup
    from playground.metrics import summarize
    from playground.ui.render import metrics
    forced = [TokenEvent(FORCED, 3, "{")] * 3
    stats = summarize([Round(1, forced + [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 2, "b")], 2, 1, 1, 2, 0.0, 0.0, 0.01,
                             k=2)])
    told = Speedup(1.2, 1.2, 1.1, 1.3, 1, spec_tokens_per_s=30.0, base_tokens_per_s=25.0)
    shown = metrics(stats, 2, told, "its text identical to the target alone's", interleaved=True, alone_per_pass=1.25)
    lines = dict(regex.findall(r"<small>([^<]*)</small><b>[^<]*</b><small>([^<]*)</small>", shown))
    assert set(lines) == {"acceptance rate", "accepted per round", "tokens per target pass", "theory", "tokens/s", "speedup"}
    assert all(len(line.split()) <= 16 for name, line in lines.items() if name != "speedup"), lines
    assert len(lines["speedup"].split()) <= 16 and "30.0 tokens/s" not in lines["speedup"]  # its rates in its fold
    assert lines["tokens per target pass"] == "1 pass, prompt pass included; 3 tokens forced; the target alone 1.25"
    folds = regex.findall(r'<details class="metric-more" data-card="([^"]+)"><summary>how it is counted<span class="sr-only"> \(\1\)</span></summary>', shown)
    assert folds == ["acceptance rate", "tokens per target pass", "theory", "tokens/s", "speedup"]
    assert "speculation takes 4.00x fewer passes than it" in shown  # 5 tokens a pass / 1.25
    assert "speculation 30.0 tokens/s against the target alone&#x27;s 25.0 side by side" in shown
    plain = metrics(summarize([Round(1, [TokenEvent(ACCEPTED, 1, "a"), TokenEvent(CORRECTED, 2, "b")], 2, 1, 1, 2, 0.0, 0.0, 0.01)]),
                    2, alone_per_pass=0.98)
    assert "the target alone" not in plain  # nothing forced: its 0.98 says nothing the speedup does not


def _a_run(seed: int, rounds: int) -> list:
    import random
    pick = random.Random(seed)
    made = []
    for i in range(1, rounds + 1):
        kept = [TokenEvent(ACCEPTED, pick.randrange(50), pick.choice(["a", " b", "<c>", "\n", ""])) for _ in range(pick.randrange(4))]
        refused = [TokenEvent(REJECTED, 7, "x")] * pick.randrange(2)
        last = TokenEvent(pick.choice([CORRECTED, BONUS]), 9, pick.choice(["z", "&", ""]))
        made.append(Round(i, kept + refused + [last], len(kept) + len(refused), len(kept), 1, 3, 0.0, 0.0, 0.0, k=3,
                          stop_reason=pick.choice(["", "draft unsure"])))
    return made


def test_a_streams_spans_drawn_as_its_rounds_come_are_the_ones_drawn_whole():
    """token_stream draws only the rounds new since a run's last update (memoized by its first round): each update of
    two runs streamed at once is what drawing it whole from nothing makes, EOS marks after the ids change too."""
    one, two = _a_run(1, 40), _a_run(2, 30)
    for n in (1, 2, 5, 6, 17, 30, 30, 40):
        for run, eos in ((one, frozenset()), (two, frozenset({9}))):
            shown = token_stream(run[:n], eos)
            render._DRAWN.clear()
            assert shown == token_stream(run[:n], eos)
    assert token_stream(one[:3], frozenset({9})) != token_stream(one[:3])  # the same rounds, other EOS ids: drawn again
    assert token_stream(one[:3]) == token_stream([one[0], *_a_run(1, 3)[1:]])  # (equal rounds, not the same ones)
