"""Presets: one small TOML file per pair in presets/, read and validated here; the default preset of this
host; Settings, every setting of a run as the page, a share link, the CLI and the export see it (a preset's
values, a link's or the flags'), with the constraint it carries and the policy its run uses (the settings it leaves
unread: playground.unread)."""
import dataclasses
import difflib
import logging
import os
import pathlib
import tomllib
from dataclasses import dataclass

import torch

from playground.config import BACKENDS, CONSTRAINT_FIELDS, CPU_DEFAULT, CPU_FALLBACK, DEFAULT_K, DEFAULT_MAX_NEW_TOKENS, GPU_DEFAULT
from playground.models import loading as models
from playground.models import locate
from playground.models.placement import compiles_by_default, on_zero_gpu
from playground.draft_ids import NGRAM, NO_PROBABILITIES, cascade, confidence_unused, draft_model
from playground.errors import PlaygroundError

PRESETS_DIR = pathlib.Path(__file__).resolve().parent.parent / "presets"

# Tokenizer families: a draft must come from its target's family (checked by the tests, and at load
# time by comparing the vocabularies themselves).
FAMILIES = {
    "Qwen/Qwen2.5-Coder-": "qwen2.5",
    "Qwen/Qwen2.5-": "qwen2.5",
    "Qwen/Qwen3-": "qwen3",
    "deepseek-ai/deepseek-coder-": "deepseek-coder",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-": "deepseek-r1-distill-qwen",
    "demo-": "demo",
    "smollm2-": "smollm2",  # the packaged SmolLM2-135M-Instruct and its draft
    "HuggingFaceTB/SmolLM2-": "smollm2",
}


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    purpose: str
    target: str
    draft: str  # a model id, "ngram" for prompt lookup, or "ngram+<model id>" for a cascade (playground.draft_ids)
    k: int = DEFAULT_K
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    prompt: str = ""
    chat: bool = False  # apply the chat template to the prompt (instruct models)
    system: str = ""
    schema: str = ""  # JSON Schema text (optional constraint)
    regex: str = ""  # regular expression (optional constraint)
    grammar: str = ""  # a grammar: Lark or GBNF (optional constraint)
    schema_in_prompt: bool = False  # append the schema to the prompt so the model knows the shape
    think_budget: int = 0  # reasoning models: think up to this many tokens, the constraint starts after </think>
    gpu: bool = False  # needs a GPU to be pleasant (shown in the UI)

    @property
    def _models(self) -> list[str]:
        return [m for m in (self.target, draft_model(self.draft)) if m is not None]

    @property
    def here(self) -> bool:
        """Whether both models load without the hub: shipped, packaged, a directory or in the hub's local cache."""
        return all(map(model_here, self._models))

    @property
    def offline(self) -> bool:
        """Whether both models load here without a network (shipped, or packaged and installed)."""
        return all(map(locate.installed, self._models))


FIELDS = {f.name for f in dataclasses.fields(Preset)}


def model_here(model_id: str) -> bool:
    """Whether a target or draft (prompt lookup, a cascade: its draft model) loads without the hub."""
    model = draft_model(model_id)
    return model is None or locate.here(model)


@dataclass(slots=True)
class Settings:
    """Every setting of a run as the page, a share link, the CLI and the export see it."""
    preset: str = "demo"
    target: str = ""
    draft: str = ""
    k: int = DEFAULT_K
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    prompt: str = ""
    system: str = ""
    chat: bool = False
    schema: str = ""
    regex: str = ""
    grammar: str = ""  # Lark or GBNF (GBNF: every rule defined with ::=)
    backend: str = BACKENDS[0]
    compare: bool = True
    schema_in_prompt: bool = False  # append the schema to the prompt (instruct models)
    policy: str = "fixed"  # draft length: fixed, schedule or confidence (k is then the ceiling)
    confidence: float = 0.5
    compile: bool = dataclasses.field(default_factory=compiles_by_default)  # static caches and compiled passes
    # (playground.engine.static): the host's default, on with CUDA off ZeroGPU; links carry it where they differ
    tree: str = ""  # a token tree: children per depth ("1,2,1,1"), "/N" dynamic, "+N" a lookup branch; "" a chain of k
    think_budget: int = 0  # reasoning models: think first (at most this many tokens), the constraint after </think>

    def as_dict(self) -> dict:
        """Every setting by name: the `settings` of the page's download, the web API's snapshots and generate's JSON."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_preset(cls, preset: Preset) -> "Settings":
        """The preset's own values for every setting it names (the fields both classes have)."""
        shared = {f.name for f in dataclasses.fields(Preset)} & {f.name for f in dataclasses.fields(cls)}
        return cls(preset=preset.name, **{name: getattr(preset, name) for name in shared})


def constraint_of(s) -> tuple[str, str] | None:
    """(field, text) of the constraint that Settings or a Preset carry: the first of CONSTRAINT_FIELDS
    with text in it; None when none has."""
    return next(((name, getattr(s, name)) for name in CONSTRAINT_FIELDS if getattr(s, name).strip()), None)


def policy_as_run(s: "Settings") -> tuple["Settings", str]:
    """-> (the settings with the policy their run uses, a note where that is not the one asked for): the
    confidence policy under prompt lookup runs as fixed (the page's metrics said "k is a ceiling (the
    confidence policy)" over rounds that drafted k each)."""
    if not confidence_unused(s.policy, s.draft):
        return s, ""
    note = f"the confidence policy is not used: {NO_PROBABILITIES} (it drafts as under fixed)"
    return dataclasses.replace(s, policy="fixed"), note


def chosen_constraint(given: dict[str, str], base) -> dict[str, str]:
    """The constraint fields of a run: those `given` (CLI flags, API inputs) where any has text, which
    replace the preset's; else `base`'s own (a Preset or Settings; None: no constraint)."""
    if any(text.strip() for text in given.values()):
        return {name: given.get(name, "") for name in CONSTRAINT_FIELDS}
    return {name: getattr(base, name) if base is not None else "" for name in CONSTRAINT_FIELDS}


log = logging.getLogger(__name__)
_warned: set[str] = set()


def family(model_id: str) -> str | None:
    return next((fam for prefix, fam in FAMILIES.items() if model_id.startswith(prefix)), None)


def drafts_for(target: str, model: str, presets: dict[str, Preset]) -> bool:
    """Whether a draft model can draft for this target: a feature draft for the target a preset pairs
    it with (it reads that target's hidden states), any other of the target's tokenizer family (or
    of no family known here: loading compares the vocabularies)."""
    if models.is_way_of_drafting(model):
        return any(p.target == target and draft_model(p.draft) == model for p in presets.values())
    return family(model) in (family(target), None) or family(target) is None


def read_preset(path: pathlib.Path) -> Preset:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PlaygroundError(f"preset {path.name}: {exc}") from None
    except OSError as exc:
        raise PlaygroundError(f"preset {path.name} cannot be read: {exc.strerror or exc}") from None
    unknown = set(data) - FIELDS
    if unknown:
        raise PlaygroundError(f"preset {path.name}: unknown keys {sorted(unknown)}")
    try:
        return Preset(**data)
    except TypeError as exc:
        raise PlaygroundError(f"preset {path.name}: {exc}") from None


def all_presets(directory: pathlib.Path = PRESETS_DIR) -> dict[str, Preset]:
    """Every readable preset this host offers (PLAYGROUND_PRESETS, see hosted_presets); a broken file
    is skipped with a warning (once), never stops the app."""
    presets = {}
    offered = hosted_presets()
    for path in sorted(directory.glob("*.toml")):
        try:
            preset = read_preset(path)
        except PlaygroundError as exc:
            if str(path) not in _warned:
                _warned.add(str(path))
                log.warning("skipping %s", exc)
            continue
        if offered is None or preset.name in offered:
            presets[preset.name] = preset
    if offered and offered - set(presets):
        _refuse_unknown(offered, set(presets), directory)
    return presets


def _refuse_unknown(offered: set[str], found: set[str], directory: pathlib.Path) -> None:
    """PLAYGROUND_PRESETS naming presets that do not exist: a warning (once); naming none that does:
    an error that says so (the app cannot start on nothing)."""
    unknown = sorted(offered - found)
    available = ", ".join(sorted(path.stem for path in directory.glob("*.toml")))
    if not found:
        raise PlaygroundError(f"PLAYGROUND_PRESETS names no preset found here ({', '.join(unknown)}); available: {available}")
    if (key := "PLAYGROUND_PRESETS=" + ",".join(unknown)) not in _warned:
        _warned.add(key)
        log.warning("PLAYGROUND_PRESETS: no preset named %s (available: %s)", ", ".join(unknown), available)


def hosted_models(presets: dict[str, Preset]) -> set[str]:
    """The models a host without custom models runs: its presets' targets and drafts, the model under
    a cascade on its own, prompt lookup, and prompt lookup before any of those models (none of them
    downloads anything more)."""
    named = {m for p in presets.values() for m in (p.target, p.draft)}
    plain = {draft_model(m) for m in named} - {None}
    models_alone = {m for m in plain if not models.is_way_of_drafting(m)}
    return named | models_alone | {NGRAM} | {cascade(m) for m in models_alone}


def hosted_presets() -> set[str] | None:
    """PLAYGROUND_PRESETS: the presets a host offers, comma-separated names (a GPU Space bounds what its
    visitors can make it download: every preset's models together are about 90 GB); unset: all."""
    names = {name.strip() for name in os.environ.get("PLAYGROUND_PRESETS", "").split(",") if name.strip()}
    return names or None


def get_preset(name: str) -> Preset:
    presets = all_presets()
    if name not in presets:
        raise unknown_preset(name, presets)
    return presets[name]


def unknown_preset(name: str, names) -> PlaygroundError:
    """A preset not among `names`, in one set of words for the CLI and the web API: the closest name, then all."""
    close = difflib.get_close_matches(name, list(names), n=1)
    meant = f"; did you mean '{close[0]}'?" if close else ""
    return PlaygroundError(f"unknown preset '{name[:40]}'{meant} (available: {', '.join(sorted(names))})")


def gpu_host() -> bool:
    """Whether this host runs models on a GPU (CUDA here, or a ZeroGPU Space's GPU lent per call)."""
    return torch.cuda.is_available() or on_zero_gpu()


def default_preset_name() -> str:
    """PLAYGROUND_PRESET where it names a preset here (else a warning); else a Qwen pair with CUDA; else the SmolLM2 pair where it loads
    without the hub (packaged, converted, or in the hub's local cache; float32 through the row kernel, its linear
    weights held in bf16: exact at any pass width, see playground.models.batch_invariant); else the toy demo pair."""
    if asked := os.environ.get("PLAYGROUND_PRESET"):
        presets = all_presets()
        if asked in presets:
            return asked
        if (key := "PLAYGROUND_PRESET=" + asked) not in _warned:  # a typo started a 7B GPU preset, the first by name
            _warned.add(key)
            close = difflib.get_close_matches(asked, presets, n=1)
            log.warning("PLAYGROUND_PRESET: no preset named %r here%s; starting on this host's own default", asked,
                        f" (did you mean {close[0]!r}?)" if close else "")
    if torch.cuda.is_available():
        return GPU_DEFAULT
    smollm2 = all_presets().get(CPU_DEFAULT)  # (the hub's local cache counts: a CPU Space preloads SmolLM2 there, and
    return CPU_DEFAULT if smollm2 and smollm2.here else CPU_FALLBACK  # opened on the toy pair: its package needs --no-deps)


def default_preset() -> Preset:
    """The default preset, or the first readable one when that is missing or broken."""
    presets = all_presets()
    if not presets:
        raise PlaygroundError(f"no readable preset in {PRESETS_DIR}")
    name = default_preset_name()
    if name not in presets:
        log.warning("preset %r is not available; starting on %r", name, next(iter(presets)))
    return presets.get(name) or next(iter(presets.values()))
