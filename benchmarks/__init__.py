"""runsnap's performance benchmark (not part of the package or the test suite)."""
