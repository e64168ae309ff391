"""Watching the child while it runs: the peak memory of its process tree."""

from __future__ import annotations

import os
import threading

__all__ = ["RssSampler", "descendants", "tree_rss"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class RssSampler(threading.Thread):
    """Samples the summed RSS of the child and its descendants (:func:`tree_rss`).

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
        sample = tree_rss if os.path.isdir(f"/proc/{self.pid}") else _psutil_sampler(self.pid)
        if sample is None:
            return
        while not self.stop.is_set():
            total = sample(self.pid)
            if total is None or self.stop.is_set():
                return  # the child is gone: a late sample would read a reused pid
            self.samples += 1
            self.peak = total if self.peak is None else max(self.peak, total)
            self.stop.wait(self.interval)


def tree_rss(pid: int) -> int | None:
    """The summed resident memory of ``pid`` and its descendants in bytes, from ``/proc``
    (what psutil's ``memory_info().rss`` reads, without importing psutil: its import would
    compete with writing the outcome of a short child); None when ``pid`` is gone."""
    own = _rss(pid)
    if own is None:
        return None
    total = own
    for child in descendants(pid):
        total += _rss(child) or 0
    return total


def _rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int) -> list[int]:
    """Every descendant of ``pid``: from each thread's ``children`` file where the kernel
    has them, else from the parent of every process in ``/proc``."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        with open(f"/proc/{pid}/task/{tasks[0]}/children", "rb"):
            pass
    except (OSError, IndexError):
        return _descendants_by_scan(pid)
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children", "rb") as fh:
                    kids = [int(x) for x in fh.read().split()]
            except (OSError, ValueError):
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


def _descendants_by_scan(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
            ppid = int(data[data.rfind(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def _psutil_sampler(pid: int):  # type: ignore[no-untyped-def]
    """Where there is no ``/proc``: psutil's view of the tree (None: no psutil)."""
    try:
        # deferred: psutil, ~76 ms measured under load; only _psutil_sampler() needs it
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return None

    def sample(pid: int) -> int | None:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return None
        total = 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except psutil.Error:  # noqa: PERF203 - a process of the tree may just have gone
                continue
        return total

    return sample
