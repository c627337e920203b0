"""The acceptance rule of speculative sampling (Leviathan et al. 2023; Chen et al. 2023), as pure
tensor functions. Everything stays on the device: the caller reads (n, next) with one host sync.

Notation: draft tokens x_1..x_k, target probabilities p (k+1 rows, the last one for the bonus),
draft probabilities q (k rows). Accept x_i with probability min(1, p_i(x_i) / q_i(x_i)); at the
first rejection i draw from normalize(max(0, p_i - q_i)); if all k pass, draw the bonus from p_k+1.
The output then has exactly the target's distribution."""
import torch


def verify_greedy(target_logits: torch.Tensor, draft_tokens: torch.Tensor):
    """target_logits [k+1, V], draft_tokens [k] -> (n accepted, next token), both 0-d tensors."""
    choice = target_logits.argmax(dim=-1)  # [k+1]
    n = _accepted_prefix(choice[:-1] == draft_tokens)
    return n, choice[n]


def verify_sampled(p: torch.Tensor, q: torch.Tensor | None, draft_tokens: torch.Tensor,
                   generator: torch.Generator | None):
    """p [k+1, V], q [k, V] or None, draft_tokens [k] -> (n accepted, next token).

    q None means a deterministic proposal (prompt lookup): q is one-hot at x_i, so the rule becomes
    accept with probability p_i(x_i), and the residual is p_i with x_i removed."""
    k = draft_tokens.shape[0]
    if q is None:
        q = torch.zeros_like(p[:k]).scatter_(-1, draft_tokens[:, None], 1.0)
    rows = torch.arange(k, device=p.device)
    p_x, q_x = p[rows, draft_tokens], q[rows, draft_tokens]  # [k]
    u = torch.rand(k, device=p.device, generator=generator)
    n = _accepted_prefix(u * q_x < p_x)  # u < p/q without dividing by zero
    residual = (p[:k] - q).clamp_(min=0.0)  # [k, V]
    dists = torch.cat([residual, p[k:]], dim=0)  # [k+1, V]: row n is where we draw from
    row = dists[n]
    total = row.sum()
    # a zero residual only happens when p == q on that row, where rejection is impossible; guard anyway
    row = torch.where(total > 0, row / total.clamp(min=1e-30), p[n])
    return n, torch.multinomial(row, 1, generator=generator)[0]


def _accepted_prefix(ok: torch.Tensor) -> torch.Tensor:
    """Length of the leading run of True in a [k] bool tensor, as a 0-d long tensor."""
    return ok.long().cumprod(dim=0).sum()
