"""Kinds of data files, for the evidence of ``[runtime.data_files]`` (runsnap/diffing/datafiles.py).

The tracing hook sees the files Python opens (CPython's ``open`` audit event), not those native
code opens with ``fopen``/``mmap``: Hugging Face ``tokenizers`` reads ``tokenizer.json`` in Rust
(``Tokenizer::from_file``, tokenizers/src/tokenizer/mod.rs), ``sentencepiece`` its ``.model``
in C++ (``SentencePieceProcessor::Load``, src/sentencepiece_processor.cc), ``safetensors`` maps
its files from Rust. An edit to a file no traced process opened is called unread only for the
kinds below: text formats whose readers in the Python ecosystem are Python (PyYAML, tomllib,
configparser, gin-config, csv, python-dotenv, json lines read line by line). ``.json`` is not
one of them (tokenizers), nor ``.txt`` (a WordPiece ``vocab.txt`` is read in Rust too).
"""

from __future__ import annotations

__all__ = ["PYTHON_READ", "compiled_cache"]

#: Suffixes of files that, when read at all, are read from Python.
PYTHON_READ = (".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".gin", ".jsonl", ".csv",
               ".tsv", ".env", ".md", ".rst")


def compiled_cache(path: str) -> bool:
    """Whether ``path`` is a compiled cache the interpreter writes (``__pycache__/*.pyc``):
    never an input anyone edits.

    >>> compiled_cache("pkg/__pycache__/m.cpython-311.pyc"), compiled_cache("m.pyc")
    (True, True)
    >>> compiled_cache("data/cache.json")
    False
    """
    return path.endswith((".pyc", ".pyo")) or "__pycache__/" in path or path == "__pycache__"
