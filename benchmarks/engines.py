"""Distributed and engine incidents that run here on CPU (issue 41), in the tune half: torch's
gloo and c10d code on the loopback interface, with the engines' own messages. Each program is
plain torch; the two shells differ as real ones do (thread variables torch reads natively, a
rendezvous port per job), and the planted cause acts through torch's own code.

Every incident here is ``tune`` (benchmarks/corpus.py): the engines' message table
(runsnap/knowledge/engine-messages.tsv) marks the rows these exercise as ``tune``.
"""

from __future__ import annotations

import socket
from pathlib import Path

from benchmarks.incidents import Incident, Launch, _write
from benchmarks.thirdparty import _incident, python_with, real_shell

#: Sockets held open for the length of the corpus run (a port another process is listening on).
_HELD: list[socket.socket] = []


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def _shells(d: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Two shells of one user on two nodes: other thread counts, another rendezvous port."""
    a = {**real_shell(0, d), "OMP_NUM_THREADS": "4", "MASTER_ADDR": "127.0.0.1",
         "MASTER_PORT": str(_free_port()), "RANK": "0", "WORLD_SIZE": "1"}
    b = {**real_shell(1, d), "OMP_NUM_THREADS": "8", "MASTER_ADDR": "127.0.0.1",
         "MASTER_PORT": str(_free_port()), "RANK": "0", "WORLD_SIZE": "1"}
    return a, b


_PROGRAM = """
    import datetime
    import torch
    import torch.distributed as dist

    def main():
        dist.init_process_group("gloo", init_method="env://",
                                timeout=datetime.timedelta(seconds=4))
        t = torch.ones(4)
        dist.all_reduce(t)
        print(f"sum={float(t.sum()):.1f}")
        dist.destroy_process_group()

    main()
    """


def gloo_socket_ifname(d: Path) -> Incident:
    """GLOO_SOCKET_IFNAME names an interface this host lacks in B: gloo cannot make its device
    ("Unable to find address for: eth9")."""
    py = python_with("torch")
    app = _write(d / "allreduce.py", _PROGRAM)
    a, b = _shells(d)
    a["GLOO_SOCKET_IFNAME"] = "lo"
    b["GLOO_SOCKET_IFNAME"] = "eth9"
    return _incident(gloo_socket_ifname, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "GLOO_SOCKET_IFNAME"))


def c10d_port_in_use(d: Path) -> Incident:
    """B's MASTER_PORT is taken by another process: the c10d store cannot listen ("The server
    socket has failed to listen on any local network address")."""
    py = python_with("torch")
    app = _write(d / "allreduce.py", _PROGRAM)
    a, b = _shells(d)

    def take_port() -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        s.bind(("", int(b["MASTER_PORT"])))
        s.listen()
        _HELD.append(s)

    return _incident(c10d_port_in_use, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "MASTER_PORT"), between=take_port)


def c10d_world_size_timeout(d: Path) -> Incident:
    """WORLD_SIZE is 2 in B for a one-process job: the store's master waits for a client that
    never comes ("Timed out after 4 seconds waiting for clients. 1/2 clients joined.")."""
    py = python_with("torch")
    app = _write(d / "allreduce.py", _PROGRAM)
    a, b = _shells(d)
    b["WORLD_SIZE"] = "2"
    return _incident(c10d_world_size_timeout, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "WORLD_SIZE"))


def warning_raised_as_error(d: Path) -> Incident:
    """PYTHONWARNINGS=error in B: torch's FutureWarning about a deprecated call is raised as an
    error."""
    py = python_with("torch")
    app = _write(d / "settings.py", """
        import torch

        def configure():
            torch.cuda.memory._set_allocator_settings("")
            print("configured")

        configure()
        """)
    a, b = _shells(d)
    b["PYTHONWARNINGS"] = "error"
    return _incident(warning_raised_as_error, Launch((py, str(app)), a, d),
                     Launch((py, str(app)), b, d), ("env", "PYTHONWARNINGS"))


#: The engine incidents, in the order they were written (all in the tune half).
ENGINES = [gloo_socket_ifname, c10d_port_in_use, c10d_world_size_timeout,
           warning_raised_as_error]
