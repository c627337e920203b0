"""Load target/draft pairs: tokenizer checks, feature drafts, and errors that name the model and
say what to do. Where the files come from: locate; device, dtype and memory: placement; the room a
model needs, and the LRU of loaded models: room."""
import collections
import contextlib
import pathlib
import re
import threading
from dataclasses import dataclass, field

import torch
from huggingface_hub.errors import StrictDataclassError
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from transformers.cache_utils import DynamicCache, LinearAttentionCacheLayerMixin

from playground.draft_ids import NGRAM, draft_model, is_cascade, uses_lookup
from playground.errors import PlaygroundError
from playground.limits import env_flag
from playground.models import halves, placement
from playground.models.decode_threads import fastest_decode_threads
from playground.models.batch_invariant import make_batch_invariant, time_plain_ratio
from playground.models.feature_draft import VOCAB_MAP_FILE, FeatureDraft, is_feature_draft, load_feature_draft
from playground.models.locate import ALIASES, Progress, files_before_weights, locate, report, sub_progress
from playground.models.packed_linear import pack_linears
from playground.models.room import (CACHE, packs, peak_bytes, refuse_before_download, refuse_past_free_memory,
                                   return_freed_heap)

WAIT_REPORT_S = 1.0  # how often a load waiting for another says so again
LOADING = threading.Lock()  # one model loads at a time (load_model), and one pair's models change in place
PAIRS: dict[tuple, "Pair"] = {}  # the pair of each (target, draft, device, dtype) while both models are cached:
PAIRING = threading.Lock()  # what runs keep on a pair (its captured programs) serves the next run


@dataclass(slots=True)
class Pair:
    target: torch.nn.Module
    draft: torch.nn.Module | None  # None: prompt lookup
    tokenizer: object
    target_id: str
    draft_id: str
    vocab: int  # logits width both models share; ids at or past it are never produced
    eos_ids: frozenset[int]
    target_threads: int | None = None  # CPU threads for short passes (None: all)
    draft_threads: int | None = None
    cascade: bool = False  # prompt lookup feeds the draft model
    context: int = 2**31  # positions both models can attend to (prompt + new tokens)
    programs: collections.OrderedDict = field(default_factory=collections.OrderedDict)  # the engine's
    # captured round programs for this pair (playground.engine.fused), freed with it
    prepared: bool = False  # the session's in-place changes to its models are made (session.load_pair)

    @property
    def device(self) -> torch.device:
        return self.target.device

    @property
    def feature_draft(self) -> bool:
        """The draft reads the target's hidden states (see playground.models.feature_draft)."""
        return isinstance(self.draft, FeatureDraft)

    @property
    def draft_vocab_map(self) -> torch.Tensor | None:
        return vocab_map(self.draft) if self.draft is not None else None


def vocab_map(model) -> torch.Tensor | None:
    """d2t [N] of a reduced-vocabulary draft (see engine.runner), None for an ordinary model."""
    return getattr(model, "playground_vocab_map", None)


def load_model(model_id: str, device: torch.device, dtype: torch.dtype | None = None,
               progress: Progress | None = None):
    """-> (model in eval mode, tokenizer, its CPU decode thread count or None); cached across calls.
    dtype None: default_dtype for the device and the model's size."""
    key = (model_id, str(device), str(dtype or "default"))
    if (hit := CACHE.get(key)) is not None:
        return hit
    with one_at_a_time(progress, model_id):
        if (hit := CACHE.get(key)) is not None:  # loaded while this call waited
            return hit
        return _load_model(model_id, key, device, dtype, progress)


@contextlib.contextmanager
def one_at_a_time(progress: Progress | None, what: str):
    """LOADING held, a caller that must wait for it saying so first. One load at a time: two runs at
    once (PLAYGROUND_CONCURRENCY > 1) each passed the memory check for what the other was loading,
    and the same model could be loaded twice."""
    if not LOADING.acquire(blocking=False):
        report(progress, 0.0, waiting := f"waiting for another model to finish loading before {what}")
        while not LOADING.acquire(timeout=WAIT_REPORT_S):  # told again each second: a caller stopped while it
            report(progress, 0.0, waiting)  # waits ends here (its progress raises), not after the other's load
    try:
        yield
    finally:
        LOADING.release()


def _load_model(model_id: str, key: tuple, device: torch.device, dtype: torch.dtype | None, progress):
    def before_download(config_dir: pathlib.Path) -> None:
        refuse_unfit_config(model_id, config_dir)
        refuse_before_download(model_id, config_dir, device, dtype)

    path = locate(model_id, progress, before_download)
    refuse_unfit_config(model_id, path, weights=True)  # a local folder: nothing downloaded, so not checked before
    try:
        dtype = dtype or placement.default_dtype(device, placement.checkpoint_bytes(path, torch.float32),
                                                 halves.stored_in_bf16(path))
        need = placement.checkpoint_bytes(path, dtype)
    except OSError as exc:
        raise PlaygroundError(f"model '{model_id}' could not be loaded: {_os_reason(exc)}") from None
    in_halves = halves.loads_in_halves(path, device, dtype, need)  # (float32 from bfloat16 files: no float32 peak)
    room = peak_bytes(path, device, dtype, need, in_halves)
    refuse_past_free_memory(model_id, room, device, dtype, CACHE.held_bytes(device))  # before evicting anything
    CACHE.make_room(room, device)
    refuse_past_free_memory(model_id, room, device, dtype)
    report(progress, 0.9, f"loading {model_id} to {device}")
    model, tokenizer = _from_pretrained(model_id, path, device, dtype, need, in_halves)
    loaded = (model, tokenizer, fastest_decode_threads(model))
    if getattr(model, "playground_batch_invariant", False):
        time_plain_ratio(model, loaded[2])  # what exactness costs, on the threads it decodes with
    CACHE.put(key, loaded)
    return_freed_heap()  # the load's own garbage: files read, float32 widened from halves, packed copies
    report(progress, 1.0, f"{model_id} ready")
    return loaded


# Far past the largest open models (126 layers, 16,384 wide, 53,248 in the MLP, 262,144 tokens): a
# config.json past them is refused before anything is built from it (20,000 layers took 35 s and
# 0.75 GB to size on the meta device, and 4.6 GB to load beside a 480 KB weights file).
MOST_IN_A_CONFIG = {"num_hidden_layers": 1024, "hidden_size": 65_536, "intermediate_size": 262_144,
                    "vocab_size": 2**21}
LAYER_NAME = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def refuse_unfit_config(model_id: str, config_dir: pathlib.Path, weights: bool = False) -> None:
    """config.json read once and checked before anything is built from it (`weights`: against the
    safetensors files beside it too); a config transformers cannot read is loading's to explain."""
    try:
        config = AutoConfig.from_pretrained(config_dir, trust_remote_code=False)
    except Exception:  # noqa: BLE001  (an unknown model type, a config transformers' checks refuse)
        return
    text = config.get_text_config()
    for name, most in MOST_IN_A_CONFIG.items():
        if isinstance(value := getattr(text, name, None), int) and value > most:
            raise PlaygroundError(f"model '{model_id}': its config.json gives {name} = {value:,}, past the {most:,} "
                                  "of any model the playground loads")
    _refuse_unrollable(model_id, config)
    if weights:
        _refuse_layers_past_weights(model_id, text, config_dir)


def _refuse_layers_past_weights(model_id: str, text_config, path: pathlib.Path) -> None:
    """A config.json naming more layers than its safetensors weights hold (read from their headers):
    loading filled the missing layers with random weights and said nothing."""
    layers = getattr(text_config, "num_hidden_layers", None)
    held = _layers_in_weights(path)
    if isinstance(layers, int) and held is not None and layers > held:
        raise PlaygroundError(f"model '{model_id}': its config.json names {layers} layers and its weights hold "
                              f"{held} (a config from a larger model, or weights cut short?)")


def _layers_in_weights(path: pathlib.Path) -> int | None:
    """Layers the safetensors files hold tensors for (the highest 'layers.N.' plus one), or None."""
    from safetensors import safe_open
    numbers = set()
    try:
        for file in path.glob("*.safetensors"):
            with safe_open(file, "pt") as weights:
                numbers.update(int(m.group(1)) for key in weights.keys() if (m := LAYER_NAME.search(key)))
    except (OSError, SafetensorError):
        return None  # loading says the file is damaged
    return max(numbers) + 1 if numbers else None


def _refuse_unrollable(model_id: str, config) -> None:
    """Speculation rolls each model's cache back past a rejected guess: attention layers (full,
    sliding-window, chunked, shared or indexed) forget positions; linear-attention, Mamba-style and
    hybrid layers fold every token into a running state that cannot be taken back (transformers can
    crop a convolution-only state while recording its past; not tried here, so refused too)."""
    try:
        layers = DynamicCache(config=config).layers
    except Exception:  # noqa: BLE001  (a layer kind this transformers lacks: loading says what is wrong)
        return
    kinds = sorted({type(layer).__name__ for layer in layers if isinstance(layer, LinearAttentionCacheLayerMixin)})
    if kinds:
        raise PlaygroundError(f"model '{model_id}' has layers whose state cannot be rolled back after a rejected "
                              f"guess ({', '.join(kinds)}): the playground speculates with attention models only")


def _from_pretrained(model_id, path, device, dtype, need_bytes, in_halves: bool):
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        model, info = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch.bfloat16 if in_halves else dtype, trust_remote_code=False, output_loading_info=True,
            **placement.device_map_for(device, need_bytes), **placement.attention_for(device, dtype, need_bytes))
    except torch.OutOfMemoryError:
        raise PlaygroundError(f"out of memory loading '{model_id}' on {device}: "
                              "pick a smaller preset (e.g. qwen2.5-1.5b or demo)") from None
    except SafetensorError as exc:
        raise PlaygroundError(f"model '{model_id}': its weights file is damaged (empty, truncated or not "
                              f"safetensors): {_first_line(exc)}") from None
    except OSError as exc:
        raise PlaygroundError(f"model '{model_id}' could not be loaded: {_os_reason(exc)}") from None
    except RuntimeError as exc:
        if "mismatch" not in str(exc):
            raise
        raise PlaygroundError(f"model '{model_id}': config.json and the weights disagree on tensor shapes "
                              "(a config from another model?)") from None
    except (ValueError, KeyError, StrictDataclassError) as exc:
        raise PlaygroundError(f"model '{model_id}' could not be loaded: {_first_line(exc)}") from None
    if missing := info["missing_keys"]:  # left at random by transformers, with a warning in the log alone
        raise PlaygroundError(f"model '{model_id}': its weights lack {len(missing)} tensors its config.json names "
                              f"(such as {sorted(missing)[0]}): weights cut short, or a config from another model?")
    if len(tokenizer) < 2:
        raise PlaygroundError(f"model '{model_id}' has no usable tokenizer (no tokenizer.json or vocabulary "
                              "files next to the weights)")
    if in_halves:
        halves.widen_all_but_linears(model)
    model.requires_grad_(False)  # it decodes only; with gradients on, a pass outside inference mode runs through
    # autograd, whose one-row bfloat16 products (oneDNN's, AVX512-BF16) summed otherwise than inference's
    if placement.attention_for(device, dtype, need_bytes):
        if packs(device, dtype, need_bytes):  # bfloat16 packed: checked exact on native bfloat16 only
            pack_linears(model)
        make_batch_invariant(model)
    if (path / VOCAB_MAP_FILE).is_file():
        model.playground_vocab_map = _read_vocab_map(model_id, path / VOCAB_MAP_FILE, model, len(tokenizer))
    return model.eval(), tokenizer


def _read_vocab_map(model_id: str, file: pathlib.Path, model, vocab: int) -> torch.Tensor:
    from safetensors.torch import load_file
    d2t = load_file(file)["d2t"].long()  # [N - 1]: the model's last row stands for every other token
    if d2t.dim() != 1 or len(d2t) != model.config.vocab_size - 1 or not 0 <= int(d2t.min()) <= int(d2t.max()) < vocab:
        raise PlaygroundError(f"model '{model_id}': {file.name} does not match its config and tokenizer")
    return d2t


def _os_reason(exc: OSError) -> str:
    """The system's reason and the file, where the error has them (not transformers' guess)."""
    if exc.strerror and exc.filename:
        return f"{exc.strerror}: {exc.filename}"
    return _first_line(exc)


def load_pair(target_id: str, draft_id: str, device: str = "auto", dtype: torch.dtype | None = None,
              progress: Progress | None = None) -> Pair:
    """Load (or reuse) both models; refuse a draft whose tokenizer differs from the target's."""
    if is_way_of_drafting(target_id):
        raise PlaygroundError(f"'{target_id}' is a way of drafting, not a model that writes on its own: "
                              "pick it as the draft, and a model as the target")
    dev = placement.resolve_device(device)
    cascade, draft_model_id = is_cascade(draft_id), draft_model(draft_id)
    sub = sub_progress(progress, 0.0, 0.5) if draft_id != NGRAM else progress
    target, tokenizer, target_threads = load_model(target_id, dev, dtype, sub)
    draft, draft_threads = None, None
    if draft_id != NGRAM and (feature_dir := _feature_draft_dir(draft_model_id)) is not None:
        if cascade:
            raise PlaygroundError(f"draft '{draft_model_id}' reads the target's features, which prompt lookup's "
                                  "guesses do not have: use it without 'ngram+'")
        draft, draft_threads = load_feature_model(draft_model_id, feature_dir, target, target_id, len(tokenizer))
    elif draft_id != NGRAM:
        if (small := files_before_weights(draft_model_id)) is not None:  # its tokenizer before its weights
            check_same_tokenizer(tokenizer, _tokenizer_in(small), target_id, draft_model_id)
        draft, draft_tokenizer, draft_threads = load_model(draft_model_id, dev, dtype, sub_progress(progress, 0.5, 1.0))
        check_same_tokenizer(tokenizer, draft_tokenizer, target_id, draft_model_id)
    key = (target_id, draft_id, str(dev), str(dtype))
    with CACHE.lock, PAIRING:  # (eviction's order too)
        kept = PAIRS.get(key)
        if kept is not None and kept.target is target and kept.draft is draft:
            return kept
        widths = [m.config.get_text_config().vocab_size for m in (target, draft) if m is not None and vocab_map(m) is None]
        pair = Pair(target, draft, tokenizer, target_id, draft_id, min(widths), eos_token_ids(target, tokenizer),
                    target_threads, draft_threads, cascade, min(context_length(m) for m in (target, draft) if m is not None))
        if CACHE.holds(target) and (draft is None or pair.feature_draft or CACHE.holds(draft)):
            PAIRS[key] = pair  # kept only while its models are (one may have been evicted since it loaded)
        return pair


def _forget_pairs(model) -> None:
    """A model left the cache: the pairs holding it go too (their programs with them), so it is freed."""
    with PAIRING:
        for key in [k for k, p in PAIRS.items() if model is p.target or model is p.draft]:
            del PAIRS[key]


CACHE.on_evict.append(_forget_pairs)


def is_way_of_drafting(model_id: str) -> bool:
    """Prompt lookup, a cascade or a feature draft: each drafts for a target, none writes alone."""
    return uses_lookup(model_id) or _feature_draft_dir(model_id) is not None


def _feature_draft_dir(draft_id: str) -> pathlib.Path | None:
    """The directory of a feature draft (a packaged alias or a local directory), else None."""
    path = ALIASES.get(draft_id) or pathlib.Path(draft_id)
    try:
        return path if path.is_dir() and is_feature_draft(path) else None
    except (OSError, RuntimeError, ValueError):
        return None


def load_feature_model(draft_id: str, path: pathlib.Path, target, target_id: str, vocab: int):
    """-> (feature draft attached to this target, its CPU decode threads); kept on the target object,
    so it is freed with the target when the LRU evicts it (it holds the target's embedding)."""
    kept = target.__dict__.setdefault("_playground_feature_drafts", {})
    if (hit := kept.get(draft_id)) is not None:
        return hit
    from safetensors.torch import load_file
    try:
        d2t = load_file(path / VOCAB_MAP_FILE)["d2t"].long()  # [N - 1] token ids the draft can write
        if d2t.dim() != 1 or not len(d2t) or not 0 <= int(d2t.min()) <= int(d2t.max()) < vocab:
            raise ValueError(f"{VOCAB_MAP_FILE} does not match the target's tokenizer")
        draft = load_feature_draft(path, target, d2t)
        threads = fastest_decode_threads(draft)
        cpu = draft.device.type == "cpu"
        if cpu and draft.dtype == torch.float32 and draft.by_row_kernel(threads):
            threads = fastest_decode_threads(draft)  # a float32 one's through row_products' kernel, where faster than
            # MKL here on its threads (on a CPU with native bf16 too: a float32 draft there had been packed, its step
            # 4.47 ms against the kernel's 2.46, BENCHMARKS.md); those timed again for the kernel (milliseconds)
        elif cpu and placement.native_bf16():
            draft.pack()  # products from packed weights (see packed_linear)
            threads = fastest_decode_threads(draft)
    except (OSError, ValueError, RuntimeError, KeyError, SafetensorError) as exc:
        raise PlaygroundError(f"draft '{draft_id}' could not be loaded for target '{target_id}': "
                              f"{_first_line(exc)}") from None
    draft.playground_vocab_map = d2t
    kept[draft_id] = loaded = (draft, threads)
    return loaded


def context_length(model) -> int:
    """Positions the model was built for (rotary models degrade past it; others cannot go past)."""
    return getattr(model.config.get_text_config(), "max_position_embeddings", None) or 2**31


def _tokenizer_in(folder: pathlib.Path):
    """The tokenizer in a hub model's small files, or None where they hold none it reads (its load says why)."""
    try:
        return AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    except (OSError, ValueError, TypeError):
        return None


def check_same_tokenizer(target_tok, draft_tok, target_id: str, draft_id: str) -> None:
    if draft_tok is not None and target_tok.get_vocab() != draft_tok.get_vocab():
        raise PlaygroundError(
            f"tokenizers differ: draft '{draft_id}' ({len(draft_tok)} tokens) does not share the tokenizer of "
            f"target '{target_id}' ({len(target_tok)} tokens); pick a draft from the target's family")


def eos_token_ids(model, tokenizer) -> frozenset[int]:
    ids = set()
    configured = getattr(model.generation_config, "eos_token_id", None)
    if configured is not None:
        ids.update(configured if isinstance(configured, (list, tuple)) else [configured])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return frozenset(ids)


def custom_models_allowed() -> bool:
    """Model ids typed by a user (UI, share links) load only where the host opts in."""
    return env_flag("PLAYGROUND_ALLOW_CUSTOM_MODELS", False)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
