"""row_products: float32 products from a small C kernel, each row summed in one fixed order whatever the
pass's width and thread count; built with the machine's C compiler, and where it cannot be, oneDNN's packed
products are used instead (batch_invariant)."""
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest
import torch
import torch.nn.functional as F

from playground.models import batch_invariant, packed_linear, row_products


@pytest.fixture
def fresh_kernel(monkeypatch, tmp_path):
    """kernel() asked again, built into an empty cache; asked again after the test too."""
    monkeypatch.setenv("PLAYGROUND_CACHE", str(tmp_path))
    row_products.kernel.cache_clear()
    yield tmp_path
    row_products.kernel.cache_clear()


def can_build() -> bool:
    return row_products.wanted() and bool(shutil.which("cc") or shutil.which("gcc"))


def test_it_is_built_wherever_it_can_be(fresh_kernel):
    """On Linux x86-64 with AVX2 and FMA and a C compiler (this machine, CI's) the kernel is built, once:
    its library in the cache, named by the source's and flags' digest."""
    assert (row_products.kernel() is not None) == can_build()
    if can_build():
        built = list((fresh_kernel / "kernels").glob("row_products-*.so"))
        marks = list((fresh_kernel / "kernels").glob("row_products-*.so.sha256"))
        assert len(built) == 1 and len(marks) == 1 and len(list((fresh_kernel / "kernels").iterdir())) == 2
        row_products.kernel.cache_clear()
        stamp = built[0].stat().st_mtime_ns
        assert row_products.kernel() is not None and built[0].stat().st_mtime_ns == stamp  # not built again


needs_kernel = pytest.mark.skipif(not can_build(), reason="the kernel needs Linux on x86-64 with AVX2, FMA and a C compiler")


@needs_kernel
@pytest.mark.parametrize("shape", [(576, 1536), (1536, 576), (37, 9), (577, 1539), (576, 8191)])
def test_rows_are_the_same_at_every_width_and_thread_count(shape):
    """Each row of a product of 1 to 20 rows is bitwise that row alone, on one thread and on two; near
    F.linear (float32 rounding), a bias added."""
    k, n = shape
    gen = torch.Generator().manual_seed(0)
    x, w, bias = torch.randn(20, k, generator=gen), torch.randn(n, k, generator=gen) * 0.05, torch.randn(n, generator=gen)
    threads = torch.get_num_threads()
    try:
        results = []
        for count in (1, 2):
            torch.set_num_threads(count)
            ones = torch.cat([row_products.linear(x[i:i + 1], w, bias) for i in range(20)])  # [20, n]
            for m in range(2, 21):
                assert torch.equal(row_products.linear(x[:m], w, bias), ones[:m]), (count, m)
            results.append(ones)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(results[0], results[1])
    torch.testing.assert_close(results[0], F.linear(x, w, bias), rtol=1e-4, atol=1e-4)


@needs_kernel
def test_shapes_and_layouts_are_kept():
    """x [..., in] of any leading shape, a strided x or weight (a transposed view): F.linear's shape and values."""
    gen = torch.Generator().manual_seed(1)
    x, w = torch.randn(2, 3, 40, generator=gen), torch.randn(24, 40, generator=gen)
    out = row_products.linear(x, w, None)
    assert out.shape == (2, 3, 24)
    torch.testing.assert_close(out, F.linear(x, w))
    torch.testing.assert_close(row_products.linear(x.transpose(0, 1), w.T.contiguous().T, None), F.linear(x.transpose(0, 1), w))


def test_a_compiler_that_fails_leaves_the_packed_products(fresh_kernel, monkeypatch, caplog):
    """A compiler that fails (or none, or PLAYGROUND_ROW_KERNEL=0): no kernel, a warning in the log, and a float32
    model's linear layers keep oneDNN's packed products, exact as before."""
    monkeypatch.setenv("CC", "/bin/false")
    with caplog.at_level("WARNING", logger="playground.row_products"):
        assert row_products.kernel() is None
    assert not row_products.wanted() or "not built" in caplog.text
    layer = torch.nn.Linear(576, 192, bias=False)
    assert not batch_invariant.row_kernel_serves(layer.weight, False)
    monkeypatch.delenv("CC")
    row_products.kernel.cache_clear()
    monkeypatch.setenv("PLAYGROUND_ROW_KERNEL", "0")
    assert row_products.kernel() is None and not list(fresh_kernel.glob("kernels/*.so"))


def test_a_kernel_that_rounds_by_width_is_refused(fresh_kernel, monkeypatch):
    """The build's check: a kernel whose rows change with the row count (planted: a wrapper adding a little
    past one row) is not used."""
    real = row_products._call
    monkeypatch.setattr(row_products, "_call", lambda fn, x, w: real(fn, x, w) + 1e-3 * (x.shape[0] > 1))
    assert row_products.kernel() is None


@needs_kernel
def test_two_processes_building_at_once_both_get_a_whole_library(fresh_kernel):
    """Two processes starting on an empty cache at the same moment (two app workers): each builds into a
    directory of its own and renames into place, so both load a whole library and the cache keeps one."""
    code = ("from playground.models import row_products; import torch; "
            "assert row_products.kernel() is not None; print(row_products.linear(torch.ones(2, 9), torch.ones(3, 9), None).sum().item())")
    env = {**os.environ, "PLAYGROUND_CACHE": str(fresh_kernel)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    assert [p.communicate(timeout=300)[0].strip() for p in procs] == ["54.0", "54.0"]
    assert [p.returncode for p in procs] == [0, 0]
    assert len(list((fresh_kernel / "kernels").glob("*.so"))) == 1


def test_a_float32_model_takes_the_kernel_or_the_packed_products(monkeypatch):
    """make_batch_invariant: float32 linears through the kernel where it was built (no packed copy kept), a run's first
    pass too (MKL's rows there changed with the thread count, which another run's decode threads can change under it);
    else oneDNN's packed products; bfloat16 ones only in a float32 model (loaded in halves)."""
    layer = torch.nn.Linear(576, 192, bias=False)
    x = torch.randn(5, 576)
    assert batch_invariant.row_kernel_serves(layer.weight, False) == can_build()
    assert not batch_invariant.row_kernel_serves(layer.weight.bfloat16(), False)
    assert batch_invariant.row_kernel_serves(layer.weight.bfloat16(), True) == can_build()  # held (halves)
    if can_build():
        with torch.inference_mode():
            alone = row_products.module_forward(layer, x)
            assert torch.equal(alone, row_products.linear(x, layer.weight, None))
            with batch_invariant.prompt_pass():
                assert torch.equal(row_products.module_forward(layer, x), alone)
    assert packed_linear.pack_linears(layer)  # where it was not built: packed, as before


@needs_kernel
@pytest.mark.parametrize("shape", [(576, 1536), (37, 11), (8191, 576)])
def test_bfloat16_weights_give_the_float32_products_of_their_values(shape):
    """Weights held in bfloat16 (hold_halved): every product bitwise the float32 kernel's from the same values, at
    every width and on one thread and two, each row as alone; a weight with a value bfloat16 lacks is not halved."""
    gen = torch.Generator().manual_seed(4)
    k, n = shape
    w = torch.randn(n, k, generator=gen).bfloat16().float()
    x, bias = torch.randn(9, k, generator=gen), torch.randn(n, generator=gen)
    half = row_products.halved(w)
    assert half is not None and half.dtype == torch.bfloat16
    threads = torch.get_num_threads()
    try:
        with torch.inference_mode():
            for count in (1, 2):
                torch.set_num_threads(count)
                ones = torch.cat([row_products.linear(x[i:i + 1], half, bias) for i in range(9)])
                assert torch.equal(ones, row_products.linear(x, w, bias))
                assert all(torch.equal(row_products.linear(x[:m], half, bias), ones[:m]) for m in range(2, 9))
    finally:
        torch.set_num_threads(threads)
    w[0, 0] = 1 + 2 ** -12
    assert row_products.halved(w) is None and row_products.halved(w.double()) is None


def test_a_layer_is_held_halved_only_where_every_value_stays():
    """hold_halved: the weight replaced by a bfloat16 one where that keeps every value, else left as it is; a weight
    tied to an embedding leaves the embedding's float32 table alone."""
    embedding = torch.nn.Embedding(10, 8)
    head = torch.nn.Linear(8, 10, bias=False)
    embedding.weight.data = embedding.weight.data.bfloat16().float()
    head.weight = embedding.weight  # tied
    row_products.hold_halved(head)
    assert head.weight.dtype == torch.bfloat16 and embedding.weight.dtype == torch.float32
    assert torch.equal(head.weight.float(), embedding.weight) and not head.weight.requires_grad
    other = torch.nn.Linear(8, 4)
    before = other.weight
    row_products.hold_halved(other)  # random float32 values: not all bfloat16 ones
    assert other.weight is before


@needs_kernel
def test_a_prompts_rows_go_in_chunks_and_stay_each_rows_own():
    """A long pass (a prompt's) goes CHUNK_ROWS rows a call: every row still bitwise as alone."""
    gen = torch.Generator().manual_seed(2)
    x, w = torch.randn(row_products.CHUNK_ROWS + 44, 64, generator=gen), torch.randn(24, 64, generator=gen)
    with torch.inference_mode():
        whole = row_products.linear(x, w, None)
        assert all(torch.equal(whole[i:i + 1], row_products.linear(x[i:i + 1], w, None)) for i in range(0, len(x), 37))


@needs_kernel
def test_what_the_kernel_cannot_take_goes_to_f_linear():
    """Another dtype, a width that does not match (F.linear's own error), no rows, or autograd wanting a gradient:
    F.linear, never the kernel reading past a buffer; a weight held in bfloat16 widened for it."""
    w = torch.randn(6, 16)
    assert torch.equal(row_products.linear(torch.ones(2, 16, dtype=torch.bfloat16), w.bfloat16(), None),
                       F.linear(torch.ones(2, 16, dtype=torch.bfloat16), w.bfloat16()))
    with pytest.raises(RuntimeError):
        row_products.linear(torch.ones(2, 17), w, None)
    assert row_products.linear(torch.ones(0, 16), w, None).shape == (0, 6)
    x = torch.ones(2, 16, requires_grad=True)
    row_products.linear(x, w, None).sum().backward()
    assert x.grad is not None and torch.allclose(x.grad, w.sum(0).expand(2, -1))
    held = w.bfloat16()  # a weight held in bfloat16 (hold_halved) for a float32 model: widened there
    assert row_products.linear(torch.ones(0, 16), held, None).shape == (0, 6)
    x.grad = None
    row_products.linear(x, held, None).sum().backward()
    assert torch.equal(x.grad, held.float().sum(0).expand(2, -1))


@needs_kernel
def test_a_damaged_library_in_the_cache_is_built_again(fresh_kernel):
    """A cached library cut short (a crash while it was written, a partial copy of the cache) killed the process with
    a bus error as it loaded: one that does not match the digest beside it is built again; a compiler given with
    arguments (CC="env gcc") is run as such."""
    assert row_products.kernel() is not None
    library = next((fresh_kernel / "kernels").glob("row_products-*.so"))
    library.write_bytes(library.read_bytes()[:4000])
    code = ("from playground.models import row_products; import torch; "
            "print(row_products.kernel() is not None, row_products.linear(torch.ones(1, 9), torch.ones(2, 9), None).sum().item())")
    env = {**os.environ, "PLAYGROUND_CACHE": str(fresh_kernel)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "True 18.0"), done.stderr[-500:]
    done = subprocess.run([sys.executable, "-c", code], env={**env, "CC": "env gcc"}, capture_output=True, text=True,
                          timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "True 18.0"), done.stderr[-500:]
    assert len(list((fresh_kernel / "kernels").glob("*.so"))) == 2  # the compiler is part of the library's name


def _gone(pid_file: pathlib.Path) -> bool:
    """Whether the process whose id the file holds has ended (gone, or a zombie where nothing reaps orphans)."""
    stat = pathlib.Path(f"/proc/{pid_file.read_text().strip()}/stat")
    for _ in range(50):
        if not stat.exists() or stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z":
            return True
        time.sleep(0.1)
    return False


def _wrapper(tmp_path: pathlib.Path, script: str) -> pathlib.Path:
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(f"#!/bin/sh\n{script}\n")
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture
def slow_build(fresh_kernel, monkeypatch):
    if not row_products.wanted():
        pytest.skip("the kernel is only built on Linux x86-64 with AVX2 and FMA")
    monkeypatch.setattr(row_products, "BUILD_SECONDS", 2)
    return fresh_kernel


def test_a_hung_compiler_is_given_up_on_with_its_children(slow_build, monkeypatch, tmp_path):
    """A compiler (or a wrapper such as ccache) that hangs is killed past BUILD_SECONDS with every process it
    started (only the compiler was, its children left running), and the run goes on without the kernel."""
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("CC", str(_wrapper(tmp_path, f"sleep 300 &\necho $! > {pid_file}\nwait")))
    with pytest.raises(OSError, match="took over 2 s"):
        row_products.built()
    assert _gone(pid_file), "the compiler's child outlived it"
    assert row_products.kernel() is None and not list((slow_build / "kernels").glob("*.so"))


def test_a_helper_that_left_the_compilers_group_does_not_hold_the_build(slow_build, monkeypatch, tmp_path):
    """A helper started in a session of its own (setsid) keeps the compiler's output pipes open: the build is given
    up on at BUILD_SECONDS, not when the helper ends (waiting for the pipes after the kill took the helper's 15 s)."""
    pid_file = tmp_path / "helper.pid"
    monkeypatch.setenv("CC", str(_wrapper(tmp_path, f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 30' &\nexit 0")))
    started = time.monotonic()
    try:
        with pytest.raises(OSError, match="took over 2 s"):
            row_products.built()
        assert time.monotonic() - started < 12
    finally:
        for _ in range(50):
            if pid_file.exists() and pid_file.read_text().strip():
                os.kill(int(pid_file.read_text()), 9)
                break
            time.sleep(0.1)


def test_an_interrupted_build_kills_the_compiler_and_its_children(slow_build, monkeypatch, tmp_path):
    """Ctrl-C (KeyboardInterrupt) during the build no longer reaches the compiler's own group: it is killed there."""
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("CC", str(_wrapper(tmp_path, f"sleep 300 &\necho $! > {pid_file}\nwait")))

    class Interrupted(subprocess.Popen):
        def communicate(self, *args, **kwargs):
            for _ in range(50):  # (once the wrapper has started its child)
                if pid_file.exists() and pid_file.read_text().strip():
                    break
                time.sleep(0.1)
            raise KeyboardInterrupt

    monkeypatch.setattr(row_products.subprocess, "Popen", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        row_products.built()
    assert _gone(pid_file), "the compiler's child outlived the interruption"


def test_whether_the_kernel_is_faster_is_timed_in_turns_for_float32_cpu_weights(monkeypatch):
    """faster_than_plain (a model that need not be exact takes whichever is faster here): float32 CPU weights timed,
    the kernel against F.linear in turns; anything else, or no kernel, is not asked."""
    weights = [torch.randn(64, 32), torch.randn(200, 64)]
    assert not row_products.faster_than_plain([w.bfloat16() for w in weights])
    assert not row_products.faster_than_plain([])
    timed = []
    monkeypatch.setattr(row_products, "medians_in_turns", lambda ways, tries: (timed.append((sorted(ways), tries)),
                                                                               {"kernel": 0.8, "plain": 1.0})[1])
    assert row_products.faster_than_plain(weights) == (row_products.kernel() is not None)
    assert timed == ([(["kernel", "plain"], row_products.TIMINGS)] if row_products.kernel() is not None else [])
    monkeypatch.setattr(row_products, "medians_in_turns", lambda ways, tries: {"kernel": 0.95, "plain": 1.0})
    assert not row_products.faster_than_plain(weights)  # within the noise: F.linear kept
    threads_seen, before = [], torch.get_num_threads()
    monkeypatch.setattr(row_products, "medians_in_turns", lambda ways, tries: (
        threads_seen.append(torch.get_num_threads()), {"kernel": 0.8, "plain": 1.0})[1])
    row_products.faster_than_plain(weights, 1)
    assert threads_seen == ([1] if row_products.kernel() is not None else []) and torch.get_num_threads() == before
