"""Options are declared once: the shared ones (``--format``, ``--dir``, ``-o``, ``--yes``) in
:mod:`runsnap.base.options`, capture's in its table, which the fast parser and click read and
:class:`~runsnap.capturing.options.CaptureOptions` and the public functions' keywords follow."""

from __future__ import annotations

import inspect
import re

import runsnap
from runsnap.base.options import DIR, FORMAT, METRIC_TOLERANCE, OUTPUT, YES
from runsnap.capturing.options import CAPTURE_OPTIONS, CaptureOptions
from runsnap.commands.capture import CaptureRequest
from tests.conftest import ROOT

#: Keywords of the public functions that are not capture options: what is captured and how it
#: is told (the command line gives these otherwise, or not at all).
NOT_OPTIONS = {"argv", "pid", "env", "cwd", "on_saved", "companion", "started"}


def test_each_shared_flag_is_declared_once() -> None:
    for opt in (DIR, FORMAT, OUTPUT, YES, METRIC_TOLERANCE):
        for flag in opt.flags:
            places = [f"{p.relative_to(ROOT)}:{n}"
                      for p in sorted((ROOT / "runsnap").rglob("*.py"))
                      for n, line in enumerate(p.read_text().splitlines(), 1)
                      if re.search(rf'(?:click\.option|Opt)\(.*"{re.escape(flag)}"', line)]
            assert places == ["runsnap/base/options.py:" + places[0].rsplit(":", 1)[1]], places


def test_the_record_is_the_table() -> None:
    """Every option of the table is a field of the record (or the request's own), and the
    defaults agree (a record default of None: the table's default, applied below)."""
    fields = set(CaptureOptions._fields) - {"started"}
    dests = {opt.dest for opt in CAPTURE_OPTIONS}
    assert fields - {"trace"} == dests - set(CaptureRequest.OWN) - {"no_trace"}
    record = CaptureOptions()
    for opt in CAPTURE_OPTIONS:
        if opt.dest in fields and not opt.multiple:
            assert getattr(record, opt.dest) in (opt.default, None), opt.dest


def test_the_public_keywords_are_the_records_fields_with_its_defaults() -> None:
    record = CaptureOptions()
    for func in (runsnap.capture, runsnap.capture_pid, runsnap.run):
        for name, param in inspect.signature(func).parameters.items():
            if name in NOT_OPTIONS:
                continue
            assert name in CaptureOptions._fields, (func.__name__, name)
            default = getattr(record, name)
            assert param.default == default or tuple(param.default) == default, \
                (func.__name__, name)
