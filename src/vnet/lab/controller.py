"""The lab's `vnet controller` (a `controller:` section in the file; issue 12).

After the agents are ready, `vnet lab up` hands the controller its configuration through
its public interface, a ControllerConfig file: the lab's agents (reached over NETCONF on
their management addresses, the password in a 0600 file), the inventory (the lab's own
topology file without its `connections:`, which stay the lab's) and the management
namespace to serve in, on the management namespace's address. The controller starts as a
child process the way the agents do (held at a gate until its PID is in the lab's record),
writes its provider token into its state directory, and is stopped by PID on `vnet lab down`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from ruamel.yaml import YAML

from vnet.lab import agents
from vnet.lab.access import pinned_hostkey
from vnet.lab.record import ControllerRecord, LabRecord
from vnet.model import Topology
from vnet.model.controller_config import AgentAccess, ControllerConfig
from vnet.model.management import MANAGEMENT_NODE, client_address, host_address
from vnet.tools import processes
from vnet.tools.durable import replace_durably
from vnet.tools.wait import WaitTimeout, wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

WHAT = "controller"  # its ProcessRecord's name in the lab's record
CONFIG = "controller.yaml"  # the ControllerConfig handed over (JSON is valid YAML)
INVENTORY = "inventory.yaml"  # the lab's file without its connections
PASSWORD = "agents.password"  # the agents' password (0600), named by the config
LOG = "controller.log"  # the controller's own, rotated by size (ControllerConfig.log_*)
OUT = "controller.out"  # its stdout and stderr: what escapes logging (a failed start)
READY_TIMEOUT = 90.0  # seconds: migrations, the inventory, recovery, then serving


def controller_dir(record_dir: Path, lab: str) -> Path:
    return record_dir / lab / "controller"


def management_namespace(lab: str) -> str:
    return f"vnet-{lab}-{MANAGEMENT_NODE}"


def url(topo: Topology) -> str:
    assert topo.controller is not None
    return f"https://{client_address(topo)}:{topo.controller.port}"


def inventory_text(topo: Topology, file: str | None) -> str:
    """The lab's file as written (comments and all), without `connections:` (the lab's, not
    the controller's) and `controller:`; without a file, the topology's own data."""
    yaml = YAML(typ="rt")
    if file is not None:
        data = yaml.load(Path(file).read_text())
    else:  # a topology handed over in code (tests)
        data = topo.model_dump(mode="json", exclude_none=True)
    for key in ("connections", "controller"):
        data.pop(key, None)
    out = _Text()
    yaml.dump(data, out)
    return out.text


class _Text:
    """What ruamel writes, kept as one string."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, data: str | bytes) -> None:
        self.text += data.decode() if isinstance(data, bytes) else data


def controller_config(topo: Topology, directory: Path) -> ControllerConfig:
    assert topo.controller is not None and topo.management is not None
    section, namespace = topo.controller, management_namespace(topo.name)
    access = [
        AgentAccess(
            host=host.name,
            address=str(host_address(topo, host.name)),
            netconf_port=agents.NETCONF_PORT,
            user=topo.management.user,
            password_file=directory / PASSWORD,
            namespace=namespace,
            provision_networks=False,  # as its agents are started (agents.py)
            # pinned: the key each agent made at its first start, before the controller
            hostkey=pinned_hostkey(agents.agent_dir(directory.parents[1], topo.name, host.name)),
        )
        for host in topo.hosts
    ]
    return ControllerConfig(
        state_dir=directory,
        database=section.database,
        listen=str(client_address(topo)),
        port=section.port,
        namespace=namespace,
        inventory=directory / INVENTORY,
        agents=access,
        margin=section.margin,
        confirm_timeout=section.confirm_timeout,
        utilisation_interval=section.utilisation_interval,
        log_file=directory / LOG,
    )


def prepare(topo: Topology, directory: Path, password: str, file: str | None) -> bool:
    """Write the controller's configuration, inventory and the agents' password (each 0600);
    True if any changed (a running controller must then restart to take them)."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    wanted = {
        CONFIG: controller_config(topo, directory).model_dump_json(indent=1),
        INVENTORY: inventory_text(topo, file),
        PASSWORD: password,
    }
    changed = False
    for name, text in wanted.items():
        path = directory / name
        if not path.exists() or path.read_text() != text:
            replace_durably(path, text.encode())
            changed = True
    return changed


def start(topo: Topology, directory: Path) -> subprocess.Popen[bytes]:
    """Spawn `vnet controller run` in the management namespace, held at the gate until
    `agents.release(child)`, like an agent."""
    controller_config(topo, directory).ready_path.unlink(missing_ok=True)  # a stale one
    with (directory / OUT).open("wb") as out:  # this start's only; the child keeps its copy
        return processes.spawn(
            management_namespace(topo.name),
            [
                *agents.GATE,
                *processes.python_module("vnet"),
                "controller",
                "run",
                *("--config", str(directory / CONFIG)),
            ],
            stdout=out,
            stderr=out,
            stdin=subprocess.PIPE,
            start_new_session=True,  # outlives `vnet lab up`; stopped by PID by `vnet lab down`
        )


def _log_tail(directory: Path) -> str:
    """What this start wrote outside its log (a start error), else the log's last lines."""
    for name in (OUT, LOG):
        with contextlib.suppress(OSError):
            if text := (directory / name).read_bytes()[-2000:].decode(errors="replace"):
                return text
    return ""


def _ready(child: subprocess.Popen[bytes], config: ControllerConfig) -> bool:
    """Whether this start of the controller serves: it writes its ready file (with its PID)
    once the API listens, after migrations, the inventory, the provider token and recovery."""
    try:
        ready = json.loads(config.ready_path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(ready, dict) and ready.get("pid", child.pid) == child.pid


def wait_ready(child: subprocess.Popen[bytes], config: ControllerConfig, timeout: float) -> None:
    """Until the controller has written its ready file; its exit ends the wait."""

    def exited() -> str | None:
        if child.poll() is None:
            return None
        return f"the controller exited with {child.returncode}:\n{_log_tail(config.state_dir)}"

    try:
        wait_until(
            lambda: _ready(child, config), timeout, "the controller ready", 0.05, give_up=exited
        )
    except WaitTimeout as err:
        if reason := exited():
            raise RuntimeError(reason) from None
        raise RuntimeError(
            f"the controller did not answer at https://{config.listen}:{config.port} within "
            f"{timeout:.0f} s; its log:\n{_log_tail(config.state_dir)}"
        ) from err


def ensure(
    topo: Topology,
    record: LabRecord,
    directory: Path,
    write_record: Callable[[LabRecord], None],
    timeout: float = READY_TIMEOUT,
) -> None:
    """Run the lab's controller with the file's current configuration: start it, restart it
    if its configuration changed, or leave it. Its PID is in the record on disk before it
    runs, so `down` stops it even if `up` fails or is killed at any point."""
    assert topo.management is not None and record.agent_password is not None
    current = next(
        (p for p in record.processes if p.what == WHAT and processes.is_running(p)), None
    )
    changed = prepare(topo, directory, record.agent_password, record.file)
    if current is not None and not changed:
        return
    if current is not None:
        processes.stop(current)
    config = controller_config(topo, directory)
    child = start(topo, directory)
    # first in the list: `down` stops it before the agents it is talking to
    record.processes = [processes.record(child, WHAT)] + [
        p for p in record.processes if p.what != WHAT
    ]
    record.controller = ControllerRecord(
        url=url(topo),
        namespace=management_namespace(topo.name),
        token_file=str(config.provider_token_path),
        state_dir=str(directory),
        config=str(directory / CONFIG),
        certificate=str(config.certificate_path),  # self-signed, made in its state directory
    )
    write_record(record)
    agents.release(child)  # only now: a crash before this leaves no controller running
    wait_ready(child, config, timeout)


def remove(record: LabRecord, directory: Path) -> None:
    """The file lost its `controller:` section: stop the controller, forget it, and remove
    its state (the lab made all of it; an external PostgreSQL database is not the lab's)."""
    for proc in [p for p in record.processes if p.what == WHAT]:
        processes.stop(proc)
    record.processes = [p for p in record.processes if p.what != WHAT]
    record.controller = None
    if directory.is_dir():
        shutil.rmtree(directory)


def status(record: LabRecord) -> dict[str, object] | None:
    """What `vnet lab status` shows of the controller."""
    if record.controller is None:
        return None
    proc = next((p for p in record.processes if p.what == WHAT), None)
    return {
        **asdict(record.controller),
        "pid": proc.pid if proc else None,
        "running": proc is not None and processes.is_running(proc),
    }
