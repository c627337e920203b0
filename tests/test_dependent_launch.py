"""PLAYGROUND_PDL (playground.engine.dependent_launch): off unless a host asks, never on a CPU, a
value that is not on or off refused at start. (The kernels' waits are checked in their sm90 code,
tests/test_triton_sm90.py; their results launched dependent on a GPU, tests/test_gpu.py.)"""
import os
import subprocess
import sys

import torch

from playground.engine import dependent_launch


def test_a_cpu_launches_nothing_dependent_even_when_asked(monkeypatch):
    monkeypatch.setattr(dependent_launch, "ON", True)
    assert not dependent_launch.launches_dependent(torch.device("cpu"))
    assert dependent_launch.inductor_options(torch.device("cpu")) == {}


def test_the_host_setting_is_read_and_a_wrong_one_refused():
    code = "from playground.engine import dependent_launch as d; print(d.ON)"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for value, said in (("1", "True"), ("off", "False"), ("", "False")):
        done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PLAYGROUND_PDL=value))
        assert done.returncode == 0 and done.stdout.strip() == said, (value, done.stderr[-2000:])
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PLAYGROUND_PDL="maybe"))
    assert done.returncode != 0 and "PLAYGROUND_PDL must be 1 or 0" in done.stderr
