"""Checks of settings a launch hands to libraries that refuse them at start-up: the keys of
torch's allocator settings, a context length longer than the target model's own, and MPI
transports that leave a job's ranks unable to reach each other.

Both need only what a capture collects before the launch (``[env]``, ``[command]``,
``[models]``), so the pre-launch guard runs them too (:mod:`runsnap.checks.guard`).
"""

from __future__ import annotations

from runsnap.checks.finding import CONTEXT_FIELDS, Finding, config_field, configured, shown
from runsnap.knowledge.alloc import ALLOC_CONF_VARS, unknown_alloc_keys
from runsnap.knowledge.mpi import unreachable_ranks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.snapshot import Snapshot

__all__ = ["alloc_conf_keys", "context_length", "job_transports"]


def alloc_conf_keys(snap: Snapshot) -> list[Finding]:
    """Keys of ``PYTORCH_CUDA_ALLOC_CONF`` (or its other spellings) that torch does not know:
    torch raises ``Unrecognized key`` at the first allocation, after the model started to
    load."""
    out = []
    env = snap.records.env.vars
    for var in ALLOC_CONF_VARS:
        value = env.get(var)
        if not isinstance(value, str) or value.startswith("<redacted"):
            continue
        for key, meant in unknown_alloc_keys(value):
            out.append(Finding("alloc-conf-key", 92 if meant else 90, (
                f"{var} has the key {key!r}, which torch's caching allocator does not know"
                + (f": a misspelling of {meant!r}?" if meant else "")
                + " torch raises \"Unrecognized key\" at the first allocation"),
                ("env", var), (f"{var}={value}",)))
    return out


#: Options that set the context length, with the engine, the variable that lets a longer one
#: through, and what the engine does without it.
_CONTEXT_OPTIONS = {
    "context-length": ("SGLang", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
                       "ModelConfig._derive_context_length raises ValueError"),
    "max-model-len": ("vLLM", "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
                      "ModelConfig raises ValueError (max_model_len is greater than the derived "
                      "max_model_len)"),
}
_TRUE = ("1", "true", "yes", "y", "on")


def context_length(snap: Snapshot) -> list[Finding]:
    """A ``--context-length`` / ``--max-model-len`` longer than the target model's own
    ``max_position_embeddings`` (under ``text_config`` for a multimodal wrapper)."""
    targets = configured(snap)[1]
    if not targets:
        return []
    source, target, config = targets[0]
    own = config_field(config.raw, CONTEXT_FIELDS)
    if own is None or not isinstance(own[1], int):
        return []
    options = snap.records.command.options
    env = snap.records.env.vars
    out = []
    for option, (engine, allow, raises) in _CONTEXT_OPTIONS.items():
        raw = options.get(option)
        try:
            asked = int(str(raw))
        except ValueError:
            continue
        if asked <= own[1]:
            continue
        allowed = str(env.get(allow, "")).strip().lower() in _TRUE
        out.append(Finding("context-length", 60 if allowed else 93, (
            f"--{option} {asked} is longer than the target model's own {own[0]} ({own[1]}): "
            + (f"{allow} is set, so {engine} warns and goes on (outputs past {own[1]} tokens "
               "may be wrong)" if allowed else
               f"{engine}'s {raises} unless {allow}=1")),
            ("command", "options", option),
            (f"target {source} {shown(target.path)}: {own[0]} = {own[1]}",)))
    return out


def job_transports(snap: Snapshot) -> list[Finding]:
    """``OMPI_MCA_btl`` leaving the ranks of an Open MPI job no transport to reach each other
    (:func:`runsnap.knowledge.mpi.unreachable_ranks`): ``MPI_Init`` fails, and ``mpirun``,
    not the rank, prints why."""
    launcher = snap.records.meta.launcher
    env = snap.records.env.vars
    btl = env.get("OMPI_MCA_btl")
    ranks = launcher.world_size if launcher else None
    if not isinstance(btl, str) or btl.startswith("<redacted") or not ranks:
        return []
    pml = env.get("OMPI_MCA_pml")
    one_node = launcher.local_world_size is None or launcher.local_world_size >= ranks
    why = unreachable_ranks(btl, pml if isinstance(pml, str) else None, ranks, one_node)
    if why is None:
        return []
    return [Finding("mpi-unreachable", 91, (
        f"OMPI_MCA_btl={btl!r}: {why}; MPI_Init fails (\"At least one pair of MPI processes "
        "are unable to reach each other\", printed by mpirun, not by the rank)"),
        ("env", "OMPI_MCA_btl"), (f"OMPI_MCA_btl={btl}", f"ranks: {ranks}"))]
