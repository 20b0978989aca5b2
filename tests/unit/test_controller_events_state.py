"""GET /events carries each change of a host's or link's operational state as `event: state`,
after the links the stream starts with; hosts and links show their state, and so do the
controller's metrics."""

from __future__ import annotations

import json
import types
from datetime import UTC, datetime

from fastapi.testclient import TestClient
from prometheus_client import generate_latest

from tests.controller_api_support import FakeService, Tokens
from tests.metrics_support import label_values, parse, value
from vnet.controller.api.metrics import ServiceCollector
from vnet.model.controller_api import API_PREFIX as V1
from vnet.model.controller_api import ElementStatus, HostView, LinkView, StateChange
from vnet.tools.metrics import Combined


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_state_change_is_an_event_on_the_stream(
    client: TestClient, service: FakeService, tokens: Tokens
) -> None:
    down = ElementStatus(
        state="down", since=datetime.now(UTC), reason="ul-h2 on h1 is down", reported_by="h1"
    )
    service.changes.put_nowait(StateChange(kind="link", name="l1", before="up", status=down))
    r = client.get(f"{V1}/events?limit=2", headers=bearer(tokens.acme))
    events = [e.split("\n") for e in r.text.split("\n\n") if e]
    assert [kind for kind, _ in events] == ["event: links", "event: state"]
    change = json.loads(events[1][1].removeprefix("data: "))
    assert (change["kind"], change["name"], change["before"]) == ("link", "l1", "up")
    assert change["status"]["state"] == "down"
    assert change["status"]["reported_by"] == "h1"


def test_hosts_and_links_carry_their_state(client: TestClient, tokens: Tokens) -> None:
    hosts = client.get(f"{V1}/hosts", headers=bearer(tokens.provider)).json()
    assert hosts[0]["status"] == {
        "state": "unknown",
        "since": None,
        "reason": "",
        "reported_by": "",
    }
    links = client.get(f"{V1}/links", headers=bearer(tokens.acme)).json()
    assert links[0]["status"]["state"] == "unknown"
    xml = client.get(f"{V1}/links", headers={**bearer(tokens.acme), "Accept": "application/xml"})
    assert xml.status_code == 200
    assert "<state>unknown</state>" in xml.text


def test_metrics_say_which_links_and_hosts_are_up() -> None:
    """1 up, 0 down or unreachable, absent while unknown."""

    def link(name: str, state: str) -> LinkView:
        return LinkView(
            name=name, a="h1", b="h2", capacity_bps=1, status=ElementStatus(state=state)
        )

    def host(name: str, state: str) -> HostView:
        return HostView(name=name, agent="a:830", status=ElementStatus(state=state))

    links = [link("h1-h2", "up"), link("h1-h3", "down"), link("h2-h3", "unknown")]
    hosts = [host("h1", "up"), host("h2", "unreachable"), host("h3", "unknown")]
    service = types.SimpleNamespace(recovered=[], restored={})
    samples = parse(generate_latest(Combined(ServiceCollector(links, hosts, service))).decode())
    assert value(samples, "vnet_controller_link_up", link="h1-h2") == 1
    assert value(samples, "vnet_controller_link_up", link="h1-h3") == 0
    assert value(samples, "vnet_controller_host_up", host="h1") == 1
    assert value(samples, "vnet_controller_host_up", host="h2") == 0
    assert "h3" not in label_values(samples, "host")
    assert "h2-h3" not in label_values(samples, "link")
