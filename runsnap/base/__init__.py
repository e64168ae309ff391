"""Foundations every journey stands on, standard library only, importing nothing else of
runsnap: paths as text, records, SHA-256, time stamps, running programs, terminal text,
launch command lines, the caches."""
