"""Tiny real transformers models and tokenizers built offline, for tests (random weights)."""
import copy as copy_module
import json
import pathlib
import sysconfig

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (AutoModelForCausalLM, LlamaConfig, PreTrainedTokenizerFast, Qwen2Config,
                          Qwen3Config)

from playground.models.loading import Pair, eos_token_ids, vocab_map

EOS = "<|endoftext|>"
CONFIGS = {"qwen2": Qwen2Config, "qwen3": Qwen3Config, "llama": LlamaConfig}


def stdlib_texts(n_files: int = 40) -> list[str]:
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    files = sorted(root.glob("*.py"))[:n_files]
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


def byte_bpe_tokenizer(vocab_size: int = 320) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(stdlib_texts(), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS)


def sentencepiece_style_tokenizer(vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """Llama 2's and Mistral's layout: <unk>, <s>, </s>, 256 byte-fallback tokens, then BPE pieces over
    words that start with '▁' (a text tokenized alone gets one in front)."""
    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    trained.train_from_iterator(stdlib_texts(), trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False))
    state = json.loads(trained.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"<0x{i:02X}>": 3 + i for i in range(256)}
    for piece in sorted(state["vocab"], key=state["vocab"].get):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in state["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", bos_token="<s>", unk_token="<unk>",
                                   pad_token="</s>")


def letters_tokenizer(n: int) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over n-1 letters plus EOS (id n-1): for small-vocabulary statistics."""
    vocab = {chr(ord("a") + i): i for i in range(n - 1)} | {EOS: n - 1}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=EOS))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS)


def tiny_model(arch: str = "qwen2", vocab: int = 320, hidden: int = 64, layers: int = 2, seed: int = 0,
               eos_id: int = 0, init_std: float = 0.02, dtype=torch.float32, **config):
    """config: more of the architecture's config fields (layer_types, sliding_window...)."""
    torch.manual_seed(seed)
    cfg = CONFIGS[arch](vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                        num_key_value_heads=2, intermediate_size=hidden * 2, max_position_embeddings=512,
                        head_dim=hidden // 4, tie_word_embeddings=False, initializer_range=init_std,
                        eos_token_id=eos_id, bos_token_id=eos_id, pad_token_id=eos_id, **config)
    return AutoModelForCausalLM.from_config(cfg).to(dtype).eval()


def perturbed_copy(model, noise: float, seed: int = 1):
    """The same model with Gaussian noise on every weight: a draft that agrees often, not always."""
    copy = type(model)(copy_module.deepcopy(model.config)).to(model.dtype).eval()  # its own config: folding one
    # model's attention (playground.engine.attention) must not fold the other's
    copy.load_state_dict(model.state_dict())
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in copy.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * noise * p.std().clamp(min=1e-3))
    return copy


def prefer_tokens(model, token_ids: list[int], bias: float):
    """Give the output layer a bias towards some tokens (in place). Used to make a random model close
    JSON strings, numbers and arrays soon, so constrained outputs finish within the token budget."""
    head = model.get_output_embeddings()
    biased = torch.nn.Linear(head.in_features, head.out_features, bias=True, dtype=head.weight.dtype)
    with torch.no_grad():
        biased.weight.copy_(head.weight)
        biased.bias.zero_()
        biased.bias[token_ids] = bias
    model.set_output_embeddings(biased)
    return model


def closing_tokens(tokenizer) -> list[int]:
    """Ids of tokens that end something in JSON or a pattern: quotes, commas, brackets, EOS."""
    vocab = tokenizer.get_vocab()
    text = {i: tokenizer.decode([i]) for i in vocab.values()}
    return [i for i, t in text.items() if any(c in t for c in '",}]') or i == tokenizer.eos_token_id]


def make_pair(target, draft, tokenizer, eos_ids=None) -> Pair:
    widths = [m.config.vocab_size for m in (target, draft) if m is not None and vocab_map(m) is None]
    eos = frozenset(eos_ids) if eos_ids is not None else eos_token_ids(target, tokenizer)
    return Pair(target, draft, tokenizer, "tiny-target", "tiny-draft" if draft is not None else "ngram",
                min(widths), eos)


def save(model, tokenizer, path: pathlib.Path) -> pathlib.Path:
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
