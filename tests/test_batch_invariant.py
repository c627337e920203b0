"""bfloat16 on a CPU: big models get it where the CPU multiplies bfloat16 natively, and every
half-precision CPU model is made batch-invariant, so a pass of k+1 tokens gives bitwise the logits
of one-token passes and greedy speculation stays the target alone (the real SmolLM2 case is in
test_smollm2)."""
import os
import shutil

import pytest
import torch
import torch.nn.functional as F

from playground import cpu_isa, session
from playground.measure import bench
from playground.models import loading as models
from playground.models import placement
from playground.models import packed_linear, row_layers, row_products
from playground.models import batch_invariant
from playground.models.batch_invariant import ATTENTION, ROW_INVARIANT, two_row_linear
from playground.engine.runner import ModelRunner
from playground.engine.static import StaticRunner
from tests.test_engine_greedy import hf_greedy


@pytest.fixture
def let_go():
    """The models loaded and the row kernel built under a test's own settings (SMALL_MODEL, PLAYGROUND_CACHE) let
    go as it ends, failed or not: left behind, one failure failed the worker's next tests too."""
    yield
    models.CACHE.entries.clear()
    row_products.kernel.cache_clear()


def test_cpu_dtype_follows_size_native_bf16_and_the_kernel(monkeypatch):
    """float32 on a CPU, bfloat16 past SMALL_MODEL where the CPU has it natively and the kernel would not hold the
    weights in bfloat16 (a checkpoint in another dtype, or no kernel built)."""
    big, small = 4 * placement.SMALL_MODEL + 1, 4 * placement.SMALL_MODEL // 10
    cpu = torch.device("cpu")
    monkeypatch.delenv("PLAYGROUND_CPU_DTYPE", raising=False)
    monkeypatch.setattr(placement, "native_bf16", lambda: True)
    assert placement.default_dtype(cpu, big) == torch.bfloat16  # a float16 or float32 checkpoint
    assert placement.default_dtype(cpu, small) == torch.float32  # too small to gain
    monkeypatch.setattr(placement.row_products, "kernel", lambda: object())
    assert placement.default_dtype(cpu, big, stored_bf16=True) == torch.float32  # the kernel, from bfloat16 weights
    monkeypatch.setattr(placement.row_products, "kernel", lambda: None)
    assert placement.default_dtype(cpu, big, stored_bf16=True) == torch.bfloat16
    monkeypatch.setattr(placement, "native_bf16", lambda: False)
    assert placement.default_dtype(cpu, big) == torch.float32  # bfloat16 would be emulated
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "bfloat16")
    assert placement.default_dtype(cpu, small) == torch.bfloat16
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "float32")
    monkeypatch.setattr(placement, "native_bf16", lambda: True)
    assert placement.default_dtype(cpu, big) == torch.float32
    assert placement.default_dtype(torch.device("cuda"), small) == torch.bfloat16


AVX512_BF16 = frozenset({"avx2", "avx512f", "avx512_bf16"})
AMX = AVX512_BF16 | {"amx_bf16", "amx_tile"}


@pytest.mark.parametrize("flags, limit, native, attention", [
    (AVX512_BF16, None, True, ATTENTION),
    (AMX, "AVX512_CORE_BF16", True, ATTENTION),  # a user's limit below AMX
    (AMX, "avx512_core_bf16", True, ATTENTION),  # oneDNN reads it in any case
    (AMX, None, True, ATTENTION), (AMX, "AVX512_CORE_AMX", True, ATTENTION),  # AMX: fixed blocks of keys
    (AVX512_BF16, "AVX2", False, None),  # bfloat16 emulated under that limit: float32 by default
    (frozenset({"avx2"}), None, False, ROW_INVARIANT)])
def test_bfloat16_attends_eagerly_only_where_its_rows_were_measured_invariant(flags, limit, native, attention,
                                                                              monkeypatch):
    """Eager attention's rows were invariant with AVX512-BF16 only: with AVX2 alone greedy SmolLM2
    speculation left the target at token 66, with AMX allowed at token 16 (test_smollm2's scan of
    context lengths and its trees in bfloat16 catch them there)."""
    cpu = torch.device("cpu")
    monkeypatch.setattr(placement, "cpu_flags", lambda: flags)
    monkeypatch.setattr(cpu_isa, "cpu_flags", lambda: flags)
    monkeypatch.setattr(placement, "eager_rows_agree", lambda: True)  # (the flags' rule; the probe: below)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    if limit is not None:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", limit)
    monkeypatch.delenv("PLAYGROUND_CPU_DTYPE", raising=False)
    assert placement.native_bf16() == native
    assert placement.default_dtype(cpu, 4 * placement.SMALL_MODEL + 1) == (torch.bfloat16 if native else torch.float32)
    assert placement.attention_for(cpu, torch.bfloat16, 0) == {"attn_implementation": attention or ROW_INVARIANT}
    assert placement.attention_for(cpu, torch.float16, 0) == {"attn_implementation": ROW_INVARIANT}


def test_padded_blocks_of_keys_are_the_product_of_weights_and_values():
    """The AMX path's products over fixed blocks of keys, zero-padded: the same values as one product."""
    generator = torch.Generator().manual_seed(1)
    for keys in (1, 40, 256, 257, 700):
        weights = torch.softmax(torch.randn(1, 3, 6, keys, generator=generator), -1).bfloat16()
        value = torch.randn(1, 3, keys, 64, generator=generator).bfloat16()
        blocked = batch_invariant._padded_blocks(weights, value)
        assert blocked.shape == (1, 3, 6, 64) and blocked.dtype == torch.bfloat16
        torch.testing.assert_close(blocked.float(), weights.float() @ value.float(), atol=2e-2, rtol=2e-2)


def test_with_amx_allowed_each_attention_row_is_a_one_token_row():
    """In a fresh interpreter with oneDNN's default limit (AMX where the CPU has it): the probe's passes agree
    row by row with the fixed blocks of keys, on a CPU with bfloat16 dot products. On a 2-core Intel Xeon with
    AMX, one product over all the keys failed it (the code before held oneDNN below AMX instead)."""
    import pathlib
    import subprocess
    import sys
    if "avx512_bf16" not in cpu_isa.cpu_flags():
        pytest.skip("no bfloat16 dot products on this CPU: its bfloat16 models attend row by row")
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")}
    code = ("from playground.models import batch_invariant as b; agree = b.eager_rows_agree();"
            " b.amx_products = lambda: True; b.eager_rows_agree.cache_clear(); print(agree, b.eager_rows_agree())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=pathlib.Path(__file__).parents[1]).stdout.split()
    assert out == ["True", "True"]  # as the CPU multiplies by default, and with the fixed blocks forced


@pytest.mark.parametrize("shape", [(48,), (1, 48), (1, 1, 48), (1, 5, 48), (3, 48)])
def test_two_row_linear_keeps_shapes_and_rows(shape):
    torch.manual_seed(0)
    layer = torch.nn.Linear(48, 32).to(torch.bfloat16)
    x = torch.randn(shape, dtype=torch.bfloat16)
    out = two_row_linear(layer, x)
    assert out.shape == F.linear(x, layer.weight, layer.bias).shape
    rows = x.reshape(-1, 48)
    wide = F.linear(torch.cat([rows, rows[:1]]) if len(rows) == 1 else rows, layer.weight, layer.bias)
    assert torch.equal(out.reshape(-1, 32), wide[: len(rows)])


@pytest.mark.parametrize("queries, keys", [(1, 9), (4, 40), (7, 300)])
def test_grouped_eager_attention_is_transformers_eager_attention(queries, keys):
    """The grouped heads folded into the query axis (no copy of the keys and values per query head)
    attend as transformers' eager attention does, each query head to its own key/value head: float32
    within rounding, and with a tree's batch of chains (BranchBatch: runs as the batch axis)."""
    from transformers.models.llama.modeling_llama import eager_attention_forward
    torch.manual_seed(0)
    module = torch.nn.Module()
    module.num_key_value_groups, module.training = 4, False
    for batch in (1, 5):
        q = torch.randn(batch, 8, queries, 16)  # 8 query heads on 2 key/value heads
        k, v = torch.randn(batch, 2, keys, 16), torch.randn(batch, 2, keys, 16)
        mask = torch.zeros(batch, 1, queries, keys)
        mask[..., keys - queries:].masked_fill_(torch.ones(queries, queries, dtype=torch.bool).triu(1), torch.finfo(torch.float32).min)
        want = eager_attention_forward(module, q, k, v, mask, scaling=0.25)[0]
        got = batch_invariant.grouped_eager_attention(q, k, v, mask, 0.25)
        assert got.shape == want.shape == (batch, queries, 8, 16)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        without = eager_attention_forward(module, q, k, v, None, scaling=0.25)[0]
        torch.testing.assert_close(batch_invariant.grouped_eager_attention(q, k, v, None, 0.25), without, rtol=1e-5, atol=1e-6)
        half = [t.bfloat16() for t in (q, k, v, mask)]
        got, want = batch_invariant.grouped_eager_attention(*half, 0.25), eager_attention_forward(module, *half, scaling=0.25)[0]
        if batch_invariant.amx_products():  # blocks of keys summed in float32: within bfloat16's rounding
            torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
        elif placement.eager_rows_invariant():  # where bf16 CPU models attend this way: bitwise eager's rows
            assert torch.equal(got, want)
        else:  # (bf16 models attend row by row on this CPU; the grouped form still is attention, within rounding)
            torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


def test_weights_meet_values_in_blocks_of_keys_as_one_product_would():
    """Past KEY_BLOCK keys the product of weights and values is summed block by block: the same product,
    within float32 rounding, wherever a model attends through grouped_eager_attention."""
    torch.manual_seed(0)
    weights, value = torch.softmax(torch.randn(1, 3, 12, 1300), dim=-1), torch.randn(1, 3, 1300, 64)
    torch.testing.assert_close(batch_invariant._weighted_values(weights, value), weights @ value, rtol=1e-5, atol=1e-6)


def test_bfloat16_rows_past_1024_keys_are_a_one_token_passs_rows():
    """A bfloat16 product over more than 1,024 keys summed them in an order that followed its row count: in
    a pass over 1,030 keys, rows that saw at most 1,024 came out unlike a one-token pass's, and greedy
    speculation under a schema left the target alone at token 20 of a 1,010-token prompt (JSONSchemaBench
    Github_hard o53038, SmolLM2 on a 2-core AMD EPYC with AVX512-BF16)."""
    if not placement.eager_rows_invariant():
        pytest.skip("bfloat16 models attend row by row on this CPU (ROW_INVARIANT), not through these products")
    torch.manual_seed(0)
    differing = []
    for keys, width in ((1030, 8), (1030, 16), (1030, 20), (1030, 32), (1040, 20), (1040, 32), (1050, 32), (2050, 16)):
        q = torch.randn(1, 9, width, 64).bfloat16()  # SmolLM2's heads: 9 on 3 key/value heads
        k, v = torch.randn(1, 3, keys, 64).bfloat16(), torch.randn(1, 3, keys, 64).bfloat16()
        mask = batch_invariant.causal_tail(width, keys, torch.bfloat16, torch.device("cpu"))
        wide = batch_invariant.grouped_eager_attention(q, k, v, mask, 0.125)
        for row in range(width):
            seen = keys - width + row + 1
            one = batch_invariant.grouped_eager_attention(q[:, :, row:row + 1], k[:, :, :seen], v[:, :, :seen], None, 0.125)
            if not torch.equal(one[0, 0], wide[0, row]):
                differing.append((keys, width, seen))
    assert differing == [], differing


def test_bfloat16_attends_row_by_row_where_the_probe_finds_eager_rows_differ(monkeypatch):
    """The flags alone do not decide: a CPU whose oneDNN sums a product's keys otherwise attends row by row."""
    monkeypatch.setattr(placement, "cpu_flags", lambda: AVX512_BF16)
    monkeypatch.setattr(cpu_isa, "cpu_flags", lambda: AVX512_BF16)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setattr(placement, "eager_rows_agree", lambda: False)
    assert placement.attention_for(torch.device("cpu"), torch.bfloat16, 0) == {"attn_implementation": ROW_INVARIANT}


def test_the_probe_finds_the_rows_that_one_product_over_all_keys_gave(monkeypatch):
    """Summed in one product (past 1,024 keys as before the blocks; with AMX over any number of keys), the probe
    finds rows unlike a one-token pass's on this CPU, where its eager rows agree with the blocks."""
    if not placement.eager_rows_invariant():
        pytest.skip("bfloat16 models attend row by row on this CPU (ROW_INVARIANT), not through these products")
    monkeypatch.setattr(batch_invariant, "KEY_BLOCK", 10 ** 9)
    monkeypatch.setattr(batch_invariant, "amx_products", lambda: False)
    batch_invariant.eager_rows_agree.cache_clear()
    try:
        assert not batch_invariant.eager_rows_agree()
    finally:
        batch_invariant.eager_rows_agree.cache_clear()


def test_half_precision_cpu_models_decode_exactly(saved_pair):
    target, draft = saved_pair
    pair = models.load_pair(str(target), str(draft), "cpu", dtype=torch.bfloat16)
    for model in (pair.target, pair.draft):
        assert model.dtype == torch.bfloat16  # eager attention's rows were invariant with AVX512-BF16 only
        assert model.config._attn_implementation == (ATTENTION if placement.eager_rows_invariant() else ROW_INVARIANT)
        assert model.playground_batch_invariant
        packed = [packed_linear.ATTR in m.__dict__ for m in model.modules() if isinstance(m, torch.nn.Linear)]
        assert packed and all(p == placement.native_bf16() for p in packed)  # packed where exactness was checked
    prompt = session.encode_prompt(pair, "def parse(text):\n")
    alone = hf_greedy(pair.target, prompt, 40, eos_id=pair.tokenizer.eos_token_id)
    for k in (1, 2, 4):
        assert session.run(pair, prompt, session.spec_config(k=k, max_new_tokens=40)).token_ids == alone
    compiled = session.spec_config(k=2, compile=True)  # compiled graphs would not be batch-invariant: eager
    assert not any(isinstance(r, StaticRunner) for r in session.choice.runners(pair, len(prompt), compiled))
    note = session.compile_fallback(pair, compiled)
    assert "the target: a batch-invariant CPU model" in note and "the draft: a batch-invariant" in note
    form = session.baseline_form(pair, session.spec_config(k=2), [])  # said beside the speedup where slower than plain
    ratio = pair.target.playground_plain_ratio  # (timed at load: plain one-row products over these)
    assert (form != "") == (ratio > session.choice.PLAIN_FASTER), (form, ratio)
    assert not form or (form.startswith("the target alone runs exact, as verification does")
                        and f"ran {ratio:.2f}x faster on this machine (timed at load)" in form)


def test_a_batch_invariant_models_wide_passes_take_its_decode_threads(saved_pair):
    """Passes over 32 tokens ran on all threads, shorter ones on the model's decode count: a small batch-invariant
    target timed faster on one thread would have mixed thread counts between a wide forced run or tree and its
    one-token passes, which nothing checks agree (an identity review). Past the first pass (all threads, it agrees
    only with itself) every width takes the decode count; a model that is not batch-invariant keeps all threads."""
    target, draft = saved_pair
    pair = models.load_pair(str(target), str(draft), "cpu", dtype=torch.bfloat16)
    seen = []
    hook = pair.target.register_forward_pre_hook(lambda module, args: seen.append(torch.get_num_threads()))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        runner = ModelRunner(pair.target, pair.vocab, threads=1)
        ids = torch.arange(10, 50)  # 40 tokens
        runner.prefill(ids)
        runner.forward(ids)  # a wide pass after the first: a long forced run's
        runner.forward(ids[:3])
        assert seen == [2, 1, 1]
        plain = ModelRunner(pair.target, pair.vocab, threads=1)
        plain.exact_rows = False  # (as a model that is not batch-invariant)
        plain.prefill(ids), plain.forward(ids)
        assert seen[3:] == [2, 2]
    finally:
        hook.remove()
        torch.set_num_threads(threads)


def test_small_float32_models_are_left_alone(saved_pair):
    target, _ = saved_pair
    model, _, _ = models.load_model(str(target), torch.device("cpu"), torch.float32)
    assert not getattr(model, "playground_batch_invariant", False)
    pair = models.load_pair(str(target), "ngram", "cpu", dtype=torch.float32)
    assert session.baseline_form(pair, session.spec_config(k=2), []) == ""  # plain one-token passes: nothing to say


@pytest.mark.parametrize("kernel", ["row kernel", "packed"])
def test_big_float32_cpu_models_decode_exactly(saved_pair, monkeypatch, tmp_path, kernel, let_go):
    """float32 models past SMALL_MODEL (SmolLM2 on CPUs without bf16 dot products): the row kernel's products
    (row_products; oneDNN's packed ones where it cannot be built, or PLAYGROUND_ROW_KERNEL=0) and the row-invariant
    attention, so a pass of any width gives bitwise the logits of one-token passes, and greedy speculation is the
    target alone. (SMALL_MODEL lowered here so the tiny test pair counts as big.)"""
    monkeypatch.setattr(placement, "SMALL_MODEL", 1000)
    monkeypatch.setenv("PLAYGROUND_CACHE", str(tmp_path))
    monkeypatch.setenv("PLAYGROUND_ROW_KERNEL", "1" if kernel == "row kernel" else "0")
    row_products.kernel.cache_clear()
    by_kernel = row_products.kernel() is not None
    assert by_kernel == (kernel == "row kernel" and row_products.wanted() and shutil.which("cc") is not None)
    target, draft = saved_pair
    models.CACHE.entries.clear()
    pair = models.load_pair(str(target), str(draft), "cpu", dtype=torch.float32)
    model = pair.target
    assert model.config._attn_implementation == ROW_INVARIANT and model.playground_batch_invariant
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert all((packed_linear.ATTR in m.__dict__) != by_kernel for m in linears)  # the kernel keeps no packed copy
    assert all((m.forward.func is row_products.module_forward) == by_kernel for m in linears)
    ids = torch.arange(3, 40)[None]
    with torch.inference_mode():
        wide = ModelRunner(model, pair.vocab)
        wide.forward(ids[0, :30], keep=1)
        rows = wide.forward(ids[0, 30:], keep=7)  # [7, V]
        narrow = ModelRunner(model, pair.vocab)
        narrow.forward(ids[0, :30], keep=1)
        ones = torch.cat([narrow.forward(ids[0, i:i + 1], keep=1) for i in range(30, 37)])
    assert torch.equal(rows, ones)
    prompt = session.encode_prompt(pair, "def parse(text):\n")
    alone = session.run(pair, prompt, session.spec_config(k=2, max_new_tokens=40), speculative=False).token_ids
    for k in (1, 3):
        assert session.run(pair, prompt, session.spec_config(k=k, max_new_tokens=40)).token_ids == alone


@pytest.mark.skipif(not row_products.wanted() or not shutil.which("cc"), reason="the row kernel is built on Linux "
                    "x86-64 with AVX2, FMA and a C compiler only")
@pytest.mark.parametrize("tied", [False, True])
def test_float32_weights_that_are_bfloat16_values_are_held_in_bfloat16_and_decode_the_same(
        tmp_path, tokenizer, target, noisy_draft, monkeypatch, tied, let_go):
    """A bfloat16 checkpoint loaded in float32 (SmolLM2's cached conversion, Qwen's files) on a CPU without bfloat16:
    its linear layers are held in bfloat16 (half the bytes a pass reads), the kernel widening each weight back
    exactly, so every logit is bitwise what the float32 weights gave, a wide pass's rows are one-token passes' and
    greedy speculation is the target alone; a weight with a value bfloat16 lacks stays float32, and so does the
    embedding, tied to the head or not (SmolLM2's and Qwen's are: the head gets a bfloat16 copy). Within plain_kernels
    (bench's transformers rows) every layer holds float32 again, as transformers would; the note's plain timing times
    F.linear on float32 copies; bench leaves transformers' rows out where those copies would not fit the memory free."""
    import copy
    from tests import tiny
    monkeypatch.setattr(placement, "SMALL_MODEL", 1000)
    monkeypatch.setenv("PLAYGROUND_CACHE", str(tmp_path / "cache"))
    row_products.kernel.cache_clear()
    rounded = [copy.deepcopy(model) for model in (target, noisy_draft)]
    for model in rounded:
        for p in model.parameters():
            p.data = p.data.bfloat16().float()
    odd = rounded[0].model.layers[0].mlp.down_proj.weight
    odd.data[0, 0] = 1 + 2 ** -12  # one value bfloat16 cannot hold: that layer stays float32
    if tied:  # (as SmolLM2's and the small Qwens' configs say)
        rounded[0].config.tie_word_embeddings = True
        rounded[0].lm_head.weight = rounded[0].model.embed_tokens.weight
    t_dir, d_dir = (tiny.save(m, tokenizer, tmp_path / name) for m, name in zip(rounded, ("target", "draft")))

    def loaded(halving: bool):
        models.CACHE.entries.clear()
        if not halving:
            monkeypatch.setattr(row_products, "hold_halved", lambda module: None)
        return models.load_pair(str(t_dir), str(d_dir), "cpu", dtype=torch.float32)

    pair = loaded(True)
    model = pair.target
    linears = {name: m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    held = {name for name, m in linears.items() if m.weight.dtype == torch.bfloat16}
    assert held == set(linears) - {"model.layers.0.mlp.down_proj"} and model.dtype == torch.float32
    assert session.precision(model) == "float32, linear weights held in bfloat16"  # (as bench records it)
    assert model.get_input_embeddings().weight.dtype == torch.float32
    assert torch.equal(model.get_output_embeddings().weight.float(), model.get_input_embeddings().weight) == tied
    ids = torch.arange(3, 40)
    with torch.inference_mode():
        runner = ModelRunner(model, pair.vocab)
        runner.forward(ids[:30], keep=1)
        rows = runner.forward(ids[30:], keep=7)  # [7, V]
        narrow = ModelRunner(model, pair.vocab)
        narrow.forward(ids[:30], keep=1)
        ones = torch.cat([narrow.forward(ids[i:i + 1], keep=1) for i in range(30, 37)])
    assert torch.equal(rows, ones)
    prompt = session.encode_prompt(pair, "def parse(text):\n")
    alone = session.run(pair, prompt, session.spec_config(k=2, max_new_tokens=30), speculative=False).token_ids
    assert session.run(pair, prompt, session.spec_config(k=3, max_new_tokens=30)).token_ids == alone
    with batch_invariant.plain_kernels(model):
        assert all(m.weight.dtype == torch.float32 and "forward" not in m.__dict__ for m in linears.values())
        with torch.inference_mode():
            plain = ModelRunner(model, pair.vocab).forward(ids, keep=1)
    assert {name for name, m in linears.items() if m.weight.dtype == torch.bfloat16} == held
    timed = []
    monkeypatch.setattr(batch_invariant, "seconds_of",  # the plain way's calls: (x, weight, bias)
                        lambda product, calls: (timed.append([c[1].dtype for c in calls if len(c) == 3]), 1.0)[1])
    batch_invariant.time_plain_ratio(model, 1)
    assert [dtypes for dtypes in timed if dtypes] and all(d == torch.float32 for dtypes in timed for d in dtypes)
    monkeypatch.setattr(batch_invariant, "PLAIN_COPIES", 1)  # float32 copies bounded: the first layer alone
    timed.clear()
    batch_invariant.time_plain_ratio(model, 1)
    assert {len(dtypes) for dtypes in timed if dtypes} == {1}
    with torch.inference_mode():
        halved = ModelRunner(model, pair.vocab).forward(ids, keep=1)
        whole = ModelRunner(loaded(False).target, pair.vocab).forward(ids, keep=1)
    assert torch.equal(halved, whole)  # bitwise the float32 weights' logits
    torch.testing.assert_close(plain, whole, rtol=1e-4, atol=1e-4)  # plain: MKL and SDPA, near
    said = []
    methods = bench.available_methods(pair, session.spec_config(k=2), said.append)
    assert "hf-target" in methods and not said
    monkeypatch.setattr(bench, "free_memory", lambda device: row_products.float32_copy_bytes(pair.target))
    assert not [m for m in bench.available_methods(pair, session.spec_config(k=2), said.append) if m.startswith("hf-")]
    assert said and said[0].startswith("(no transformers rows: they run on float32 weights")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_runs_first_pass_attends_in_one_batch_and_greedy_stays_exact(saved_pair, monkeypatch, dtype):
    """Both batch-invariant attentions take a run's first pass (ModelRunner.prefill) in one batch:
    each layer once, rows equal to those of the exact path up to rounding; every later pass the
    exact way. Greedy speculation, chains and a tree, stays the target alone at every prompt length,
    a one-token prompt (no such pass) included: both runs start with the very same pass. (A tiny
    model's tokens did not change when only the target alone's first pass went row by row: hence
    the count of batched passes and their widths in each run.)"""
    monkeypatch.setattr(placement, "SMALL_MODEL", 1000)
    target, draft = saved_pair
    models.CACHE.entries.clear()
    pair = models.load_pair(str(target), str(draft), "cpu", dtype=dtype)
    model = pair.target
    assert model.config._attn_implementation in (ATTENTION, ROW_INVARIANT) and model.playground_batch_invariant
    c_layers = dtype == torch.float32 and row_products.kernel() is not None  # (row_layers: chains and trees through them)
    assert all(row_layers.uninstalled(layer) != c_layers for layer in model.model.layers)
    batched = []
    one_batch = batch_invariant.batched_causal_attention
    monkeypatch.setattr(batch_invariant, "batched_causal_attention", lambda *a: batched.append(a[1].shape) or one_batch(*a))
    ids = torch.arange(3, 43)
    with torch.inference_mode():
        runner = ModelRunner(model, pair.vocab)
        first = runner.prefill(ids)  # [1, V]
        assert len(batched) == model.config.num_hidden_layers and batched[0][-2] == 40  # [B, H, 40 queries, d]
        runner.forward(ids[:4], keep=4)
        assert len(batched) == model.config.num_hidden_layers  # a later pass: the exact way
        exact = ModelRunner(model, pair.vocab).forward(ids, keep=1)  # no prompt_pass
    tolerance = 1e-5 if dtype == torch.float32 else 5e-2
    torch.testing.assert_close(first, exact, rtol=tolerance, atol=tolerance)
    prompt = session.encode_prompt(pair, "def parse(text):\n    return [int(x) for x in text.split()]\n")
    layers = model.config.num_hidden_layers, pair.draft.config.num_hidden_layers
    for n in (1, 2, 6, len(prompt)):
        batched.clear()
        alone = session.run(pair, prompt[:n], session.spec_config(k=2, max_new_tokens=30), speculative=False).token_ids
        assert [shape[-2] for shape in batched] == [n - 1] * layers[0] * (n > 1)  # the target's first pass only
        for cfg in (session.spec_config(k=1, max_new_tokens=30), session.spec_config(k=4, max_new_tokens=30),
                    session.spec_config(k=3, max_new_tokens=30, tree=(2, 2))):
            batched.clear()
            assert session.run(pair, prompt[:n], cfg).token_ids == alone, (n, cfg)
            assert [shape[-2] for shape in batched] == [n - 1] * sum(layers) * (n > 1)  # the same pass, then the draft's
    models.CACHE.entries.clear()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(1536, 576), (576, 1536), (8191, 576)])
def test_packed_rows_do_not_depend_on_the_row_count(shape, dtype):
    """What batch_invariant relies on: with packed weights, products of 2 to 16 rows agree row by row,
    bitwise (one row is computed as two), and they are the unpacked product up to rounding.
    (bfloat16 is packed only on CPUs with native bfloat16: checked there.)"""
    if dtype == torch.bfloat16 and not placement.native_bf16():
        pytest.skip("bfloat16 weights are packed only on CPUs with native bfloat16")
    torch.manual_seed(0)
    layer = torch.nn.Linear(shape[1], shape[0], bias=False).to(dtype)
    assert packed_linear.pack_linears(layer)
    x = torch.randn(16, shape[1], dtype=dtype)
    with torch.inference_mode():
        full = two_row_linear(layer, x)
        for n in range(1, 16):
            assert torch.equal(two_row_linear(layer, x[:n]), full[:n])
        for seed in range(3):  # values spread over many binades too, where sums in another order show after rounding
            generator = torch.Generator().manual_seed(seed)
            spread = batch_invariant._spread((16, shape[1]), generator, dtype)
            layer.__dict__[packed_linear.ATTR] = packed_linear.pack(batch_invariant._spread(shape, generator, dtype))
            ones = torch.cat([two_row_linear(layer, spread[i:i + 1]) for i in range(16)])
            assert all(torch.equal(two_row_linear(layer, spread[:n]), ones[:n]) for n in range(2, 17))
        layer.__dict__[packed_linear.ATTR] = packed_linear.pack(layer.weight)
        tol = 0.02 if dtype == torch.bfloat16 else 1e-4
        assert torch.allclose(full.float(), F.linear(x, layer.weight).float(), rtol=tol, atol=tol)


def test_one_row_is_taken_alone_only_where_its_product_is_a_row_of_the_wider_ones(monkeypatch):
    """A packed one-row product that is bitwise a row of the products of 2 to 16 rows (oneDNN's float32 kernels
    held to AVX2, bfloat16 with AMX) is taken alone: a one-token pass 10% faster than two rows. A kernel whose one
    row sums otherwise (planted here), and unpacked weights, keep two rows; the model's rows agree at every width."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(576, 192, bias=False)
    assert not batch_invariant.one_row_is_a_row(layer)  # unpacked: MKL's small products are not row-invariant
    assert packed_linear.pack_linears(layer)
    x = torch.randn(16, 576)
    with torch.inference_mode():
        alone = torch.cat([batch_invariant.packed_forward(layer, x[i:i + 1]) for i in range(16)])
        assert batch_invariant.one_row_is_a_row(layer) == all(
            torch.equal(alone[:n], batch_invariant.packed_forward(layer, x[:n])) for n in range(2, 17))
    real = batch_invariant.packed_forward
    monkeypatch.setattr(batch_invariant, "packed_forward",  # a one-row kernel that rounds otherwise
                        lambda self, x: real(self, x) + 1e-3 * (x.shape[0] == 1))
    assert not batch_invariant.one_row_is_a_row(layer)
    tail = torch.zeros(16, 1)
    tail[5::6] = 1e-3  # a kernel whose rows 6, 12 of a block (not the first) round otherwise: a row's place counts too
    monkeypatch.setattr(batch_invariant, "packed_forward", lambda self, x: real(self, x) + tail[:x.shape[0]] * (x.shape[0] > 1))
    assert not batch_invariant.one_row_is_a_row(layer)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(1536, 576), (576, 1536), (576, 576)])
def test_a_one_row_product_taken_alone_is_a_row_whatever_the_weights(shape, dtype):
    """one_row_is_a_row decides for every weight of a shape: where it lets one row go alone, that row is the wider
    products' for other weights and inputs too. With AVX512-BF16 (a 2-core AMD EPYC) the one-row bfloat16 product over
    1,536 inputs sums otherwise than wider ones; Gaussian check rows passed it on SmolLM2's first down_proj weight
    (after bfloat16's rounding no row showed it), and greedy speculation's logits left the target alone's."""
    if dtype == torch.bfloat16 and not placement.native_bf16():
        pytest.skip("bfloat16 weights are packed only on CPUs with native bfloat16")
    layer = torch.nn.Linear(shape[1], shape[0], bias=False).to(dtype)
    assert packed_linear.pack_linears(layer)
    if not batch_invariant.one_row_is_a_row(layer):
        return  # two rows a product: test_packed_rows_do_not_depend_on_the_row_count
    with torch.inference_mode():
        for seed in range(4):
            generator = torch.Generator().manual_seed(100 + seed)
            layer.__dict__[packed_linear.ATTR] = packed_linear.pack(batch_invariant._spread(shape, generator, dtype))
            x = batch_invariant._spread((16, shape[1]), generator, dtype)
            ones = torch.cat([batch_invariant.packed_forward(layer, x[i:i + 1]) for i in range(16)])
            assert all(torch.equal(batch_invariant.packed_forward(layer, x[:n]), ones[:n]) for n in range(2, 17)), seed


def test_passes_wider_than_the_checked_widths_are_taken_in_pieces(monkeypatch):
    """Products agree row by row up to 16 rows (checked); with AMX, bfloat16 products of 33 rows and more summed
    otherwise, and a greedy tree of 64 nodes left the target alone. Past a run's first pass a wider pass is taken
    16 rows at a time: each row is a one-row pass's (planted here: a kernel whose rows change past 16 rows); a run's
    first pass, which needs to agree only with itself, goes whole."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(576, 192, bias=False)
    assert packed_linear.pack_linears(layer)
    real, widths = batch_invariant.packed_forward, []

    def wide_rounds_otherwise(self, x):
        widths.append(x.numel() // x.shape[-1])
        return real(self, x) + 1e-3 * (widths[-1] > 16)
    x = torch.randn(1, 40, 576)
    with torch.inference_mode():
        ones = torch.cat([two_row_linear(layer, x[:, i:i + 1]) for i in range(40)], dim=1)  # [1, 40, 192]
        wide = batch_invariant.at_most_widest(wide_rounds_otherwise, layer, x)
        assert wide.shape == (1, 40, 192) and torch.equal(wide, ones) and widths == [16, 16, 8]
        with batch_invariant.prompt_pass():
            assert not torch.equal(batch_invariant.at_most_widest(wide_rounds_otherwise, layer, x), ones)
        assert widths[3:] == [40]


def test_the_bench_runs_transformers_on_its_own_kernels(saved_pair, monkeypatch):
    """bench's transformers rows ran the exact model (packed two-row products, the row-invariant attention) and
    said plain generate was 1.00x its target alone, where transformers' own kernels ran 1.33x faster (an AVX2
    review): within plain_kernels a batch-invariant model runs SDPA and nn.Linear's own forward, its exact
    kernels back after, even where generate fails."""
    from playground.measure import bench
    monkeypatch.setattr(placement, "SMALL_MODEL", 1000)
    target, draft = saved_pair
    models.CACHE.entries.clear()
    pair = models.load_pair(str(target), str(draft), "cpu", dtype=torch.float32)
    model, seen = pair.target, []
    exact = {m: m.__dict__["forward"] for m in model.modules() if isinstance(m, torch.nn.Linear)}
    hook = model.register_forward_pre_hook(lambda module, args: seen.append(
        (module.config._attn_implementation, any("forward" in m.__dict__ for m in exact))))
    prompt = session.encode_prompt(pair, "def parse(text):\n")
    try:
        sample = bench.run_hf(pair, prompt, session.spec_config(k=2, max_new_tokens=8), "hf-target")
    finally:
        hook.remove()
    assert sample.ids and set(seen) == {("sdpa", False)}
    assert model.config._attn_implementation == ROW_INVARIANT and all(m.__dict__["forward"] == f for m, f in exact.items())
    monkeypatch.setattr(model, "generate", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bench.run_hf(pair, prompt, session.spec_config(k=2, max_new_tokens=8), "hf-target")
    assert model.config._attn_implementation == ROW_INVARIANT and all(m.__dict__["forward"] == f for m, f in exact.items())
    models.CACHE.entries.clear()


def test_what_is_not_packed(monkeypatch):
    layer = torch.nn.Linear(8, 4).to(torch.float16)
    assert not packed_linear.pack_linears(layer)  # float16: stays on F.linear
    small = torch.nn.Linear(8, 4).to(torch.bfloat16)
    monkeypatch.setattr(packed_linear, "MAX_PACKED_BYTES", 8 * 4 * 2 - 1)
    assert not packed_linear.pack_linears(small)  # a second copy too big to keep
    assert packed_linear.ATTR not in small.__dict__
    x = torch.randn(3, 8, dtype=torch.bfloat16)
    assert torch.equal(packed_linear.linear(x, small.weight, small.bias, None), F.linear(x, small.weight, small.bias))


def test_a_small_models_one_token_pass_takes_the_kernel_its_verify_pass_takes(tmp_path):
    """ATen hands a bfloat16 product of at most 16^3 multiply-adds to its own kernel and a larger one to
    oneDNN, whose rows round otherwise: a tiny pair's one-token passes over a few dozen keys fell under
    it, its verify passes over it, and greedy speculation left the target alone at token 42 (chains of
    k >= 3 and trees alike; a fuzzer). Small products are now padded past it (batch_invariant._product)."""
    from tests import tiny
    tok = tiny.byte_bpe_tokenizer(320)
    target = tiny.tiny_model("qwen2", vocab=len(tok), seed=1, init_std=0.3, eos_id=tok.eos_token_id)
    tiny.save(tiny.perturbed_copy(target, noise=0.5, seed=3), tok, tmp_path / "draft")
    tiny.save(target, tok, tmp_path / "target")
    pair = session.load_pair(str(tmp_path / "target"), str(tmp_path / "draft"), device="cpu", dtype=torch.bfloat16)
    alone = session.run(pair, [269], session.spec_config(max_new_tokens=48), speculative=False).token_ids
    for cfg in (session.spec_config(k=3, max_new_tokens=48), session.spec_config(max_new_tokens=48, tree=(2, 2, 1))):
        assert session.run(pair, [269], cfg).token_ids == alone
    weights, value = torch.randn(1, 2, 2, 17).softmax(-1).bfloat16(), torch.randn(1, 2, 17, 16).bfloat16()
    wide = torch.cat([weights, torch.randn(1, 2, 10, 17).softmax(-1).bfloat16()], dim=2)  # 12 rows: oneDNN's
    assert torch.equal(batch_invariant._product(weights, value), batch_invariant._product(wide, value)[:, :, :2])


def test_what_exactness_costs_is_timed_over_every_layer_on_the_decode_threads(monkeypatch):
    """time_plain_ratio times every linear layer (one decoder layer's, its weights in cache, read MKL 1.1x faster
    where whole passes were 1.37x slower) on the thread count the model decodes with (the load's two had read 1.62x
    where the decode thread's one read 0.72x), restoring the count after; past its size cap it times nothing."""
    from tests.tiny import tiny_model
    model = make_batch_invariant_for_test(tiny_model("llama", layers=3))
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    seen, before = [], torch.get_num_threads()
    real = batch_invariant.medians_in_turns

    def recorded(ways, tries, budget):
        seen.append(torch.get_num_threads())
        return real(ways, tries, budget)
    monkeypatch.setattr(batch_invariant, "medians_in_turns", recorded)
    timed = []
    monkeypatch.setattr(batch_invariant, "seconds_of", lambda product, calls: (timed.append(len(calls)), 1.0)[1])
    batch_invariant.time_plain_ratio(model, 1)
    assert seen == [1] and torch.get_num_threads() == before and model.playground_plain_ratio == 1.0
    assert set(timed) == {len(linears)} and len(linears) > 7  # every layer's products, each call (3 layers + head)
    batch_invariant.time_plain_ratio(model, None, up_to=10)  # past the cap: no note, nothing timed
    assert model.playground_plain_ratio is None and seen == [1]


def make_batch_invariant_for_test(model):
    model.config._attn_implementation = ATTENTION
    return batch_invariant.make_batch_invariant(model)
