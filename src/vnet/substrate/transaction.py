"""One kernel transaction: observe -> plan -> apply with an undo log.

`converge` is the one entry for every change vnet makes to a kernel: lab up
and down, and an agent's reconcile on start and apply on commit.

A failure at step k undoes steps k-1..1: each operation's inverse, in
reverse order. A namespace deletion takes contents that no single inverse
brings back, so when one was among the done steps, a reconcile to the state
observed before finishes the job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vnet.substrate import nsfs
from vnet.substrate.kernel import Kernel
from vnet.substrate.lanes import Step, lane_count, runs, split
from vnet.substrate.observe import Observation, observe
from vnet.substrate.op import Op
from vnet.substrate.placement import Placement
from vnet.substrate.plan import plan
from vnet.substrate.state import KernelState

Progress = Callable[[int, int, Op], None]  # (step, total, op), after each step
# Called before each step (0-based) with its operation; whatever it raises fails
# that step, as the kernel would. How tests inject failures and pauses.
Fault = Callable[[int, Op], None]


@dataclass
class ApplyError(RuntimeError):
    step: int
    op: Op
    cause: BaseException
    undo_errors: list[tuple[Op, BaseException]] = field(default_factory=list)
    undone: int | None = None  # how many steps were undone (None: step, all before it)

    def __str__(self) -> str:
        text = (
            f"step {self.step + 1} failed: {self.op.describe()}\n"
            f"  reason: {self.cause}\n"
            f"  undone: the {self.step if self.undone is None else self.undone} step(s) "
            "done before it, in reverse order"
        )
        for op, err in self.undo_errors:
            text += f"\n  could not undo: {op.describe()}: {err}"
        return text


def converge(
    kernel: Kernel,
    desired: KernelState,
    where: Placement,
    *,
    own_namespace: bool = False,
    before: KernelState | Observation | None = None,
    dry_run: bool = False,
    undo: bool = True,
    progress: Progress | None = None,
    fault: Fault | None = None,
    lanes: int | None = None,
    touched: KernelState | None = None,
) -> list[Op]:
    """Bring what `where.scope` owns to `desired`; return the operations (run unless dry_run).

    `before`: what the kernel holds, if the caller knows it (an agent after its
    last commit, or a lab's namespaces on the way down); else it is observed.
    On failure the kernel is as it was before (unless `undo` is False) and
    ApplyError says which step failed. `lanes`: see `apply`. `touched`: the objects
    that may differ between `desired` and `before` (a KernelState; see plan).
    """
    if before is None:
        before = observe(kernel, where.scope, where.prefix, own_namespace)
    if isinstance(before, KernelState):
        before = Observation(before)
    ops = plan(desired, before.state, touched)
    if dry_run:
        return ops
    for name in before.remnants:  # empty mount points left by a crash: ours, and empty
        nsfs.remove(name)
    restore = None
    if undo:

        def restore(k: Kernel) -> None:
            now = observe(k, where.scope, where.prefix, own_namespace)
            apply(plan(before.state, now.state), k)

    total = len(ops)
    tick = (lambda i, op: progress(i, total, op)) if progress else None
    apply(ops, kernel, tick, restore=restore, undo=undo, fault=fault, lanes=lanes)
    return ops


def apply(
    ops: Sequence[Op],
    kernel: Kernel,
    progress: Callable[[int, Op], None] | None = None,
    restore: Callable[[Kernel], None] | None = None,
    undo: bool = True,
    fault: Fault | None = None,
    lanes: int | None = None,
) -> None:
    """Run `ops`; on failure undo the done ones (unless `undo` is False) and raise ApplyError.

    Runs of independent creations go over `lanes` lanes (default: one per core; lanes.py);
    `progress` and `fault` are then called from those lanes' threads, one at a time."""
    done: list[Op] = []
    count = lane_count() if lanes is None else lanes
    parallel = _Lanes(kernel, count, progress, fault, done)
    for run in runs(ops):
        failed = parallel.run(split(run, count))
        if failed is None:
            continue
        i, op, err = failed
        if not undo:
            raise ApplyError(i, op, err) from err
        undo_errors = _undo(done, kernel)
        if restore is not None and any(getattr(d, "takes_contents", False) for d in done):
            try:
                restore(kernel)
            except Exception as restore_err:
                undo_errors.append((op, restore_err))
        raise ApplyError(i, op, err, undo_errors, len(done)) from err


Failure = tuple[int, Op, BaseException]


class _Lanes:
    """Lane 0 runs in the calling thread on `kernel`, lane n on `kernel.helper(n)`, on that
    helper's own thread (`Kernel.submit`: its sockets serve only the thread that opened them)."""

    def __init__(
        self,
        kernel: Kernel,
        count: int,
        progress: Callable[[int, Op], None] | None,
        fault: Fault | None,
        done: list[Op],
    ) -> None:
        self.kernel, self.count = kernel, count
        self.progress, self.fault, self.done = progress, fault, done
        self._lock = threading.Lock()  # `done`, progress and fault: one lane at a time
        self._stop = threading.Event()  # a lane failed: the others stop at their next step

    def run(self, parts: list[list[Step]]) -> Failure | None:
        """Run the parts in parallel; the failure earliest in the plan, if any."""
        if len(parts) == 1:
            return self._lane(parts[0], self.kernel, parallel=False)
        self._stop.clear()
        helpers = [self.kernel.helper(n) for n in range(1, len(parts))]
        others = [
            helper.submit(self._lane, part, helper, True)
            for helper, part in zip(helpers, parts[1:], strict=True)
        ]
        failures = [self._lane(parts[0], self.kernel, parallel=True)]
        failures += [f.result() for f in others]
        self.kernel.gather_requests()
        found = [f for f in failures if f is not None]
        return min(found, key=lambda f: f[0]) if found else None

    def _lane(self, steps: list[Step], kernel: Kernel, parallel: bool) -> Failure | None:
        for i, op in steps:
            if self._stop.is_set():
                return None
            try:
                if self.fault is not None:
                    with self._lock:
                        self.fault(i, op)
                op.run(kernel)
            except BaseException as err:
                if not parallel or isinstance(err, Exception):
                    self._stop.set()
                    return (i, op, err)
                raise
            with self._lock:
                self.done.append(op)
                if self.progress is not None:
                    self.progress(i, op)
        return None


def _undo(done: list[Op], kernel: Kernel) -> list[tuple[Op, BaseException]]:
    errors: list[tuple[Op, BaseException]] = []
    for op in reversed(done):
        inverse = op.inverse()
        try:
            inverse.run(kernel)
        except Exception as err:  # keep undoing the rest; report what stuck
            errors.append((inverse, err))
    return errors
