"""Experiments that launch again: ``replay`` (one snapshot, exactly) and ``bisect`` (the good
launch with subsets of the differences applied, until the minimal cause is left)."""
