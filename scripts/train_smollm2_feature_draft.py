"""Train the feature draft for SmolLM2-135M-Instruct (see playground/models/feature_draft.py): one Llama
decoder layer that extends the target's last hidden state, reading the target's embedding and the
rows of its head for the draft vocabulary of the token draft (playground/models/smollm2_draft).

Data: the generations train_smollm2_draft.py made (the target's own greedy and sampled answers, with
its top-32 next-token probabilities). Phases (artifacts/ keeps the features, so a rerun resumes):
  1. features: the target (bfloat16) reads every prompt + answer once; its last hidden states are kept;
  2. train: at every position the draft reads (f_{i-1}, x_i) and is trained to give f_i (smooth L1,
     in units of the features' spread) and the target's next-token distribution (forward KL on its
     top 32), EAGLE's two losses; the input features carry uniform noise, as in EAGLE. With
     --depth D (EAGLE-3's training-time test) the losses also cover drafted steps 2..D, which read
     the draft's own predicted features and attend to its own guessed pairs, as when it drafts
     (playground.models.feature_draft.unrolled).

    python scripts/train_smollm2_feature_draft.py --generations artifacts/smollm2_draft/generations-*.pt
    python scripts/train_smollm2_feature_draft.py --generations ... --init playground/models/smollm2_feature_draft --lr 5e-4
"""
import argparse
import json
import math
import pathlib
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from playground.models.feature_draft import FeatureDraft, draft_config, save_feature_draft, unrolled  # noqa: E402
from smollm2_prompts import prompts  # noqa: E402
from train_smollm2_draft import ART, SEED, TOKENIZER, generate_batch, load_target, log  # noqa: E402

VOCAB_FILE = TOKENIZER / "draft_vocab.safetensors"
NOISE = 0.2  # uniform noise on the input features, in units of their standard deviation
W_CLS = 0.3  # weight of the distribution loss next to the feature loss
LR, BATCH = 2e-3, 16
VALIDATION = slice(12, 60)  # held-out prompts for choosing the checkpoint (eval_smollm2_pair.py uses the first 12)


@torch.no_grad()
def extract_features(target, rows: list[dict], path: pathlib.Path, batch: int = 16) -> list[torch.Tensor]:
    """-> per row the target's last hidden states over prompt + answer [T, H] (bfloat16)."""
    if path.exists():
        return torch.load(path)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]["prompt"]) + len(rows[i]["answer"]))
    feats, started = [None] * len(rows), time.time()
    for n, chunk in enumerate(range(0, len(order), batch)):
        idx = order[chunk:chunk + batch]
        seqs = [rows[i]["prompt"] + rows[i]["answer"] for i in idx]
        width = max(map(len, seqs))
        ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs])  # right padding: causal, harmless
        hidden = target.get_decoder()(input_ids=ids).last_hidden_state  # [B, W, H]
        for i, s, h in zip(idx, seqs, hidden):
            feats[i] = h[: len(s)].to(torch.bfloat16).clone()
        if n % 20 == 0:
            log(f"features {chunk + len(idx)}/{len(rows)} rows, {time.time() - started:.0f} s")
    torch.save(feats, path)
    return feats


def generations_with_features(target, paths: list[str], limit: int) -> tuple[list[dict], list[torch.Tensor]]:
    """The rows of the generations files and their features, computed once per file (cached in ART as
    features-<the file's tag>.pt), so adding a file computes only its own; --limit keeps the first rows."""
    if limit:
        rows = [r for g in paths for r in torch.load(g)][:limit]
        return rows, extract_features(target, rows, ART / f"features-{limit}-limit.pt")
    rows, feats = [], []
    for g in paths:
        part = torch.load(g)
        rows += part
        feats += extract_features(target, part, ART / pathlib.Path(g).name.replace("generations-", "features-"))
    return rows, feats


def examples(rows, feats, t2d, other: int):
    """Per row: tokens x [T], features [T, H], top ids in draft rows [T, K] and their probabilities
    (zero outside the answer and for tokens outside the draft vocabulary) at the position whose next
    token they describe."""
    for r, f in zip(rows, feats):
        seq = torch.tensor(r["prompt"] + r["answer"])
        top_ids = torch.full((len(seq), r["top_ids"].shape[1]), other, dtype=torch.long)
        top_p = torch.zeros(len(seq), r["top_ids"].shape[1])
        start = len(r["prompt"]) - 1
        top_ids[start:start + len(r["answer"])] = t2d[r["top_ids"].long()]
        top_p[start:start + len(r["answer"])] = r["top_p"].float()
        top_p[top_ids == other] = 0
        yield seq, f, top_ids, top_p


def collate(items):
    """Pairs j = 0..T-2 of each row, padded: inputs (f_j, x_{j+1}), targets f_{j+1} and the
    distribution of x_{j+2} (stored at position j+1); mask [B, T-1] marks real pairs."""
    width = max(len(x) for x, *_ in items) - 1
    b, h, k = len(items), items[0][1].shape[1], items[0][2].shape[1]
    ids = torch.zeros(b, width, dtype=torch.long)
    f_in, f_out = torch.zeros(b, width, h), torch.zeros(b, width, h)
    top_ids, top_p = torch.zeros(b, width, k, dtype=torch.long), torch.zeros(b, width, k)
    mask = torch.zeros(b, width, dtype=torch.bool)
    for i, (x, f, ti, tp) in enumerate(items):
        n = len(x) - 1
        ids[i, :n], f_in[i, :n], f_out[i, :n] = x[1:], f[:-1].float(), f[1:].float()
        top_ids[i, :n], top_p[i, :n], mask[i, :n] = ti[1:], tp[1:], True
    return ids, f_in, f_out, top_ids, top_p, mask


def validation_rows(target, tok) -> list[dict]:
    """The target's greedy answers to held-out prompts (other topics than the training prompts)."""
    path = ART / "validation-greedy-bf16.pt"
    if not path.exists():
        torch.save(generate_batch(target, tok, prompts(held_out=True)[VALIDATION], 0.0, SEED), path)
    return torch.load(path)


def step_losses(draft: FeatureDraft, batch, depth: int, scale: float, noise: float):
    """-> per drafted step s = 1..depth: (feature loss, distribution loss, top-1 agreement with the
    target's greedy token), over the positions where step s has an exact prefix (see `unrolled`).
    scale: the features' spread, the unit of the feature loss; noise: uniform noise on the target's
    features (same unit), as in EAGLE, so the draft tolerates reading its own predictions."""
    ids, f_in, f_out, top_ids, top_p, mask = batch
    noisy = f_in + (torch.rand_like(f_in) * 2 - 1) * noise * scale
    with torch.autocast("cpu", dtype=torch.bfloat16):
        outs = unrolled(draft, ids, noisy, depth)
    has = (top_p.sum(-1) > 0) & mask
    result = []
    for s, out in enumerate(outs, start=1):
        out = out.float()
        valid, scored = mask.clone(), has.clone()
        valid[:, : s - 1] = scored[:, : s - 1] = False
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = (out @ draft.head.T).float()  # [B, T, N - 1]
        logp = F.log_softmax(logits, -1)
        reg = F.smooth_l1_loss(out[valid] / scale, f_out[valid] / scale)
        picked = logp.gather(-1, top_ids.clamp(max=logits.shape[-1] - 1)) * top_p
        cls = -picked.sum(-1)[scored].sum() / scored.sum().clamp(min=1)
        agree = (logp.argmax(-1) == top_ids[..., 0])[scored].float().mean()
        result.append((reg, cls, agree))
    return result


@torch.no_grad()
def agreement(draft: FeatureDraft, data: list, depth: int, scale: float) -> list[float]:
    """Per drafted step, how often the draft's guess is the target's greedy token (no noise)."""
    draft.eval()
    scores = [a.item() for _, _, a in step_losses(draft, collate(data), depth, scale, 0.0)]
    draft.train()
    return scores


def expected_run(scores: list[float]) -> float:
    """a_1 + a_1 a_2 + ...: a proxy of the tokens a round accepts, for choosing checkpoints."""
    return sum(math.prod(scores[:s]) for s in range(1, len(scores) + 1))


def train(draft: FeatureDraft, data: list, val: list, minutes: float, depth: int, lr: float, scale: float) -> dict:
    """AdamW, warm-up then cosine decay over as many steps as fit in `minutes` (estimated from the
    first 20 steps, inside the warm-up, so the cosine runs once over the whole run; a fraction of an
    epoch when the data is large); the weights kept are those with the best validation score (checked
    every half epoch, at least four times a run). Step s's losses weigh 0.8^(s-1): later guesses
    count only when the earlier ones were accepted."""
    params = [p for n, p in draft.named_parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(SEED)
    per_epoch = math.ceil(len(data) / BATCH)
    total, every, step = per_epoch, max(1, per_epoch // 2), 0
    scores = agreement(draft, val, depth, scale)
    log(f"validation top-1 per step {[round(a, 4) for a in scores]} at the start")
    started = time.time()
    last, best = {}, (expected_run(scores), scores, 0, {k: v.clone() for k, v in draft.state_dict().items()})
    while step < total:
        for chunk in torch.randperm(len(data), generator=gen).split(BATCH):
            for group in opt.param_groups:
                group["lr"] = lr * min(1, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * min(step / total, 1)))
            per_step = step_losses(draft, collate([data[i] for i in chunk]), depth, scale, NOISE)
            loss = sum(0.8 ** s * (reg + W_CLS * cls) for s, (reg, cls, _) in enumerate(per_step))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step += 1
            if step == 20:
                total = max(20, int(60 * minutes / ((time.time() - started) / 20 * 1.05)))
                every = max(1, min(per_epoch // 2, total // 4))
                log(f"{total} steps ({total / per_epoch:.2f} epochs) fit in {minutes} minutes")
            if step % 50 == 0:
                last = dict(reg=[round(r.item(), 4) for r, _, _ in per_step],
                            cls=[round(c.item(), 4) for _, c, _ in per_step],
                            top1=[round(a.item(), 4) for _, _, a in per_step])
                log(f"step {step}/{total}: {last}, {time.time() - started:.0f} s")
            if step % every == 0 or step == total:
                scores = agreement(draft, val, depth, scale)
                log(f"validation top-1 per step {[round(a, 4) for a in scores]} at step {step}")
                if expected_run(scores) > best[0]:
                    best = (expected_run(scores), scores, step, {k: v.clone() for k, v in draft.state_dict().items()})
            if step == total:
                break
    draft.load_state_dict(best[3])
    return dict(epochs=round(step / per_epoch, 2), steps=step, train_s=round(time.time() - started), depth=depth,
                lr=lr, validation_top1_per_step=[round(a, 4) for a in best[1]], best_step=best[2], **last)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", nargs="+", required=True)
    parser.add_argument("--out", default="playground/models/smollm2_feature_draft")
    parser.add_argument("--intermediate", type=int, default=1536)
    parser.add_argument("--train-minutes", type=float, default=30)
    parser.add_argument("--depth", type=int, default=3, help="drafted steps trained at once (1: first guesses only)")
    parser.add_argument("--lr", type=float, default=LR)
    parser.add_argument("--init", help="start from this trained draft (a directory) instead of random weights")
    parser.add_argument("--limit", type=int, default=0, help="use only this many rows (smoke runs)")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    started = time.time()
    target, tok = load_target("cpu", None, torch.bfloat16)
    rows, feats = generations_with_features(target, args.generations, args.limit)
    d2t = load_file(VOCAB_FILE)["d2t"].long()
    other = len(d2t)
    t2d = torch.full((len(tok),), other, dtype=torch.long)
    t2d[d2t] = torch.arange(len(d2t))
    sample = torch.cat([f.float() for f in feats[:200]])
    scale = sample.std().item()  # the features' spread
    log(f"{len(rows)} rows, {sum(len(f) for f in feats)} positions, feature std {scale:.3f}")
    val_rows = validation_rows(target, tok)
    val_feats = extract_features(target, val_rows, ART / "features-validation.pt")
    torch.manual_seed(SEED)
    target = target.float().requires_grad_(False)
    draft = FeatureDraft(draft_config(target.config, args.intermediate)).attach(target, d2t)
    if args.init:
        draft.load_state_dict(load_file(pathlib.Path(args.init) / "model.safetensors"))
    draft.model.embed_tokens.weight.requires_grad_(False)
    data = list(examples(rows, feats, t2d, other))
    val = list(examples(val_rows, val_feats, t2d, other))
    metrics = train(draft, data, val, args.train_minutes, args.depth, args.lr, scale)
    out = pathlib.Path(args.out)
    save_feature_draft(draft, d2t, out)
    metrics.update(rows=len(rows), positions=sum(len(f) for f in feats), feature_std=round(scale, 4),
                   parameters=sum(p.numel() for p in draft.parameters()), noise=NOISE, w_cls=W_CLS,
                   total_s=round(time.time() - started), torch=torch.__version__,
                   command="scripts/train_smollm2_feature_draft.py " + " ".join(sys.argv[1:]))
    earlier = pathlib.Path(args.init or "") / "training_metrics.json"
    if args.init and earlier.is_file():  # the runs it continues, nested
        metrics["init_from"] = json.loads(earlier.read_text())
    (out / "training_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    log("done", metrics)


if __name__ == "__main__":
    main()
