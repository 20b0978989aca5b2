"""Realisation of the model on one Linux machine through netlink (pyroute2).

One module per kernel object kind (namespace, link, address, route, fdb, tc,
seg6, cgroup), each with its state type, its operations (data with inverses) and a
read; `Kernel` (kernel.py) is the only netlink caller. realize(model) and
observe(kernel) give two KernelStates, plan() diffs them (pure: the dry run),
and converge() (transaction.py) is the one entry that changes a kernel.
The substrate knows no management protocol.
"""

from vnet.substrate.kernel import Kernel, KernelError
from vnet.substrate.observe import Observation, observe
from vnet.substrate.op import Op
from vnet.substrate.placement import Placement, lab_placement
from vnet.substrate.plan import plan
from vnet.substrate.realize import realize, realize_host
from vnet.substrate.state import KernelState
from vnet.substrate.transaction import ApplyError, Fault, Progress, apply, converge

__all__ = [
    "ApplyError",
    "Fault",
    "Kernel",
    "KernelError",
    "KernelState",
    "Observation",
    "Op",
    "Placement",
    "Progress",
    "apply",
    "converge",
    "lab_placement",
    "observe",
    "plan",
    "realize",
    "realize_host",
]
