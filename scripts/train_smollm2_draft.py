"""Train the draft for SmolLM2-135M-Instruct: a 4-layer Llama with a reduced vocabulary, distilled
from the target on the target's own chat answers.

Why this shape. On a 2-core CPU a one-token pass of the 135M target takes ~56 ms; the bar is a
draft pass at most a tenth of that. The target's 49,152-token head alone (28M weights) would cost
more than that, so the draft predicts only the DRAFT_VOCAB - 1 tokens the target writes most often
(plus one slot standing for every other token on its input side). The engine scatters its logits
back to the full vocabulary with every other token at zero probability: the acceptance rule stays
exact (q(x) = 0 there, so the residual max(p - q, 0) covers those tokens), as in FR-Spec and
EAGLE-3's draft vocabularies. The embedding starts from the target's, projected on its top
principal directions.

Phases (everything seeded; artifacts/ keeps each phase's output, so a rerun resumes):
  1. generate: the target answers every training prompt (scripts/smollm2_prompts.py) greedily and
     with sampling (T=0.8), keeping its top-TOPK next-token probabilities at every step;
  2. vocabulary: the most frequent tokens of those answers;
  3. train: cross-entropy of the draft against the target's top-TOPK probabilities (forward KL).

    python scripts/train_smollm2_draft.py [--out playground/smollm2_draft] [--scale 1.0]
"""
import argparse
import json
import math
import pathlib
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from playground import packaged  # noqa: E402
from smollm2_prompts import prompts  # noqa: E402

SEED = 0
TARGET = "smollm2-135m-instruct"
DRAFT_VOCAB = 8192  # the last slot stands for every token outside the draft vocabulary
TOPK = 32  # target probabilities kept per generated position
GEN_BATCH, GEN_NEW = 96, 160  # big batches: a step costs 166 ms at 16 rows, 350 ms at 96
SAMPLES = ((0.0, 1), (0.8, 1))  # (temperature, answers per prompt)
DRAFT_SHAPE = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                   intermediate_size=768)
TRAIN_BATCH, EPOCHS, LR = 16, 8, 3e-3
ART = pathlib.Path("artifacts/smollm2_draft")


def log(*args) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def load_target():
    path = packaged.local_dir(TARGET)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return model, tok


def chat_ids(tok, prompt: str) -> list[int]:
    ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                  tokenize=True, return_dict=False)
    return list(ids["input_ids"] if isinstance(ids, dict) else ids)


@torch.no_grad()
def generate_batch(model, tok, prompts_: list[str], temperature: float, seed: int) -> list[dict]:
    """-> per prompt: prompt ids, answer ids (up to and including EOS), top-k ids/probs per answer step."""
    encoded = [chat_ids(tok, p) for p in prompts_]
    width = max(map(len, encoded))
    ids = torch.tensor([[tok.pad_token_id] * (width - len(e)) + e for e in encoded])  # left padding
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded])
    torch.manual_seed(seed)
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=GEN_NEW,
                         do_sample=temperature > 0, temperature=temperature or None, top_p=None, top_k=None,
                         output_logits=True, return_dict_in_generate=True, pad_token_id=tok.pad_token_id)
    top = [torch.softmax(step.float(), dim=-1).topk(TOPK, dim=-1) for step in out.logits]  # per step [B, K]
    top_ids = torch.stack([t.indices for t in top], dim=1)  # [B, steps, K]
    top_p = torch.stack([t.values for t in top], dim=1)
    rows = []
    for b, prompt in enumerate(encoded):
        answer = out.sequences[b, width:].tolist()
        n = answer.index(tok.eos_token_id) + 1 if tok.eos_token_id in answer else len(answer)
        rows.append(dict(prompt=prompt, answer=answer[:n], top_ids=top_ids[b, :n].to(torch.int32),
                         top_p=top_p[b, :n].to(torch.float16)))
    return rows


def generate_all(model, tok, scale: float) -> list[dict]:
    path = ART / f"generations-scale{scale}.pt"
    if path.exists():
        return torch.load(path)
    train = prompts()[: max(GEN_BATCH, int(len(prompts()) * scale))]
    rows, started = [], time.time()
    for temperature, repeats in SAMPLES:
        for r in range(repeats):
            for i in range(0, len(train), GEN_BATCH):
                rows += generate_batch(model, tok, train[i:i + GEN_BATCH], temperature, seed=SEED + 1000 * r + i)
                tokens = sum(len(x["answer"]) for x in rows)
                log(f"generate T={temperature} pass {r} {i + GEN_BATCH}/{len(train)}: {len(rows)} answers, "
                    f"{tokens} tokens, {tokens / (time.time() - started):.0f} tokens/s")
    ART.mkdir(parents=True, exist_ok=True)
    torch.save(rows, path)
    return rows


def draft_vocabulary(rows: list[dict], tok) -> torch.Tensor:
    """-> d2t [DRAFT_VOCAB - 1]: the target ids the draft can propose, most frequent first (EOS always)."""
    counts = torch.zeros(len(tok), dtype=torch.long)
    for row in rows:
        counts += torch.bincount(torch.tensor(row["answer"]), minlength=len(tok))
    counts[tok.eos_token_id] = counts.max() + 1
    d2t = counts.argsort(descending=True)[: DRAFT_VOCAB - 1]
    covered = counts[d2t].sum() / counts.sum()
    log(f"draft vocabulary: {DRAFT_VOCAB - 1} tokens cover {covered:.4f} of the answers' tokens")
    return d2t.sort().values


def to_draft_ids(ids: torch.Tensor, t2d: torch.Tensor) -> torch.Tensor:
    return t2d[ids]


def build_draft(target, d2t: torch.Tensor) -> torch.nn.Module:
    """A Llama draft whose embedding starts as the target's rows for d2t (plus the mean row for
    'other'), projected on their top principal directions."""
    cfg = target.config
    dcfg = LlamaConfig(vocab_size=DRAFT_VOCAB, max_position_embeddings=cfg.max_position_embeddings,
                       rope_parameters=dict(cfg.rope_parameters), rms_norm_eps=cfg.rms_norm_eps,
                       tie_word_embeddings=True, bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id,
                       pad_token_id=cfg.pad_token_id, **DRAFT_SHAPE)
    torch.manual_seed(SEED)
    draft = AutoModelForCausalLM.from_config(dcfg)
    emb = target.get_input_embeddings().weight.detach()  # [V, 576]
    rows = torch.cat([emb[d2t], emb.mean(0, keepdim=True)])  # [N, 576]
    centred = rows - rows.mean(0)
    _, _, v = torch.linalg.svd(centred, full_matrices=False)
    proj = centred @ v[: DRAFT_SHAPE["hidden_size"]].T  # [N, 256]
    with torch.no_grad():
        draft.get_input_embeddings().weight.copy_(proj / proj.std() * dcfg.initializer_range)
    return draft


def batches(rows: list[dict], t2d: torch.Tensor, n2d: int, generator: torch.Generator):
    """Shuffled batches -> (input ids [B, T], target top ids [B, T, K] in draft ids, top probs, loss mask)."""
    order = torch.randperm(len(rows), generator=generator).tolist()
    for i in range(0, len(order), TRAIN_BATCH):
        chunk = [rows[j] for j in order[i:i + TRAIN_BATCH]]
        width = max(len(r["prompt"]) + len(r["answer"]) for r in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        top_ids = torch.full((len(chunk), width, TOPK), n2d, dtype=torch.long)
        top_p = torch.zeros(len(chunk), width, TOPK)
        for b, r in enumerate(chunk):
            seq = torch.tensor(r["prompt"] + r["answer"])
            ids[b, : len(seq)] = t2d[seq]
            start = len(r["prompt"]) - 1  # position whose next token is the answer's first
            top_ids[b, start:start + len(r["answer"])] = t2d[r["top_ids"].long()]
            top_p[b, start:start + len(r["answer"])] = r["top_p"].float()
        top_p[top_ids == n2d] = 0  # mass on tokens outside the draft vocabulary cannot be learned
        yield ids, top_ids.clamp(max=DRAFT_VOCAB - 1), top_p


def train(draft, rows: list[dict], t2d: torch.Tensor, epochs: int) -> None:
    generator = torch.Generator().manual_seed(SEED)
    steps = epochs * math.ceil(len(rows) / TRAIN_BATCH)
    opt = torch.optim.AdamW(draft.parameters(), lr=LR, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * s / steps)))
    draft.train()
    step, started = 0, time.time()
    for epoch in range(epochs):
        for ids, top_ids, top_p in batches(rows, t2d, DRAFT_VOCAB - 1, generator):
            logp = F.log_softmax(draft(input_ids=ids).logits.float(), dim=-1)  # [B, T, N]
            loss = -(logp.gather(-1, top_ids) * top_p).sum() / (top_p.sum(-1) > 0).sum()
            agree = (logp.argmax(-1) == top_ids[..., 0])[top_p[..., 0] > 0].float().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 20 == 0 or step == steps:
                log(f"train epoch {epoch} step {step}/{steps}: loss {loss.item():.3f}, "
                    f"top-1 agreement {agree.item():.3f}, {time.time() - started:.0f} s")
    draft.eval()


def save(draft, tok, d2t: torch.Tensor, out: pathlib.Path, metrics: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    draft.to(torch.bfloat16).save_pretrained(out)
    tok.save_pretrained(out)
    save_file({"d2t": d2t.to(torch.int32).contiguous()}, out / "draft_vocab.safetensors")
    (out / "training_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    (out / "heldout_prompts.json").write_text(json.dumps(prompts(held_out=True), indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="playground/smollm2_draft")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the prompts (0.05: smoke run)")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    started = time.time()
    target, tok = load_target()
    rows = generate_all(target, tok, args.scale)
    gen_s = time.time() - started
    d2t = draft_vocabulary(rows, tok)
    t2d = torch.full((len(tok),), DRAFT_VOCAB - 1, dtype=torch.long)
    t2d[d2t] = torch.arange(len(d2t))
    draft = build_draft(target, d2t)
    train(draft, rows, t2d, EPOCHS if args.scale >= 1 else 1)
    metrics = dict(answers=len(rows), answer_tokens=sum(len(r["answer"]) for r in rows), generate_s=round(gen_s),
                   total_s=round(time.time() - started), draft_vocab=DRAFT_VOCAB, shape=DRAFT_SHAPE,
                   parameters=sum(p.numel() for p in draft.parameters()), torch=torch.__version__)
    save(draft, tok, d2t, pathlib.Path(args.out), metrics)
    log("done", metrics)


if __name__ == "__main__":
    main()
