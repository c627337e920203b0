"""Logits -> the probabilities plain sampling would draw from (temperature, top-k, top-p), and draws.

Both models go through the same warp, so the acceptance rule compares like with like."""
import torch

from playground.config import SamplingParams


def warp(logits: torch.Tensor, params: SamplingParams, temperature: torch.Tensor | None = None,
         top_p: torch.Tensor | None = None) -> torch.Tensor:
    """[n, V] logits -> [n, V] float32 probabilities. Greedy gives the plain softmax (for display;
    greedy decisions use argmax, never these numbers). `temperature` and `top_p` (0-d float32 tensors)
    stand in for params' values: one captured graph then serves every value (fused rounds)."""
    logits = logits.float()
    if params.greedy:
        return torch.softmax(logits, dim=-1)
    logits = logits / (params.temperature if temperature is None else temperature)
    if params.top_k and params.top_k < logits.shape[-1]:
        kth = torch.topk(logits, params.top_k, dim=-1).values[..., -1:]  # [n, 1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if params.top_p < 1.0:
        probs = _top_p(probs, params.top_p if top_p is None else top_p)
    return probs


def softmax_at(logits: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """softmax(logits)[rows, tokens] in float32 without the whole softmax: exp(l - logsumexp(l)) at
    those entries. logits [n, V], rows and tokens [m] -> [m]. A greedy round shows these beside its
    tokens and decides by argmax: the full softmax it made for them was, on an H200, 45 us of each
    0.5B draft step (~3%) and 70 us of each 7B verify pass ([5, 152k] floats, a block per row)."""
    lse = torch.logsumexp(logits.float(), dim=-1)  # [n]
    return torch.exp(logits[rows, tokens].float() - lse[rows])


def _top_p(probs: torch.Tensor, top_p: float | torch.Tensor) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose mass reaches top_p (the top one always)."""
    sorted_p, order = torch.sort(probs, dim=-1, descending=True)
    mass_before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # mass of strictly more likely tokens
    sorted_p = sorted_p.masked_fill(mass_before >= top_p, 0.0)
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return kept / kept.sum(dim=-1, keepdim=True)


def draw(probs: torch.Tensor, logits: torch.Tensor, params: SamplingParams,
         generator: torch.Generator | None) -> torch.Tensor:
    """One token per row: argmax of the logits when greedy, else a seeded draw. [n, V] -> [n]."""
    if params.greedy:
        return logits.argmax(dim=-1)
    return race_draw(probs, exponential_noise_(torch.empty_like(probs, dtype=torch.float32), generator))


def exponential_noise_(t: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Fill t with Exp(1) noise, i.i.d., in place -> t. On a CPU as -log(U), U uniform on [0, 1): torch's
    exponential_ (and multinomial, which draws through it) took 0.94 ms for a row of 49,152 there, this 0.19
    (one thread, the 2-core EPYC). U = 0 gives +inf, a token that cannot win the race (odds 2**-24 each);
    -log1p(-U) would give 0 instead, a token that always wins (0.3% of draws over 49,152 tokens)."""
    if t.device.type != "cpu":  # one kernel there, and as fast
        return t.exponential_(generator=generator)
    return t.uniform_(generator=generator).log_().neg_()


def make_generator(seed: int, device: torch.device | str) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def mask_logits(logits: torch.Tensor, bitmask: torch.Tensor) -> torch.Tensor:
    """Forbid tokens: logits [n, V], bitmask [n, W] int32 where bit j of word i allows token 32i+j."""
    bits = torch.arange(32, dtype=torch.int32, device=logits.device)
    allowed = ((bitmask.to(logits.device, non_blocking=True)[:, :, None] >> bits) & 1).bool()  # [n, W, 32]
    return logits.masked_fill(~allowed.flatten(1)[:, : logits.shape[-1]], float("-inf"))


def race_draw(probs: torch.Tensor, race: torch.Tensor) -> torch.Tensor:
    """One token per row by the exponential race: argmax_j p_j / e_j with e ~ Exp(1) i.i.d. picks j
    with probability p_j / sum(p). probs [n, V], race [n, V] -> [n] (a row [V] -> a 0-d index). Its noise is drawn outside
    (see playground.engine.fused), so a CUDA graph can replay it."""
    return (probs / race.clamp(min=1e-30)).argmax(dim=-1)
