"""The public web API beside the page's own endpoints: /generate streams one run of a preset as
JSON snapshots."""
import dataclasses

from playground.config import MIN_TEMPERATURE
from playground.errors import PlaygroundError
from playground.presets import Settings, chosen_constraint
from playground.ui import live
from playground.ui.gpu import on_gpu
from playground.ui.inputs import DEFAULT, PRESETS, typed, user_error
from playground.ui.share import RANGES


@on_gpu()
def generate(prompt: str = "", preset: str = DEFAULT.preset, k: int = 0, temperature: float = -1.0,
             max_new_tokens: int = 0, seed: int = 0, schema: str = "", regex: str = "",
             compare: bool = False, backend: str = "", grammar: str = "") -> dict:  # a generator of dicts
    """Stream a run of a preset (the page's default one unless named) as JSON snapshots: tokens with
    kinds and probabilities, stats, validity.

    Args:
        prompt: the text to continue; empty: the preset's own prompt
        preset: a preset's name (see presets/)
        k: draft tokens per round; 0: the preset's
        temperature: 0 greedy, or from 0.01 up to 2; -1: the preset's
        max_new_tokens: 0: the preset's
        seed: the sampling seed (a seeded sampled run repeats exactly)
        schema: a JSON Schema every output must satisfy
        regex: a regular expression the whole output must match
        compare: also run the target alone, interleaved, and measure the speedup
        backend: the constraint backend, llguidance or xgrammar; empty: the preset's
        grammar: a grammar the whole output must match: Lark or GBNF (either backend)
            (one of schema, regex and grammar; none given: the preset's own constraint, if any)
    """
    try:
        prompt, preset, schema, regex, grammar, backend = (typed(name, value, str) for name, value in zip(
            ("prompt", "preset", "schema", "regex", "grammar", "backend"), (prompt, preset, schema, regex, grammar,
                                                                           backend)))
        k, max_new_tokens, seed = (typed(name, value, int) for name, value in
                                   zip(("k", "max_new_tokens", "seed"), (k, max_new_tokens, seed)))
        temperature, compare = typed("temperature", temperature, float), typed("compare", compare, bool)
    except PlaygroundError as exc:
        raise user_error(exc) from None
    if not (temperature == -1 or temperature == 0 or MIN_TEMPERATURE <= temperature <= RANGES["temperature"][1]):
        raise user_error(PlaygroundError(f"temperature must be 0 (greedy) or from {MIN_TEMPERATURE:g} to "  # the page's slider
                                         f"{RANGES['temperature'][1]:g}; -1: the preset's"))  # ends at 2; NaN refused too
    if preset not in PRESETS:
        raise user_error(PlaygroundError(f"unknown preset '{preset[:40]}'; available: {', '.join(PRESETS)}"))
    base = Settings.from_preset(PRESETS[preset])
    settings = dataclasses.replace(base, prompt=prompt or base.prompt, k=k or base.k,
                                   temperature=base.temperature if temperature == -1 else temperature,
                                   max_new_tokens=max_new_tokens or base.max_new_tokens, seed=seed, compare=compare,
                                   backend=backend[:40] or base.backend,
                                   **chosen_constraint({"schema": schema, "regex": regex, "grammar": grammar}, base))
    try:
        for snap in live.live_run(settings):
            yield live.run_to_dict(snap)
    except PlaygroundError as exc:
        raise user_error(exc) from None
