"""scripts/gpu_check.py rehearsed on a CPU with small Qwen2 shapes: every step the lent GPU machine
would run (random pair, last-token predictors, compile, interleaved rows, the second prompt, the
table and its JSON), so the one-command GPU check cannot rot between the sessions that have a GPU.
Its figures are not checked (they mean nothing on a CPU); what the GPU table relies on is."""
import importlib.util
import json
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rehearsal_runs_every_real_size_step(gpu_check, tmp_path):
    report = gpu_check.main(["--rehearse", "--only", "real", "--tokens", "24", "--repeats", "1", "--k", "4",
                             "--out", str(tmp_path)])
    assert json.loads((tmp_path / "gpu_check.json").read_text())["rehearsal"] is True
    assert set(report["attention_ms"]) == {"target verify", "target step", "draft step"}
    assert report["attention"] == {"target": "playground_folded_gqa", "draft": "playground_folded_gqa"}  # as on a GPU
    assert all(t["repeated"] > 0 and t["folded"] > 0 for t in report["attention_ms"].values())
    rows = ("alone-1", "alone-W", "spec k=4", "spec k<=4 schedule", "eager alone", "eager spec k=4")
    for setting in ("real acceptance 0", "real acceptance 1"):
        result = report[setting]
        assert all(result[row]["identical"] for row in rows), setting
        assert result["second_prompt_new_graphs"] == result["second_prompt_new_programs"] == 0  # a prompt of another
        assert result["eager spec k=4"]["compared_with"] == "eager alone"  # length compiles and captures nothing
    # the random pair accepts (almost) nothing; the last-token predictors accept every draft: 24 tokens in
    # rounds of k + 1 = 5 (the last one cut to 4), which is what makes the GPU table's acceptance-1 rows
    assert report["real acceptance 0"]["spec k=4"]["tokens_per_round"] < 1.5
    assert report["real acceptance 1"]["spec k=4"]["tokens_per_round"] == 24 / 5


def test_rehearsal_through_the_fused_rounds_the_gpu_takes(gpu_check, tmp_path, monkeypatch):
    """On CUDA, compiled unconstrained rows go through FusedProposer (whole rounds as programs); the
    rehearsal above takes the per-pass path a CPU gets. Here the CPU takes the fused one too."""
    from playground import session
    monkeypatch.setattr(session.choice, "FUSED_DEVICES", {"cpu", "cuda"})
    report = gpu_check.main(["--rehearse", "--only", "real,joined,ways", "--tokens", "24", "--repeats", "2", "--k",
                             "4", "--out", str(tmp_path)])
    assert report["joined_modules"] == [4, 4]  # the pair again, projections joined: 2 layers x (attention, MLP)
    for key in ("real", "joined"):
        result = report[f"{key} acceptance 1"]
        assert all(result[row]["identical"] for row in ("alone-W", "spec k=4", "spec k<=4 schedule")), key
        assert result["spec k=4"]["tokens_per_round"] == 24 / 5 and result["second_prompt_new_graphs"] == 0
        assert result["profile"]["rounds"] == 5 and not result["failed"]  # no kernels to count on a CPU
    # `ways`: two joined pairs (matrix products and Triton's kernels, which a CPU without Triton's interpreter
    # answers with the matrix products), their rows interleaved; each way's rows and the ratio per row
    assert not report["failed"]
    for acceptance, per_round in ((0, None), (1, 24 / 5)):
        for way in ("matmul", "triton"):
            rows = report[f"ways {way} acceptance {acceptance}"]
            assert all(rows[row]["identical"] for row in ("alone-W", "spec k=4", "spec k<=4 schedule")), (way, acceptance)
            assert len(rows["alone-1"]["speedup_vs_alone1"]) == 3 and rows["spec k=4"]["draft_step_ms"] > 0
        if per_round:
            assert rows["spec k=4"]["tokens_per_round"] == per_round
        ratios = report[f"ways triton vs matmul acceptance {acceptance}"]
        assert ratios["same tokens"] is True  # both pairs built with the same weights
        assert all(0 < lo <= mid <= hi for mid, lo, hi in (ratios[row] for row in ("alone-1", "spec k=4")))


def test_a_step_cut_off_by_its_timeout_leaves_what_it_printed(gpu_check, tmp_path):
    import sys
    slow = [sys.executable, "-c", "import time; print('compiled 3 graphs', flush=True); time.sleep(60)"]
    rc, text = gpu_check.run_logged(slow, str(tmp_path / "step.log"), timeout=10)  # (a loaded CI core: Python's start)
    assert rc is None and text == (tmp_path / "step.log").read_text()
    assert "compiled 3 graphs" in text


def test_a_step_that_crashes_is_reported_and_the_other_rows_measured(gpu_check, tmp_path, monkeypatch, capsys):
    """Device time is scarce: a crash in one row (here the schedule policy's) lost the whole setting."""
    from playground import session
    generate = session.generate

    def crashing(pair, prompt, cfg, *args, **kwargs):
        if cfg.policy == "schedule":
            raise RuntimeError("a crash in the schedule row")
        return generate(pair, prompt, cfg, *args, **kwargs)
    monkeypatch.setattr(session, "generate", crashing)
    report = gpu_check.main(["--rehearse", "--only", "real", "--tokens", "16", "--repeats", "1", "--k", "4",
                             "--out", str(tmp_path)])
    result = report["real acceptance 1"]
    assert "RuntimeError: a crash in the schedule row" in result["failed"]["spec k<=4 schedule"]
    assert "spec k<=4 schedule" not in result and all(result[row]["identical"] for row in ("alone-W", "spec k=4"))
    assert "FAILED spec k<=4 schedule" in capsys.readouterr().out


def test_rehearsal_runs_the_triton_section(gpu_check, tmp_path):
    """The section the next GPU call starts with: the joined pair attending through Triton's kernels
    (on a CPU without the interpreter the folded attention falls back to its matrix products)."""
    from playground.engine import attention, decode_attention
    report = gpu_check.main(["--rehearse", "--only", "triton", "--tokens", "12", "--repeats", "1", "--k", "2",
                             "--out", str(tmp_path)])
    assert report["triton_chunk"] == decode_attention.CHUNK == 128 and attention.WAY == "matmul"  # no Triton timing here; the way restored
    for setting in ("triton acceptance 0", "triton acceptance 1"):
        assert report[setting]["spec k=2"]["identical"], setting


def test_rehearsal_of_the_pair_cold_by_layer_and_whole(gpu_check, tmp_path):
    """`regional` and `whole`: the joined pair compiled by layer (playground.engine.layer_regions), then as
    whole models, each in a process of its own whose compile caches start empty; their rows come back
    under "regional ..." and "whole ..."."""
    report = gpu_check.main(["--rehearse", "--only", "regional,whole", "--tokens", "24", "--repeats", "1", "--k", "4",
                             "--out", str(tmp_path)])
    for name, by_layer in (("regional", True), ("whole", False)):
        child = json.loads((tmp_path / name / "gpu_check.json").read_text())
        assert report[f"{name}_rc"] == 0 and child["regional_compile"] is by_layer and "attention_ms" not in child
        for setting in (f"{name} acceptance 0", f"{name} acceptance 1"):
            result = report[setting]
            assert all(result[row]["identical"] for row in ("alone-1", "alone-W", "spec k=4", "spec k<=4 schedule")), setting
            assert result["compile_s"]["speculative"] is not None and result["second_prompt_new_graphs"] == 0
        assert report[f"{name} acceptance 1"]["spec k=4"]["tokens_per_round"] == 24 / 5


def test_what_the_gpu_machine_runs_imports_without_gradio():
    """The lent GPU machine has no Gradio (too large to carry): a GPU test of the start-up warm-up failed
    there twice on `import gradio`, reached through playground.ui's live, pacing and addresses. Every
    playground module the GPU tests and gpu_check import is imported here with Gradio blocked."""
    import ast
    import subprocess
    import sys
    root = SCRIPT.parents[1]
    modules = set()
    for source in (root / "tests" / "test_gpu.py", SCRIPT):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("playground"):
                modules |= {f"{node.module}.{a.name}" if node.module in ("playground", "playground.ui", "playground.engine")
                            else node.module for a in node.names}
    assert {"playground.ui.warm_up", "playground.session", "playground.cli"} <= modules
    blocked = ("import sys, importlib\n"
               "class NoGradio:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name.split('.')[0] in ('gradio', 'gradio_client'):\n"
               "            raise ModuleNotFoundError(f'No module named {name!r} (blocked)')\n"
               "sys.meta_path.insert(0, NoGradio())\n"
               f"for name in {sorted(modules)!r}:\n"
               "    importlib.import_module(name)\n"
               "print('imported', len(sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", blocked], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr[-3000:]


def test_rehearsal_times_the_fused_products_beside_the_modules(gpu_check, tmp_path):
    """`--only fused`: a pass's products as the compiled modules run them and through
    playground.engine.fused_linear (Triton's interpreter standing in for the GPU: in a process of its
    own, where it is chosen before Triton is imported), with the largest difference of their outputs,
    which only the order of float32 sums may make; each split of the kernel (tl.dot's, the narrow
    rows' sums) timed."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, str(SCRIPT), "--rehearse", "--only", "fused", "--k", "4", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert set(report["fused_ms"]) == {"target verify", "target step", "draft step", "target head, verify",
                                       "draft head"} and not report["failed"]
    for name, timed in report["fused_ms"].items():
        assert timed["compiled modules"] > 0 and all(timed[way] > 0 for way in gpu_check.FUSED_BLOCKS), name
        assert timed["max difference"] < 0.05, (name, timed)  # float16 outputs of about unit size
        fastest = min(gpu_check.FUSED_BLOCKS, key=timed.get)  # ... and the fastest split again, launched dependent
        assert timed[f"{fastest}, pdl"] > 0, name
        assert timed[f"{fastest}, pdl, prefetch"] > 0 and timed[f"{fastest}, again"] > 0, name  # (its weights asked
        assert timed["pdl difference, fused"] == 0, name  # of L2 first)


def test_rehearsal_runs_the_fused_layers_section(gpu_check, tmp_path, capsys):
    """`--only fusedlayers`: the joined pair as it is, and with the draft's layers and head given the
    fused forward, side by side (on a CPU in float32 each falls back to the module's own: the wiring,
    not the kernels, is rehearsed here), the kernel split the one `fused` timed fastest."""
    report = gpu_check.main(["--rehearse", "--only", "fusedlayers", "--tokens", "12", "--repeats", "2", "--k", "2",
                             "--out", str(tmp_path)])
    assert report["fused_layers"] == {"fusedlayers triton": [0, 0], "fusedlayers draft fused": [0, 3],  # two layers,
                                      "fusedlayers draft fused, pdl": [0, 3]}  # a head; and launched dependent
    assert report["fused_blocks"] == "fused" and not report["failed"]  # (`fused` not run: the default split)
    assert report["triton_one_kernel"] is False  # (a CPU times no Triton attention: two kernels)
    assert report["fused_models"] == "draft"  # (auto, `fused` not run: the draft alone)
    for acceptance in (0, 1):
        for name in ("triton", "draft fused", "draft fused, pdl"):
            assert report[f"fusedlayers {name} acceptance {acceptance}"]["spec k=2"]["identical"], (name, acceptance)
        for later, earlier in (("draft fused", "triton"), ("draft fused, pdl", "triton"), ("draft fused, pdl", "draft fused")):
            ratios = report[f"fusedlayers {later} vs {earlier} acceptance {acceptance}"]  # each against each earlier
            assert ratios["same tokens"] is True and all(0 < lo <= mid <= hi for mid, lo, hi in (ratios["spec k=2"],))
    assert "bars, fusedlayers draft fused:" in capsys.readouterr().out


def test_rehearsal_runs_the_dependent_launch_section(gpu_check, tmp_path, monkeypatch):
    """`--only pdl`: the joined pair built twice, the second compiled (and its graphs captured) with
    PLAYGROUND_PDL on, here with the draft fused in the split named; rows interleaved, each under its
    own setting (a CPU launches nothing dependent: the wiring is rehearsed, not the launch)."""
    from playground.engine import dependent_launch, static
    seen = []
    compiled_with = dependent_launch.inductor_options
    monkeypatch.setattr(static.dependent_launch, "inductor_options",
                        lambda device: seen.append(dependent_launch.ON) or compiled_with(device))
    report = gpu_check.main(["--rehearse", "--only", "pdl", "--fused-layers", "draft", "--fused-blocks",
                             "fused narrow, k 512", "--tokens", "12", "--repeats", "2", "--k", "2", "--out", str(tmp_path)])
    assert not report["failed"] and report["pdl_fused_blocks"] == "fused narrow, k 512"
    assert report["pdl_prefetch"] is True  # (`fused` not run: the module's default)
    assert report["fused_layers"] == {"pdl triton": [0, 3], "pdl triton pdl": [0, 3]}  # the draft fused in both
    assert seen == [False, False, True, True] and dependent_launch.ON is False  # each model compiled once, as set
    for acceptance in (0, 1):
        for name in ("triton", "triton pdl"):
            assert report[f"pdl {name} acceptance {acceptance}"]["spec k=2"]["identical"], (name, acceptance)
        assert report[f"pdl triton pdl vs triton acceptance {acceptance}"]["same tokens"] is True


def test_weights_asked_of_l2_first_only_where_that_was_timed_faster(gpu_check):
    timed = {"draft step": {"fused, pdl": 1.0, "fused, pdl, prefetch": 0.8, "compiled modules, pdl": 2.0},
             "draft head": {"fused narrow, k 512, pdl": 0.1, "fused narrow, k 512, pdl, prefetch": 0.15}}
    assert gpu_check.prefetch_pays(timed)  # 0.95 against 1.1 over both passes
    timed["draft head"]["fused narrow, k 512, pdl, prefetch"] = 0.4
    assert not gpu_check.prefetch_pays(timed)
    assert gpu_check.prefetch_pays({})  # `fused` not run: the module's default


def test_the_fastest_split_over_the_passes_of_the_models_fused(gpu_check):
    timed = {"draft step": {"fused": 2.0, "fused narrow, k 512": 1.0, "fused, k 256, 5 stages": float("nan")},
             "draft head": {"fused": 0.1, "fused narrow, k 512": 0.2},
             "target step": {"fused": 1.0, "fused narrow, k 512": 9.0}}
    assert gpu_check.fastest_blocks(timed, ("draft step", "draft head")) == "fused narrow, k 512"
    assert gpu_check.fastest_blocks(timed, ("draft step", "draft head", "target step")) == "fused"
    assert gpu_check.fastest_blocks({}, ("draft step",)) == "fused"  # `fused` not run


def test_the_target_fused_too_only_where_its_passes_were_timed_faster_fused(gpu_check):
    passes = ("target verify", "target step", "target head, verify")
    timed = {p: {"compiled modules": 1.0, "fused": 1.2, "fused narrow, k 512": 0.9} for p in passes}
    assert gpu_check.models_to_fuse(timed) == "both"  # its fastest split beats the modules
    timed["target verify"]["fused narrow, k 512"] = 5.0
    assert gpu_check.models_to_fuse(timed) == "draft"
    assert gpu_check.models_to_fuse({}) == "draft"  # `fused` not run


def test_one_kernel_only_where_it_was_timed_faster(gpu_check):
    two, one = "folded triton", "folded triton, one kernel"
    timed = {"draft step": {two: 0.25, one: 0.20}, "target step": {two: 0.32, one: 0.30}}
    assert gpu_check.one_kernel_faster(timed)
    timed["target step"][one] = 0.5  # slower over the passes together
    assert not gpu_check.one_kernel_faster(timed)
    timed["target step"][one] = float("nan")  # failed
    assert not gpu_check.one_kernel_faster(timed) and not gpu_check.one_kernel_faster({})
