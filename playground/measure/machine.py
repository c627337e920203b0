"""What a measurement ran on, written beside its figures (a speed figure says nothing without the
CPU, its bfloat16 flags, the threads, the device, the versions and the load)."""
import datetime
import os
import platform
from importlib.metadata import version

import torch

from playground.cpu_isa import cpu_flags, user_limit

BF16_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")  # what decides a CPU's bfloat16 products


def machine(device: torch.device | str = "cpu") -> dict:
    """The machine as a dict of plain values (JSON)."""
    device = torch.device(device)
    return {"cpu": _cpu_name(), "cpu_flags": [f for f in BF16_FLAGS if f in cpu_flags()],
            "onednn_limit": user_limit() or None, "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "python": platform.python_version(), "torch": torch.__version__, "transformers": version("transformers"),
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def machine_line(m: dict) -> str:
    """One line for a log or a table's header."""
    flags = ", ".join(m["cpu_flags"]) or "no AVX2"
    limit = f", oneDNN held to {m['onednn_limit']}" if m["onednn_limit"] else ""
    load = f"; load average {' '.join(map(str, m['load_average']))}" if m["load_average"] else ""
    return (f"{m['cpu']} ({flags}{limit}), {m['cores']} cores, {m['torch_threads']} torch threads, device {m['device']}; "
            f"Python {m['python']}, torch {m['torch']}, transformers {m['transformers']}; {m['date']}{load}")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            line = next((line for line in f if line.startswith("model name")), "")
    except OSError:
        line = ""
    return line.partition(":")[2].strip() or platform.processor() or platform.machine()
