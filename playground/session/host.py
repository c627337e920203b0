"""What the page and app.py ask of the host below the session: its PLAYGROUND_* settings checked at
start-up, whether visitors may name their own models, whether the hub can be reached, ZeroGPU. The
UI reads these here and never imports the engine or the models itself (DESIGN.md: UI -> session)."""
import torch

from playground.engine.attention import folds_on
from playground.engine.fused_layers import layers_asked
from playground.engine.layer_regions import by_layer_on
from playground.models import loading
from playground.models.decode_threads import host_choice as decode_threads_asked
from playground.models.fused_projections import fuses_on
from playground.models.loading import custom_models_allowed, is_way_of_drafting
from playground.models.locate import hub_resolves
from playground.limits import compile_refused, unknown_switches
from playground.models.packaged import check_cache
from playground.models.placement import cpu_dtype_asked, on_zero_gpu
from playground.models.row_layers import asked as row_layers_asked
from playground.models.row_products import asked as row_kernel_asked

__all__ = ["check_settings", "compile_refused", "unknown_switches", "custom_models_allowed", "hub_resolves", "is_way_of_drafting", "on_zero_gpu",
           "weights_at_start"]


def check_settings() -> None:
    """Each PLAYGROUND_* setting read now, a bad one raising PlaygroundError (it was said first to a
    visitor's run, or as a traceback in the log): the cache folder (written into), the CPU dtype, compiled passes refused, the fused layers asked for, the
    CPU's decode threads, row kernel and row layers, and the GPU's flags read as a GPU model loads or compiles (PLAYGROUND_FOLD_GQA,
    _FUSE_PROJECTIONS, _REGIONAL_COMPILE). The rest are read as their modules load (playground.limits, the page's)."""
    check_cache()
    cpu_dtype_asked()
    compile_refused()
    decode_threads_asked()  # (read as a model loads: PLAYGROUND_DECODE_THREADS=bogus passed the start, a docs review)
    row_kernel_asked()
    row_layers_asked()
    layers_asked()  # (read as a pair is first prepared: PLAYGROUND_FUSED_LAYERS=bogus passed the start)
    for reads_its_flag in (folds_on, fuses_on, by_layer_on):
        reads_its_flag(torch.device("cuda"))


def weights_at_start(target_id: str, draft_id: str) -> None:
    """ZeroGPU: the pair's weights loaded at start-up, on the CPU (each call moves them to its lent GPU)."""
    loading.load_pair(target_id, draft_id)
