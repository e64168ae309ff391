"""What runsnap knows about model configs: the ``config.json`` fields that matter most."""

from __future__ import annotations

import re

__all__ = ["BOOKKEEPING_FIELDS", "CONFIG_FIELDS", "bookkeeping", "config_field_reason"]

#: Config fields with a reason of their own (matched on any part of the field's path).
CONFIG_FIELDS = {
    "max_position_embeddings": "it sets the model's context length",
    "rope_scaling": "it changes how positions are encoded (and the usable context length)",
    "rope_theta": "it changes how positions are encoded",
    "torch_dtype": "it sets the weights' data type",
    "dtype": "it sets the weights' data type",
    "quantization_config": "it changes how weights are quantized",
    "num_hidden_layers": "it changes the model's depth",
    "hidden_size": "it changes the model's width",
    "vocab_size": "it changes the vocabulary",
    "architectures": "it picks another model class",
    "model_type": "it picks another model class",
    "num_attention_heads": "it changes the attention layout",
    "num_key_value_heads": "it changes the attention layout (and KV cache size)",
    "sliding_window": "it changes the attention window",
    "eos_token_id": "it changes when generation stops",
}


def config_field_reason(path: str) -> str | None:
    """Why the config field at ``path`` matters, when any part of the path has a reason.

    >>> config_field_reason("text_config.max_position_embeddings")
    "it sets the model's context length"
    >>> config_field_reason("architectures[0]"), config_field_reason("foo.bar") is None
    ('it picks another model class', True)
    """
    for part in re.split(r"[.\[\]]+", path):
        if part in CONFIG_FIELDS:
            return CONFIG_FIELDS[part]
    return None


#: Fields a library writes into every config for its own bookkeeping, never read to decide
#: anything: transformers' ``PretrainedConfig.to_dict`` adds ``transformers_version``,
#: ``from_pretrained`` records where it loaded from (``_name_or_path``) and the hub revision
#: (``_commit_hash``). An error or a traceback that quotes them is no evidence that they matter.
BOOKKEEPING_FIELDS = frozenset({"transformers_version", "_name_or_path", "_commit_hash",
                                "_attn_implementation_autoset"})


def bookkeeping(path: str) -> bool:
    """Whether the config field at ``path`` is a library's bookkeeping (:data:`BOOKKEEPING_FIELDS`).

    >>> bookkeeping("transformers_version"), bookkeeping("text_config._name_or_path")
    (True, True)
    >>> bookkeeping("max_position_embeddings")
    False
    """
    return re.split(r"[.\[\]]+", path.strip("]"))[-1] in BOOKKEEPING_FIELDS
