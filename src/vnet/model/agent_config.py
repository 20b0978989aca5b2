"""The configuration of one `vnet agent`: who it is, where it listens, who may log in.

Shared by the agent (which loads it from YAML) and whoever starts agents
(the lab builds one per emulated host), so it lives in the model, below both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class User(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    password: str | None = None
    # OpenSSH public key lines ("ssh-ed25519 AAAA... comment")
    authorized_keys: list[str] = Field(default_factory=list)
    # NACM (RFC 8341) external groups: rule-lists naming one of them apply to the user
    groups: list[str] = Field(default_factory=list)
    # the user administers this tenant: the tenant template's rules apply to it
    tenant: str | None = None

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


SnmpAuth = Literal["SHA", "SHA-224", "SHA-256", "SHA-384", "SHA-512"]
SnmpPriv = Literal["AES"]  # CFB128-AES-128 (RFC 3826), what Net-SNMP and pysnmp share


class SnmpUser(BaseModel):
    """An SNMPv3 USM user (RFC 3414); keys are passphrases (at least 8 characters)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=32)
    auth_protocol: SnmpAuth = "SHA"  # SHA: HMAC-SHA-96; SHA-2: RFC 7860
    auth_key: str = Field(min_length=8)
    priv_protocol: SnmpPriv = "AES"
    priv_key: str = Field(min_length=8)
    access: Literal["ro", "rw"] = "rw"


class SnmpTarget(BaseModel):
    """Where the agent sends notifications when a VR operation completes or fails."""

    model_config = ConfigDict(extra="forbid")
    address: str
    port: int = 162
    version: Literal["v2c", "v3"] = "v2c"
    community: str = "public"  # v2c
    user: str | None = None  # v3: one of snmp.users
    kind: Literal["trap", "inform"] = "trap"  # inform: v3 only, acknowledged and retried


class SnmpSettings(BaseModel):
    """SNMP front-end: who may read and write, and where notifications go.

    Nothing is allowed by default: with no community and no user the agent
    answers no request."""

    model_config = ConfigDict(extra="forbid")
    ro_communities: list[str] = Field(default_factory=list)
    rw_communities: list[str] = Field(default_factory=list)
    users: list[SnmpUser] = Field(default_factory=list)
    targets: list[SnmpTarget] = Field(default_factory=list)
    # hex snmpEngineID; None: made once and kept in state_dir with snmpEngineBoots
    engine_id: str | None = None

    @model_validator(mode="after")
    def _targets_name_users(self) -> SnmpSettings:
        names = {u.name for u in self.users}
        for t in self.targets:
            if t.version == "v3" and t.user not in names:
                raise ValueError(f"SNMP target {t.address}: v3 needs `user` from snmp.users")
            if t.version == "v2c" and t.kind == "inform":
                raise ValueError(f"SNMP target {t.address}: informs are sent over v3 only")
        return self


# The agent's protocol front-ends, by the names `frontends` and the ready file use
# (vnet.agent.frontends registers one loader for each).
FRONTEND_NAMES = ("netconf", "restconf", "snmp")

# The agent's files in its state_dir that other processes (a lab, a client, a test) read:
# named here only, reached through AgentConfig's properties.
HOSTKEY_FILE = "ssh_host_ed25519_key"  # the NETCONF server's SSH host key
READY_FILE = "agent.ready"  # an AgentReady while the agent serves; removed when it stops
RESTCONF_CERT_FILE = "restconf-cert.pem"  # RESTCONF's self-signed certificate, to pin
RESTCONF_KEY_FILE = "restconf-key.pem"


class AgentReady(BaseModel):
    """The ready file's content: written once every front-end answers and the kernel is
    reconciled. Whoever started the agent reads which front-ends are up here."""

    model_config = ConfigDict(extra="forbid")
    pid: int
    address: str
    ports: Ports
    frontends: list[str]  # the protocols being served, as named in `frontends`

    @classmethod
    def read(cls, path: Path) -> AgentReady | None:
        """The ready file at `path`; None while there is none (not ready, or stopped)."""
        try:
            return cls.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host: str = "host"  # the physical host's name
    address: str = "127.0.0.1"  # management address every front-end listens on
    ports: Ports = Field(default_factory=Ports)
    state_dir: Path = Path("/var/lib/vnet/agent")
    users: list[User] = Field(min_length=1)
    # the user NACM never restricts (RFC 8341 3.4.4), so the rules can always be
    # repaired; None: the first of `users`
    recovery_user: str | None = None
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
    # SNMPv2c communities, SNMPv3 users and notification targets
    snmp: SnmpSettings = Field(default_factory=SnmpSettings)
    # the largest NETCONF message (bytes) a session may send; a larger one ends the session
    netconf_max_message: int = Field(64 * 1024 * 1024, ge=64 * 1024, le=1024 * 1024 * 1024)
    # drift: how often (seconds) to look for VRs whose kernel objects vanished (0: never),
    # and whether to repair them at once ("repair") or only report them ("report")
    drift_interval: float = Field(5.0, ge=0, le=3600)
    drift_policy: Literal["repair", "report"] = "repair"

    @model_validator(mode="after")
    def _recovery_user_exists(self) -> AgentConfig:
        if self.recovery_user is not None and self.user(self.recovery_user) is None:
            raise ValueError(f"recovery_user {self.recovery_user!r} is not one of `users`")
        return self

    @property
    def hostkey_path(self) -> Path:
        """The SSH host key the controller pins (`vnet agent hostkey` prints it)."""
        return self.state_dir / HOSTKEY_FILE

    @property
    def ready_path(self) -> Path:
        """The AgentReady file: present only while the agent serves."""
        return self.state_dir / READY_FILE

    @property
    def restconf_cert_path(self) -> Path:
        """RESTCONF's certificate, made at its first start; clients pin it (curl --cacert)."""
        return self.state_dir / RESTCONF_CERT_FILE

    @property
    def restconf_key_path(self) -> Path:
        return self.state_dir / RESTCONF_KEY_FILE

    @property
    def served_frontends(self) -> list[str]:
        """The front-ends the agent serves unless told otherwise on its command line."""
        return list(self.frontends or FRONTEND_NAMES)

    def ready(self) -> AgentReady | None:
        """What the agent says it serves; None unless it is ready."""
        return AgentReady.read(self.ready_path)

    def user(self, name: str) -> User | None:
        return next((u for u in self.users if u.name == name), None)
