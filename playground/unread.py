"""The settings a run will not read, in one table for every place that says so: the page beside its
metrics (a link's and the web API's `note` too) and generate's and export's `note:` lines (cli_notes). Each
says only what its user set: the page the settings that differ from the preset's, the CLI the flags given
(a setting taken in silence reads as one that worked; reviews of both found them saying different rules)."""
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from playground.config import CONSTRAINT_FIELDS

if TYPE_CHECKING:  # (presets imports torch: the CLI's --help answers without it)
    from playground.presets import Settings


@dataclass(frozen=True)
class Unread:
    fields: tuple[str, ...]  # Settings' names
    why: str  # said after "not used: "
    when: Callable[["Settings"], bool]  # the run will not read them


def _kind(s: "Settings") -> str:
    """The run's constraint field ('schema', 'regex', 'grammar'), '' for none (as presets.constraint_of)."""
    return next((name for name in CONSTRAINT_FIELDS if getattr(s, name).strip()), "")


ONLY_CONFIDENCE = "only the confidence policy reads it"
RULES = (
    Unread(("top_p", "top_k", "seed"), "the run is greedy (temperature 0), which draws nothing", lambda s: s.temperature == 0),
    Unread(("think_budget",), "it ends a reasoning model's thinking before a schema, regex or grammar, and the run has "
           "none (the model thinks as long as it likes)", lambda s: not _kind(s)),
    Unread(("backend",), "the run has no schema, regex or grammar", lambda s: not _kind(s)),
    Unread(("schema_in_prompt",), "the run has no schema to show", lambda s: _kind(s) != "schema"),
    Unread(("k",), "a token tree drafts the shape it names; k is a chain's length", lambda s: bool(s.tree.strip())),
    Unread(("confidence",), ONLY_CONFIDENCE, lambda s: s.policy != "confidence"),
)

PAGE_NAMES = {"top_p": "top-p", "top_k": "top-k", "seed": "seed", "think_budget": "thinking budget",
              "backend": "constraint backend", "schema_in_prompt": "schema shown in the prompt", "k": "draft length k",
              "confidence": "confidence threshold"}


def unread(s: "Settings", set_by_user: Callable[[str], bool]) -> list[tuple[list[str], str]]:
    """-> (fields, why) per rule, in RULES' order, over the fields the user set that the run will not read
    (Settings' names: each place says them in its own words, `said`)."""
    found = []
    for rule in RULES:
        if rule.when(s) and (named := [f for f in rule.fields if set_by_user(f)]):
            found.append((named, rule.why))
    return found


def said(found: list, names: dict[str, str], prefix: str = "") -> list[str]:
    """unread's (fields, why) pairs in words: names[field] listed ('a, b and c'), after `prefix` ('the ')."""
    return [f"{prefix}{listed([names[f] for f in fields])} {'is' if len(fields) == 1 else 'are'} not used: {why}"
            for fields, why in found]


def listed(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " * (len(words) > 1) + words[-1]


def unused_settings(s: "Settings") -> str:
    """The page's words ('' where none): the settings a run never reads, where they differ from its preset's. A
    link setting them opened and ran without a word, passed them on and exported them. A preset's own stay
    unsaid (qwen3-8b's thinking budget waits for a schema, its top-p for a temperature)."""
    from playground.presets import Settings, all_presets
    preset = all_presets().get(s.preset)
    base = Settings.from_preset(preset) if preset else Settings()
    return "; ".join(said(unread(s, lambda f: getattr(s, f) != getattr(base, f)), PAGE_NAMES, "the "))
