"""Read-only views of snapshots: the key facts ``show`` prints, the host summary, compare with
now, and the ``report`` for a bug tracker."""
