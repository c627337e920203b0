"""A KV cache that allocates nothing per round: each layer's keys and values live in a buffer that
doubles when full (a few times per generation), a forward writes its new positions in place, and a
rollback only moves the end. The model sees views of the filled part, so attention costs what the
sequence holds, not the buffer's capacity."""
import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer, DynamicSlidingWindowLayer


class GrowingLayer(DynamicLayer):
    def __init__(self, capacity: int = 256):
        super().__init__()
        self.capacity, self.length = capacity, 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        b, h, _, _ = key_states.shape
        self.k_buf = key_states.new_empty((b, h, self.capacity, key_states.shape[-1]))  # [B, H, capacity, D]
        self.v_buf = value_states.new_empty((b, h, self.capacity, value_states.shape[-1]))
        self.length, self.is_initialized = 0, True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.k_buf.shape[-2]:
            self._grow(end)
        self.k_buf[:, :, self.length:end] = key_states
        self.v_buf[:, :, self.length:end] = value_states
        self.length = end
        return self._views()

    def _views(self):
        self.keys, self.values = self.k_buf[:, :, : self.length], self.v_buf[:, :, : self.length]
        return self.keys, self.values

    def _grow(self, need: int) -> None:
        size = max(need, 2 * self.k_buf.shape[-2])
        for name in ("k_buf", "v_buf"):
            old = getattr(self, name)
            new = old.new_empty(old.shape[:2] + (size,) + old.shape[3:])
            new[:, :, : self.length] = old[:, :, : self.length]
            setattr(self, name, new)

    def get_seq_length(self) -> int:
        return self.length if self.is_initialized else 0

    def crop(self, tokens_to_remove: int) -> None:
        """transformers 5 semantics: crop(-m) forgets the last m positions."""
        if self.is_initialized and tokens_to_remove:
            self.length = max(0, self.length - abs(tokens_to_remove))
            self._views()

    def reset(self) -> None:
        self.length = 0
        if self.is_initialized:
            self._views()

    def keep(self, start: int, slots: torch.Tensor) -> None:
        """Keep positions [0, start) and then `slots` (ascending, >= start), moved down to follow them:
        a token tree's accepted path becomes the sequence; the rest is forgotten."""
        if not self.is_initialized:
            return
        end = start + len(slots)
        for buf in (self.k_buf, self.v_buf):
            buf[:, :, start:end] = buf.index_select(2, slots)  # [B, H, len(slots), D], copied before writing
        self.length = end
        self._views()


def keep_slots(cache: Cache, start: int, slots: torch.Tensor) -> None:
    """GrowingLayer.keep on every layer (a token tree's pass compacted to its accepted path)."""
    for layer in cache.layers:
        layer.keep(start, slots)


def new_cache(config) -> Cache:
    """A GrowingLayer cache for models whose layers all attend to the full sequence; a WindowedCache
    otherwise."""
    text = config.get_text_config(decoder=True)
    types = getattr(text, "layer_types", None) or ["full_attention"] * text.num_hidden_layers
    if any(t != "full_attention" for t in types):
        return WindowedCache(config=config)
    return Cache(layers=[GrowingLayer() for _ in types])


WINDOW_SLACK = 64  # positions a sliding-window layer keeps past its window: more than any rollback
# reaches back between two crops (a round's k <= 16 guesses, a cascade's agreed guesses among them)


class WindowedCache(DynamicCache):
    """transformers' DynamicCache with its sliding-window layers recording past their window (else a
    layer past its window has forgotten what a rejected guess's rollback needs). crop(-n) cuts such
    a layer itself, then trims it to its window and WINDOW_SLACK positions more: transformers' crop
    trims it to the window at once, and a cascade's crop inside a round, then the round's own,
    reached back past that trim and left the layer short."""

    def __init__(self, config):
        super().__init__(config=config)
        self.activate_past_recording()

    def crop(self, tokens_to_remove: int) -> None:
        n = -tokens_to_remove  # transformers 5 semantics: crop(-n) forgets the last n positions
        for layer in self.layers:
            if not isinstance(layer, DynamicSlidingWindowLayer):
                layer.crop(tokens_to_remove)
            elif layer.is_initialized:
                _cut(layer, n)
                keep = layer.sliding_window - 1 + WINDOW_SLACK  # attention reads the window's last ones
                layer.keys, layer.values = layer.keys[:, :, -keep:], layer.values[:, :, -keep:]


def _cut(layer: DynamicSlidingWindowLayer, n: int) -> None:
    if n > layer.keys.shape[-2]:
        raise RuntimeError(f"a rollback of {n} positions reaches past the {layer.keys.shape[-2]} a sliding-window layer kept")
    if n > 0:
        layer.keys, layer.values = layer.keys[:, :, :-n], layer.values[:, :, :-n]
        layer.cumulative_length -= n
