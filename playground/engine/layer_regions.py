"""Compile a model's decoder layers once instead of once per layer (on CUDA by default).

A compiled pass is one graph of the whole model, so torch.compile lowers and generates code for
every layer although they are the same program on other weights: a cold compile of the
Qwen2.5-7B/0.5B pair took 92.7 s for speculation's three pass widths on an H200 (plus 25.6 s for
the schedule's catch-up width), about as long for the 24-layer 0.5B draft as for the 28-layer 7B.
Here each decoder layer's forward runs through one `torch.compiler.nested_compile_region` per
layer class: dynamo still traces every layer (its cache and weights are the body's inputs, so
every layer's trace is the same graph), keeps one body, and inductor compiles that body once and
calls it per layer. What it costs: nothing fuses across a layer's edge (the residual add that ends
a layer and the norm that starts the next become two kernels instead of one).

Measured on a CPU (2-core AMD EPYC; a 24-layer, 256-wide random Qwen2, passes of 1 and 5 tokens
on a static cache, inductor's Python wrapper in both, each compile with empty caches, two runs
each): torch 2.13, 72.1 and 72.0 s whole, 29.0 and 28.6 s by layer; torch 2.11 (the lent GPU's),
75.5 and 70.6 s whole, 48.7 (beside other work) and 40.0 s by layer; the same logits; a one-token pass 4-14% slower
by layer on that CPU, where Python calls each layer's body (a GPU replays the round's kernels from
a CUDA graph). On an H200, by layer a verify pass of the joined Qwen2.5-7B/0.5B-shaped pair is
545 kernels against 514, a draft step 381 against 355. Timed cold, one process after the other in one call (H200, 2026-11-27,
benchmarks/gpu-check-2026-11-27-h200-regional/): 81.7 s by layer against 156.5 s whole (speculative
passes 52.4 against 99.7 s, the schedule's 12.0 against 27.6, the one-token target alone 17.3 against
29.2); at acceptance 1 speculation made 450.0 tok/s by layer against 456.5 whole (1.4% less; a
draft step 1.43 against 1.39 ms), the target alone 5.25 against 5.21 ms a token, 2.37x both. Half
the first run's wait for about 1% of speed: by layer on CUDA by default. A CPU compiles whole by default: by
layer it drops inductor's C++ wrapper, which cannot call a region (torch 2.13), and its one-token pass
was 4-14% slower. PLAYGROUND_REGIONAL_COMPILE=1 compiles by layer on every device, =0 on none."""
import types

import torch

from playground.limits import env_flag

def by_layer_on(device: torch.device) -> bool:
    """Whether models on this device compile by layer (the module docstring has the measurements):
    PLAYGROUND_REGIONAL_COMPILE on, every device; off, none; unset, CUDA only (a value not on or off is
    refused: 'true' compiled a CPU's models whole without a word)."""
    return env_flag("PLAYGROUND_REGIONAL_COMPILE", device.type == "cuda")


REGIONS: dict[tuple, object] = {}  # one region per (layer class, forward), shared by every model's such layers


def mark_layer_regions(model: torch.nn.Module) -> int:
    """Run each decoder layer of this model through its class's compile region (or, for a layer
    given a forward of ours as `playground_forward`, that forward's: playground.engine.fused_layers);
    -> layers marked. A layer whose forward is otherwise replaced on the instance (accelerate's
    offloading hooks) is left as it is; eager calls are unchanged (a region outside torch.compile is
    a plain call)."""
    marked = 0
    for module in model.modules():
        own = module.__dict__.get("playground_forward")
        if not is_decoder_layer(module) or module.__dict__.get("playground_region") \
                or ("forward" in module.__dict__ and own is None):
            continue
        key = (type(module), own or type(module).forward)
        if key not in REGIONS:
            REGIONS[key] = torch.compiler.nested_compile_region(key[1])
        module.forward = types.MethodType(REGIONS[key], module)
        module.playground_region = True
        marked += 1
    return marked


def is_decoder_layer(module: torch.nn.Module) -> bool:
    """A transformers decoder layer (Qwen2DecoderLayer, LlamaDecoderLayer, ...)."""
    return type(module).__name__.endswith("DecoderLayer")
