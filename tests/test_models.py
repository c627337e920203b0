"""Presets parse and pair drafts with targets of the same tokenizer family; the shipped demo pair
loads offline and decodes losslessly; loading errors name the model and say what to do."""
import gc
import json
import logging
import pathlib
import re
import shutil
import time
import weakref

import pytest
import torch

from playground import session
from playground.models import loading as models
from playground.models import locate
from playground.models import packaged
from playground.constraints import from_user
from playground.draft_ids import cascade, draft_model, is_cascade, uses_lookup
from playground.errors import PlaygroundError
from playground.presets import FAMILIES, all_presets, default_preset_name, family, read_preset
from tests import tiny
from tests.test_engine_greedy import hf_greedy

REQUIRED = {"demo", "demo-json", "qwen2.5-7b", "qwen2.5-1.5b", "qwen3-8b", "qwen2.5-coder-7b",
            "deepseek-coder-6.7b", "deepseek-r1-distill-7b"}


def test_presets_parse_and_pair_within_a_family():
    presets = all_presets()
    assert REQUIRED <= set(presets)
    assert any(p.draft == models.NGRAM for p in presets.values())  # a prompt-lookup preset
    for p in presets.values():
        assert p.purpose and len(p.purpose.splitlines()) == 1
        assert 1 <= p.k <= 32 and p.temperature >= 0 and 0 < p.top_p <= 1 and p.max_new_tokens > 0 and p.prompt
        assert family(p.target) is not None, p.target
        draft = draft_model(p.draft)
        assert draft is None or family(draft) == family(p.target), p.name
        assert not (p.schema and p.regex)
        if p.schema:
            assert from_user(schema=p.schema) is not None


def test_a_runs_defaults_agree_wherever_they_are_written():
    """A run's defaults are written in the engine's config, the Python API's signature, Preset, Settings and
    bench's flags (a newcomer's review: changing one left the others, and no test said so)."""
    import dataclasses
    import inspect
    from playground.cli_args import build_parser, confidence_of
    from playground.config import GREEDY, SamplingParams, SpecConfig
    from playground.presets import Preset, Settings
    engine = {**dataclasses.asdict(SpecConfig()), **dataclasses.asdict(SamplingParams())}
    api = {name: p.default for name, p in inspect.signature(session.spec_config).parameters.items()}
    preset = {f.name: f.default for f in dataclasses.fields(Preset) if f.default is not dataclasses.MISSING}
    page = dataclasses.asdict(Settings())
    for name in ("k", "temperature", "top_p", "top_k", "max_new_tokens", "seed", "policy", "confidence"):
        found = {where: values[name] for where, values in (("engine", engine), ("api", api), ("Preset", preset),
                                                            ("Settings", page)) if name in values}
        assert len(set(found.values())) == 1 and len(found) >= 3, (name, found)
    bench = build_parser().parse_args(["bench"])
    assert float(bench.temperature) == engine["temperature"] and bench.seed is None  # (None: the engine's seed, unless
    # given, which bench tells apart to say a seed its greedy rows never draw with: cli_bench.cmd_bench)
    assert confidence_of(bench) == confidence_of(build_parser().parse_args(["generate"])) == engine["confidence"]
    assert GREEDY.greedy and GREEDY == SamplingParams(temperature=0.0)  # greedy, whatever the default becomes


def test_preset_files_start_with_their_purpose():
    for path in sorted(pathlib.Path("presets").glob("*.toml")):
        assert path.read_text().splitlines()[0].startswith("purpose = ")


def test_bad_preset_file_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\npurpose = "y"\ntarget = "t"\ndraft = "d"\nspeed = 3\n')
    with pytest.raises(PlaygroundError, match="unknown keys"):
        read_preset(path)


def test_default_preset(monkeypatch, tmp_path, caplog):
    """Without a GPU: the SmolLM2 pair where it loads offline (bf16 or float32), else the demo pair."""
    monkeypatch.setenv("PLAYGROUND_PRESET", "demo-json")
    assert default_preset_name() == "demo-json"
    monkeypatch.delenv("PLAYGROUND_PRESET")
    own = default_preset_name()
    monkeypatch.setenv("PLAYGROUND_PRESET", "smolm2")  # a typo started on the first preset by name, a 7B GPU one
    with caplog.at_level(logging.WARNING, logger="playground"):
        assert default_preset_name() == own
    assert "no preset named 'smolm2' here (did you mean 'smollm2'?); starting on this host's own default" in caplog.text
    monkeypatch.delenv("PLAYGROUND_PRESET")
    if torch.cuda.is_available():
        assert default_preset_name() == "qwen2.5-7b"
        return
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "bfloat16")
    assert packaged.available_offline("smollm2-135m-instruct")  # installed by the README's test command
    assert default_preset_name() == "smollm2"
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "float32")  # a CPU without bf16 dot products
    assert default_preset_name() == "smollm2"
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "bfloat16")
    monkeypatch.setenv("PLAYGROUND_CACHE", str(tmp_path))  # nothing converted yet...
    monkeypatch.setattr(packaged, "gguf_path", lambda model: None)  # ...and no package: it would need the hub
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert default_preset_name() == "demo"
    # A CPU Space: no package (it installs with --no-deps, which requirements.txt cannot say), SmolLM2 preloaded
    # into the hub's cache by the front matter's preload_from_hub (a Space review: it opened on the toy pair)
    hub_id = packaged.PACKAGED["smollm2-135m-instruct"].hub_id
    snapshot = tmp_path / "hub" / f"models--{hub_id.replace('/', '--')}" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0" * 40)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "model.safetensors").write_bytes(b"")
    assert default_preset_name() == "smollm2"


def test_an_unknown_cpu_dtype_is_refused(monkeypatch):
    """PLAYGROUND_CPU_DTYPE=bf16 (not 'bfloat16') was silently ignored: the models ran in the default."""
    from playground.models.placement import default_dtype
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "bf16")
    with pytest.raises(PlaygroundError, match="PLAYGROUND_CPU_DTYPE must be float32 or bfloat16, got 'bf16'"):
        default_dtype(torch.device("cpu"))
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", " float32 ")
    assert default_dtype(torch.device("cpu")) == torch.float32


def test_a_draft_name_says_what_it_loads():
    assert (draft_model("ngram"), uses_lookup("ngram"), is_cascade("ngram")) == (None, True, False)
    assert (draft_model("ngram+m/x"), uses_lookup("ngram+m/x"), is_cascade("ngram+m/x")) == ("m/x", True, True)
    assert (draft_model("ngram-ish/x"), uses_lookup("ngram-ish/x")) == ("ngram-ish/x", False)  # a model named so
    assert cascade("m/x") == "ngram+m/x" and models.is_way_of_drafting("ngram+m/x")


def test_families_cover_every_preset_model():
    for p in all_presets().values():
        for model in (p.target, draft_model(p.draft)):
            assert model is None or any(model.startswith(prefix) for prefix in FAMILIES)


def test_demo_pair_ships_small_and_loads_offline():
    weights = list(locate.DEMO_DIR.glob("*/model.safetensors"))
    assert len(weights) == 2
    assert sum(w.stat().st_size for w in weights) <= 25_000_000
    pair = models.load_pair("demo-target", "demo-draft", "cpu")
    assert pair.target.config.model_type in ("qwen2", "qwen3") and pair.target.dtype == torch.float32
    prompts = json.loads((locate.DEMO_DIR / "heldout_prompts.json").read_text())[:3]
    accepted = proposed = 0
    for text in prompts:  # held-out code: the draft must be a real distillation of the target
        prompt = session.encode_prompt(pair, text)
        result = session.run(pair, prompt, session.spec_config(k=4, max_new_tokens=40))
        assert result.token_ids == hf_greedy(pair.target, prompt, 40, eos_id=pair.tokenizer.eos_token_id)
        accepted, proposed = accepted + result.stats["accepted"], proposed + result.stats["proposed"]
    assert accepted / proposed > 0.4


@pytest.mark.parametrize("target", ["ngram", "ngram+demo-draft", "smollm2-feature-draft"])
def test_a_way_of_drafting_is_refused_as_a_target_by_name(target):
    """Prompt lookup, a cascade or a feature draft cannot write alone: said so, not 'not in the local
    cache ... hf download ngram'. The page's target list offers only the presets' targets."""
    from playground.ui import inputs
    with pytest.raises(PlaygroundError, match=re.escape(f"'{target}' is a way of drafting, not a model that writes on its own")):
        models.load_pair(target, "demo-draft", "cpu")
    assert target not in inputs.TARGETS and models.is_way_of_drafting(target)
    assert "demo-draft" in inputs.TARGETS and not models.is_way_of_drafting("demo-draft")  # a small model may write alone


def test_models_are_cached(saved_pair):
    target, draft = saved_pair
    first = models.load_pair(str(target), str(draft), "cpu")
    again = models.load_pair(str(target), str(draft), "cpu")
    assert first.target is again.target and first.draft is again.draft


def test_eviction_frees_a_model_at_once(saved_pair):
    """make_room drops the oldest entries and collects them before it measures free memory again: a
    bf16 CPU model (its patched products hold reference cycles) is gone at once, not at some later GC."""
    target, _ = saved_pair
    models.CACHE.entries.clear()
    model, _, _ = models.load_model(str(target), torch.device("cpu"), torch.bfloat16)
    gone = [weakref.ref(m) for m in model.modules() if isinstance(m, torch.nn.Linear)]  # the weights' holders
    del model
    gc.disable()  # only make_room's own collection may free them
    try:
        models.CACHE.make_room(2**62, torch.device("cpu"))  # more than any machine has: evict everything
        assert not models.CACHE.entries and gone and all(ref() is None for ref in gone)
    finally:
        gc.enable()


HEAP_FREED_BUT_KEPT = """
from playground.models.room import return_freed_heap
def rss_mb():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmRSS')).split()[1]) // 1024
chunks = [bytearray(100_000) for _ in range(3000)]  # 300 MB in pieces under glibc's mmap threshold: the heap's
last = chunks.pop()  # the newest piece stays, so the heap's top cannot shrink by itself
del chunks
kept = rss_mb()
print(kept, rss_mb() if return_freed_heap() else -1)
"""


def test_freed_heap_goes_back_to_the_system():
    """After an eviction and a load, return_freed_heap gives the C heap's freed pages back (glibc
    keeps them: a soak saw the server's memory creep 370 MB over 60 loads). Here 300 MB freed under a
    piece still held: glibc keeps them until the trim."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", HEAP_FREED_BUT_KEPT], capture_output=True, text=True, timeout=120,
                         cwd=pathlib.Path(__file__).parents[1], check=True).stdout.split()
    kept, trimmed = map(int, out)
    assert kept > 250 and 0 <= trimmed < kept - 200, out


def test_evicting_a_model_returns_the_freed_heap(saved_pair, monkeypatch):
    from playground.models import room
    trims = []
    monkeypatch.setattr(room, "return_freed_heap", lambda: trims.append(1) or True)
    target, _ = saved_pair
    models.CACHE.entries.clear()
    models.load_model(str(target), torch.device("cpu"), torch.float32)
    models.CACHE.make_room(2**62, torch.device("cpu"))  # evict it
    assert trims and not models.CACHE.entries


def test_runs_at_once_load_a_model_once(saved_pair, monkeypatch):
    """Two runs at once (PLAYGROUND_CONCURRENCY > 1) asking for a model not loaded yet: one loads it,
    the other says it waits and then takes the same model (each loaded its own copy, both past a
    memory check that counted neither)."""
    import threading
    target, _ = saved_pair
    models.CACHE.entries.clear()
    loads, started, release = [], threading.Event(), threading.Event()
    real = models._from_pretrained

    def slow(*args):
        loads.append(args[0])
        started.set()
        release.wait(30)
        return real(*args)
    monkeypatch.setattr(models, "_from_pretrained", slow)
    got, told = [], []
    first = threading.Thread(target=lambda: got.append(models.load_model(str(target), torch.device("cpu"))))
    first.start()
    assert started.wait(30)
    second = threading.Thread(target=lambda: got.append(models.load_model(
        str(target), torch.device("cpu"), progress=lambda f, message: told.append(message))))
    second.start()
    try:
        deadline = time.monotonic() + 30  # (a fixed half second raced a loaded host)
        while not told and time.monotonic() < deadline:
            time.sleep(0.02)
        assert second.is_alive() and told and told[0].startswith("waiting for another model")
    finally:
        release.set()
        first.join(30), second.join(30)
    assert loads == [str(target)] and len(got) == 2 and got[0][0] is got[1][0]


def test_runs_at_once_change_a_new_pairs_models_once(monkeypatch):
    """Two runs given the same new pair joined its projections at once (a GPU's in-place change,
    made here on the CPU): both passed the check for a joined weight, and the second then failed
    (AttributeError: no gate_proj) in 15 of 15 tries."""
    import threading
    from playground.presets import get_preset
    preset = get_preset("demo")
    monkeypatch.setattr(session, "fuses_on", lambda device: True)
    monkeypatch.setattr(models, "PAIRS", {})
    models.CACHE.entries.clear()
    try:
        for _ in range(3):
            models.CACHE.entries.clear()
            pairs, errors = [], []

            def load():
                try:
                    pairs.append(session.load_pair(preset.target, preset.draft))
                except Exception as exc:  # noqa: BLE001 (what the other thread raises is the finding)
                    errors.append(exc)
            threads = [threading.Thread(target=load) for _ in range(2)]
            [t.start() for t in threads], [t.join(60) for t in threads]
            assert not errors and len(pairs) == 2 and pairs[0] is pairs[1] and pairs[0].prepared
            assert not hasattr(pairs[0].target.model.layers[0].mlp, "gate_proj")  # joined, once
    finally:
        models.CACHE.entries.clear()  # the joined models are not left to later tests


def test_a_pair_is_given_again_until_one_of_its_models_leaves_the_cache(saved_pair, monkeypatch):
    """Runs get the same pair (its captured programs serve them all); an evicted model takes its
    pairs with it, so nothing keeps it."""
    target, draft = saved_pair
    monkeypatch.setattr(models, "PAIRS", {})  # (earlier tests empty the cache without evicting)
    first = models.load_pair(str(target), str(draft), "cpu")
    assert models.load_pair(str(target), str(draft), "cpu") is first
    gone = weakref.ref(first.draft)
    del first
    models.CACHE.make_room(2**62, torch.device("cpu"))  # evict everything
    assert gone() is None and not models.PAIRS


def test_a_pair_whose_model_left_the_cache_while_it_loaded_is_not_kept(saved_pair, monkeypatch):
    """Loading the draft may evict the target (a full GPU): a pair kept then held the evicted target
    for good, uncounted by the cache and loaded again beside it by the next run."""
    target, draft = saved_pair
    monkeypatch.setattr(models, "PAIRS", {})
    monkeypatch.setattr(models.CACHE, "max_entries", 1)
    models.CACHE.entries.clear()
    pair = models.load_pair(str(target), str(draft), "cpu")
    gone = weakref.ref(pair.target)
    assert not models.CACHE.holds(pair.target) and not models.PAIRS
    del pair
    gc.collect()
    assert gone() is None
    models.CACHE.entries.clear()


def test_progress_is_reported(saved_pair):
    target, draft = saved_pair
    models.CACHE.entries.clear()
    seen = []
    models.load_pair(str(target), str(draft), "cpu", progress=lambda f, msg: seen.append((f, msg)))
    assert seen[-1][0] == 1.0 and any("loading" in m for _, m in seen)
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)


@pytest.mark.parametrize("model_id, message", [
    ("/no/such/dir", "not found: no such directory"),
    (__file__, "is a file: give the directory that holds its config.json"),
    ("someone/missing-model", "hf download someone/missing-model"),
    ("not a valid id!", "not a valid Hugging Face id"),
])
def test_loading_errors_name_the_model(model_id, message):
    with pytest.raises(PlaygroundError, match=message) as err:
        models.load_pair(model_id, models.NGRAM, "cpu")
    assert model_id in str(err.value)


def test_a_config_the_weights_do_not_fill_is_refused_not_loaded_at_random(saved_pair, tmp_path):
    """A config naming more layers than its weights hold loaded, the rest random, and wrote junk with
    exit 0 (20,000 layers beside a 480 KB file took 4.6 GB first); a config past any model's sizes was
    built on the meta device to be sized (35 s for 20,000 layers); a tensor missing loaded at random
    too; a config transformers' checks refuse gave its traceback."""
    from safetensors.torch import load_file, save_file
    target, _ = saved_pair

    def copy(name: str, **config) -> pathlib.Path:
        folder = pathlib.Path(shutil.copytree(target, tmp_path / name))
        data = json.loads((folder / "config.json").read_text())
        if "layer_types" in data and "num_hidden_layers" in config:  # one kind per layer, as transformers checks
            config["layer_types"] = data["layer_types"][:1] * config["num_hidden_layers"]
        (folder / "config.json").write_text(json.dumps(data | config))
        return folder
    layers = json.loads((target / "config.json").read_text())["num_hidden_layers"]
    for folder, message in (
            (copy("deeper", num_hidden_layers=layers + 1), f"names {layers + 1} layers and its weights hold {layers}"),
            (copy("absurd", num_hidden_layers=20_000), "num_hidden_layers = 20,000, past the 1,024"),
            (copy("wide", vocab_size=2**22), "vocab_size = 4,194,304"),
            (copy("strict", layer_types=["full_attention"] * (layers + 3)), "could not be loaded")):
        with pytest.raises(PlaygroundError, match=re.escape(message)):
            models.load_model(str(folder), torch.device("cpu"))
    cut = copy("cut")
    weights = load_file(cut / "model.safetensors")
    norm = next(key for key in weights if key.endswith("norm.weight") and "layers." not in key)
    save_file({key: value for key, value in weights.items() if key != norm}, cut / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(PlaygroundError, match=re.escape(f"its weights lack 1 tensors its config.json names (such as {norm})")):
        models.load_model(str(cut), torch.device("cpu"))


def test_tokenizer_mismatch_names_both(saved_pair, tmp_path):
    target, _ = saved_pair
    tok = tiny.byte_bpe_tokenizer(vocab_size=300)
    other = tiny.save(tiny.tiny_model(vocab=len(tok), eos_id=0), tok, tmp_path / "other")
    with pytest.raises(PlaygroundError, match="tokenizers differ") as err:
        models.load_pair(str(target), str(other), "cpu")
    assert str(target) in str(err.value) and str(other) in str(err.value)


def test_a_hub_draft_of_another_tokenizer_is_refused_before_its_weights_come(saved_pair, tmp_path, monkeypatch):
    """A review: the draft's weights (gigabytes for a hub id) were downloaded and loaded before its tokenizer was
    compared. Its small files come first; the hub is this test's stand-in, a folder of another tokenizer's files."""
    import huggingface_hub
    target, _ = saved_pair
    tok = tiny.byte_bpe_tokenizer(vocab_size=300)
    small = tmp_path / "small"
    tok.save_pretrained(small)  # (config and tokenizer: no weights)
    asked = []

    def hub(model_id, allow_patterns=None, local_files_only=False, **kwargs):
        asked.append((model_id, allow_patterns, local_files_only))
        if local_files_only:
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        assert "*.safetensors" not in allow_patterns, "the weights were asked for"
        return str(small)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub)
    monkeypatch.setattr(locate, "hub_resolves", lambda: True)
    with pytest.raises(PlaygroundError, match=re.escape(f"tokenizers differ: draft 'someone/other-draft' ({len(tok)} tokens)")):
        models.load_pair(str(target), "someone/other-draft", "cpu")
    assert asked[-1][0] == "someone/other-draft" and not asked[-1][2]


def test_out_of_memory_suggests_a_smaller_preset(saved_pair, monkeypatch):
    """A real OOM needs a GPU; the mapping of the exception to the message is what is checked."""
    target, _ = saved_pair
    models.CACHE.entries.clear()

    def oom(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")
    monkeypatch.setattr(models.AutoModelForCausalLM, "from_pretrained", oom)
    with pytest.raises(PlaygroundError, match="out of memory loading .* smaller preset"):
        models.load_pair(str(target), models.NGRAM, "cpu")


def test_a_model_past_free_cpu_memory_is_refused_before_loading(saved_pair, monkeypatch):
    """On a CPU the OOM killer ends the server instead of raising: a model that needs more than the
    memory left, counting what evicting the cached models would free, is refused by name: nothing
    loaded, nothing evicted."""
    target, _ = saved_pair
    models.CACHE.entries.clear()
    loads = []
    kept = models.load_model(str(target), torch.device("cpu"))  # cached before memory runs short
    monkeypatch.setattr(models.placement, "free_memory", lambda device: 1000)
    monkeypatch.setattr(models.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: loads.append(a))
    with pytest.raises(PlaygroundError, match=r"needs about .* GiB of memory .* GiB free: pick a smaller preset"):
        models.load_model(str(target), torch.device("cpu"), torch.float32)  # another key: would need a load
    assert loads == [] and models.CACHE.get((str(target), "cpu", "default")) is kept  # nothing evicted for it


def test_a_packed_copy_counts_in_what_a_load_needs_and_what_evicting_frees(saved_pair, monkeypatch):
    """A batch-invariant CPU model gets a second, packed copy of its linear weights: the memory check
    asks room for it, and what the cache holds counts it. (float32 past SMALL_MODEL, lowered here so
    the tiny model counts as big: packed on every CPU; bfloat16 is packed on CPUs with it natively,
    and oneDNN refuses to pack it with AVX2 alone; float32 only where row_products' kernel is not built, which
    reads the weights as they are: no copy, no room asked for one.)"""
    from playground.models import row_products
    target, _ = saved_pair
    cpu = torch.device("cpu")
    monkeypatch.setattr(models.placement, "SMALL_MODEL", 1000)
    monkeypatch.setenv("PLAYGROUND_ROW_KERNEL", "0")
    row_products.kernel.cache_clear()
    models.CACHE.entries.clear()
    model, *_ = models.load_model(str(target), cpu, torch.float32)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    linears = sum(m.weight.numel() * m.weight.element_size() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert models.CACHE.held_bytes(cpu) == weights + linears
    models.CACHE.entries.clear()
    need = models.placement.checkpoint_bytes(target, torch.float32)
    monkeypatch.setattr(models.placement, "free_memory", lambda device: int(need * 1.15))  # the weights fit, two copies do not
    with pytest.raises(PlaygroundError, match="needs about"):
        models.load_model(str(target), cpu, torch.float32)
    from playground.models import packed_linear, room
    for module in (room, packed_linear):  # linears past the cap stay unpacked: no room asked for a copy never made
        monkeypatch.setattr(module, "MAX_PACKED_BYTES", linears - 1)
    model, *_ = models.load_model(str(target), cpu, torch.float32)
    assert models.CACHE.held_bytes(cpu) == weights
    monkeypatch.undo()  # the kernel, where it can be built: no copy, and the weights' room is enough
    monkeypatch.setattr(models.placement, "SMALL_MODEL", 1000)
    monkeypatch.setattr(models.placement, "free_memory", lambda device: int(need * 1.15))
    row_products.kernel.cache_clear()
    models.CACHE.entries.clear()
    if row_products.kernel() is not None:
        model, *_ = models.load_model(str(target), cpu, torch.float32)
        assert models.CACHE.held_bytes(cpu) == weights and model.playground_batch_invariant
    models.CACHE.entries.clear()


def hub_cache(root: pathlib.Path, model_id: str, files: pathlib.Path | None = None, config: dict | None = None):
    """A Hugging Face cache holding one model's snapshot, laid out as huggingface_hub keeps it (read
    offline: HF_HUB_OFFLINE=1 in conftest): a saved model's files, or only a config.json."""
    repo = root / ("models--" + model_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    snapshot = repo / "snapshots" / ("0" * 40)
    if files is not None:
        shutil.copytree(files, snapshot)
    else:
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(json.dumps(config))
    return snapshot


QWEN25_7B = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944,
             "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
             "tie_word_embeddings": False, "torch_dtype": "bfloat16"}  # Qwen2.5-7B-Instruct's sizes: 7.6B parameters


def transformers_config(name: str):
    """transformers' default config of that class: a real architecture, sized as its authors made it."""
    import transformers
    return getattr(transformers, name)()


def test_a_hub_model_too_big_for_this_host_is_refused_before_its_weights_come(tmp_path, monkeypatch):
    """Only config.json is fetched first: the model is built on the meta device from it and sized
    (7.6B parameters: 15.2 GB of bfloat16 to download; in float32 15.2 GiB where the row kernel is built, the
    config saying bfloat16: loaded in halves, else 28.4 GiB, its linears too big for a packed copy); past the free
    disk, or a CPU's free memory, it is refused before the weights come."""
    from playground.models import row_products
    import huggingface_hub
    models.CACHE.entries.clear()  # nothing held that evicting would free
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    snapshot = hub_cache(tmp_path, "acme/big", config=QWEN25_7B)
    (snapshot / "model-00001-of-00004.safetensors").symlink_to(tmp_path / "pruned-blob")  # a dangling link counts none
    fetched = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: fetched.append(a))
    monkeypatch.setattr(models.placement, "free_disk", lambda path: 10 * 2**30)
    with pytest.raises(PlaygroundError, match=r"'acme/big' needs about 14.2 GiB of disk to download .* 10.0 GiB free"):
        models.load_model("acme/big", torch.device("cpu"))
    monkeypatch.setattr(models.placement, "free_disk", lambda path: 100 * 2**30)
    monkeypatch.setattr(models.placement, "free_memory", lambda device: 16 * 2**30)  # a CPU Space's 16 GiB
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "float32")
    need = "15.2" if row_products.kernel() is not None else "28.4"
    with pytest.raises(PlaygroundError, match=rf"'acme/big' needs about {need} GiB of memory in float32 .* 16.0 GiB free"):
        models.load_model("acme/big", torch.device("cpu"))
    assert fetched == []


def test_a_packaged_model_from_the_hub_refused_for_its_size_is_not_told_to_install(tmp_path, monkeypatch):
    """Without its package, a packaged model comes from the hub; a refusal for this host's memory is
    not followed by 'or install it for offline use' (the package would not make it fit)."""
    import huggingface_hub
    models.CACHE.entries.clear()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    hub_cache(tmp_path, "acme/big", config=QWEN25_7B)
    monkeypatch.setattr(packaged, "local_dir", lambda name, progress=None: "acme/big")  # as if not installed
    monkeypatch.setattr(models.placement, "free_memory", lambda device: 4 * 2**30)
    with pytest.raises(PlaygroundError, match="needs about") as refused:
        models.load_model("smollm2-135m-instruct", torch.device("cpu"))
    assert "install it" not in str(refused.value)
    monkeypatch.setattr(packaged, "local_dir", lambda name, progress=None: "acme/absent")  # offline, not cached
    with pytest.raises(PlaygroundError, match="or install it for offline use"):
        models.load_model("smollm2-135m-instruct", torch.device("cpu"))


def test_a_snapshot_holding_only_its_config_is_not_cached(tmp_path, monkeypatch):
    """A download refused (or cut) after config.json leaves a snapshot without weights: offline, a
    later load says the model is not cached and how to fetch it, not transformers' file error."""
    import huggingface_hub
    models.CACHE.entries.clear()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    hub_cache(tmp_path, "acme/half", config=dict(QWEN25_7B, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                                 num_attention_heads=4, num_key_value_heads=2, vocab_size=256))
    with pytest.raises(PlaygroundError, match=r"'acme/half' is not in the local cache .* `hf download acme/half`"):
        models.load_model("acme/half", torch.device("cpu"))


def test_a_hub_model_that_fits_loads_from_the_hub_cache(saved_pair, tmp_path, monkeypatch):
    """The same path with a model that fits: sized from its config, then loaded from the snapshot."""
    import huggingface_hub
    target, _ = saved_pair
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    snapshot = hub_cache(tmp_path, "acme/tiny", files=target)
    float32 = models.placement.config_bytes(snapshot, torch.float32)
    assert 0 < models.placement.checkpoint_bytes(snapshot, torch.float32) - float32 < 4096  # the files: and a header
    models.CACHE.entries.clear()
    model, *_ = models.load_model("acme/tiny", torch.device("cpu"), torch.float32)
    assert sum(p.numel() for p in model.parameters()) * 4 == float32


def test_free_cpu_memory_is_bounded_by_the_containers_limit(tmp_path):
    """/proc/meminfo shows the host's memory; a Space's container has its own limit (cgroup v2 or v1)."""
    def files(limit: str, usage: str):
        (tmp_path / "max").write_text(limit)
        (tmp_path / "current").write_text(usage)
        return ((str(tmp_path / "missing"), str(tmp_path / "missing")), (str(tmp_path / "max"), str(tmp_path / "current")))
    assert models.placement.container_room(files("1000\n", "400\n")) == 600
    assert models.placement.container_room(files("max\n", "400\n")) == 2**63  # v2: no limit
    assert models.placement.container_room(files(str(2**63 - 4096), "400")) == 2**63  # v1: no limit
    assert models.placement.container_room(files("1000", "4000")) == 0


def test_remote_code_is_never_trusted(saved_pair, monkeypatch):
    target, _ = saved_pair
    models.CACHE.entries.clear()
    seen = {}
    real = models.AutoModelForCausalLM.from_pretrained

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(models.AutoModelForCausalLM, "from_pretrained", spy)
    models.load_pair(str(target), models.NGRAM, "cpu")
    assert seen["trust_remote_code"] is False


def test_custom_models_need_the_host_opt_in(monkeypatch):
    from playground.ui import live
    from playground.presets import Settings
    settings = Settings(target="someone/else", draft=models.NGRAM, prompt="x")
    monkeypatch.delenv("PLAYGROUND_ALLOW_CUSTOM_MODELS", raising=False)
    with pytest.raises(PlaygroundError, match="not one of this host's preset models"):
        live.check_models(settings)
    monkeypatch.setenv("PLAYGROUND_ALLOW_CUSTOM_MODELS", "1")
    live.check_models(settings)


def test_chat_template_and_system_prompt(saved_pair):
    target, draft = saved_pair
    pair = models.load_pair(str(target), str(draft), "cpu")
    pair.tokenizer.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                                    "{% if add_generation_prompt %}<assistant>{% endif %}")
    ids = session.encode_prompt(pair, "hi", chat=True, system="be brief")
    assert pair.tokenizer.decode(ids) == "<system>be brief<user>hi<assistant>"
    for blank in ("", "  \n "):  # (spaces alone replaced a template's own system prompt with nothing; a review)
        assert pair.tokenizer.decode(session.encode_prompt(pair, "hi", chat=True, system=blank)) == "<user>hi<assistant>"
        assert session.unread_prompt_parts(pair, False, blank) == ""  # (not "the system prompt is unused")
    assert session.unread_prompt_parts(pair, False, "be brief").startswith("the system prompt is unused")
    assert pair.tokenizer.decode(session.encode_prompt(pair, "hi", chat=False)) == "hi"
    with_schema = pair.tokenizer.decode(session.encode_prompt(pair, "hi", chat=True, schema='{"type": "object"}'))
    assert with_schema.startswith("<user>hi") and '{"type": "object"}' in with_schema
    pair.tokenizer.chat_template = None


def test_without_network_the_hub_is_not_tried_and_the_cache_still_serves(saved_pair, tmp_path, monkeypatch, caplog):
    """A machine without network: the hub's name does not resolve, so the local cache alone is read
    at once (the hub client retried each request five times, 23.7 s measured before the message)."""
    import socket
    import huggingface_hub
    target, _ = saved_pair
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # conftest's 1: as a user's laptop
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    looked_up = []

    def no_network(host, *args, **kwargs):
        looked_up.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    models.CACHE.entries.clear()
    with caplog.at_level("WARNING", logger="huggingface_hub"):
        with pytest.raises(PlaygroundError, match=r"'acme/absent' is not in the local cache .* `hf download acme/absent`"):
            models.load_model("acme/absent", torch.device("cpu"))
    assert looked_up[0] == "huggingface.co"  # ours, first (the hub client may look up its agent registry once)
    assert not [r for r in caplog.records if "Retrying" in r.getMessage()]  # no request for the model, so no retries
    seen = len(looked_up)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")  # a proxy resolves names itself: tried
    assert locate.hub_resolves() and len(looked_up) == seen
    monkeypatch.delenv("HTTPS_PROXY")
    hub_cache(tmp_path, "acme/tiny", files=target)
    model, *_ = models.load_model("acme/tiny", torch.device("cpu"), torch.float32)  # cached: loads offline
    assert model.config.vocab_size > 0


@pytest.mark.parametrize("config, kinds", [
    (transformers_config("Qwen3NextConfig"), "LinearAttentionLayer"),
    (transformers_config("MambaConfig"), "LinearAttentionLayer"),
    (transformers_config("FalconH1Config"), "LinearAttentionAndFullAttentionLayer")])
def test_a_model_with_recurrent_layers_is_refused_before_its_weights(tmp_path, monkeypatch, config, kinds):
    """Linear-attention, Mamba and hybrid layers fold every token into one state that a rejected
    guess cannot be taken out of: refused by name from config.json, from the hub before the weights
    come, and from a local folder before they load."""
    import huggingface_hub
    models.CACHE.entries.clear()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    hub_cache(tmp_path, "acme/recurrent", config=config.to_dict())
    fetched = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: fetched.append(a))
    message = rf"'{{}}' has layers whose state cannot be rolled back after a rejected guess \({kinds}\)"
    with pytest.raises(PlaygroundError, match=message.format("acme/recurrent")):
        models.load_model("acme/recurrent", torch.device("cpu"))
    assert fetched == []
    local = tmp_path / "local"
    local.mkdir()
    config.save_pretrained(local)
    with pytest.raises(PlaygroundError, match=message.format(re.escape(str(local)))):
        models.load_model(str(local), torch.device("cpu"))


def test_sliding_window_models_are_not_refused(tmp_path):
    """Gemma-2/3 and Mistral-style windows roll back (engine.cache records past the window)."""
    for name in ("Gemma3TextConfig", "MistralConfig"):
        transformers_config(name).save_pretrained(tmp_path / name)
        models.refuse_unfit_config(name, tmp_path / name)


def test_a_presets_name_given_as_a_model_is_said_to_be_one(monkeypatch):
    """`--target demo --draft demo` was told to pick a preset whose models are here (demo), and to
    `hf download demo`; an empty name read as the current directory ("has no config.json")."""
    from playground.models import locate
    monkeypatch.setattr(locate, "hub_resolves", lambda: False)
    with pytest.raises(PlaygroundError, match=r"model 'demo' is not here.*a preset's name goes to --preset .*"
                                              r"the models here offline are demo-target, demo-draft") as refused:
        locate.locate("demo")
    assert "hf download" not in str(refused.value)
    with pytest.raises(PlaygroundError, match="no model named: give a model's hub id or directory"):
        locate.locate("")


def test_the_offline_refusal_names_smollm2_only_where_it_loads(monkeypatch):
    """"demo and smollm2 run offline" was said on a host without SmolLM2's package or a cached copy (a CPU Space,
    where the package needs --no-deps; a host review), sending the reader to a pair refused in turn."""
    from playground.models import locate
    told = locate._not_cached("acme/absent")
    assert ("(demo and smollm2 run offline)" in told) == locate.here("smollm2-135m-instruct")
    monkeypatch.setattr(locate, "here", lambda model_id: False)
    assert "(the demo presets run offline)" in locate._not_cached("acme/absent")
