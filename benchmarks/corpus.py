"""The whole diagnosis corpus: the incidents written beside the rules (benchmarks/incidents.py)
and those whose causes act through real third-party code (benchmarks/thirdparty.py), split in
two halves by a fixed rule that looks at nothing but the incident's name; and a third half,
``fresh`` (benchmarks/fresh.py), written later from the outside by someone who did not read the
ranker, that is never tuned on.

The rule: the first byte of ``sha256(name)`` even -> ``tune``, odd -> ``held-out``. It was fixed
before any incident was scored, and :data:`CORPUS` records each incident's half beside it. Tune
the ranker on the ``tune`` half only; the ``held-out`` half is reported separately and untouched.
The ``fresh`` half is not split by name: every incident of benchmarks/fresh.py is in it, and it
is never tuned on either (report it; never change the ranker, or an incident, to fit its score).
The fourth half, ``fresh2`` (benchmarks/fresh2.py), is a second batch written the same way, from
the outside, with other libraries and mechanisms; it is never tuned on either. The fifth,
``fresh3`` (benchmarks/fresh3.py), a third batch written from the outside, is mostly distributed
and engine incidents with real torch (torchrun jobs compared job to job among them); it is never
tuned on either. The sixth, ``fresh4`` (benchmarks/fresh4.py), a fourth batch written from the
outside, is real workloads (the Hugging Face Trainer, torchrun gloo jobs, uvicorn and aiohttp
servers, datasets and polars pipelines, MLflow, jsonargparse, gin); it is never tuned on either.
The ``fresh5`` half (benchmarks/fresh5.py), a fifth batch written from the outside, is real
workloads with other libraries (PEFT, sentence-transformers, XGBoost, LightGBM, gunicorn, PyTorch
Lightning, onnxruntime, DuckDB, multiprocessing pools, sqlite); it is never tuned on either.
The ``fresh6`` half (benchmarks/fresh6.py), another batch written from the outside, is distributed
and engine start-up on the CPU (torchrun and mpirun jobs compared job to job, the c10d TCPStore,
DataLoader workers, torch settings the CPU build reads); it is never tuned on either.
The ``fresh7`` half (benchmarks/fresh7.py), another batch written from the outside, is torchrun
gloo jobs compared job to job, engines (a TCPStore timeout, a KV cache dtype, uvicorn), model
folders edited under transformers, a shared config outside git, a vendored package on
``PYTHONPATH`` and an untracked file shadowing a library; it is never tuned on either.
The ``fresh8`` half (benchmarks/fresh8.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (uneven shards, a sampler's lost ``set_epoch``), engines (a TCPStore
waiting for pipeline stages, ``TORCH_DISTRIBUTED_DEBUG``, an egress proxy), model folders edited
under transformers, a project venv's old pin and a defaults file in the user's home; it is never
tuned on either.
The ``fresh9`` half (benchmarks/fresh9.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (a DDP head no loss uses, ``device_ids`` on CPU modules, a
git-ignored override file), the c10d TCPStore on a port already taken, an engine's
``--max-model-len``, model folders edited under transformers, PyTorch Lightning (a stale
``last.ckpt``, ``16-mixed`` on the CPU), ``PYTHONSAFEPATH`` and pandas 3's copy-on-write; it is
never tuned on either.
The ``fresh10`` half (benchmarks/fresh10.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``--sync-bn`` on CPU modules, a config's ``pos_weight``, a config
key nobody added), the c10d store under ``TORCHELASTIC_USE_AGENT_STORE``, a TensorPipe RPC server,
model folders edited under transformers, ``PYTHONOPTIMIZE``, a uv project venv's major upgrade,
accelerate's default config in a home, Lightning's ``PL_GLOBAL_SEED`` and MLflow; it is never
tuned on either.
The ``fresh11`` half (benchmarks/fresh11.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (a validation all-reduce only rank 0 reaches, a model folder's
``dropout``, an unexpanded ``${BATCH}`` in a YAML config), a tcp:// rendezvous without a rank,
``set_num_interop_threads`` called twice, ``TORCH_FORCE_WEIGHTS_ONLY_LOAD``, model folders edited
under transformers, a Hub model cached in one ``HF_HOME`` only, an editable install from a dev
checkout, a data folder pinned by a variable and a git-ignored thresholds file; it is never tuned
on either.
The ``fresh12`` half (benchmarks/fresh12.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (a ``GLOO_SOCKET_IFNAME`` naming no interface, ``--negatives``, a
model folder's ``item_vocab``), a TCPStore sized from ``WORLD_SIZE``, ``DIST_BACKEND=nccl`` on the
CPU build, a ``TORCH_LOGS`` typo, model folders edited under transformers, a container venv not on
``PATH``, an uncommitted eval config, ``PYTHONHASHSEED``, an uncommitted layer rename and a
scikit-learn penalty its solver refuses; it is never tuned on either.
The ``fresh13`` half (benchmarks/fresh13.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (a ``TMPDIR`` with no folder behind it, an uncommitted
``label_smoothing``, ``GLOO_DEVICE_TRANSPORT=uv``), a TCPStore client sent to ``MASTER_ADDR``,
model folders edited under transformers (``id2label``, ``use_parallel_residual``), ``--dtype`` and
``EVAL_MAX_LENGTH`` in an evaluation, a team package a major version behind, an uncommitted
feature, a git-ignored ``.env`` and an XGBoost tree method the CPU build refuses; it is never
tuned on either.
The ``fresh14`` half (benchmarks/fresh14.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted ``aux_head`` no loss uses, ``--global-batch``,
``DIST_TIMEOUT_S=30m``), a TCPStore on a ``MASTER_PORT`` past the last port, model folders edited
under transformers (``n_positions``, ``activation_function``), a team package a minor version
behind, ``TZ``, ``--resume`` of an older architecture, ``--threshold``, ``EVAL_BATCH_SIZE=0``, a
git-ignored OmegaConf ``local.yaml`` and an uncommitted ``view``; it is never tuned on either.
The ``fresh15`` half (benchmarks/fresh15.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted save of the DDP wrapper's ``state_dict``,
``SM_HP_WEIGHT_DECAY``, ``TORCH_DIST_INIT_BARRIER=true``), a TCPStore wait timeout in
milliseconds given as seconds, ``SM_NUM_GPUS=0`` sizing an engine's workers, model folders edited
under transformers (``n_head``, ``layer_norm_epsilon``), a plugin package missing from a venv, an
uncommitted ``model.eval()`` removal, ``--nesterov``, a git-ignored ``params.local.json``, a
commit dropping features and an OmegaConf ``${oc.env:SM_CHANNEL_TRAIN}``; it is never tuned on
either.
The ``fresh16`` half (benchmarks/fresh16.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted ``ReduceOp.AVG`` on an integer count,
``LR_WARMUP_STEPS``, ``CKPT_EVERY=0``), a TCPStore port holding an unexpanded GitHub Actions
expression, an empty ``OMP_NUM_THREADS``, ``--num-classes``, ``--weight-decay``,
``persistent_workers`` without workers, a model folder re-exported as bfloat16, a team package a
minor version ahead, a git-ignored ``hyperparameters.json`` of strings, an uncommitted ``heads``
and ``SM_MODEL_DIR`` set only in SageMaker; it is never tuned on either.
The ``fresh17`` half (benchmarks/fresh17.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted ``ReduceOp.BAND`` on a float flag,
``GRAD_ACCUM_STEPS``, ``--val-fraction 0``), a Kubernetes service link's ``MASTER_PORT``, an old
word in ``FP32_PRECISION``, model folders edited under transformers (``problem_type``,
``rope_theta``), ``--folds 1``, ``CLASS_WEIGHT``, ``--C``, a team package a minor version behind,
an uncommitted pandas ``date_format`` and a git-ignored ``eval.local.yaml``; it is never tuned on
either.
The ``fresh18`` half (benchmarks/fresh18.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``GLOO_SOCKET_IFNAME`` naming a missing interface,
``--label-smoothing``, an uncommitted ``optimizer`` in a git-tracked config), ``WORLD_SIZE`` left
exported, a TCPStore ``--store-port`` past 65535, ``TORCH_DETERMINISTIC_DEBUG_MODE=true``, an
unknown ``TORCH_LOGS`` option, a model folder's ``n_positions``, a team package a major version
ahead, a git-ignored dynaconf ``settings.local.toml``, ``PYTHONHASHSEED`` set on one side only,
LightGBM's ``--num-leaves``, an uncommitted collate edit and an uncommitted ``bagging_fraction``;
it is never tuned on either.
The ``fresh19`` half (benchmarks/fresh19.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``--sparse-embeddings`` under Adam, an uncommitted ``mode="sum"``
pooling, an uncommitted ``dist.gather`` with a gather list on every rank), a TCPStore
``--coordinator-host`` given as ``host:port``, ``CUDA_VISIBLE_DEVICES`` holding GPU UUIDs,
``PL_TRAINER_ACCELERATOR=gpu`` on a CPU machine, a model folder's ``type_vocab_size`` and
``num_hidden_layers``, team packages a major version apart (``boxkit``, ``skuvocab``), an
uncommitted feature column against a saved model, a forecast config outside git and XGBoost's
``--objective reg:squaredlogerror``; it is never tuned on either.
The ``fresh20`` half (benchmarks/fresh20.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``--batch-size`` leaving BatchNorm one sample per rank,
``EMA_DECAY``, an uncommitted loss switch on integer labels), a nested ``OMP_NUM_THREADS`` list,
a ``CKPT_ROOT`` URL given to ``torch.save``, DataLoader ``--num-workers`` pickling a sqlite
connection, model folders under transformers (``pad_token_id``, ``--max-length`` past the
positions), a team package a minor version ahead, shared statistics regenerated outside git, an
uncommitted ``.view`` and scikit-learn TF-IDF's ``--min-df`` and ``--ngram-max``; it is never
tuned on either.
The ``fresh21`` half (benchmarks/fresh21.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted station vocabulary sized per rank shard,
``LR_SCHEDULE``, an uncommitted ``dropout`` typo in a git-tracked config), ``OneCycleLR`` under
``--epochs`` and an uncommitted ``pct_start``, ``PYTHONIOENCODING=ascii``, an uncommitted
``@torch.no_grad()``, personal overrides in the home folder, ``INFER_DEVICE`` given to
``torch.load``, ``DETERMINISTIC`` against max-unpool, a model folder's ``vocab_size``,
scikit-learn's ``--max-depth`` and a team package a minor version ahead; it is never tuned on
either.
The ``fresh22`` half (benchmarks/fresh22.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted ``dropout`` typo in a git-tracked config, ``SEED``,
an uncommitted clipping that reads a missing config key), ``TRAIN_DETERMINISTIC`` and ``put_``,
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` on one side only, an ``env://`` rendezvous without
``MASTER_PORT``, model folders under transformers (``vocab_size``, ``num_attention_heads``),
team packages a version apart (``gaugecal``, ``tsfeat``), a git-ignored ``.env``'s
``TEST_SIZE``, scikit-learn's ``--max-depth`` and an uncommitted ``StandardScaler()`` on sparse
features; it is never tuned on either.
The ``fresh23`` half (benchmarks/fresh23.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``--dist-timeout 1`` while rank 0 alone scores the fleet,
``DDP_COMM_HOOK=fp16``, an uncommitted ``all_gather_into_tensor`` into a wrongly sized buffer, an
uncommitted ``lr: 3e-3`` that PyYAML reads as a string), ``CKPT_MMAP`` on a legacy checkpoint,
``COMPILE_MODE=max_autotune``, a ViT folder's ``image_size`` and ``qkv_bias``, a team package a
major version ahead (``invparse``), a git-ignored logging.yaml pointing at a missing volume, an
uncommitted ``stratify`` removal, ``CALIBRATION_METHOD`` and ``--scoring roc-auc``; it is never
tuned on either.
The ``fresh24`` half (benchmarks/fresh24.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted ``eps: 1e-8`` that PyYAML reads as a string,
``DATA_FRACTION``, ``--classes``, ``EVAL_RANKS`` naming more ranks than the job has), an
uncommitted ``num_workers=0`` beside ``prefetch_factor``, ``MP_START_METHOD=spawn`` and a dataset
holding a lambda, ``CPU_AMP``, model folders under transformers (``hidden_dim``, ``activation``),
a team package a minor version behind (``vibfeat``), a git-ignored params.yaml's IsolationForest
``contamination``, gradient boosting's ``--subsample`` and ``N_JOBS=0``; it is never tuned on
either.
The ``fresh25`` half (benchmarks/fresh25.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``--warmup-epochs`` leaving a cosine schedule no epochs, an
uncommitted ``mixup_alpha``, a ``CKPT_DIR`` whose ``~`` systemd never expands), an ``env://``
rendezvous under a ``RANK`` left exported, ``--device cuda`` on the CPU build, a model folder
under transformers (``bos_token_id``, linear ``rope_parameters``), a perplexity ``--stride 0``,
a team package a version apart (``qckit`` 2.0 and 1.3), a git-ignored ``risk.local.toml``'s
``max_depth = -1``, an uncommitted pandas ``groupby().mean()`` and ``DEBUG_SUBSAMPLE``; it is
never tuned on either.
The ``fresh26`` half (benchmarks/fresh26.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``--heads`` that do not divide the embedding, ``TRAIN_FRACTION``,
an uncommitted ``DistributedSampler`` with one replica too few), a ``TCPStore`` sized from LSF's
``LSB_DJOB_NUMPROC``, an engine's ``KV_CACHE_GB`` refused by the CPU allocator,
``PYTHONWARNINGS=error`` against a deprecated collective, a GPT-2 folder's ``n_inner`` and
``scale_attn_weights``, a team package a major version apart (``lotcodes``), an uncommitted
``loss = "exponential"`` in a git-tracked config, ``--n-neighbors 1``, an uncommitted
``stratify=y`` and an uncommitted ``OneHotEncoder(sparse=False)``; it is never tuned on either.
The ``fresh28`` half (benchmarks/fresh28.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``GLOO_SOCKET_IFNAME`` naming an interface the host lacks, an
uncommitted ``pool: max``, ``CKPT_DIR`` pointing at a ``gs://`` bucket), a worker ``TCPStore``
dialling a ``MASTER_ADDR`` from another pod, ``PJRT_DEVICE`` and ``XLA_USE_BF16`` read by a
forecaster, an uncommitted ``reduction="none"``, ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` against a
checkpoint holding its argparse namespace, a Llama folder's ``num_key_value_heads`` and
``hidden_act``, a team package a minor version apart (``gridtariff``), XGBoost's ``gpu_hist`` in a
git-ignored params.yaml and ``--target``; it is never tuned on either.
The ``fresh29`` half (benchmarks/fresh29.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (``SUBGROUP_SIZE`` larger than the job's world for
``new_subgroups``, ``--optimizer adamw``, ``RUN_NAME`` from a branch name with a slash), a
one-process scoring run whose ``SCORE_INIT_METHOD`` names another service's ``tcp://`` store, an
uncommitted weight tie refused by safetensors, a git-ignored ``lm.local.yaml``, a BERT folder's
``add_cross_attention`` and ``is_decoder``, a team package a major version apart (``leakfeat``),
a random forest's ``max_features: auto`` in a git-ignored params.json, ``CLIP_QUANTILE``, an
uncommitted edit dropping ``handle_unknown="ignore"`` and ``--n-estimators 0``; it is never
tuned on either.
The ``fresh30`` half (benchmarks/fresh30.py), another batch written from the outside, is torchrun
gloo jobs compared job to job (an uncommitted ``find_unused_parameters=False`` beside an idle
head, a git-ignored train.local.yaml's ``lr``, ``--resume`` naming a checkpoint never written), a
``TCPStore`` timeout read from ``STORE_TIMEOUT=90s``, ``REPRODUCIBLE=1`` turning on deterministic
algorithms over a ``put_``, ``--prefetch-factor`` without workers, a team package a major version
apart (``hypnokit``), a BERT folder's ``pad_token_id`` past the vocabulary, ``MAX_SEQ_LEN``, a
git-ignored LightGBM ``objective``, ``--min-child-samples``, uncommitted balanced sample weights
and ``DATA_VERSION``; it is never tuned on either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.engines import ENGINES
from benchmarks.fresh import FRESH
from benchmarks.fresh2 import FRESH2
from benchmarks.fresh3 import FRESH3
from benchmarks.fresh4 import FRESH4
from benchmarks.fresh5 import FRESH5
from benchmarks.fresh6 import FRESH6
from benchmarks.fresh7 import FRESH7
from benchmarks.fresh8 import FRESH8
from benchmarks.fresh9 import FRESH9
from benchmarks.fresh10 import FRESH10
from benchmarks.fresh11 import FRESH11
from benchmarks.fresh12 import FRESH12
from benchmarks.fresh13 import FRESH13
from benchmarks.fresh14 import FRESH14
from benchmarks.fresh15 import FRESH15
from benchmarks.fresh16 import FRESH16
from benchmarks.fresh17 import FRESH17
from benchmarks.fresh18 import FRESH18
from benchmarks.fresh19 import FRESH19
from benchmarks.fresh20 import FRESH20
from benchmarks.fresh21 import FRESH21
from benchmarks.fresh22 import FRESH22
from benchmarks.fresh23 import FRESH23
from benchmarks.fresh24 import FRESH24
from benchmarks.fresh25 import FRESH25
from benchmarks.fresh26 import FRESH26
from benchmarks.fresh27 import FRESH27
from benchmarks.fresh28 import FRESH28
from benchmarks.fresh29 import FRESH29
from benchmarks.fresh30 import FRESH30
from benchmarks.incidents import INCIDENTS, Incident
from benchmarks.thirdparty import THIRD_PARTY
from benchmarks.tune2 import TUNE2
from benchmarks.tune3 import TUNE3
from benchmarks.tune4 import TUNE4
from benchmarks.tune5 import TUNE5
from benchmarks.tune6 import TUNE6
from benchmarks.tune_warnings import TUNE_WARNINGS

TUNE, HELD_OUT, FRESH_HALF, FRESH2_HALF = "tune", "held-out", "fresh", "fresh2"
FRESH3_HALF, FRESH4_HALF, FRESH5_HALF = "fresh3", "fresh4", "fresh5"
FRESH6_HALF, FRESH7_HALF, FRESH8_HALF = "fresh6", "fresh7", "fresh8"
FRESH9_HALF, FRESH10_HALF, FRESH11_HALF = "fresh9", "fresh10", "fresh11"
FRESH12_HALF, FRESH13_HALF, FRESH14_HALF = "fresh12", "fresh13", "fresh14"
FRESH15_HALF, FRESH16_HALF, FRESH17_HALF = "fresh15", "fresh16", "fresh17"
FRESH18_HALF, FRESH19_HALF, FRESH20_HALF = "fresh18", "fresh19", "fresh20"
FRESH21_HALF, FRESH22_HALF, FRESH23_HALF = "fresh21", "fresh22", "fresh23"
FRESH24_HALF, FRESH25_HALF, FRESH26_HALF = "fresh24", "fresh25", "fresh26"
FRESH27_HALF, FRESH28_HALF, FRESH29_HALF = "fresh27", "fresh28", "fresh29"
FRESH30_HALF = "fresh30"
#: Every half, in the order reports show them.
HALVES = (TUNE, HELD_OUT, FRESH_HALF, FRESH2_HALF, FRESH3_HALF, FRESH4_HALF, FRESH5_HALF,
          FRESH6_HALF, FRESH7_HALF, FRESH8_HALF, FRESH9_HALF, FRESH10_HALF, FRESH11_HALF,
          FRESH12_HALF, FRESH13_HALF, FRESH14_HALF, FRESH15_HALF,
          FRESH16_HALF, FRESH17_HALF, FRESH18_HALF, FRESH19_HALF, FRESH20_HALF,
          FRESH21_HALF, FRESH22_HALF, FRESH23_HALF, FRESH24_HALF, FRESH25_HALF,
          FRESH26_HALF, FRESH27_HALF, FRESH28_HALF, FRESH29_HALF, FRESH30_HALF)
#: The halves written from the outside, never tuned on.
FRESH_HALVES = (FRESH_HALF, FRESH2_HALF, FRESH3_HALF, FRESH4_HALF, FRESH5_HALF, FRESH6_HALF,
                FRESH7_HALF, FRESH8_HALF, FRESH9_HALF, FRESH10_HALF, FRESH11_HALF, FRESH12_HALF,
                FRESH13_HALF, FRESH14_HALF, FRESH15_HALF, FRESH16_HALF, FRESH17_HALF,
                FRESH18_HALF, FRESH19_HALF, FRESH20_HALF, FRESH21_HALF, FRESH22_HALF,
                FRESH23_HALF, FRESH24_HALF, FRESH25_HALF, FRESH26_HALF, FRESH27_HALF,
                FRESH28_HALF, FRESH29_HALF, FRESH30_HALF)


def half_of(name: str) -> str:
    """The half an incident belongs to, from its name alone.

    >>> half_of("seed-flag-vs-option"), half_of("noise-only")
    ('tune', 'held-out')
    """
    return TUNE if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else HELD_OUT


@dataclass(frozen=True)
class Entry:
    """One incident of the corpus with the half it belongs to."""

    name: str
    build: Callable[[Path], Incident]
    half: str
    source: str
    """``rules`` (written beside the rules), ``third-party`` (acts through real libraries),
    ``engines``, ``tune2`` ... ``tune6`` and ``tune_warnings`` (issue 41's tune incidents) or
    ``fresh`` / ``fresh2`` / ``fresh3`` / ``fresh4`` / ``fresh5`` / ``fresh6`` / ``fresh7`` /
    ``fresh8`` / ``fresh9`` / ``fresh10`` / ``fresh11`` / ``fresh12`` / ``fresh13`` /
    ``fresh14`` / ``fresh15`` / ``fresh16`` / ``fresh17`` / ``fresh18`` / ``fresh19`` /
    ``fresh20`` / ``fresh21`` / ``fresh22`` / ``fresh23`` / ``fresh24`` / ``fresh25`` /
    ``fresh26`` / ``fresh27`` / ``fresh28`` / ``fresh29`` / ``fresh30`` (acts through real
    libraries, written from the outside: benchmarks/fresh.py ... fresh30.py)."""


def _name(build: Callable[[Path], Incident]) -> str:
    return build.__name__.replace("_", "-")


#: Every incident, with its half.
CORPUS: list[Entry] = [
    *(Entry(_name(b), b, half_of(_name(b)), "rules") for b in INCIDENTS),
    *(Entry(_name(b), b, half_of(_name(b)), "third-party") for b in THIRD_PARTY),
    # distributed and engine incidents (issue 41), written to tune on: all in the tune half
    *(Entry(_name(b), b, TUNE, "engines") for b in ENGINES),
    # one difference, one line (issue 41 item 9, w3-41c): all in the tune half
    *(Entry(_name(b), b, TUNE, "tune2") for b in TUNE2),
    # the verdict's confidence (issue 41, w3-41a), written from the outside: all in the tune half
    *(Entry(_name(b), b, TUNE, "tune3") for b in TUNE3),
    # deprecation notices beside the real cause (issue 41, w3-41d): all in the tune half
    *(Entry(_name(b), b, TUNE, "tune_warnings") for b in TUNE_WARNINGS),
    # data files the program opened (issue 41, w5-41a): all in the tune half
    *(Entry(_name(b), b, TUNE, "tune4") for b in TUNE4),
    # values quoted, messages naming inputs by their words (issue 41, w5-41b): tune half
    *(Entry(_name(b), b, TUNE, "tune5") for b in TUNE5),
    # a library's setting read at its import beside the real cause (issue 41 item 4): tune half
    *(Entry(_name(b), b, TUNE, "tune6") for b in TUNE6),
    # never tuned on: the whole of benchmarks/fresh.py is the third half
    *(Entry(_name(b), b, FRESH_HALF, "fresh") for b in FRESH),
    # never tuned on either: the whole of benchmarks/fresh2.py is the fourth half
    *(Entry(_name(b), b, FRESH2_HALF, "fresh2") for b in FRESH2),
    # never tuned on either: the whole of benchmarks/fresh3.py is the fifth half
    *(Entry(_name(b), b, FRESH3_HALF, "fresh3") for b in FRESH3),
    # never tuned on either: the whole of benchmarks/fresh4.py is the sixth half
    *(Entry(_name(b), b, FRESH4_HALF, "fresh4") for b in FRESH4),
    # never tuned on either: the whole of benchmarks/fresh5.py is the fresh5 half
    *(Entry(_name(b), b, FRESH5_HALF, "fresh5") for b in FRESH5),
    # never tuned on either: the whole of benchmarks/fresh6.py is the fresh6 half
    *(Entry(_name(b), b, FRESH6_HALF, "fresh6") for b in FRESH6),
    # never tuned on either: the whole of benchmarks/fresh7.py is the fresh7 half
    *(Entry(_name(b), b, FRESH7_HALF, "fresh7") for b in FRESH7),
    # never tuned on either: the whole of benchmarks/fresh8.py is the fresh8 half
    *(Entry(_name(b), b, FRESH8_HALF, "fresh8") for b in FRESH8),
    # never tuned on either: the whole of benchmarks/fresh9.py is the fresh9 half
    *(Entry(_name(b), b, FRESH9_HALF, "fresh9") for b in FRESH9),
    # never tuned on either: the whole of benchmarks/fresh10.py is the fresh10 half
    *(Entry(_name(b), b, FRESH10_HALF, "fresh10") for b in FRESH10),
    # never tuned on either: the whole of benchmarks/fresh11.py is the fresh11 half
    *(Entry(_name(b), b, FRESH11_HALF, "fresh11") for b in FRESH11),
    # never tuned on either: the whole of benchmarks/fresh12.py is the fresh12 half
    *(Entry(_name(b), b, FRESH12_HALF, "fresh12") for b in FRESH12),
    # never tuned on either: the whole of benchmarks/fresh13.py is the fresh13 half
    *(Entry(_name(b), b, FRESH13_HALF, "fresh13") for b in FRESH13),
    # never tuned on either: the whole of benchmarks/fresh14.py is the fresh14 half
    *(Entry(_name(b), b, FRESH14_HALF, "fresh14") for b in FRESH14),
    # never tuned on either: the whole of benchmarks/fresh15.py is the fresh15 half
    *(Entry(_name(b), b, FRESH15_HALF, "fresh15") for b in FRESH15),
    # never tuned on either: the whole of benchmarks/fresh16.py is the fresh16 half
    *(Entry(_name(b), b, FRESH16_HALF, "fresh16") for b in FRESH16),
    # never tuned on either: the whole of benchmarks/fresh17.py is the fresh17 half
    *(Entry(_name(b), b, FRESH17_HALF, "fresh17") for b in FRESH17),
    # never tuned on either: the whole of benchmarks/fresh18.py is the fresh18 half
    *(Entry(_name(b), b, FRESH18_HALF, "fresh18") for b in FRESH18),
    # never tuned on either: the whole of benchmarks/fresh19.py is the fresh19 half
    *(Entry(_name(b), b, FRESH19_HALF, "fresh19") for b in FRESH19),
    # never tuned on either: the whole of benchmarks/fresh20.py is the fresh20 half
    *(Entry(_name(b), b, FRESH20_HALF, "fresh20") for b in FRESH20),
    # never tuned on either: the whole of benchmarks/fresh21.py is the fresh21 half
    *(Entry(_name(b), b, FRESH21_HALF, "fresh21") for b in FRESH21),
    # never tuned on either: the whole of benchmarks/fresh22.py is the fresh22 half
    *(Entry(_name(b), b, FRESH22_HALF, "fresh22") for b in FRESH22),
    # never tuned on either: the whole of benchmarks/fresh23.py is the fresh23 half
    *(Entry(_name(b), b, FRESH23_HALF, "fresh23") for b in FRESH23),
    # never tuned on either: the whole of benchmarks/fresh24.py is the fresh24 half
    *(Entry(_name(b), b, FRESH24_HALF, "fresh24") for b in FRESH24),
    # never tuned on either: the whole of benchmarks/fresh25.py is the fresh25 half
    *(Entry(_name(b), b, FRESH25_HALF, "fresh25") for b in FRESH25),
    # never tuned on either: the whole of benchmarks/fresh26.py is the fresh26 half
    *(Entry(_name(b), b, FRESH26_HALF, "fresh26") for b in FRESH26),
    # never tuned on either: the whole of benchmarks/fresh27.py is the fresh27 half
    *(Entry(_name(b), b, FRESH27_HALF, "fresh27") for b in FRESH27),
    # never tuned on either: the whole of benchmarks/fresh28.py is the fresh28 half
    *(Entry(_name(b), b, FRESH28_HALF, "fresh28") for b in FRESH28),
    # never tuned on either: the whole of benchmarks/fresh29.py is the fresh29 half
    *(Entry(_name(b), b, FRESH29_HALF, "fresh29") for b in FRESH29),
    # never tuned on either: the whole of benchmarks/fresh30.py is the fresh30 half
    *(Entry(_name(b), b, FRESH30_HALF, "fresh30") for b in FRESH30),
]
