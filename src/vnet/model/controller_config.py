"""The configuration of one `vnet controller`: where its state lives, where it listens,
which agents it manages and how it admits (issue 12).

Shared by the controller (which loads it from YAML) and whoever starts controllers (a lab
with a `controller:` section writes one), so it lives in the model, below both, like
`agent_config`.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)

DEFAULT_PORT = 8480


def parse_share(value: Any) -> Fraction:
    """0.05, "0.05", "5%" or "1/20" -> exactly 1/20 (a float's binary value is not what was
    written)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a share such as 0.05 or 5%, got {type(value).__name__}")
    text = str(value).strip()
    try:
        share = Fraction(text[:-1]) / 100 if text.endswith("%") else Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{value!r} is not a share such as 0.05 or 5%") from None
    if not 0 <= share < 1:
        raise ValueError(f"{value!r} is not a share from 0 up to (not including) 1")
    return share


Share = Annotated[Fraction, BeforeValidator(parse_share)]


def _path_of_text(value: Any, info: ValidationInfo) -> Any:
    # strict validation of a parsed body (the API's) takes a Path only; JSON's text is one
    return Path(value) if info.mode == "python" and isinstance(value, str) else value


PathText = Annotated[Path, BeforeValidator(_path_of_text)]  # a path, also as a string


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentEndpoint(_Strict):
    """How the controller reaches an agent over NETCONF: in the configuration with its host
    (AgentAccess), or through the API as the `agent` of a host added while it runs."""

    address: str = Field(min_length=1, max_length=253)
    netconf_port: int = Field(830, ge=1, le=65535)
    user: str = "admin"
    # the secret lives in a file (mode 0600), never in this configuration or the database
    password_file: PathText | None = None
    key_file: PathText | None = None
    # the agent's SSH host key to pin: what `vnet agent hostkey` prints on that host
    # ("ssh-ed25519 AAAA...") or its base64 part. Without one the controller refuses the
    # agent unless trust_on_first_use is set
    hostkey: str | None = None
    namespace: str | None = None  # network namespace to connect from (a lab's management)
    # False: the host's virtual networks come from a lab's topology file and its agent
    # refuses to change them, so the controller refuses a network there before asking it
    provision_networks: bool = True


class AgentAccess(AgentEndpoint):
    """How the controller reaches one physical host's agent, as its configuration says."""

    host: str  # the physical host's name in the inventory

    def endpoint(self) -> AgentEndpoint:
        return AgentEndpoint(**self.model_dump(exclude={"host"}))


class SimulatedAgents(_Strict):
    """Hosts simulated in the controller's own process instead of agents over NETCONF: each
    host of the inventory an agent's datastore in memory (controller.southbound.memory),
    answering every RPC after `rpc_latency` seconds. For measuring the controller and its
    database at sizes one machine cannot emulate (`vnet bench controller --southbound
    simulated`); nothing reaches a kernel."""

    rpc_latency: float = Field(0.0, ge=0, le=60)
    # check each candidate against the YANG module too, as agents do (slower)
    check_yang: bool = False


class ControllerConfig(_Strict):
    state_dir: Path  # the SQLite database (default), the provider token
    # SQLAlchemy URL; None: SQLite in state_dir. Several controllers may share one PostgreSQL.
    database: str | None = None
    listen: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    # a network namespace to serve in (a lab's management network); None: here
    namespace: str | None = None
    # a topology file (the lab's format) whose hosts, links, tenants, networks, VRs and end
    # hosts are loaded into the database at start (what is already there is kept)
    inventory: Path | None = None
    agents: list[AgentAccess] = Field(default_factory=list)
    # None: the agents above over NETCONF. Set: the inventory's hosts simulated in memory
    # (the inventory is then required and `agents` must be empty)
    simulated: SimulatedAgents | None = None
    # share of each link kept back from admission for the shapers' inaccuracy (paper: 5 %)
    margin: Share = Fraction(5, 100)
    # seconds an agent keeps an unconfirmed commit before it rolls back by itself
    confirm_timeout: int = Field(60, ge=1, le=3600)
    reconcile_interval: float = Field(30.0, gt=0)  # seconds between checks of every agent
    # seconds an agent is given to answer, each RPC and each connect (TCP, SSH, <hello>)
    # alike: a hung agent is given up after this long at whatever step it is in
    rpc_timeout: float = Field(30.0, gt=0, le=600)
    # seconds a candidate locked by someone else (another controller) is waited for
    lock_wait: float = Field(10.0, ge=0, le=600)
    utilisation_interval: float = Field(1.0, gt=0)  # seconds between class-counter polls
    # failure detection: every agent's notification session is probed every
    # liveness_interval seconds and given liveness_timeout seconds to answer (a host is
    # unreachable within their sum of its agent's last answer); a lost session is opened
    # again with a backoff of at most liveness_backoff seconds
    liveness_interval: float = Field(0.5, gt=0, le=60)
    liveness_timeout: float = Field(1.0, gt=0, le=60)
    liveness_backoff: float = Field(1.0, gt=0, le=60)
    # the provider administrator's API token, written (0600) at first start if absent
    provider_token_file: Path | None = None
    # None: log to stderr (whoever started the controller keeps it). A file: the controller
    # owns it and rotates it by size, keeping log_backups older files (vnet.tools.logs)
    log_file: Path | None = None
    log_max_bytes: int = Field(10 * 2**20, ge=4096)
    log_backups: int = Field(3, ge=0, le=100)

    # HTTPS: the API's and console's certificate and key (PEM). None: a self-signed pair made
    # in state_dir at first start (its SHA-256 fingerprint is logged; clients verify it)
    tls_certificate: Path | None = None
    tls_key: Path | None = None
    # serve plain HTTP (behind a TLS-terminating proxy only): tokens would travel in clear
    plain_http: bool = False
    # accept an agent without a pinned `hostkey`: the key it shows first is kept in state_dir
    # (agents.known_hosts) and required from then on
    trust_on_first_use: bool = False
    # where the password and key files of agents added through the API live (the API names
    # files in it, and no other: a token must not make the controller read any file it can);
    # None: state_dir/agent-secrets
    agent_secrets_dir: Path | None = None

    @model_validator(mode="after")
    def _simulated_alone(self) -> ControllerConfig:
        if self.simulated is not None and (self.agents or self.inventory is None):
            raise ValueError("simulated hosts take an inventory and no agents")
        return self

    @model_validator(mode="after")
    def _certificate_with_key(self) -> ControllerConfig:
        if (self.tls_certificate is None) != (self.tls_key is None):
            raise ValueError("tls_certificate and tls_key are given together or not at all")
        return self

    @property
    def certificate_path(self) -> Path:
        return self.tls_certificate or self.state_dir / "controller-cert.pem"

    @property
    def key_path(self) -> Path:
        return self.tls_key or self.state_dir / "controller-key.pem"

    @property
    def known_hosts_path(self) -> Path:
        """The agents' host keys learnt on first use (trust_on_first_use)."""
        return self.state_dir / "agents.known_hosts"

    @property
    def secrets_dir(self) -> Path:
        """Where the secret files of agents added through the API are (agent_secrets_dir)."""
        return self.agent_secrets_dir or self.state_dir / "agent-secrets"

    @property
    def provider_token_path(self) -> Path:
        return self.provider_token_file or self.state_dir / "provider.token"

    @property
    def ready_path(self) -> Path:
        """Written by `vnet controller run` once the API answers ({"pid", "url", ...} JSON),
        removed when it stops: what a lab or a test waits for."""
        return self.state_dir / "controller.ready"
