"""The target's law where runs stop at an end of sequence, are cut by max new tokens, or are masked by a
constraint, by exact enumeration; and seeded runs' counts to compare with it (tests/test_law_*.py,
as tests/test_engine_sampling.py's chi-square test does for runs of fixed length)."""
import torch

from playground import session
from tests.test_engine_sampling import chi_square_p, reference_warp

N_RUNS = 2500
P_MIN = 1e-3  # reject only on strong evidence: the tests stay stable while a wrong rule fails


def allowed_ids(mask: torch.Tensor, vocab: int) -> list[int]:
    return [t for t in range(vocab) if (int(mask[t // 32]) >> (t % 32)) & 1]


def exact_law(model, prompt: list[int], length: int, params: dict, eos_ids=(), kept: int | None = None,
              constraint=None) -> dict[tuple, float]:
    """P(first `kept` tokens) of target-only decoding with a budget of `length` tokens: a sequence
    ends at an EOS or at the budget; with `constraint`, each step's logits are masked by the state
    after the committed tokens, then warped (temperature 0 is never asked here)."""
    kept = length if kept is None else kept
    vocab = model.config.vocab_size
    done: dict[tuple, float] = {}
    frontier = {(): 1.0}
    for _ in range(length):
        prefixes = [s for s, p in frontier.items() if p > 0]
        if not prefixes:
            break
        batch = torch.tensor([prompt + list(s) for s in prefixes])
        with torch.no_grad():
            last = model(input_ids=batch).logits[:, -1].double()
        if constraint is not None:
            for i, s in enumerate(prefixes):
                guide = constraint.guide(2)
                guide._commit(list(s))
                allowed = allowed_ids(guide.next_mask(), vocab)
                row = torch.full_like(last[i], float("-inf"))
                row[allowed] = last[i, allowed]
                last[i] = row
        dist = reference_warp(last, **params)
        nxt = {}
        for i, s in enumerate(prefixes):
            for t in torch.nonzero(dist[i] > 0).flatten().tolist():
                seq, p = s + (t,), frontier[s] * dist[i, t].item()
                if t in eos_ids:
                    done[seq] = done.get(seq, 0.0) + p
                else:
                    nxt[seq] = p
        frontier = nxt
    for s, p in frontier.items():
        done[s] = done.get(s, 0.0) + p
    out: dict[tuple, float] = {}
    for s, p in done.items():
        out[s[:kept]] = out.get(s[:kept], 0.0) + p
    return out


def counts_of(pair, prompt, kept: int, n: int = N_RUNS, constraint=None, check=None, first_seed: int = 0,
              **settings):
    """Outputs' first `kept` tokens over n runs seeded first_seed.. -> (counts, total accepted, total proposed)."""
    counts, accepted, proposed = {}, 0, 0
    for seed in range(first_seed, first_seed + n):
        result = session.run(pair, prompt, session.spec_config(seed=seed, **settings), constraint=constraint)
        ids = tuple(result.token_ids)
        if check is not None:
            check(result)
        counts[ids[:kept]] = counts.get(ids[:kept], 0) + 1
        accepted += result.stats["accepted"]
        proposed += result.stats["proposed"]
    return counts, accepted, proposed


def law_p(counts: dict, expected: dict, n: int = N_RUNS, strict: bool = True) -> float:
    """The chi-square p-value; an output the law gives probability 0 fails (strict) or gives p = 0."""
    unexpected = {c: v for c, v in counts.items() if c not in expected}
    if unexpected and not strict:
        print(f"outputs of probability 0 under the target's law: {list(unexpected.items())[:5]}")
        return 0.0
    assert not unexpected, f"outputs of probability 0 under the target's law: {list(unexpected.items())[:5]}"
    return chi_square_p(counts, expected, n)


def keep_every_drafted(monkeypatch, eos: int) -> None:
    """A wrong rule for the negative controls: a drafted `eos` is always accepted (p(eos) raised to q(eos) on the
    draft rows)."""
    from playground.engine import verify
    original = verify.accept_sampled

    def biased(p, q, x, u, race, limit=None):
        if q is not None:
            p = p.clone()
            p[:x.shape[0], eos] = torch.maximum(p[:x.shape[0], eos], q[:, eos])
        return original(p, q, x, u, race, limit)
    monkeypatch.setattr(verify, "accept_sampled", biased)
