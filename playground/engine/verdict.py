"""A verify pass's outcome on the host (Verdict), and its reading from the one transfer that brings
it over (read_report): shared by the round loop and the fused round, which judges in its own program."""
from dataclasses import dataclass


@dataclass(slots=True)
class Verdict:
    """Host-side outcome of one verify pass: n drafts accepted, the target's token, and the
    probabilities shown, per draft position and then for the target's token."""
    n: int
    next: int
    drafts: list[int]
    p_target: list[float]
    p_draft: list[float | None]
    path: list[int] | None = None  # a token tree's accepted nodes (drafts: their tokens, then the refused children)
    node_probs: dict | None = None  # a token tree's p_target and p_draft of every node, for its view


def read_report(host: list[float], k: int, width: int, with_q: bool) -> Verdict:
    """A report [n, next, x (width), p(x) (width), p(next), q(x) (width), q(next)] -> the Verdict
    of its first k drafts (k <= width: a fused round judges k' drafts in a graph made for k)."""
    n, nxt = int(host[0]), int(host[1])
    drafts = [int(t) for t in host[2:2 + k]]
    p_target = host[2 + width:2 + width + k] + [host[2 + 2 * width]]
    p_draft = host[3 + 2 * width:3 + 2 * width + k] + [host[3 + 3 * width]] if with_q else [None] * (k + 1)
    if n == k:  # a bonus token has no draft probability
        p_draft = p_draft[:k] + [None]
    return Verdict(n, nxt, drafts, p_target, p_draft)
