"""What `vnet lab up` records about a running lab (RECORD_DIR/<lab>.json), as types.

The record outlives the `vnet` process that wrote it: `vnet lab down`,
`status` and `vnet vr --lab` read it back. JSON on disk, typed in code.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vnet.tools.durable import replace_durably
from vnet.tools.processes import ProcessRecord

# each lab's record (<lab>.json) and the state of the processes it started (<lab>/)
RECORD_DIR = Path(os.environ.get("VNET_RUN_DIR", "/run/vnet")) / "labs"


class LabError(RuntimeError):
    """What a lab command cannot do, said for its user (`vnet` prints it and exits 1)."""


@dataclass
class AgentRecord:
    """One host's agent: where it listens and which VRs the file gave it."""

    address: str
    netconf_port: int
    restconf_port: int
    state_dir: str
    # the VRs of the file at the last `lab up`: a VR later dropped from the file is
    # removed from the agent, VRs made over NETCONF/RESTCONF are kept
    file_routers: list[str] = field(default_factory=list)
    # the same for the connections whose pieces the file gave it
    file_connections: list[str] = field(default_factory=list)


@dataclass
class ControllerRecord:
    """The lab's controller (a `controller:` section): where it serves and how to log in.
    Its PID is among the record's processes, as "controller"."""

    url: str  # reached from inside `namespace`
    namespace: str  # the lab's management namespace
    token_file: str  # the provider administrator's API token (0600)
    state_dir: str
    config: str  # the ControllerConfig file it was started with
    certificate: str | None = None  # its HTTPS certificate, which its clients verify


@dataclass
class LabRecord:
    name: str
    file: str | None = None
    updated: float = 0.0
    processes: list[ProcessRecord] = field(default_factory=list)
    agent_user: str | None = None
    agent_password: str | None = None
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    controller: ControllerRecord | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabRecord:
        return cls(
            name=data["name"],
            file=data.get("file"),
            updated=data.get("updated", 0.0),
            processes=[ProcessRecord(**p) for p in data.get("processes", [])],
            agent_user=data.get("agent_user"),
            agent_password=data.get("agent_password"),
            agents={h: AgentRecord(**a) for h, a in data.get("agents", {}).items()},
            controller=ControllerRecord(**data["controller"]) if data.get("controller") else None,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: v for k, v in data.items() if v is not None or k == "file"}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def record_path(name: str) -> Path:
    return RECORD_DIR / f"{name}.json"


def read_record(name: str) -> LabRecord | None:
    try:
        return LabRecord.from_dict(json.loads(record_path(name).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_record(record: LabRecord) -> None:
    """Replace the record atomically, on disk before returning (a crash right after keeps it);
    a full or read-only disk raises OSError and leaves the old record, no temporary file."""
    RECORD_DIR.mkdir(parents=True, exist_ok=True)
    # 0600 from the first byte: it may hold the agents' password
    replace_durably(record_path(record.name), record.to_json().encode())
