"""Realisation of the model on one Linux machine through netlink (pyroute2).

realize(model) and observe(kernel) give two KernelStates; plan() diffs them
into operations (pure, printable: the dry run); apply() runs them with an
undo log. The substrate knows no management protocol.
"""

from vnet.substrate.apply import ApplyError, apply
from vnet.substrate.engine import converge
from vnet.substrate.kernel import Kernel, KernelError
from vnet.substrate.observe import Observation, observe
from vnet.substrate.ops import Op
from vnet.substrate.plan import plan
from vnet.substrate.realize import Placement, lab_placement, realize
from vnet.substrate.state import KernelState

__all__ = [
    "ApplyError",
    "Kernel",
    "KernelError",
    "KernelState",
    "Observation",
    "Op",
    "Placement",
    "apply",
    "converge",
    "lab_placement",
    "observe",
    "plan",
    "realize",
]
