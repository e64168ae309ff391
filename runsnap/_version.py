"""The one place runsnap's version is written."""

__version__ = "0.1.0"
