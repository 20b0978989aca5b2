"""Which agent each host has: the configuration's `agents:`, and those given through the API
with a host (kept in its row's `agent_access`, read again at start). The configuration's win:
the API may not change an agent the configuration names."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller.db.models import Host
from vnet.controller.errors import Conflict, NotFound
from vnet.model.controller_api import AgentRequest
from vnet.model.controller_config import AgentEndpoint, ControllerConfig

SECRET_FIELDS = ("password_file", "key_file")


class AgentAccesses:
    def __init__(self, config: ControllerConfig):
        self.config = config
        self.configured = {a.host: a.endpoint() for a in config.agents}
        self.added: dict[str, AgentEndpoint] = {}

    def get(self, host: str) -> AgentEndpoint | None:
        return self.every().get(host)

    def every(self) -> dict[str, AgentEndpoint]:
        """Host -> its agent (the configuration's over one given through the API)."""
        return {**self.added, **self.configured}

    def endpoints(self) -> dict[str, str]:
        """Host -> its agent's "address:port"."""
        return {h: f"{a.address}:{a.netconf_port}" for h, a in self.every().items()}

    def networks_fixed(self) -> set[str]:
        """The hosts whose networks their lab provisions (provision_networks false)."""
        return {h for h, a in self.every().items() if not a.provision_networks}

    def checked(self, host: str, agent: AgentRequest) -> AgentEndpoint:
        """An agent given through the API for `host`, as the configuration would name it:
        its secret files found in the configuration's secrets_dir (the API names files
        there and nowhere else: a token must not make the controller read, and send to an
        address of its choice, any file it can), its host key pinned unless the
        configuration trusts on first use. 409 if the configuration names `host`'s agent,
        a host key is needed or a secret's name leads out of the directory (a link); 404 if
        a secret file is not there."""
        if host in self.configured:
            raise Conflict(
                f"the agent of host {host} is the controller's configuration's (agents:); "
                "change it there",
                field="agent",
                code="agent-configured",
            )
        if agent.hostkey is None and not self.config.trust_on_first_use:
            raise Conflict(
                f"agent.hostkey: the agent of {host} needs its SSH host key pinned (what `vnet "
                "agent hostkey` prints there): the controller does not trust on first use",
                field="agent.hostkey",
                code="hostkey-required",
            )
        fields = agent.model_dump()
        fields.update({name: self._secret(name, getattr(agent, name)) for name in SECRET_FIELDS})
        return AgentEndpoint.model_validate(fields)

    def _secret(self, field: str, name: str | None) -> Path | None:
        """The file `name` in the secrets directory, readable (404 if not there)."""
        if name is None:
            return None
        home = self.config.secrets_dir.resolve()
        full = (home / name).resolve()
        if not full.is_relative_to(home):
            raise Conflict(
                f"agent.{field}: {name!r} in the controller's agent_secrets_dir ({home}) "
                "leads out of it",
                field=f"agent.{field}",
                code="secret-outside",
            )
        try:
            full.read_bytes()
        except OSError as err:
            raise NotFound(
                f"agent.{field}: no readable file {name!r} in the controller's "
                f"agent_secrets_dir ({home}): {err.strerror}; put the secret there first",
                field=f"agent.{field}",
                code="unknown-secret",
            ) from None
        return full


class AgentWiring(Protocol):
    """What learns of hosts' agents and links added while the controller runs (the service)."""

    async def join(self, host: str, agent: AgentEndpoint | None) -> bool:
        """`host`'s agent (`agent`: given just now; None: the one it has) reached from now
        on: reconciled now, watched from now on; whether it answered."""
        ...

    async def left(self, host: str) -> None:
        """`host` left service: its agent is no longer watched."""
        ...

    async def changed(self) -> None:
        """The hosts or links changed: what watches them learns the new sets."""
        ...


def stored(session: Session) -> dict[str, AgentEndpoint]:
    """The agents given through the API, by host (removed hosts' too: they may come back)."""
    rows = session.execute(
        select(Host.name, Host.agent_access).where(Host.agent_access.is_not(None))
    )
    return {name: AgentEndpoint.model_validate(access) for name, access in rows}


def keep(row: Host, agent: AgentEndpoint) -> bool:
    """`agent` kept as the host's (the same again changes nothing). One given before does
    not change through the API (409): the sessions of the requests using it would be cut; the
    configuration's `agents:`, which wins, can name another."""
    held = AgentEndpoint.model_validate(row.agent_access) if row.agent_access else None
    if held == agent:
        return False
    if held is not None:
        raise Conflict(
            f"host {row.name} has an agent already, at {held.address}:{held.netconf_port};"
            " an agent given through the API does not change",
            field="agent",
            code="agent-exists",
        )
    row.agent_access = agent.model_dump(mode="json")
    row.agent_endpoint = f"{agent.address}:{agent.netconf_port}"
    secret = agent.key_file or agent.password_file
    row.credentials_ref = f"file:{secret}" if secret else ""
    return True
