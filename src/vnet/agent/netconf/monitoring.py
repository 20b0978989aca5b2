"""RFC 6022 NETCONF monitoring: what the server says about itself under <netconf-state>.

Served as an RFC 7951 tree like any other data, so <get> encodes it with
the one encoder and subtree filters apply to it unchanged: the capabilities,
the schemas <get-schema> returns, the live sessions and the counters.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import Any

from vnet.model.yang.module import MONITORING_MODULE
from vnet.model.yang.schema import namespace_of, served_modules

NCM = MONITORING_MODULE


def _when(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="seconds")


@dataclass
class Counters:
    """RFC 6022 common-counters (per session, and summed over the server)."""

    in_rpcs: int = 0
    in_bad_rpcs: int = 0
    out_rpc_errors: int = 0
    out_notifications: int = 0

    def tree(self) -> dict[str, Any]:
        return {
            "in-rpcs": self.in_rpcs,
            "in-bad-rpcs": self.in_bad_rpcs,
            "out-rpc-errors": self.out_rpc_errors,
            "out-notifications": self.out_notifications,
        }


@dataclass
class ServerStatistics(Counters):
    started: float = field(default_factory=time.time)
    in_sessions: int = 0
    in_bad_hellos: int = 0
    dropped_sessions: int = 0

    def tree(self) -> dict[str, Any]:
        return {
            "netconf-start-time": _when(self.started),
            "in-bad-hellos": self.in_bad_hellos,
            "in-sessions": self.in_sessions,
            "dropped-sessions": self.dropped_sessions,
            **super().tree(),
        }


@dataclass
class SessionInfo:
    session_id: str
    username: str
    login_time: float
    counters: Counters

    def tree(self) -> dict[str, Any]:
        return {
            "session-id": int(self.session_id),
            "transport": f"{NCM}:netconf-ssh",
            "username": self.username,
            "login-time": _when(self.login_time),
            **self.counters.tree(),
        }


STATISTICS = ServerStatistics()  # one NETCONF server per agent process


def schemas() -> list[dict[str, Any]]:
    """The modules whose text <get-schema> returns."""
    return [
        {
            "identifier": name,
            "version": revision,
            "format": f"{NCM}:yang",
            "namespace": namespace_of(name),
            "location": ["NETCONF"],
        }
        for name, revision in served_modules()
    ]


def netconf_state(capabilities: list[str], sessions: list[SessionInfo]) -> dict[str, Any]:
    return {
        f"{NCM}:netconf-state": {
            "capabilities": {"capability": capabilities},
            "schemas": {"schema": schemas()},
            "sessions": {"session": [s.tree() for s in sessions]},
            "statistics": STATISTICS.tree(),
        }
    }
