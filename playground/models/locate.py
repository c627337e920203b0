"""Finding a model's files: the shipped aliases (demo pair, SmolLM2 drafts), a packaged model
(playground.models.packaged), a local directory, or the Hugging Face hub (only the files loading
needs, with download progress); every miss is a PlaygroundError that says what to do."""
import os
import pathlib
import socket
import urllib.parse
from typing import Callable

from playground.errors import PlaygroundError
from playground.models import packaged

DEMO_DIR = pathlib.Path(__file__).parent / "demo_pair"
SMOLLM2_DRAFT_DIR = pathlib.Path(__file__).parent / "smollm2_draft"
SMOLLM2_FEATURE_DIR = pathlib.Path(__file__).parent / "smollm2_feature_draft"
ALIASES = {"demo-target": DEMO_DIR / "target", "demo-draft": DEMO_DIR / "draft", "smollm2-draft": SMOLLM2_DRAFT_DIR,
           "smollm2-feature-draft": SMOLLM2_FEATURE_DIR}
WEIGHT_FILES = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.tiktoken", "*.txt", "*.jinja"]
Progress = Callable[[float, str], None]  # (fraction done 0..1, message)
Check = Callable[[pathlib.Path], None]  # given the directory holding a hub model's config.json (weights
# not fetched yet): raises PlaygroundError to refuse the download


def locate(model_id: str, progress: Progress | None = None, before_download: Check | None = None) -> pathlib.Path:
    """A local directory as is; a hub id from the local cache, downloading only what loading needs
    (its config.json first, for before_download to judge)."""
    if model_id in ALIASES:
        return ALIASES[model_id]
    if not model_id.strip():  # ('' read as the current directory: "the directory has no config.json")
        raise PlaygroundError("no model named: give a model's hub id or directory")
    if model_id in packaged.PACKAGED:
        return _packaged(model_id, progress, before_download)
    try:
        local = pathlib.Path(model_id).expanduser()
    except RuntimeError:  # ~user with no such user
        raise PlaygroundError(f"model '{model_id}' not found: no such user directory") from None
    if local.is_dir():
        if not (local / "config.json").exists():
            raise PlaygroundError(f"model '{model_id}': the directory has no config.json")
        return local
    if local.exists():  # (a weights file given for its folder was "not found: no such directory")
        raise PlaygroundError(f"model '{model_id}' is a file: give the directory that holds its config.json and weights")
    if local.is_absolute() or model_id.startswith((".", "~")) or model_id.count("/") > 1:
        raise PlaygroundError(f"model '{model_id}' not found: no such directory")
    return _download(model_id, progress, before_download)


def _packaged(model_id: str, progress: Progress | None, before_download: Check | None) -> pathlib.Path:
    """The converted copy of a packaged model; from the hub when its package is not installed."""
    found = packaged.local_dir(model_id, progress)
    if isinstance(found, pathlib.Path):
        return found
    refused = []  # the host's own refusal (too big for it): installing the package would not help

    def check(config_dir: pathlib.Path) -> None:
        try:
            before_download(config_dir)
        except PlaygroundError as exc:
            refused.append(exc)
            raise
    try:
        return _download(found, progress, check if before_download else None)
    except PlaygroundError as exc:
        if refused:
            raise
        raise PlaygroundError(f"{exc}; or install it for offline use: {packaged.PACKAGED[model_id].install}") from None


def _download(model_id: str, progress: Progress | None, before_download: Check | None) -> pathlib.Path:
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub import errors as hub_errors
    report(progress, 0.0, f"fetching {model_id}")
    local = not hub_resolves()  # offline: the local cache alone, at once (the hub client retries for ~20 s)
    try:
        if before_download is not None:
            before_download(pathlib.Path(hf_hub_download(model_id, "config.json", local_files_only=local)).parent)
        found = pathlib.Path(snapshot_download(model_id, allow_patterns=WEIGHT_FILES, local_files_only=local,
                                               tqdm_class=_tqdm_reporting(progress, model_id)))
    except hub_errors.HFValidationError:
        raise PlaygroundError(f"model '{model_id}' not found: not a directory and not a valid Hugging Face id") from None
    except (hub_errors.RepositoryNotFoundError, hub_errors.GatedRepoError):
        raise PlaygroundError(f"model '{model_id}' not found on the Hugging Face hub (or it is gated: "
                              "log in with `hf auth login`)") from None
    except hub_errors.LocalEntryNotFoundError:
        raise PlaygroundError(_not_cached(model_id)) from None
    except hub_errors.RemoteEntryNotFoundError:
        raise PlaygroundError(f"model '{model_id}' has no config.json on the Hugging Face hub: not a transformers model") from None
    if not any(found.glob("*.safetensors")):  # offline: a snapshot whose download stopped after config.json
        raise PlaygroundError(_not_cached(model_id) if local else
                              f"model '{model_id}' has no .safetensors weights here: the hub has none for it (this "
                              "playground loads safetensors only), or could not be reached to fetch them")
    return found


def files_before_weights(model_id: str) -> pathlib.Path | None:
    """A hub model not here yet: the folder of its small files (config, tokenizer, template), fetched into the hub's
    cache first, so a draft that cannot pair is refused before its weights come (gigabytes; a review); None for a
    model here (shipped, packaged, a directory, cached), or where the hub cannot be reached or will not give them."""
    if model_id in ALIASES or model_id in packaged.PACKAGED or here(model_id) or not hub_resolves():
        return None
    from huggingface_hub import snapshot_download
    try:
        return pathlib.Path(snapshot_download(model_id, allow_patterns=[p for p in WEIGHT_FILES if p != "*.safetensors"]))
    except (OSError, ValueError):  # (the hub's errors are OSErrors; a bad id a ValueError): the weights' download says
        return None


def installed(model_id: str) -> bool:
    """Whether the model ships here, or is packaged with its package installed (or converted once)."""
    return model_id in ALIASES or (model_id in packaged.PACKAGED and packaged.available_offline(model_id))


def here(model_id: str) -> bool:
    """Whether the model loads without the hub: installed, a directory, or its config and safetensors
    weights in the hub's local cache."""
    from huggingface_hub import snapshot_download
    if installed(model_id):
        return True
    model_id = packaged.PACKAGED[model_id].hub_id if model_id in packaged.PACKAGED else model_id
    try:
        if pathlib.Path(model_id).expanduser().is_dir():
            return True
        found = snapshot_download(model_id, allow_patterns=["config.json", "*.safetensors"], local_files_only=True)
    except (OSError, ValueError, RuntimeError):  # not cached (LocalEntryNotFoundError is an OSError), not an id
        return False
    return any(pathlib.Path(found).glob("*.safetensors"))


PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def hub_resolves() -> bool:
    """Whether the hub may be reached: not HF_HUB_OFFLINE, and its host name resolves (a machine
    without network fails that at once; the hub client would retry each request five times); behind
    a proxy, which resolves names itself, it is tried."""
    from huggingface_hub import constants
    if constants.HF_HUB_OFFLINE:
        return False
    if any(os.environ.get(name) for name in PROXIES):
        return True
    try:
        socket.getaddrinfo(urllib.parse.urlparse(constants.ENDPOINT).hostname, 443)
    except (OSError, UnicodeError):
        return False
    return True


def _not_cached(model_id: str) -> str:
    if "/" not in model_id:  # (`--target demo --draft demo` was told to pick demo, and to `hf download demo`)
        return (f"model '{model_id}' is not here, and the hub cannot be reached to look for it (no network, or "
                f"HF_HUB_OFFLINE=1); a preset's name goes to --preset (the page's Preset; in Python, presets.get_preset(name) names its "
                f"models), not to a model: the models "
                f"here offline are {', '.join(ALIASES)} and SmolLM2's smollm2-135m-instruct where its package is installed")
    offline = "demo and smollm2 run offline" if here("smollm2-135m-instruct") else "the demo presets run offline"
    return (f"model '{model_id}' is not in the local cache and the hub cannot be reached (no network, or "
            f"HF_HUB_OFFLINE=1): pick a preset whose models are here ({offline}), or whoever "
            f"runs this host pre-downloads it where there is network: `hf download {model_id}`")


def report(progress: Progress | None, fraction: float, message: str) -> None:
    if progress is not None:
        progress(fraction, message)


def sub_progress(progress: Progress | None, lo: float, hi: float) -> Progress | None:
    if progress is None:
        return None
    return lambda f, msg: progress(lo + (hi - lo) * f, msg)


def _tqdm_reporting(progress: Progress | None, model_id: str):
    """A tqdm class that forwards download progress (bytes) to `progress`, scaled to 0..0.9."""
    from tqdm.auto import tqdm

    class Reporting(tqdm):
        def update(self, n=1):
            out = super().update(n)
            if progress is not None and self.total:
                progress(0.9 * min(1.0, self.n / self.total), f"downloading {model_id}")
            return out
    return Reporting
