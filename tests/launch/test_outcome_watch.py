"""StreamWatch and outcome.build: tail, first error, warnings, without running anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from runsnap.launch import LaunchResult, frame_names
from runsnap.launch.lines import clean_line, is_error_line, is_warning_line
from runsnap.launch.outcome import build
from runsnap.launch.streams import StreamWatch


def test_tail_keeps_the_last_lines_across_split_chunks() -> None:
    watch = StreamWatch("stdout", tail_lines=3)
    watch.feed(b"one\ntw")
    watch.feed(b"o\nthree\nfour\nfi")
    watch.close()
    assert watch.tail_text() == ["three", "four", "fi"]
    assert (watch.lines, watch.bytes) == (5, len(b"one\ntwo\nthree\nfour\nfi"))


def test_first_error_is_the_exception_line_not_the_traceback_header() -> None:
    watch = StreamWatch("stderr")
    watch.feed(b"INFO loading\nTraceback (most recent call last):\n")
    watch.feed(b'  File "x.py", line 3, in <module>\n    raise ValueError("Error in x")\n')
    watch.feed(b"ValueError: context too long\nRuntimeError: later\n")
    assert watch.first_error == "ValueError: context too long"


def test_warnings_are_collected_once_and_errors_are_not_warnings() -> None:
    watch = StreamWatch("stderr")
    watch.feed(b"\x1b[33mWARNING\x1b[0m low memory\nWARNING low memory\n")
    watch.feed(b"ValueError: Warning: too long\nUserWarning: deprecated\nall fine\n")
    assert watch.warnings == ["WARNING low memory", "UserWarning: deprecated"]
    assert watch.warnings_count == 3
    assert watch.first_error == "ValueError: Warning: too long"


def test_an_endless_line_is_cut() -> None:
    watch = StreamWatch("stdout", tail_lines=2)
    watch.feed(b"x" * 10_000)
    watch.close()
    assert [len(line) for line in watch.tail_text()] == [4096]


@pytest.mark.parametrize(
    ("line", "error", "warning"),
    [
        ("ValueError: Warning: Target model's context_length", True, False),
        ("[rank0]: torch.OutOfMemoryError: CUDA out of memory", True, False),
        ("[2026-01-01] ERROR scheduler: NCCL timeout", True, False),
        ("FATAL: cannot allocate", True, False),
        ("gcc: error: no input files", True, False),
        ("Segmentation fault (core dumped)", True, False),
        ("NCCL WARN Call to connect returned Connection refused", False, True),
        ("FutureWarning: `torch_dtype` is deprecated", False, True),
        ("loaded 61 layers (0 errors), no warnings", False, False),
        ("The server is fired up and ready to roll!", False, False),
    ],
)
def test_line_classes(line: str, error: bool, warning: bool) -> None:
    assert (is_error_line(line), is_warning_line(line)) == (error, warning)


def test_clean_line_shows_what_a_terminal_shows() -> None:
    assert clean_line(b"\x1b[1;31mERROR\x1b[0m x\r\n") == "ERROR x"
    assert clean_line(b" 10%\r 90%\r100%") == "100%"
    assert clean_line(b"caf\xc3\xa9 \xff") == "café \ufffd"


def test_build_names_the_signal_and_says_why_a_stream_was_not_read() -> None:
    result = LaunchResult(argv=("x",), status="signalled", exit_status=137, signal_number=9,
                          pid=12, started_at="a", ended_at="b", duration_s=1.23456,
                          modes={"stdout": "inherit", "stderr": "pipe"})
    watch = StreamWatch("stderr")
    watch.feed(b"Killed\n")
    result.watches["stderr"] = watch
    out = build(result, tail_lines=5)
    assert out["signal"] == "SIGKILL" and out["signal_number"] == 9
    assert out["exit_status"] == 137 and out["duration_s"] == 1.235
    assert out["stdout"]["captured"] is False and "inherit" in out["stdout"]["reason"]
    assert out["stderr"]["tail"] == ["Killed"] and out["tail_lines"] == 5
    assert "peak_rss_bytes" not in out and out["peak_rss"]["samples"] == 0


def test_a_warning_logged_again_later_is_the_same_warning() -> None:
    """The same message at another time (a logger's time stamp in front) is kept once, so
    a warning repeated every step does not crowd the others out of the kept ones."""
    watch = StreamWatch("stderr")
    for second in range(60):
        watch.feed(b"[2026-11-29 17:02:%02d,004] WARNING sched: queue is full\n" % second)
    watch.feed(b"[2026-11-29 17:03:00 TP0] WARNING draft context is shorter\n")
    assert watch.warnings == ["[2026-11-29 17:02:00,004] WARNING sched: queue is full",
                              "[2026-11-29 17:03:00 TP0] WARNING draft context is shorter"]
    assert watch.warnings_count == 61


#: transformers 5.25's load report of a checkpoint without ``lm_head.weight``, as it printed it
#: to a terminal (utils/loading_report.py; recorded from a real GPT-2 load in this session)
LOAD_REPORT = (b"Loading weights: 100%|\xe2\x96\x88\xe2\x96\x88| 16/16 [00:00<00:00]\n"
               b"[transformers] \x1b[1mGPT2LMHeadModel LOAD REPORT\x1b[0m from: /tmp/ckpt\n"
               b"Key            | Status  | \n---------------+---------+-\n"
               b"lm_head.weight | \x1b[31mMISSING\x1b[0m | \n\nNotes:\n"
               b"- \x1b[31mMISSING:\x1b[0m\tthose params were newly initialized because missing "
               b"from the checkpoint.\n")


def test_a_librarys_load_report_is_a_warning() -> None:
    watch = StreamWatch("stderr")
    watch.feed(LOAD_REPORT)
    assert watch.warnings == ["[transformers] GPT2LMHeadModel LOAD REPORT from: /tmp/ckpt",
                              "lm_head.weight | MISSING | "]
    assert watch.first_error is None


def test_a_cxx_exceptions_first_error_is_its_what_line() -> None:
    # libstdc++'s report of an uncaught c10::Error, as torch prints it
    watch = StreamWatch("stderr")
    watch.feed(b"terminate called after throwing an instance of 'c10::Error'\n"
               b"  what():  Unrecognized key 'expandable_segment' in CUDA allocator config.\n"
               b"Exception raised from parseArgs at /pytorch/c10/cuda/CUDAAllocatorConfig.cpp:"
               b"115 (most recent call first):\n"
               b"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f in "
               b"/x/libc10.so)\n")
    assert watch.first_error == ("Unrecognized key 'expandable_segment' in CUDA allocator "
                                 "config.")


def test_torchs_cxx_stack_trace_below_the_python_error_is_not_the_first_error() -> None:
    """Recorded from a real run (torch 2.13.0+cpu, ``TORCH_SHOW_CPP_STACKTRACES=1``): a shape
    mismatch raises c10::Error, and torch prints its C++ frames (``#4 c10::Error::Error(...)``)
    under the Python error line; the first error is that line, the frames are not."""
    data = (Path(__file__).parent / "recorded" / "torch213_cpp_stacktrace.stderr").read_bytes()
    assert b"c10::Error::Error(c10::SourceLocation" in data
    watch = StreamWatch("stderr")
    for i in range(0, len(data), 300):  # as a pipe delivers it
        watch.feed(data[i:i + 300])
    assert watch.first_error == ("RuntimeError: mat1 and mat2 shapes cannot be multiplied "
                                 "(2x3 and 4x5)")


def test_frame_names_are_added_to_copies_of_the_outcome_tracebacks(tmp_path: Path) -> None:
    """The frames of a traceback a real watch read are named after the config keys their code
    reads; the section built is left as it was (the names go to a copy)."""
    script = tmp_path / "model.py"
    script.write_text("class Rope:\n    def __init__(self, config):\n"
                      "        self.theta = config.rope_theta\n"
                      "        raise ValueError(config.get('max_position_embeddings'))\n")
    watch = StreamWatch("stderr")
    watch.feed(f'Traceback (most recent call last):\n  File "{script}", line 4, in __init__\n'
               "    raise ValueError(config.get('max_position_embeddings'))\n"
               "ValueError: 8\n".encode())
    watch.close()
    result = LaunchResult(argv=("python",), status="exited", exit_status=1, started_at="t0", ended_at="t1",
                          duration_s=0.1, watches={"stderr": watch}, modes={"stderr": "pipe"})
    section = build(result)
    named = frame_names.named(section, {"rope_theta", "max_position_embeddings", "vocab_size"})
    assert named["traceback"]["frames"][0]["names"] == ["max_position_embeddings", "rope_theta"]
    assert "names" not in section["traceback"]["frames"][0]
    assert frame_names.named(section, set()) == section
