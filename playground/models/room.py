"""The room a model needs before it loads, and the loaded models kept: an LRU of (model,
tokenizer) pairs that evicts while memory runs short; a hub model sized from its config.json before
its weights come (disk, and memory on a CPU); a CPU model refused where it would meet the OOM
killer. Sizes count the packed copy of a CPU model's linear weights (playground.models.packed_linear)."""
import collections
import ctypes
import gc
import pathlib
import threading

import torch

from playground.errors import PlaygroundError
from playground.models import halves, placement, row_products
from playground.models.packed_linear import ATTR as PACKED, MAX_PACKED_BYTES


class ModelCache:
    """A small LRU of loaded (model, tokenizer) pairs, evicting the oldest while memory runs short."""

    def __init__(self, max_entries: int = 4):
        self.max_entries = max_entries
        self.entries: collections.OrderedDict = collections.OrderedDict()
        self.lock = threading.RLock()  # runs look models up while another run loads one
        self.on_evict: list = []  # called with each evicted model (what else holds it lets go)

    def get(self, key):
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key]
            return None

    def put(self, key, value) -> None:
        with self.lock:
            self.entries[key] = value
            self.entries.move_to_end(key)
            while len(self.entries) > self.max_entries:
                self._evict_oldest()

    def holds(self, model) -> bool:
        with self.lock:
            return any(model is cached for cached, *_ in self.entries.values())

    def held_bytes(self, device: torch.device) -> int:
        """Bytes of the cached models' weights on this device, packed copies included (what evicting
        them all would free)."""
        with self.lock:
            models = [model for model, *_ in self.entries.values()]
        return sum(t.numel() * t.element_size() for model in models for t in _weights(model) if t.device.type == device.type)

    def make_room(self, need_bytes: int, device: torch.device) -> None:
        with self.lock:
            while self.entries and placement.free_memory(device) < need_bytes * 1.2:
                self._evict_oldest()
                if device.type == "cuda":
                    torch.cuda.empty_cache()

    def _evict_oldest(self) -> None:
        """Drop the oldest entry and collect it now: patched (bf16 CPU) and compiled models sit in
        reference cycles, which would otherwise keep their weights until some later collection,
        and make_room would see no memory freed and evict everything."""
        _, (model, *_) = self.entries.popitem(last=False)
        for forget in self.on_evict:
            forget(model)
        del model
        gc.collect()
        return_freed_heap()


def return_freed_heap() -> bool:
    """Give the pages the C heap has freed back to the system (glibc's malloc_trim) -> whether it could.
    A model's load and its eviction free hundreds of MB of host heap that glibc otherwise keeps: a soak of
    the server, the offline pairs evicting each other, saw its memory rise from 1,369 to 1,741 MB over 60
    loads, 1,212 MB after one trim; make_room reads free memory, so kept heap also made it evict more."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # not glibc (musl, macOS): nothing to do
        return False
    trim(0)
    return True


CACHE = ModelCache()


def _weights(model: torch.nn.Module):
    """Every weight tensor a model holds: its parameters and the packed copies of its linears."""
    yield from model.parameters()
    yield from (m.__dict__[PACKED] for m in model.modules() if m.__dict__.get(PACKED) is not None)


def packed_bytes(path: pathlib.Path, device: torch.device, dtype: torch.dtype, need_bytes: int) -> int:
    """What the packed copy of a model's linears takes: none where it gets none (pack_linears keeps
    linears past MAX_PACKED_BYTES unpacked); the weights' size where the config cannot tell."""
    if not packs(device, dtype, need_bytes):
        return 0
    linear = placement.config_bytes(path, dtype, linear_only=True)
    linear = need_bytes if linear is None else linear
    return linear if linear <= MAX_PACKED_BYTES else 0


def packs(device: torch.device, dtype: torch.dtype, need_bytes: int) -> bool:
    """Whether _from_pretrained gives this model's linears a packed second copy (see packed_linear)."""
    copied = row_products.kernel() is None if dtype == torch.float32 else placement.native_bf16()  # (the kernel reads
    return bool(placement.attention_for(device, dtype, need_bytes)) and copied  # float32 weights as they are: no copy)


def refuse_before_download(model_id: str, config_dir: pathlib.Path, device: torch.device, dtype) -> None:
    """A hub model sized from its config.json before its weights come: refused where they would not
    fit on the disk, or (on a CPU) in memory (a 7B GPU preset picked on a CPU Space: 15 GB fetched
    for nothing)."""
    float32 = placement.config_bytes(config_dir, torch.float32)
    if float32 is None:
        return  # sized after the download, from the files
    fetch = placement.stored_bytes(config_dir, float32) - _present_bytes(config_dir)
    if fetch > 0 and fetch * 1.05 > (free := placement.free_disk(config_dir)):
        raise PlaygroundError(f"'{model_id}' needs about {fetch / 2**30:.1f} GiB of disk to download and this host "
                              f"has {free / 2**30:.1f} GiB free: pick a smaller preset (e.g. smollm2 or demo)")
    dtype = dtype or placement.default_dtype(device, float32, halves.stored_in_bf16(config_dir))
    need = float32 * torch.finfo(dtype).bits // 32
    in_halves = halves.loads_in_halves(config_dir, device, dtype, need)
    refuse_past_free_memory(model_id, peak_bytes(config_dir, device, dtype, need, in_halves), device, dtype,
                            CACHE.held_bytes(device))


def peak_bytes(path: pathlib.Path, device: torch.device, dtype: torch.dtype, need_bytes: int, in_halves: bool) -> int:
    """Memory a load takes at its peak: the weights in dtype (need_bytes) and their packed copy, or, loaded in halves
    (halves.loads_in_halves), what it ends with."""
    if in_halves:
        return halves.halves_bytes(path) or need_bytes
    return need_bytes + packed_bytes(path, device, dtype, need_bytes)


def _present_bytes(snapshot: pathlib.Path) -> int:
    """Bytes of weights files already in a hub snapshot (a pruned blob, a dangling link, counts none)."""
    return sum(f.stat().st_size for f in snapshot.glob("*.safetensors") if f.is_file())


def refuse_past_free_memory(model_id: str, need_bytes: int, device: torch.device, dtype, reclaimable: int = 0) -> None:
    """On a CPU a model larger than the memory left (plus what evicting cached models would free) is
    not tried: the kernel's OOM killer would end the whole server (a GPU preset picked on a CPU
    Space), not raise. (On a GPU, accelerate places what does not fit.)"""
    free = placement.free_memory(device) + reclaimable
    if device.type == "cpu" and need_bytes * 1.1 > free:
        raise PlaygroundError(f"'{model_id}' needs about {need_bytes / 2**30:.1f} GiB of memory in {str(dtype).removeprefix('torch.')} "
                              f"and this host has {free / 2**30:.1f} GiB free: pick a smaller preset (e.g. smollm2 or demo)")
