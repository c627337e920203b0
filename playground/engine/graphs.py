"""CUDA graphs made by hand: a function of static buffers is captured once and replayed per call.

The function's inputs and outputs live at fixed addresses (buffers the caller fills before a
replay); a replay runs every kernel the capture recorded, with none of the Python that launched
them. The graphs of a process share one memory pool: a graph captured later may keep its output
where an earlier one has its scratch memory, so a call replays and copies the output out under one
lock: no other thread's replay can come between the two on the stream (concurrent runs,
PLAYGROUND_CONCURRENCY > 1).

Before capture the function runs twice on a side stream (CUDA's rule for capture: lazy
initialisation, cuBLAS workspaces and autotuning happen outside the graph). Those runs write what
the function writes (KV cache positions past the committed ones, output buffers): callers capture
only functions whose writes are rewritten by the next real replay.

The pool is kept alive for the process by one tiny graph captured into it first and never freed:
the allocator deletes a pool's bookkeeping only when no graph uses it, and a capture into a pool
whose graphs were all freed (a pair unloaded, another loaded) fails inside CUDA's caching
allocator (`use_count > 0` asserted, measured on an H200 on 2026-11-26)."""
import threading

import torch

_pool = None
_keeper = None  # the graph that holds the pool (see above)
CAPTURING = threading.Lock()  # one capture at a time in the process
REPLAYING = threading.Lock()  # a replay and the copy of its output, with no other replay between


def shared_pool():
    """The process's pool handle; called under CAPTURING."""
    global _pool, _keeper
    if _pool is None:
        pool, keeper = torch.cuda.graph_pool_handle(), torch.cuda.CUDAGraph()
        torch.zeros(1, device="cuda")  # its kernel loaded before the capture, as for any captured function
        with torch.cuda.graph(keeper, pool=pool, capture_error_mode="thread_local"):
            torch.zeros(1, device="cuda")  # one small block of the pool, held as long as the keeper
        _pool, _keeper = pool, keeper
    return _pool


class Captured:
    """fn() captured as a CUDA graph (fn returns one tensor); calling replays it and returns a copy
    of that tensor as this replay left it."""

    def __init__(self, fn):
        with CAPTURING:  # thread-local capture: another thread's CUDA work does not break this one
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(2):
                    fn()
            torch.cuda.current_stream().wait_stream(stream)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph, pool=shared_pool(), capture_error_mode="thread_local"):
                self.out = fn()

    def __call__(self) -> torch.Tensor:
        with REPLAYING:
            self.graph.replay()
            return self.out.clone()


class Direct:
    """The same interface without a graph (CPU, or CUDA graphs off): each call runs fn."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self):
        return self.fn()


def program(fn, capture: bool):
    """fn as a replayable program: captured when `capture` (CUDA), run directly otherwise."""
    return Captured(fn) if capture else Direct(fn)
