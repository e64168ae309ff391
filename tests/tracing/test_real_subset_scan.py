"""A bulk read of the environment in real third-party code: Lightning Fabric 2.6.6's
``LSFEnvironment.detect()`` (fixtures/lightning/README.md) tests
``required_env_vars.issubset(os.environ.keys())``, which iterates every name of the
environment, and keeps the four of its set literal. Before, the scan was taken for a copy of
every name (fresh9 ``stale-last-ckpt-in-checkout``: six variables only that scan saw, among
them ``LD_LIBRARY_PATH``, were candidates beside the checkpoint the fit resumed from)."""

from __future__ import annotations

from runsnap.tracing.scans import scan_filter
from tests.conftest import asset

ROOT = asset("lightning", "2.6.6")
LSF = ROOT / "lightning_fabric" / "plugins" / "environments" / "lsf.py"


def _line(text: str) -> int:
    return next(n for n, line in enumerate(LSF.read_text().splitlines(), 1) if text in line)


def test_lightnings_lsf_detect_reads_only_its_four_names() -> None:
    n = _line("required_env_vars.issubset(os.environ.keys())")
    site = f"lightning_fabric/plugins/environments/lsf.py:{n} in detect"
    # the stack as the hook records it: os's mapping plumbing inside, then Lightning's line
    got = scan_filter(["_collections_abc.py:870 in __iter__", site], [str(ROOT)])
    assert got == {"scan": True, "kept": ["JSM_NAMESPACE_LOCAL_RANK", "JSM_NAMESPACE_SIZE",
                                          "LSB_DJOB_RANKFILE", "LSB_JOBID"]}, got


def test_a_subset_test_on_a_name_assigned_elsewhere_keeps_nothing_it_cannot_see(tmp_path) -> None:
    """A set not written as a literal nearby (built from a config) names nothing: the read
    stays a copy of every name, as before."""
    mod = tmp_path / "pkg" / "detect.py"
    mod.parent.mkdir()
    mod.write_text("import os\n\ndef detect(required):\n"
                   "    return required.issubset(os.environ.keys())\n")
    got = scan_filter(["pkg/detect.py:4 in detect"], [str(tmp_path)])
    assert got == {"scan": False}, got
