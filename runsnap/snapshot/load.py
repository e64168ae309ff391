"""Loading snapshots: bounds checked, TOML parsed, markers decoded, the document validated
against the schema (:mod:`runsnap.snapshot.validate`)."""

from __future__ import annotations

import os
import stat

from runsnap.base.paths import path_str
from runsnap.base.tomlparse import toml_parser
from runsnap.errors import SnapshotError
from runsnap.snapshot import validate
from runsnap.snapshot.codec import decode
from runsnap.snapshot.model import END_MARKER, SCHEMA_VERSION, Snapshot

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

__all__ = ["load", "loads", "read_checked", "toml_parser"]


def loads(text: str, path: str | os.PathLike[str] | None = None) -> Snapshot:
    """Parse and validate snapshot TOML text (bounded, checked against the schema)."""
    tomllib = toml_parser()
    where = f"{path_str(path)}: " if path is not None else ""
    validate.check_depth(text, where)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotError(f"{where}not valid TOML ({exc}); is the file truncated?") from exc
    except RecursionError:
        raise SnapshotError(f"{where}nested too deeply: not a runsnap snapshot") from None
    newer = isinstance(raw.get("schema"), int) and raw["schema"] > SCHEMA_VERSION
    if "schema" in raw and not newer and _last_line(text) != END_MARKER:
        raise SnapshotError(f"{where}the snapshot is truncated (its last line is not "
                            f"'{END_MARKER}')")
    validate.tree_depth(raw, where)
    try:
        doc = decode(raw)
    except SnapshotError as exc:
        raise SnapshotError(f"{where}{exc}") from None
    snap = Snapshot.from_document(doc, path=path)
    if not newer:
        validate.validate(snap.to_document(), where)
    return snap


def load(path: str | os.PathLike[str]) -> Snapshot:
    """Read and validate the snapshot at ``path``; raise :class:`SnapshotError` if it is not one.

    Untrusted input: only a regular file is opened (a FIFO or a device is refused without being
    read), a file over :data:`~runsnap.snapshot.validate.MAX_BYTES` is refused from its size,
    and one that does not start as a snapshot from its first bytes."""
    p = path_str(path)
    data = read_checked(p)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotError(f"{p}: not a text file, not a runsnap snapshot") from None
    del data  # not held while the text is parsed (a 10 MB line: one copy fewer at the peak)
    return loads(text, path=p)


def _last_line(text: str) -> str:
    """The last line of ``text`` that is not blank, stripped, read from the text's end (no copy
    of a long text is made).

    >>> _last_line("a\\nb  \\n\\n "), _last_line("x" * 70000 + "\\n# end\\n"), _last_line("")
    ('b', '# end', '')
    """
    tail = text[-_TAIL:].rstrip()
    if "\n" not in tail and len(text) > _TAIL:
        tail = text.rstrip()  # a last line longer than the tail read (or blanks): read whole
    return tail[tail.rfind("\n") + 1:].strip()


_TAIL = 1 << 16


def read_checked(path: str) -> bytes:
    """The bytes of the snapshot file at ``path``, read only once it is known to be a regular
    file within the size bound that starts as a snapshot does; :class:`SnapshotError` else."""
    p = path
    where = f"{p}: "
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise SnapshotError(f"{p}: no such file") from None
    except OSError as exc:
        raise SnapshotError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise SnapshotError(f"{p}: is a directory, not a snapshot file")
    if not stat.S_ISREG(st.st_mode):
        raise SnapshotError(f"{p}: not a regular file ({_file_kind(st.st_mode)}), "
                            f"not a runsnap snapshot")
    if st.st_size > validate.MAX_BYTES:
        raise SnapshotError(f"{p}: too large for a snapshot ({st.st_size // (1024 * 1024)} MiB; "
                            f"the limit is {validate.MAX_BYTES // (1024 * 1024)} MiB)")
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SnapshotError(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the stat and the open
            raise SnapshotError(f"{p}: not a regular file, not a runsnap snapshot")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            head = fh.read(4096)
            if not head.strip():
                raise SnapshotError(f"{p}: empty file, not a runsnap snapshot")
            validate.check_head(head, where)
            # the size known from the stat, then whatever a growing file added (a read of
            # MAX_BYTES at once allocates that much first: 3x the read of a 60 KB rank)
            want = min(st.st_size, validate.MAX_BYTES) + 1 - len(head)
            data = head + fh.read(max(want, 1))
            if len(data) > st.st_size:
                data += fh.read(validate.MAX_BYTES + 1 - len(data))
    except OSError as exc:
        raise SnapshotError(f"{p}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > validate.MAX_BYTES:
        raise SnapshotError(f"{p}: too large for a snapshot (over "
                            f"{validate.MAX_BYTES // (1024 * 1024)} MiB)")
    return data


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"
