"""The agent's configuration file (YAML) <-> AgentConfig (vnet.model.agent_config)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from vnet.agent.private_files import write_private
from vnet.model.agent_config import (
    AgentConfig,
    Ports,
    SnmpSettings,
    SnmpTarget,
    SnmpUser,
    User,
)

__all__ = [
    "AgentConfig",
    "Ports",
    "SnmpSettings",
    "SnmpTarget",
    "SnmpUser",
    "User",
    "load_config",
    "write_config",
]


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> AgentConfig:
    data: dict[str, Any] = {}
    if path is not None:
        loaded = YAML(typ="safe").load(Path(path).read_text())
        data = dict(loaded or {})
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return AgentConfig.model_validate(data)


def write_config(config: AgentConfig, path: Path) -> None:
    """The configuration as YAML, private from the first byte: it holds passwords."""
    yaml = YAML()
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(config.model_dump(mode="json"), out)
    write_private(path, out.getvalue().encode())
