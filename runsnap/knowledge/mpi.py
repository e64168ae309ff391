"""What Open MPI's transport settings leave a job to talk over.

Open MPI's ``ob1`` point-to-point layer (the default where no UCX or MTL layer is chosen) sends
through the BTL components ``OMPI_MCA_btl`` selects (an MCA parameter: a comma list to include,
or ``^`` and a list to exclude; Open MPI 4.1 ``opal/mca/base/mca_base_component_repository.c``
and the FAQ "How do I select which components are used?"). Each BTL reaches some peers only:
``self`` a process's own rank ("This error can sometimes be the result of forgetting to
specify the "self" BTL", ``ompi/mca/bml/r2/help-mca-bml-r2.txt``), ``vader`` (``sm`` from
Open MPI 5) and ``smcuda`` the ranks of its node, the network BTLs every rank. A job whose
BTLs reach no other rank stops in ``MPI_Init``: "At least one pair of MPI processes are unable
to reach each other", printed by ``mpirun`` (``orte/util/show_help.c`` sends a rank's help
text to the launcher, not to the rank's stderr; measured with Open MPI 4.1.4).
"""

from __future__ import annotations

__all__ = ["unreachable_ranks"]

#: BTLs that reach only the process itself.
SELF_ONLY = frozenset({"self"})
#: BTLs that reach the ranks of the same node (shared memory).
SAME_NODE = frozenset({"vader", "sm", "smcuda"})
#: BTLs that reach ranks on any node (networks).
NETWORK = frozenset({"tcp", "openib", "uct", "ofi", "usnic", "ugni", "portals4"})
#: Point-to-point layers that do not send through the BTLs (UCX, MTLs through ``cm``).
NOT_BTL = frozenset({"ucx", "cm", "yalla", "ucx_v2"})


def _listed(value: str) -> tuple[bool, frozenset[str]]:
    """An MCA component list as (exclude, names): ``^tcp,openib`` excludes both."""
    text = value.strip()
    exclude = text.startswith("^")
    names = frozenset(n.strip() for n in text.lstrip("^").split(",") if n.strip())
    return exclude, names


def unreachable_ranks(btl: str, pml: str | None, ranks: int, one_node: bool) -> str | None:
    """Why a job of ``ranks`` processes cannot reach each other with ``OMPI_MCA_btl=btl``
    (and ``OMPI_MCA_pml=pml``, when set), else None.

    >>> unreachable_ranks("self", None, 2, True)
    'the BTLs left (self) reach only a process itself, and the job has 2 ranks'
    >>> unreachable_ranks("self,vader", None, 2, True) is None
    True
    >>> unreachable_ranks("self,vader", None, 4, False)
    'the BTLs left (self, vader) reach only the ranks of one node, and the job spans nodes'
    >>> unreachable_ranks("^tcp,vader,openib,uct,ofi", None, 2, True) is None  # sm, usnic...
    True
    >>> unreachable_ranks("^tcp,openib,uct,ofi,usnic,ugni,portals4", None, 4, False)
    'the BTLs left (self, sm, smcuda, vader) reach only the ranks of one node, and the job spans nodes'
    >>> unreachable_ranks("self", "ucx", 2, True) is None
    True
    >>> unreachable_ranks("self", None, 1, True) is None
    True
    """
    if ranks < 2:
        return None
    if pml is not None and _listed(pml)[1] & NOT_BTL and not _listed(pml)[0]:
        return None  # UCX or an MTL carries point-to-point: the BTLs do not decide
    exclude, names = _listed(btl)
    if not names:
        return None
    left = (SELF_ONLY | SAME_NODE | NETWORK) - names if exclude else names
    if left - (SELF_ONLY | SAME_NODE | NETWORK):
        return None  # a component runsnap does not know may reach the others
    shown = ", ".join(sorted(left))
    if not left & (SAME_NODE | NETWORK):
        return (f"the BTLs left ({shown or 'none'}) reach only a process itself, and the job "
                f"has {ranks} ranks")
    if not one_node and not left & NETWORK:
        return f"the BTLs left ({shown}) reach only the ranks of one node, and the job spans nodes"
    return None
