"""Run a plan with an undo log: a failure at step k undoes steps k-1..1.

Each operation's inverse is run in reverse order. A namespace deletion takes
contents that no single inverse brings back, so when one was among the done
steps, `restore` (a reconcile to the state observed before) finishes the job.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vnet.substrate.kernel import Kernel
from vnet.substrate.ops import Op

# Test hooks, read from the environment so that tests can drive the real
# CLI: fail at step K (0-based), or stop at step K so a test can kill -9.
FAIL_ENV = "VNET_TEST_FAIL_AT_STEP"
HANG_ENV = "VNET_TEST_HANG_AT_STEP"


class InjectedFailure(RuntimeError):
    pass


@dataclass
class ApplyError(RuntimeError):
    step: int
    op: Op
    cause: BaseException
    undo_errors: list[tuple[Op, BaseException]] = field(default_factory=list)

    def __str__(self) -> str:
        text = (
            f"step {self.step + 1} failed: {self.op.describe()}\n"
            f"  reason: {self.cause}\n"
            f"  undone: the {self.step} step(s) before it, in reverse order"
        )
        for op, err in self.undo_errors:
            text += f"\n  could not undo: {op.describe()}: {err}"
        return text


def apply(
    ops: Sequence[Op],
    kernel: Kernel,
    progress: Callable[[int, Op], None] | None = None,
    fail_at: int | None = None,
    restore: Callable[[Kernel], None] | None = None,
    undo: bool = True,
) -> None:
    """Run `ops`; on failure undo the done ones (unless `undo` is False) and raise ApplyError."""
    if fail_at is None and os.environ.get(FAIL_ENV):
        fail_at = int(os.environ[FAIL_ENV])
    hang_at = int(os.environ[HANG_ENV]) if os.environ.get(HANG_ENV) else None
    done: list[Op] = []
    for i, op in enumerate(ops):
        if i == hang_at:
            print(f"vnet: test hook: holding at step {i}", file=sys.stderr, flush=True)
            time.sleep(3600)
        try:
            if i == fail_at:
                raise InjectedFailure(f"failure injected at step {i + 1} by the test hook")
            op.run(kernel)
        except BaseException as err:
            if not undo:
                raise ApplyError(i, op, err) from err
            undo_errors = _undo(done, kernel)
            if restore is not None and any(getattr(d, "takes_contents", False) for d in done):
                try:
                    restore(kernel)
                except Exception as restore_err:
                    undo_errors.append((op, restore_err))
            raise ApplyError(i, op, err, undo_errors) from err
        done.append(op)
        if progress is not None:
            progress(i, op)


def _undo(done: list[Op], kernel: Kernel) -> list[tuple[Op, BaseException]]:
    errors: list[tuple[Op, BaseException]] = []
    for op in reversed(done):
        inverse = op.inverse()
        try:
            inverse.run(kernel)
        except Exception as err:  # keep undoing the rest; report what stuck
            errors.append((inverse, err))
    return errors
