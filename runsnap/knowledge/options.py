"""What runsnap knows about launch options by their names alone: the ones that only say how
often, where or how loudly a program reports, never what it computes.

Two runs launched with another ``--log-every`` or ``--report_to`` were asked to *report*
otherwise; nothing they compute changed. Such an option is a cause only when the runs' own
words tie it to the outcome (a ``--output-dir`` the error quotes, unwritable): that evidence
from the runs outranks this (:mod:`runsnap.diffing.evidence`). Without it, it ranks below every
option that decides what the program does, and is never one of an undecided verdict's
candidates while such an option is (:mod:`runsnap.diffing.sections.command`).

The words come from the argument tables of the launchers and trainers people pass them to:
Hugging Face ``TrainingArguments`` (``logging_steps``, ``logging_dir``, ``save_steps``,
``save_total_limit``, ``output_dir``, ``report_to``, ``run_name``, ``disable_tqdm``,
``log_level``), PyTorch Lightning's ``log_every_n_steps`` and ``enable_progress_bar``,
torchvision's reference scripts (``--print-freq``, ``--output-dir``), fairseq
(``--log-interval``, ``--log-format``, ``--save-dir``, ``--tensorboard-logdir``,
``--wandb-project``), and the ``--verbose`` / ``--quiet`` of every CLI.
"""

from __future__ import annotations

import re

__all__ = ["REPORTING_ANY", "REPORTING_FIRST", "endpoint_setting", "parallelism_option",
           "process_count_option", "reporting_option", "reporting_variable", "seed_setting"]

#: An option whose first word is one of these says where or how often the program reports.
REPORTING_FIRST = frozenset({
    "log", "logging", "logdir", "print", "report", "save", "output", "out", "outdir",
    "dump", "wandb", "mlflow", "tensorboard", "verbose", "verbosity", "quiet", "progress",
})

#: An option holding one of these words anywhere is about reporting too (``disable_tqdm``,
#: ``enable_progress_bar``, ``run_name``, ``experiment-name``).
REPORTING_ANY = frozenset({"tqdm", "progress", "verbose", "verbosity", "wandb", "mlflow",
                           "tensorboard"})

#: Word pairs that name a run for a tracker, not what it does.
_RUN_NAMES = frozenset({("run", "name"), ("run", "id"), ("experiment", "name"),
                        ("exp", "name"), ("run", "tag"), ("run", "tags")})



def _words(key: str) -> list[str]:
    """The lower-case words of an option or variable name (``--intra-op-threads``: intra, op,
    threads; ``PL_GLOBAL_SEED``: pl, global, seed)."""
    return [w for w in re.split(r"[-_.]+", key.lstrip("-").lower()) if w]

def reporting_option(key: str) -> bool:
    """Whether option ``key`` (``--log-every``, ``--report_to``) only says where, how often or
    how loudly the program reports (:data:`REPORTING_FIRST`, :data:`REPORTING_ANY`).

    >>> [reporting_option(k) for k in ("--log-every", "--logging_steps", "--output-dir",
    ...                                 "--disable_tqdm", "--run-name", "--print-freq")]
    [True, True, True, True, True, True]
    >>> [reporting_option(k) for k in ("--lr", "--batch-size", "--seed", "--outlier-threshold",
    ...                                 "--save", "--checkpoint", "--name", "--eval-steps")]
    [False, False, False, False, True, False, False, False]
    """
    words = _words(key)
    if not words:
        return False
    if words[0] in REPORTING_FIRST or any(w in REPORTING_ANY for w in words):
        return True
    return any(pair in _RUN_NAMES for pair in zip(words, words[1:], strict=False))


#: Word pairs in a variable's name that say how the program logs (``*_LOG_LEVEL``).
_LOG_PAIRS = frozenset({"level", "every", "steps", "interval", "dir", "format", "freq"})


def reporting_variable(name: str) -> bool:
    """Whether environment variable ``name`` only says how the program reports: a word of
    :data:`REPORTING_ANY` anywhere (Lightning's ``PL_TRAINER_ENABLE_PROGRESS_BAR``, the
    flags-library form of ``enable_progress_bar``; ``TRANSFORMERS_VERBOSITY``,
    ``HF_HUB_DISABLE_PROGRESS_BARS``, ``WANDB_MODE``) or a log setting (``*_LOG_LEVEL``,
    ``LOGGING_STEPS``). A variable's first word is mostly its owner's prefix, so the first
    words of :data:`REPORTING_FIRST` alone do not count (``OUTPUT_*``, ``SAVE_*`` may decide
    what is computed from).

    >>> [reporting_variable(n) for n in ("PL_TRAINER_ENABLE_PROGRESS_BAR", "TQDM_DISABLE",
    ...                                  "TRANSFORMERS_VERBOSITY", "GLOG_LOG_LEVEL")]
    [True, True, True, True]
    >>> [reporting_variable(n) for n in ("PL_TRAINER_LIMIT_TRAIN_BATCHES", "LOGNAME",
    ...                                  "SAVE_DIR", "NCCL_DEBUG", "OMP_NUM_THREADS")]
    [False, False, False, False, False]
    """
    words = [w for w in name.lower().split("_") if w]
    if any(w in REPORTING_ANY for w in words):
        return True
    return any(w in ("log", "logging") and nxt in _LOG_PAIRS
               for w, nxt in zip(words, words[1:], strict=False))


#: Words of an option that counts threads or parallel jobs (onnxruntime's
#: ``intra_op_num_threads``, scikit-learn's ``n_jobs``, ``make -j``'s ``--jobs``).
_PARALLEL = frozenset({"thread", "threads", "nthread", "nthreads", "jobs", "njobs"})


def parallelism_option(key: str) -> bool:
    """Whether option ``key`` counts the threads or parallel jobs that do the work
    (``--intra-op-threads``, ``--num-threads``, ``--n_jobs``): how many work at once, not what
    is computed. Such an option is a cause when the runs tie it to the outcome; without
    that, it ranks below options that decide what the program computes (a float reduction
    in another order moves a metric by rounding, not by a different answer).

    >>> [parallelism_option(k) for k in ("--intra-op-threads", "--num_threads", "--n_jobs",
    ...                                   "--jobs", "--workers", "--batch-size", "--thread-safe")]
    [True, True, True, True, False, False, False]
    """
    words = _words(key)
    return bool(words) and words[-1] in _PARALLEL


#: Words of an option that counts worker processes (gunicorn's ``--workers``, a pool's, a
#: DataLoader's ``--num-workers``): 0 or 1 against more decides whether the work is split
#: across processes at all, so only a count of 2 or more in both runs says "how many".
_PROCESSES = frozenset({"workers", "nworkers", "procs", "processes"})


def process_count_option(key: str) -> bool:
    """Whether option ``key`` counts worker processes (``--workers``, ``--num-workers``,
    ``--processes``), or threads or jobs (:func:`parallelism_option`).

    >>> [process_count_option(k) for k in ("--workers", "--num_workers", "--intra-op-threads",
    ...                                    "--worker-tmp-dir", "--batch-size")]
    [True, True, True, False, False]
    """
    words = _words(key)
    return bool(words) and (words[-1] in _PROCESSES or words[-1] in _PARALLEL)


#: Last words of a setting that says where a process listens or connects.
_ENDPOINT = frozenset({"port", "addr", "address", "host", "hostname", "endpoint"})


def endpoint_setting(key: str) -> bool:
    """Whether variable or option ``key`` says where a process listens or connects
    (``MASTER_PORT``, ``MASTER_ADDR``, ``--rdzv-endpoint``, ``--port``): an error that quotes
    its value says where the run connected, not by itself that the place was wrong (nothing
    listened there: what should have listened may be the cause).

    >>> [endpoint_setting(k) for k in ("MASTER_PORT", "--rdzv-endpoint", "--master_addr",
    ...                                "GLOO_SOCKET_IFNAME", "--batch-size")]
    [True, True, True, False, False]
    """
    words = _words(key)
    return bool(words) and words[-1] in _ENDPOINT


def seed_setting(key: str) -> bool:
    """Whether variable or option ``key`` is a random seed (``PL_GLOBAL_SEED``, ``SEED``,
    ``--seed``): another value is another result, by what a seed is.

    >>> [seed_setting(k) for k in ("PL_GLOBAL_SEED", "SEED", "--data-seed", "SEEDS_DIR")]
    [True, True, True, False]
    """
    words = _words(key)
    return bool(words) and words[-1] == "seed"
