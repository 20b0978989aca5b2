"""Bring the kernel to a desired state as one transaction: observe, plan, apply."""

from __future__ import annotations

from collections.abc import Callable

from vnet.substrate import nsfs
from vnet.substrate.apply import apply
from vnet.substrate.kernel import Kernel
from vnet.substrate.observe import Observation, observe
from vnet.substrate.ops import Op
from vnet.substrate.plan import plan
from vnet.substrate.realize import Placement
from vnet.substrate.state import KernelState


def converge(
    kernel: Kernel,
    desired: KernelState,
    where: Placement,
    progress: Callable[[int, int, Op], None] | None = None,
    dry_run: bool = False,
    own_namespace: bool = False,
    before: Observation | None = None,
) -> list[Op]:
    """Apply plan(desired, observed); on failure the kernel is as it was before.

    `before` may pass an observation the caller just made, to save reading twice.
    """
    if before is None:
        before = observe(kernel, where.scope, where.prefix, own_namespace)
    ops = plan(desired, before.state)
    if dry_run:
        return ops
    for name in before.remnants:  # empty mount points left by a crash: ours, and empty
        nsfs.remove(name)

    def restore(k: Kernel) -> None:
        now = observe(k, where.scope, where.prefix, own_namespace)
        apply(plan(before.state, now.state), k)

    total = len(ops)
    tick = (lambda i, op: progress(i, total, op)) if progress else None
    apply(ops, kernel, tick, restore=restore)
    return ops
