"""The metric extraction searches only the first and last line of each line shape
(``runsnap.launch.metrics._pairs``): it must find exactly what one search of every line finds,
in the same order, on logs shaped as real training runs print them."""

from __future__ import annotations

import json
import random

import pytest

from runsnap.launch import metrics
from runsnap.launch.metrics import MetricWatch


class _EveryLine(MetricWatch):
    """The extraction as it was: one ``findall`` over every byte of the chunk."""

    def feed(self, chunk: bytes) -> None:
        if b"=" in chunk or b":" in chunk:
            for key, raw in dict(metrics._KEY_VALUE.findall(chunk)).items():
                self._keep(key.decode("ascii", "replace"), raw)
        for name, pattern in self._user:
            last = None
            for last in pattern.finditer(chunk):  # noqa: B007
                pass
            if last is not None:
                value = metrics._number(last.group(1) if pattern.groups else last.group(0))
                if value is not None:
                    self.values[name] = value


def _hf_trainer(rng: random.Random, step: int) -> str:
    # transformers' Trainer logs a dict per logging step, and a summary at the end
    if rng.random() < 0.02:
        return str({"eval_loss": round(rng.uniform(1, 3), 4), "eval_runtime": rng.uniform(1, 9),
                    "eval_samples_per_second": round(rng.uniform(50, 900), 3),
                    "epoch": round(step / 1000, 2)})
    return str({"loss": round(rng.uniform(0.5, 4), 4), "grad_norm": rng.uniform(0.1, 30),
                "learning_rate": rng.choice([5e-05, 4.9e-05, 1.2e-06, 0.0003]),
                "epoch": round(step / 1000, 2)})


def _tqdm(rng: random.Random, step: int) -> str:
    pct = step % 101
    bar = "\u2588" * (pct // 10) + " " * (10 - pct // 10)
    return (f"{pct:3d}%|{bar}| {step}/{10_000} [{step // 60:02d}:{step % 60:02d}<01:23, "
            f"{rng.uniform(1, 99):.2f}it/s, loss={rng.uniform(0, 5):.3g}, v_num=0]\r")


def _json_line(rng: random.Random, step: int) -> str:
    return json.dumps({"step": step, "loss": rng.uniform(0, 5), "lr": 1e-4 * rng.random(),
                       "tokens_per_sec": rng.randint(900, 99_000), "time": "12:30:05"})


def _torch_print(rng: random.Random, step: int) -> str:
    return (f"[rank0]:[2026-12-01 10:{step % 60:02d}:{step % 59:02d},{rng.randint(0, 999):03d}] "
            f"epoch {step // 100} iter {step}: loss {rng.uniform(0, 5):.4f}, "
            f"top1: {rng.random():.3f} top5: {rng.random():.3f} layer{step % 4}.norm="
            f"{rng.random():.2f} pid={rng.randint(1, 99999)}")


def _noise(rng: random.Random, step: int) -> str:
    return rng.choice([
        "WARNING: gradient overflow, skipping step; reducing loss scale",
        f"saving checkpoint to /data/ckpt/model-{step}.pt",
        "Downloading shards: 100%|##########| 4/4 [00:00<00:00, 12.1it/s]",
        f"f1: {rng.random():.3f} exact_match={rng.random() * 100:.2f} version=1.2.3",
        f"10.0.0.{step % 255}:29500 connected at 12:0{step % 10}:00",
        f"speed: {rng.uniform(1, 9):.1e} samples/s, mem_{step % 3}={rng.randint(1, 80)}GB",
        "",
    ])


_LOGS = {"hf_trainer": _hf_trainer, "tqdm": _tqdm, "json": _json_line, "torch": _torch_print}


def _log(kind: str, seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    lines = []
    for step in range(1, n + 1):
        make = _LOGS[kind] if kind in _LOGS else rng.choice(list(_LOGS.values()))
        lines.append((make(rng, step) if rng.random() < 0.8 else _noise(rng, step)).encode())
    return lines


def _feed_in_chunks(watch: MetricWatch, lines: list[bytes], rng: random.Random) -> None:
    i = 0
    while i < len(lines):  # whole lines joined by newlines, as StreamWatch passes them
        n = rng.choice([1, 3, 17, 200, 1500, 5000])
        watch.feed(b"\n".join(lines[i:i + n]))
        i += n


@pytest.mark.parametrize("kind", [*_LOGS, "mixed"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_same_metrics_in_the_same_order_as_a_search_of_every_line(kind: str,
                                                                      seed: int) -> None:
    lines = _log(kind, seed, 6000)
    user = [metrics.parse_metric(r"tps=([\d.]+)it/s"), metrics.parse_metric("top=top1: (\\S+)")]
    new, old = MetricWatch(user), _EveryLine(user)
    _feed_in_chunks(new, lines, random.Random(seed))
    _feed_in_chunks(old, lines, random.Random(seed))
    assert list(new.values.items()) == list(old.values.items())
    assert new.dropped == old.dropped
    assert new.values  # the logs do print metrics


def test_keys_with_digits_in_lines_of_one_shape_are_all_found() -> None:
    # top1/top5 and layer0..layer3 read as the same shape; each key must still be found
    chunk = b"\n".join(b"layer%d.loss=%d.%d top%d=0.%d" % (i % 4, i % 7, i % 9, 1 + i % 2 * 4, i)
                       for i in range(40))
    watch = MetricWatch()
    watch.feed(chunk)
    reference = _EveryLine()
    reference.feed(chunk)
    assert list(watch.values.items()) == list(reference.values.items())
    assert {"layer0.loss", "layer3.loss", "top1", "top5"} <= set(watch.values)


def test_more_keys_than_kept_are_dropped_in_the_same_order() -> None:
    chunk = b"\n".join(b"k%03d=%d" % (i % 90, i) for i in range(900))
    watch, reference = MetricWatch(), _EveryLine()
    watch.feed(chunk)
    reference.feed(chunk)
    assert list(watch.values) == list(reference.values)
    assert len(watch.values) == metrics.MAX_METRICS and watch.dropped == reference.dropped
