"""Command-line options as data, declared once: :class:`Opt`, and the options several
commands share (:data:`OUTPUT`, :data:`DIR`, :data:`FORMAT`, :data:`YES`).

Free of click: ``runsnap capture``'s table (:data:`runsnap.capturing.options.CAPTURE_OPTIONS`)
is read by the fast parser on the way to every capture, and by click (``runsnap.cli.options``)
everywhere else. A command whose option means a little more takes the shared one with
:meth:`Opt.but` (its own destination, default or help), never a second declaration.

    >>> DIR.but(dest="out_dir", default=None).flags, DIR.envvar
    (('--dir',), 'RUNSNAP_DIR')
"""

from __future__ import annotations

from runsnap.base.records import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ALLOW_MISSING_SECRETS", "DEFAULT_DIR", "DIR", "DIR_HELP", "FORMAT", "MAX_TRIALS", "METRIC",
           "METRIC_TOLERANCE", "OUTPUT", "QUIET", "TEST", "TIMEOUT", "YES", "Opt"]


class Opt(FrozenRecord):
    """One option: its flags, where its value goes (``dest``), its kind of value, default and
    help.

    >>> Opt(("--label",), "label", default="").but(help="A name.").help
    'A name.'
    """

    flags: tuple[str, ...]
    """``("-o", "--output")``."""
    dest: str
    """The parameter (and record field) its value goes to."""
    kind: str = "str"
    """``str``; ``file`` / ``dir`` (a path that must not be an existing directory / file);
    ``path``; ``count`` (an integer >= 0); ``positive`` (an integer >= 1); ``int``; ``seconds``
    (a number >= 0); ``after`` (a number > 0); ``flag``; ``choice`` (one of ``choices``)."""
    default: Any = None
    multiple: bool = False
    """Repeatable: the values add up."""
    envvar: str | None = None
    """The variable that gives the value when the command line does not."""
    metavar: str | None = None
    help: str = ""
    choices: tuple[str, ...] = ()

    def but(self, **changes: Any) -> Opt:
        """This option with some of its declaration changed (its flags never)."""
        return self.replace(**changes)


#: The snapshot folder when no ``-o``/``--dir`` is given (also ``RUNSNAP_DIR``).
DEFAULT_DIR = ".runsnap"

#: Where ``show``, ``ls`` and ``diff`` look for snapshots named ``@N`` / ``@label``.
DIR_HELP = "Folder of the snapshots named @1 (newest), @2, @label (default: ./.runsnap)."

#: ``--dir DIR``: the snapshot folder.
DIR = Opt(("--dir",), "snap_dir", kind="dir", envvar="RUNSNAP_DIR", default=DEFAULT_DIR,
          help=DIR_HELP)

#: ``-o FILE``: where the result is written instead of standard output.
OUTPUT = Opt(("-o", "--output"), "output", kind="file",
             help="Write the report to this file instead of standard output.")

#: ``--format NAME``: which renderer; each command gives its names as ``choices``.
FORMAT = Opt(("--format",), "fmt", kind="choice", help="")

#: ``-y``/``--yes``: go on without showing what will run and asking.
YES = Opt(("-y", "--yes"), "yes", kind="flag", default=False, help="")

# How the launches of ``bisect`` and ``why`` are judged and told (the same words in both).

#: ``--timeout S``: a server still running (or ready) after S seconds is good.
TIMEOUT = Opt(("--timeout",), "timeout", kind="after", metavar="S",
              help="A server: still running (or ready) after S seconds is good, an earlier "
                   "exit is bad.")

#: ``--test CMD``: a shell command's exit status judges each launch.
TEST = Opt(("--test",), "test", metavar="CMD",
           help="A shell command whose exit status judges each launch: 0 good, 125 cannot "
                "tell, else bad.")

#: ``--metric NAME``: the metric that decides when GOOD and BAD end alike.
METRIC = Opt(("--metric",), "metric", metavar="NAME",
             help="When GOOD and BAD end alike: the metric whose value decides (default: the "
                  "first the diff finds beyond noise, else wall time, else peak memory).")

#: ``--metric-tolerance [NAME=]TOL``: how far a metric may move between two runs that ended
#: alike and still be noise (``diff``, and ``why``/``bisect`` when a metric judges).
METRIC_TOLERANCE = Opt(("--metric-tolerance",), "metric_tolerance", multiple=True,
                       metavar="[NAME=]TOL",
                       help="How far a metric may move and still be noise, relative to the "
                            "larger value (0.001 or 0.1%; 0 for bit-exact runs; NAME may be a "
                            "glob; repeatable; default 1%, 50% for speed and time).")

#: ``--max-trials N``: stop after N launches with the best answer so far.
MAX_TRIALS = Opt(("--max-trials",), "max_trials", kind="positive",
                 help="Stop after this many launches, with the best answer so far.")

#: ``--allow-missing-secrets``: launch without GOOD's secrets this environment lacks.
ALLOW_MISSING_SECRETS = Opt(("--allow-missing-secrets",), "allow_missing_secrets", kind="flag",
                            default=False,
                            help="Launch without GOOD's secrets that are not in this "
                                 "environment.")

#: ``-q``/``--quiet``: no progress lines.
QUIET = Opt(("-q", "--quiet"), "quiet", kind="flag", default=False,
            help="No progress (on a terminal a status line, else one line a trial).")
