"""The one event vocabulary shared by the engine, metrics, JSON output, UI and tests."""
from dataclasses import dataclass, field

from playground.config import depths

ACCEPTED, REJECTED, CORRECTED, BONUS, FORCED = "accepted", "rejected", "corrected", "bonus", "forced"
KINDS = (ACCEPTED, REJECTED, CORRECTED, BONUS, FORCED)
COMMITTED_KINDS = (ACCEPTED, CORRECTED, BONUS, FORCED)  # everything but rejected is part of the text
STOPPED = "stopped"  # the finish_reason of a run cut short (Stop, Ctrl-C, a page gone)


@dataclass(slots=True)
class TokenEvent:
    kind: str
    token_id: int
    text: str
    p_target: float | None = None  # probability the target gave this token (warped; softmax when greedy)
    p_draft: float | None = None  # same for the draft; None for prompt lookup and target-only tokens


@dataclass(slots=True)
class Prefill:
    """The prompt pass of both models, before the first round."""
    target_passes: int
    draft_passes: int
    target_s: float
    draft_s: float
    tree: bool = False  # the run drafts token trees (a run of one token drafted none: its one round is a chain's)
    fused: bool = False  # its rounds run as device programs (engine.fused): the target alone replays the k+1 pass


@dataclass(slots=True)
class Round:
    """One draft-then-verify round. `tokens` lists accepted drafts, then rejected drafts, then the
    corrected or bonus token, in the order they are shown; forced tokens come first when present."""
    index: int
    tokens: list[TokenEvent]
    proposed: int
    accepted: int
    target_passes: int
    draft_passes: int
    draft_s: float
    target_s: float
    wall_s: float
    finish_reason: str | None = None  # set on the last round: "eos", "length", ... (a run cut short: STOPPED)
    k: int = 0  # the draft length asked for this round, at most the token budget left less one
    stop_reason: str = ""  # why drafting stopped early (adaptive K), empty when it drafted k
    tree: dict | None = None  # a token tree's round: its node tokens, parents (-1: root) and accepted path
    forced_drafts: int = 0  # of `accepted`, drafts the constraint allowed alone (shown forced: no guess to judge)
    forced_first: int = 0  # the tokens forced before drafting: the first of `tokens`
    forced_refused: int = 0  # of the drafts not kept, those the constraint allowed alone (no guesses either)
    looked_up: int = 0  # a cascade's round: the guesses prompt lookup offered the draft model
    lookup_kept: int = 0  # of those, the ones the draft model kept as its own (then offered to the target)

    @property
    def guesses(self) -> int:
        """Drafts judged that were guesses (a forced draft is none, kept or not)."""
        return self.proposed - self.forced_drafts - self.forced_refused

    @property
    def kept_guesses(self) -> int:
        return self.accepted - self.forced_drafts

    @property
    def drafts(self) -> list[TokenEvent]:
        """A chain round's drafted tokens, in order: kept (accepted, or forced where the constraint
        allowed them alone), then refused."""
        return [t for t in self.tokens[self.forced_first:] if t.kind in (ACCEPTED, FORCED, REJECTED)]

    @property
    def committed(self) -> list[TokenEvent]:
        return [t for t in self.tokens if t.kind in COMMITTED_KINDS]

    @property
    def refused(self) -> bool:
        """Whether the target refused a draft this round (it wrote its corrected token): a tree's round
        that walked to a leaf refused none, though most of its nodes were not kept."""
        return any(t.kind == CORRECTED for t in self.tokens)

    @property
    def depth(self) -> int:
        """The draft positions this round drafted: a chain's proposed tokens, a tree's deepest branch."""
        return max(depths(self.tree["parents"]), default=0) if self.tree else self.proposed


OPEN_END = ("max new tokens ran out where the output could have gone on (more digits of a number, say): it may be "
            "cut short of what the model meant")  # (after "valid as far as it goes")


@dataclass(slots=True)
class RunResult:
    token_ids: list[int]
    text: str
    stats: dict
    finish_reason: str
    rounds: list[Round] = field(default_factory=list)
    valid: bool | None = None  # None when unconstrained
    validation_error: str | None = None
    open_end: bool = False  # valid, but max new tokens ran out where the output could have gone on (OPEN_END)
    constraint_notes: list[str] = field(default_factory=list)  # what the constraint engine did not enforce while writing
    reasoning_tokens: int | None = None  # a thinking run: its first tokens up to </think> (all, if it never got there)
    answer: str | None = None  # a thinking run: the text after </think>, which the constraint judges
    thinking_cut: bool | None = None  # a thinking run under a budget: whether it ran out and </think> was forced

    def as_json(self, with_rounds: bool = True) -> dict:
        """The run as plain data, the same keys in the CLI's --json, the page's download and the web API
        (built twice, they had drifted: the CLI's had no rounds and its reasoning keys only when set)."""
        return {"text": self.text, "token_ids": self.token_ids, "stats": self.stats, "finish_reason": self.finish_reason,
                "valid": self.valid, "validation_error": self.validation_error, "open_end": self.open_end,
                "constraint_notes": self.constraint_notes, "reasoning_tokens": self.reasoning_tokens,
                "answer": self.answer, "thinking_cut": self.thinking_cut} | (
                    {"rounds": [round_json(r) for r in self.rounds]} if with_rounds else {})


def committed_ids(events) -> list[int]:
    """The token ids a run wrote: each round's committed tokens, in order (other events skipped)."""
    return [t.token_id for e in events if isinstance(e, Round) for t in e.committed]


def round_json(r: Round) -> dict:
    """A round as plain data: its timing, its tokens with their kinds and probabilities, and a token tree's
    every node (`tree`: tokens, parents (-1: the root), the kept path, text, p_target, p_draft; null for a
    chain). Its tokens hold only the path and the refused children judged: an API caller could not see
    the rest of a tree's drafts (a review)."""
    return {"index": r.index, "k": r.k, "stop_reason": r.stop_reason, "draft_s": r.draft_s, "target_s": r.target_s,
            "draft_passes": r.draft_passes, "target_passes": r.target_passes,  # (prompt lookup drafts with none)
            "proposed": r.proposed, "accepted": r.accepted, "looked_up": r.looked_up, "lookup_kept": r.lookup_kept,
            "forced_drafts": r.forced_drafts, "forced_refused": r.forced_refused, "forced_first": r.forced_first,
            "wall_s": r.wall_s, "tokens": [{"kind": t.kind, "id": t.token_id, "text": t.text, "p_target": t.p_target,
                                            "p_draft": t.p_draft} for t in r.tokens],
            "tree": None if r.tree is None else {name: list(value) for name, value in r.tree.items()}}
