"""Timestamps that cost no host synchronisation: CUDA events on a GPU, the host clock on a CPU.
Read `seconds` only after the round's one sync (the acceptance decision)."""
import time

import torch


class Clock:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def seconds(self, start, end) -> float:
        if self.cuda:
            end.synchronize()  # recorded after the round's sync, but elapsed_time refuses an unfinished event
            return start.elapsed_time(end) / 1e3
        return end - start
