"""``runsnap report``: a bug report ready to paste into a GitHub issue."""

from __future__ import annotations

import sys

import click

from runsnap.base.terminal import width
from runsnap.cli.boundary import CONTEXT_SETTINGS, finish, runsnap_command
from runsnap.cli.complete import snapshot_names
from runsnap.cli.options import dir_option, echo, format_option, output_option
from runsnap.commands import Result
from runsnap.errors import UsageError

__all__ = ["report"]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("snapshots", nargs=-1, required=True, shell_complete=snapshot_names)
@format_option("markdown", "text", "json", "html",
               help="markdown to paste into a GitHub issue, text to read, json for programs, "
                    "html for a browser (one self-contained page).")
@output_option()
@click.option("--max-chars", type=click.IntRange(min=2000), default=65536, show_default=True,
              help="Fit the report in this many characters (GitHub's limit by default); the "
                   "least important parts are trimmed first, and the report says which.")
@click.option("--attach", "attach_dir", type=click.Path(file_okay=False), default=None,
              help="Also write the full snapshots (scrubbed) into this folder as .txt files "
                   "GitHub accepts as attachments; the report says to attach them.")
@click.option("--log-to", "log_to", metavar="RUN", default=None,
              help="Also keep the report with this tracked run (mlflow:RUN_ID), as "
                   "runsnap/report.html (.md, .txt, .json: by --format).")
@dir_option
@runsnap_command
def report(snapshots: tuple[str, ...], fmt: str, output: str | None, max_chars: int,
           attach_dir: str | None, log_to: str | None, snap_dir: str) -> None:
    """A bug report ready to paste: SNAPSHOT's command, outcome (first error, traceback,
    warnings), the facts maintainers ask for (Python, OS, GPU, driver, CUDA, NCCL, torch,
    sglang, vllm, transformers, flashinfer, triton...), the variables that matter, git state
    and model configs. With SNAPSHOT_B: B is the run reported, A the reference, and the
    ranked diff between them comes second.

    \b
      runsnap report bad.toml | gh issue create --body-file -
      runsnap report good.toml bad.toml --attach report-files/
      runsnap report mlflow:RUN_ID --format html --log-to mlflow:RUN_ID
    """
    # only when this command runs, not for --help or the other commands (~289 ms measured under load)
    from runsnap.render.bugreport import render as render_report
    from runsnap.views.bugreport import attach, build
    from runsnap.views.names import load as load_ref

    if len(snapshots) > 2:
        raise UsageError("report takes one snapshot, or two (A the reference, B the run "
                         "reported); for more, use runsnap diff")
    doc = build([load_ref(s, snap_dir) for s in snapshots])
    files: list[str] = []
    if attach_dir:
        try:
            files = attach(doc, attach_dir)
        except OSError as exc:
            raise UsageError(f"cannot write into {attach_dir}: {exc.strerror or exc}") from None
    text = render_report(doc, fmt, max_chars, files, width=0 if output else width())
    notes: tuple[str, ...] = \
        (f"runsnap: report written to {output} ({len(text):,} characters)",) if output else ()
    if log_to:
        # deferred: runsnap.track, only --log-to needs it
        from runsnap.track import attach as keep_with

        suffix = {"markdown": "md", "text": "txt"}.get(fmt, fmt)
        where = keep_with(log_to, f"report.{suffix}", text.encode("utf-8"))
        notes += (f"runsnap: report kept as {where}",)
    sys.exit(finish(Result(text, output=output, notes=notes), echo))
