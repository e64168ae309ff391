"""Part of runsnap's tracing hook (``sitecustomize.py`` beside it, which imports it at start-up
and takes it out of ``sys.modules`` again): the per-process log. Standard library only."""

import os
import sys

DEPTH = 16  # frames kept per read site and per opened file (fsspec, torch_io, a strategy...)


class Tracer:
    """The per-process state: the log file, the read sites seen, the counts."""

    def __init__(self, folder, sites, pythonpath):
        self.folder = folder
        self.sites = sites  # read site key -> [site id, reads], shared with the hooks
        self.pythonpath = pythonpath  # the program's own PYTHONPATH marker, for the record
        self.fd = -1
        self.ident = None  # (device, inode) of the log: still ours before each write
        self.written = 0  # the repeated reads when the counts were last written
        self.per_name = {}  # name -> sites written
        self.mods = set()
        self.next_id = 0
        self.rel = {}

    def open(self, forked):
        pid = os.getpid()
        n = 0
        while True:
            path = os.path.join(self.folder, "py-%d-%d.log" % (pid, n))
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
                             | getattr(os, "O_CLOEXEC", 0), 0o600)
                break
            except FileExistsError:
                n += 1
        if fd <= 2:  # a program started without stdin (<&-) would find the log as its fd 0
            import fcntl

            try:
                high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
                os.close(fd)
                fd = high
            except OSError:
                pass
        st = os.fstat(fd)
        self.ident = (st.st_dev, st.st_ino)
        self.fd = fd
        argv = list(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
        self.emit(("P", pid, os.getppid(), argv, sys.executable, cwd, forked,
                   os.path.dirname(os.__file__), list(sys.path), self.pythonpath))

    def emit(self, *records):
        if self.fd < 0:
            return
        try:
            st = os.fstat(self.fd)
            if (st.st_dev, st.st_ino) != self.ident:  # the program dup2()ed over the number
                self.fd = -1
                return
            text = "".join([repr(r) + "\n" for r in records])
            os.write(self.fd, text.encode("utf-8", "surrogatepass"))
        except OSError:
            self.fd = -1  # the folder went away: stop writing, never fail the program

    def counts(self):
        """Write the counts when reads were repeated since they were last written."""
        sites = self.sites
        repeats = sum(v[1] for v in sites.values()) - len(sites)
        if repeats != self.written:
            self.emit(("C", {v[0]: v[1] for v in sites.values() if v[0] >= 0}))
            self.written = repeats

    def relpath(self, filename):
        rel = self.rel.get(filename)
        if rel is None:
            rel = filename
            best = ""
            for entry in sys.path:
                if (entry and len(entry) > len(best) and filename.startswith(entry)
                        and filename[len(entry):len(entry) + 1] == os.sep):
                    best = entry
            if best:
                rel = filename[len(best) + 1:]
            self.rel[filename] = rel
        return rel

    def stack(self, frame):
        out = []
        while frame is not None and len(out) < DEPTH:
            code = frame.f_code
            out.append("%s:%s in %s" % (self.relpath(code.co_filename), frame.f_lineno,
                                        code.co_name))
            frame = frame.f_back
        return out
