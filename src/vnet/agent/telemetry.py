"""What the agent counts as it happens, for its /metrics endpoint (restconf/metrics.py).

Only events live here: a commit's duration, a drift repair, a NACM denial, a failed or
throttled login. Everything the agent already holds as state (its VRs, their interface
counters, the guarantees' class counters) is read at scrape time instead, so nothing is
counted twice. One registry per agent process, like the NETCONF server statistics.

Label values come from fixed sets, never from a request: a protocol, an outcome, a kind.
User names and source addresses stay in the log (vnet.agent.logins), not in labels.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.process_collector import ProcessCollector

from vnet.tools.metrics import LATENCY_BUCKETS

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

COMMIT_SECONDS = Histogram(
    "vnet_agent_commit_duration_seconds",
    "Time from validation to the commit point (kernel and disk), per protocol and outcome",
    ["protocol", "result"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
DRIFT_REPAIRS = Counter(
    "vnet_agent_drift_repairs",
    "Looks at the kernel that found drift and repaired it (result=success) or failed to",
    ["result"],
    registry=REGISTRY,
)
NACM_DENIALS = Counter(
    "vnet_agent_nacm_denials",
    "Requests NACM refused (RFC 8341 denied-operations, denied-data-writes)",
    ["kind"],
    registry=REGISTRY,
)
LOGIN_FAILURES = Counter(
    "vnet_agent_login_failures",
    "Logins with a wrong user or password, per protocol",
    ["protocol"],
    registry=REGISTRY,
)
LOGIN_THROTTLED = Counter(
    "vnet_agent_login_throttled",
    "Login attempts refused unchecked because their source and user were throttled",
    ["protocol"],
    registry=REGISTRY,
)

PROTOCOLS = ("netconf", "restconf", "snmp", "agent")


def protocol_of(session: str) -> str:
    """The front-end a datastore session belongs to: NETCONF sessions are numbered, RESTCONF
    and SNMP name themselves, and the agent's own writes (start, rollback) have none."""
    if session.isdigit():
        return "netconf"
    return session if session in ("restconf", "snmp") else "agent"


@contextmanager
def commit_timer(session: str) -> Iterator[None]:
    """Observe one commit's duration, labelled with its protocol and whether it committed."""
    started = time.perf_counter()
    result = "failure"
    try:
        yield
        result = "success"
    finally:
        COMMIT_SECONDS.labels(protocol_of(session), result).observe(time.perf_counter() - started)
