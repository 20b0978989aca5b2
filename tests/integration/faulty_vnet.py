"""Fault injection for tests, from the test side: vnet's production code reads no test switch.

In-process, a test passes `fail_at(k)` or `hang_at(k)` as the `fault` of
`converge` (or of `lab.up`). A `vnet` process started by a test (the command
line, an agent) gets the same hooks from these environment variables, read
here, by `hooks/sitecustomize.py`, which conftest puts on PYTHONPATH:

    VNET_TEST_FAIL_AT_STEP=K   the K-th step (0-based) of every transaction fails
    VNET_TEST_HANG_AT_STEP=K   the process holds before step K, so a test can kill -9 it
    VNET_TEST_KILL_AFTER_SPAWN=K   `lab up` kills itself (SIGKILL) right after it spawned
                               its K-th agent (0-based), before it does anything else
    VNET_TEST_KILL_IN_RECORD_WRITE=1   `lab up` kills itself (SIGKILL) in its first write
                               of the lab's record: the staging file made, not yet written
    VNET_TEST_NETCONF_FAULTS=1 an agent reads `netconf-fault` in its state directory at
                               each NETCONF step of a transaction (see netconf_faults)

`python faulty_vnet.py ARGS` runs `vnet ARGS` with the hooks installed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

FAIL_ENV = "VNET_TEST_FAIL_AT_STEP"
HANG_ENV = "VNET_TEST_HANG_AT_STEP"
KILL_ENV = "VNET_TEST_KILL_AFTER_SPAWN"
KILL_IN_WRITE_ENV = "VNET_TEST_KILL_IN_RECORD_WRITE"
NETCONF_ENV = "VNET_TEST_NETCONF_FAULTS"
NETCONF_FAULT = "netconf-fault"  # in the agent's state directory: "ACTION STEP"
NETCONF_FIRED = "netconf-fault.fired"  # written when it fired: "ACTION STEP"
ACTIONS = ("refuse", "die", "hang")
STEPS = ("lock", "edit", "validate", "commit", "confirm")  # a controller transaction's RPCs


class InjectedFailure(RuntimeError):
    pass


def fail_at(step: int) -> Any:
    def fault(i: int, op: object) -> None:
        if i == step:
            raise InjectedFailure(f"failure injected at step {i + 1} by the test hook")

    return fault


def hang_at(step: int) -> Any:
    def fault(i: int, op: object) -> None:
        if i == step:
            print(f"vnet: test hook: holding at step {i}", file=sys.stderr, flush=True)
            time.sleep(3600)

    return fault


def install(fault: Any) -> None:
    """Make `fault` the default of every converge() call this process makes."""
    import vnet.substrate
    import vnet.substrate.transaction as transaction

    original = transaction.converge

    def converge(*args: Any, **kwargs: Any) -> Any:
        kwargs["fault"] = kwargs.get("fault") or fault
        return original(*args, **kwargs)

    transaction.converge = converge  # type: ignore[assignment]
    vnet.substrate.converge = converge  # type: ignore[assignment]


def kill_after_spawn(k: int) -> None:
    """The lab's K-th agent spawn returns, then this process dies as kill -9 makes it."""
    import signal

    import vnet.lab.agents as agents

    original = agents.start
    spawned = []

    def start(*args: Any, **kwargs: Any) -> Any:
        child = original(*args, **kwargs)
        spawned.append(child)
        if len(spawned) == k + 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return child

    agents.start = start  # type: ignore[assignment]


def kill_in_record_write() -> None:
    """The lab's first record write dies as kill -9 makes it, right after it opened its
    staging file (empty, as a kill in the middle of the write leaves it)."""
    import signal

    import vnet.lab.record as record
    from vnet.tools import durable

    def replace_durably(path: Any, data: bytes, mode: int = 0o600) -> None:
        os.close(os.open(durable.staging_path(path), os.O_WRONLY | os.O_CREAT, mode))
        os.kill(os.getpid(), signal.SIGKILL)

    record.replace_durably = replace_durably  # type: ignore[assignment]


def _step(name: str, op: Any) -> str | None:
    """Which step of a controller transaction an RPC is: <lock> of the candidate,
    <edit-config>, <validate>, <commit><confirmed/> (commit), <commit> with a persist-id
    and no <confirmed/> (confirm); None for anything else."""
    local = {child.tag.rsplit("}", 1)[-1] for child in op if isinstance(child.tag, str)}
    if name == "lock":
        return "lock"
    if name == "edit-config":
        return "edit"
    if name == "validate":
        return "validate"
    if name == "commit":
        return "commit" if "confirmed" in local else "confirm" if "persist-id" in local else None
    return None


def netconf_faults() -> None:
    """At the step named in the agent's `netconf-fault` file (written by a test, read at every
    step, used once: the file goes before the fault acts), the agent
    refuses (an rpc-error), dies (SIGKILL to its own PID: no cleanup, as kill -9 does) or
    hangs (SIGSTOP to its own PID; it handles the step once a test sends SIGCONT)."""
    import signal
    from pathlib import Path

    import vnet.agent.netconf.session as session
    from vnet.model.yang.errors import ErrorTag, RpcError

    def state_dir() -> Path:
        return Path(sys.argv[sys.argv.index("--config") + 1]).parent

    def wrap(name: str, handler: Any) -> Any:
        async def faulty(s: Any, op: Any) -> Any:
            step = _step(name, op)
            fault = state_dir() / NETCONF_FAULT
            if step is not None and fault.exists():
                action, wanted = fault.read_text().split()
                if wanted == step:
                    fault.unlink()
                    (state_dir() / NETCONF_FIRED).write_text(f"{action} {step}\n")
                    if action == "refuse":
                        raise RpcError(ErrorTag.OPERATION_FAILED, f"{step} refused by a test")
                    os.kill(os.getpid(), signal.SIGKILL if action == "die" else signal.SIGSTOP)
            return await handler(s, op)

        return faulty

    for name in ("lock", "edit-config", "validate", "commit"):
        session.OPERATIONS[name] = wrap(name, session.OPERATIONS[name])


def install_from_environment() -> None:
    if os.environ.get(KILL_IN_WRITE_ENV):
        kill_in_record_write()
    if os.environ.get(NETCONF_ENV):
        netconf_faults()
    if os.environ.get(KILL_ENV):
        kill_after_spawn(int(os.environ[KILL_ENV]))
    if os.environ.get(FAIL_ENV):
        install(fail_at(int(os.environ[FAIL_ENV])))
    elif os.environ.get(HANG_ENV):
        install(hang_at(int(os.environ[HANG_ENV])))


if __name__ == "__main__":
    install_from_environment()
    from vnet.cli import main

    sys.argv[0] = "vnet"
    main()
