"""halves: a float32 CPU model from a bfloat16 checkpoint loaded in bfloat16, its linear weights kept so for the row
kernel and every other tensor widened: the same tensors, the same tokens as a float32 load, asking the memory it ends
with instead of the float32 peak; checkpoints not wholly bfloat16 (float16, float32, mixed) loaded in float32."""
import gc
import json
import pathlib
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from playground import session
from playground.errors import PlaygroundError
from playground.models import batch_invariant, halves, loading, placement, row_layers, row_products
from tests import tiny

pytestmark = pytest.mark.skipif(not row_products.wanted() or not shutil.which("cc"),
                                reason="the row kernel is built on Linux x86-64 with AVX2, FMA and a C compiler only")
CPU = torch.device("cpu")


@pytest.fixture
def big(monkeypatch):
    """Tiny models count as past SMALL_MODEL (float32 ones are batch-invariant, their products the kernel's)."""
    monkeypatch.setattr(placement, "SMALL_MODEL", 1000)
    loading.CACHE.entries.clear()
    yield
    loading.CACHE.entries.clear()


def saved(tmp_path, arch="qwen2", dtype=torch.bfloat16, tied=False, name="m"):
    """A tiny model off its initial values (norms off 1, biases off 0), saved in dtype."""
    tok = tiny.byte_bpe_tokenizer(320)
    model = tiny.tiny_model(arch, vocab=len(tok), seed=1, init_std=0.3, eos_id=tok.eos_token_id)
    if tied:
        model.config.tie_word_embeddings = True
        model.lm_head.weight = model.get_input_embeddings().weight
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return tiny.save(model.to(dtype), tok, tmp_path / name)


def load(path, in_halves: bool, monkeypatch):
    """load_model in float32, in halves or (halves refused) as before."""
    loading.CACHE.entries.clear()
    with monkeypatch.context() as patch:
        if not in_halves:
            patch.setattr(halves, "loads_in_halves", lambda *a: False)
        model, tokenizer, _ = loading.load_model(str(path), CPU, torch.float32)
    return model, tokenizer


def tensors(model) -> dict:
    return {name: t for name, t in [*model.named_parameters(remove_duplicate=False), *model.named_buffers()]}


@pytest.mark.parametrize("arch,tied", [("qwen2", False), ("llama", True), ("qwen3", False)])
def test_a_load_in_halves_holds_what_a_float32_load_holds(tmp_path, big, monkeypatch, arch, tied):
    """Every parameter and buffer the same (name, dtype, values; linear weights bfloat16, a tied head too, the rest
    float32), the same decoder layers in C, the same greedy tokens alone and speculating."""
    path = saved(tmp_path, arch, tied=tied)
    asked = []
    real = loading.AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(loading.AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: (asked.append(k["dtype"]), real(*a, **k))[1])
    halved, tokenizer = load(path, True, monkeypatch)
    whole, _ = load(path, False, monkeypatch)
    assert asked == [torch.bfloat16, torch.float32]
    a, b = tensors(halved), tensors(whole)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name]), name
    linear = {f"{n}.weight" for n, m in halved.named_modules() if isinstance(m, torch.nn.Linear)}
    assert {a[n].dtype for n in linear} == {torch.bfloat16}
    assert {t.dtype for n, t in a.items() if n not in linear and t.is_floating_point()} == {torch.float32}
    assert halved.dtype == halved.config.dtype == torch.float32 and placement.precision(halved) == placement.precision(whole)
    assert c_layers(halved) == c_layers(whole) and len(c_layers(whole)) == 2
    prompt = tokenizer("the cat sat on the").input_ids
    runs = [session.run(tiny.make_pair(m, tiny.perturbed_copy(whole, 0.3), tokenizer), prompt,
                        session.spec_config(k=3, max_new_tokens=24), speculative=s).token_ids
            for m in (halved, whole) for s in (False, True)]
    assert len(set(map(tuple, runs))) == 1 and len(runs[0]) > 0


def c_layers(model) -> list[str]:
    """The decoder layers row_layers gave the C forward."""
    return [name for name, module in model.named_modules() if not row_layers.uninstalled(module)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_a_checkpoint_not_in_bfloat16_loads_in_float32(tmp_path, big, dtype):
    """float16 would round in bfloat16 and float32 would lose its low bits: those load as before."""
    path = saved(tmp_path, dtype=dtype)
    assert not halves.stored_in_bf16(path)
    assert not halves.loads_in_halves(path, CPU, torch.float32, placement.checkpoint_bytes(path, torch.float32))


def test_one_tensor_in_another_dtype_is_enough_to_load_in_float32(tmp_path):
    path = saved(tmp_path)
    (file,) = path.glob("*.safetensors")
    weights = load_file(file)
    name = next(iter(weights))
    save_file(weights | {name: weights[name].half()}, file, metadata={"format": "pt"})
    assert not halves.stored_in_bf16(path)
    save_file(weights | {"step": torch.tensor(3)}, file, metadata={"format": "pt"})  # integer buffers do not count
    assert halves.stored_in_bf16(path)
    save_file(weights | {"blocks": torch.zeros(4, dtype=torch.uint8)}, file, metadata={"format": "pt"})  # packed weights
    assert not halves.stored_in_bf16(path)


def test_a_bin_checkpoint_or_a_quantized_one_is_not_taken_for_bfloat16(tmp_path, big, monkeypatch):
    """A float32 pytorch_model.bin whose config.json says bfloat16 (a local folder): loaded in float32, its values kept;
    a config with quantization_config: never in halves."""
    path = saved(tmp_path, dtype=torch.float32)
    model = loading.AutoModelForCausalLM.from_pretrained(path)
    bin_dir = tmp_path / "bin"
    model.save_pretrained(bin_dir, safe_serialization=False)
    config = json.loads((bin_dir / "config.json").read_text())
    (bin_dir / "config.json").write_text(json.dumps(config | {"dtype": "bfloat16"}))  # it says so, wrongly
    shutil.copy(path / "tokenizer.json", bin_dir)
    shutil.copy(path / "tokenizer_config.json", bin_dir)
    assert placement.stored_dtype(bin_dir) == "bfloat16" and not halves.stored_in_bf16(bin_dir)
    loaded, _ = load(bin_dir, True, monkeypatch)
    assert torch.equal(loaded.get_input_embeddings().weight, model.get_input_embeddings().weight)
    quantized = saved(tmp_path, name="q")
    config = json.loads((quantized / "config.json").read_text())
    (quantized / "config.json").write_text(json.dumps(config | {"quantization_config": {"quant_method": "fp8"}}))
    assert not halves.stored_in_bf16(quantized)


def test_a_load_in_halves_keeps_no_view_of_the_file_and_says_so(tmp_path, big, monkeypatch):
    """The linear weights are copied out of the checkpoint's mapping (its pages counted as free memory, a file rewritten
    in place would end the process); the model says it loaded in halves (make_batch_invariant reads that, not the
    dtype of its first parameter)."""
    path = saved(tmp_path, "llama")
    model, _ = load(path, True, monkeypatch)
    gc.collect()
    assert str(path / "model.safetensors") not in pathlib.Path("/proc/self/maps").read_text()
    assert getattr(model, batch_invariant.LOADED_IN_HALVES)
    whole, _ = load(path, False, monkeypatch)
    assert not hasattr(whole, batch_invariant.LOADED_IN_HALVES)


def test_before_the_download_config_json_says(tmp_path):
    (tmp_path / "config.json").write_text('{"torch_dtype": "bfloat16"}')
    assert halves.stored_in_bf16(tmp_path)
    (tmp_path / "model-00001-of-00004.safetensors").symlink_to(tmp_path / "pruned-blob")  # a dangling link: none yet
    assert halves.stored_in_bf16(tmp_path)
    (tmp_path / "config.json").write_text('{"dtype": "float16"}')
    assert not halves.stored_in_bf16(tmp_path)
    (tmp_path / "config.json").write_text('["not", "a", "config"]')
    assert not halves.stored_in_bf16(tmp_path) and placement.stored_dtype(tmp_path) == ""


def test_no_half_precision_way_on_a_gpu_in_bfloat16_or_for_a_small_model(tmp_path):
    path = saved(tmp_path)
    need = placement.checkpoint_bytes(path, torch.float32)
    assert not halves.loads_in_halves(path, CPU, torch.float32, need)  # small: transformers' attention, no kernel
    assert not halves.loads_in_halves(path, CPU, torch.bfloat16, 10**12)
    assert not halves.loads_in_halves(path, torch.device("cuda"), torch.float32, 10**12)


@pytest.mark.parametrize("tied", [False, True])
def test_a_load_in_halves_asks_the_memory_it_ends_with(tmp_path, big, monkeypatch, tied):
    """Memory for the float32 weights is not there, for what the load ends with it is: loaded in halves (a tied output
    layer's bfloat16 copy counted); refused as before where the checkpoint is float16 (it would need the float32 size)."""
    path = saved(tmp_path, "llama", tied=tied)
    parameters, linear, tied_count = placement.config_parameters(path)
    assert (tied_count > 0) == tied
    ends_with = halves.halves_bytes(path)
    assert ends_with < placement.checkpoint_bytes(path, torch.float32)
    monkeypatch.setattr(placement, "free_memory", lambda device: int(ends_with * 1.15))
    model, *_ = loading.load_model(str(path), CPU, torch.float32)
    assert loading.CACHE.held_bytes(CPU) == ends_with  # what the cache counts, each tensor once
    loading.CACHE.entries.clear()
    with pytest.raises(PlaygroundError, match="needs about .* GiB of memory in float32"):
        loading.load_model(str(saved(tmp_path, dtype=torch.float16, name="f16")), CPU, torch.float32)
