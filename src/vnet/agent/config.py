"""The agent's own configuration file (YAML): who it is, where it listens, who may log in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from ruamel.yaml import YAML


class User(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    password: str | None = None
    # OpenSSH public key lines ("ssh-ed25519 AAAA... comment")
    authorized_keys: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _can_log_in(self) -> User:
        if self.password is None and not self.authorized_keys:
            raise ValueError(f"user {self.name!r} has neither a password nor a public key")
        return self


class Ports(BaseModel):
    model_config = ConfigDict(extra="forbid")
    netconf: int = 830
    restconf: int = 8443
    snmp: int = 161


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host: str = "host"  # the physical host's name
    address: str = "127.0.0.1"  # management address every front-end listens on
    ports: Ports = Field(default_factory=Ports)
    state_dir: Path = Path("/var/lib/vnet/agent")
    users: list[User] = Field(min_length=1)
    # what the agent owns: its mark and its namespace names
    scope: str = "agent"
    namespace_prefix: str = "vnet-"
    # VXLAN: this host's tunnel endpoint; with one, networks default to an MTU
    # that leaves room for the encapsulation
    vtep: str | None = None
    # False when someone else (a lab) makes the networks' bridges and VXLAN on
    # this host: the agent then only uses them, and refuses edits to them
    provision_networks: bool = True
    # the protocols to serve (None: every registered front-end)
    frontends: list[str] | None = None
    # RESTCONF over plain HTTP instead of HTTPS (tests, or behind a TLS proxy)
    restconf_plain_http: bool = False

    def user(self, name: str) -> User | None:
        return next((u for u in self.users if u.name == name), None)


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> AgentConfig:
    data: dict[str, Any] = {}
    if path is not None:
        loaded = YAML(typ="safe").load(Path(path).read_text())
        data = dict(loaded or {})
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return AgentConfig.model_validate(data)


def write_config(config: AgentConfig, path: Path) -> None:
    yaml = YAML()
    yaml.default_flow_style = False
    with path.open("w") as f:
        yaml.dump(config.model_dump(mode="json"), f)
