"""The acceptance rule of speculative sampling (Leviathan et al. 2023; Chen et al. 2023), as pure
tensor functions. Everything stays on the device: the caller reads (n, next) with one host sync.

Notation: draft tokens x_1..x_k, target probabilities p (k+1 rows, the last one for the bonus),
draft probabilities q (k rows). Accept x_i with probability min(1, p_i(x_i) / q_i(x_i)); at the
first rejection i draw from normalize(max(0, p_i - q_i)); if all k pass, draw the bonus from p_k+1.
The output then has exactly the target's distribution.

`limit` (a 0-d tensor or int <= k) judges only the first `limit` drafts, as if the rest were never
proposed: a verify pass of fixed width k+1 then serves every shorter proposal (the fused round,
playground.engine.fused, drafts k' <= k tokens into a graph made for k)."""
import torch

from playground.engine.sampling import exponential_noise_, race_draw


def verify_greedy(target_logits: torch.Tensor, draft_tokens: torch.Tensor, limit=None):
    """target_logits [k+1, V], draft_tokens [k] -> (n accepted, next token), both 0-d tensors."""
    choice = target_logits.argmax(dim=-1)  # [k+1]
    n = _accepted_prefix(_within(choice[:-1] == draft_tokens, limit))
    return n, pick(choice, n)


def verify_sampled(p: torch.Tensor, q: torch.Tensor | None, draft_tokens: torch.Tensor,
                   generator: torch.Generator | None):
    """p [k+1, V], q [k, V] or None, draft_tokens [k] -> (n accepted, next token); draws its noise
    from `generator` (see accept_sampled)."""
    u = torch.rand(draft_tokens.shape[0], device=p.device, generator=generator)
    race = exponential_noise_(torch.empty(p.shape[-1], device=p.device), generator)
    return accept_sampled(p, q, draft_tokens, u, race)


def accept_sampled(p: torch.Tensor, q: torch.Tensor | None, draft_tokens: torch.Tensor, u: torch.Tensor,
                   race: torch.Tensor, limit=None):
    """The rule with its randomness given: u [k] uniform on [0, 1), race [V] Exp(1) noise.

    q None means a deterministic proposal (prompt lookup): q is one-hot at x_i, so the rule becomes
    accept with probability p_i(x_i), and the residual is p_i with x_i removed. The next token is
    drawn from its (unnormalised) row r by the exponential race, argmax_j r_j / race_j, which picks
    j with probability r_j / sum(r): no normalising, no host sync, the same in a CUDA graph."""
    k = draft_tokens.shape[0]
    if q is None:
        q = torch.zeros_like(p[:k]).scatter_(-1, draft_tokens[:, None], 1.0)
    rows = torch.arange(k, device=p.device)
    p_x, q_x = p[rows, draft_tokens], q[rows, draft_tokens]  # [k]
    n = _accepted_prefix(_within(u * q_x < p_x, limit))  # u < p/q without dividing by zero
    residual = (p[:k] - q).clamp_(min=0.0)  # [k, V]
    dists = torch.cat([residual, p[k:]], dim=0)  # [k+1, V]: row n is where we draw from
    row, p_n = pick(dists, n), pick(p, n)
    if limit is not None:  # all `limit` drafts accepted: the bonus comes from the target's own row
        row = torch.where(n < limit, row, p_n)
    # a zero residual only happens when p == q on that row, where rejection is impossible; guard anyway
    row = torch.where(row.sum() > 0, row, p_n)
    return n, race_draw(row, race)


def pick(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
    """t[i] for a 0-d index tensor without reading it on the host (t[i] would: a sync, and a
    CUDA graph cannot be captured around one)."""
    return t.index_select(0, i.view(1)).squeeze(0)


def _within(ok: torch.Tensor, limit) -> torch.Tensor:
    if limit is None:
        return ok
    return ok & (torch.arange(ok.shape[0], device=ok.device) < limit)


def _accepted_prefix(ok: torch.Tensor) -> torch.Tensor:
    """Length of the leading run of True in a [k] bool tensor, as a 0-d long tensor."""
    return ok.long().cumprod(dim=0).sum()
