"""Variables seen only in bulk copies of the environment (``dict(os.environ)``,
``{**os.environ}``): neither read nor unread by default, since a copy handed to a child is read
by the child, and a settings library reads its prefix from its own copy. Told apart:

* the copying package's own setting, by its name (``gunicorn/config.py`` copies the
  environment and reads ``GUNICORN_CMD_ARGS`` from its copy): ``read``;
* a variable of a native family (``NCCL_*``), read by native libraries from the live
  environment of the process that loads them, never a copy, where the interposer saw no read:
  ``unread``;
* a variable of a known family of another stack (``TORCH_HOME``, ``HF_HOME``) copied by a
  package (python-dotenv's ``resolve_variables`` copies it to expand ``${NAME}`` in a ``.env``)
  in a run of one process, both runs traced, natively too: no child was there to hand the
  copy to, and the stacks of that family read their variables from the live environment by
  name, not from another package's copy: ``unread``;
* a variable that says only how a program reports: ``incidental``.
"""

from __future__ import annotations

from collections.abc import Sequence

from runsnap.diffing.kinds import Evidence
from runsnap.diffing.runfacts import RunFacts
from runsnap.knowledge.env import family_of
from runsnap.knowledge.options import reporting_variable
from runsnap.knowledge.readers import read_through_getenv

__all__ = ["bulk_evidence"]


def bulk_evidence(name: str, runs: Sequence[RunFacts], all_traced: bool) -> Evidence | None:
    """The evidence of variable ``name``, seen only in bulk copies of the environment (see
    the module's text); ``all_traced``: both runs were traced."""
    where = next((w for f in runs for w in (f.bulk_site(name),) if w), "")
    if not where:
        return None
    owner = next((o for f in runs for o in (f.copy_owner(name),) if o), "")
    if owner:
        # gunicorn/config.py copies the environment and reads GUNICORN_CMD_ARGS from its
        # copy: a package's own setting, by its name, in the package's own copy
        return Evidence("read", f"copied in bulk by {owner} at {where}, whose own setting "
                                f"it is by name ({owner.upper()}_*): read from that copy")
    if all_traced and all(f.native for f in runs) and read_through_getenv(name):
        # its readers are native libraries, which read the live environment of the process
        # that loads them (a child handed the copy included), never the copy: the
        # interposer saw every such read, and there was none
        return Evidence("unread", f"copied in bulk at {where}, but no process read it, "
                                  "from Python or natively (both runs traced): the native "
                                  "libraries that read it read the live environment, "
                                  "never a copy")
    copier = next((p for p in (f.installed_at(where) for f in runs) if p), "")
    family = family_of(name)
    if (all_traced and copier and family is not None and all(f.native for f in runs)
            and all(f.alone for f in runs)):
        return Evidence("unread", f"copied in bulk by {copier} at {where}, in a run of one "
                                  "process (no child to hand the copy to), and never read by "
                                  "name: the stacks it belongs to read the live environment, "
                                  "not another package's copy")
    if reporting_variable(name):  # whoever reads the copy, it says how to report
        return Evidence("incidental", f"seen only in a bulk copy of the environment at "
                                      f"{where}; it says only how a program reports")
    return Evidence("name", f"seen only in a bulk copy of the environment at {where}: "
                            "neither read nor unread (a child it was handed to reports "
                            "its own reads)")
