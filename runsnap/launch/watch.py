"""Watching the child while it runs: the peak memory of its process tree."""

from __future__ import annotations

import threading

__all__ = ["RssSampler"]


class RssSampler(threading.Thread):
    """Samples the summed RSS of the child and its descendants with psutil.

    (Not ``wait4``'s ``ru_maxrss``: across vfork+exec Linux carries the parent's high-water
    mark into the child's, so it would report runsnap's own memory for a small child.)
    """

    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(name="runsnap-rss", daemon=True)
        self.pid, self.interval = pid, interval
        self.peak: int | None = None
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            import psutil
        except ImportError:  # pragma: no cover - psutil is a dependency
            return
        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self.stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            total = 0
            for proc in procs:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:  # noqa: PERF203 - a process of the tree may just have gone
                    continue
            if self.stop.is_set():
                return  # the child may be gone: a late sample would read a reused pid
            self.samples += 1
            self.peak = total if self.peak is None else max(self.peak, total)
            self.stop.wait(self.interval)
