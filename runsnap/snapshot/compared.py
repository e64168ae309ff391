"""How ``diff`` compares the declared fields: GENERATED from the marks of
``runsnap/snapshot/shapes*.py`` by ``python -m runsnap.snapshot.shapes``; do not edit
(``tests/test_shapes.py`` fails when it differs from the marks)."""

from __future__ import annotations

__all__ = ["BY_DECLARATION", "NOT_COMPARED"]

#: Where a record sits (a section; ``git.repos`` for each repository) -> field -> (score,
#: reason): the fields compared leaf by leaf from the declaration alone.
BY_DECLARATION: dict[str, dict[str, tuple[int, str]]] = {
    'git.repos': {
        'bare': (30, 'a bare repository (no work tree) in one run only'),
        'branch': (35, 'another branch (the commit decides the code)'),
        'detached': (30, 'HEAD detached in one run only'),
        'in_progress': (60, 'a rebase, merge, cherry-pick or bisect was under way in one run:'
            ' the work tree held its half-done state'),
        'remotes': (15, 'another remote'),
        'shallow': (25, 'a shallow clone in one run only: commits between may be missing'),
        'unborn': (40, 'a repository with no commit yet in one run only'),
        'upstream': (15, 'another upstream branch'),
    },
    'outcome': {
        'timed_out': (75, 'the run hit its time limit in one run only'),
    },
}

#: Where -> the fields diff leaves out (their reasons are in the declarations).
NOT_COMPARED: dict[str, frozenset[str]] = {
    'env': frozenset({
        'count',
    }),
    'git': frozenset({
        'not_repositories',
    }),
    'git.repos': frozenset({
        'ahead', 'behind', 'changed', 'describe', 'diff_bytes', 'diff_stat', 'path', 'roles',
        'untracked_count',
    }),
    'meta': frozenset({
        'captured_at', 'collect_ms', 'fingerprint_key', 'host', 'id', 'label', 'launch',
        'launcher', 'log', 'redacted', 'runsnap_version', 'track',
    }),
    'outcome': frozenset({
        'earlier_tracebacks', 'error', 'first_error_stream', 'log', 'peak_rss', 'pid',
        'signal_number', 'status', 'tail_lines', 'traceback', 'warnings_count',
    }),
    'outcome.stderr': frozenset({
        'bytes', 'captured', 'lines', 'mode', 'reason', 'unscanned_bytes',
    }),
    'outcome.stdout': frozenset({
        'bytes', 'captured', 'lines', 'mode', 'reason', 'unscanned_bytes',
    }),
    'packages': frozenset({
        'base_prefix', 'count', 'probe', 'probe_exit_status', 'reason',
    }),
    'packages.distributions': frozenset({
        'metadata_dir', 'shadowed_by',
    }),
    'process': frozenset({
        'libraries_count',
    }),
    'runtime': frozenset({
        'bulk_sites', 'config_reads', 'data_files_left_out', 'data_files_written', 'files',
        'frames', 'libraries_loaded', 'native_reads', 'native_startup', 'other_values',
        'parsed_options', 'reason', 'stacks', 'stdlib_modules', 'submodules', 'values',
        'vars',
    }),
    'system': frozenset({
        'system',
    }),
    'tests': frozenset({
        'counts', 'runner',
    }),
}
