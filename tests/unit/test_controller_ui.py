"""The web console's HTTP side (issue 13) without a browser: login and its cookie, the way
back to the login page, forms turned into the API's bodies, the controller's answers and
errors shown as text. The service here is a small in-memory ControllerService that applies
the principal's visibility like the real one; the real controller and a real browser are in
tests/browser/test_console.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from vnet.controller.errors import NotFound, Rejected, Unauthorized
from vnet.controller.principal import Principal
from vnet.controller.ui import make_console, session
from vnet.model.controller_api import (
    ConnectionAnswer,
    ConnectionCounters,
    ConnectionEvent,
    ConnectionView,
    ElementStatus,
    EndHostView,
    Hop,
    HostView,
    LinkDirection,
    LinkView,
    RouterView,
    ShaperCounters,
    Shortfall,
    TenantView,
    TopologyView,
)

TOKENS = {
    "prov": Principal("provider"),
    "red": Principal("tenant", "red"),
    "old": None,  # expired
}
CAPACITY = 1_000_000_000
UP = ElementStatus(state="up")


class InMemoryService:
    """Two tenants (red, blue) on hosts h1-h2-h3; admits while the link direction has room."""

    def __init__(self) -> None:
        self.reserved: dict[str, int] = {"h1 -> h2": 0, "h2 -> h1": 0, "h2 -> h3": 0, "h3 -> h2": 0}
        self.conns: dict[tuple[str, str], ConnectionView] = {}
        self.endhost_list = [
            EndHostView(tenant=t, name=f"{t}{i}", host=f"h{i}", network=f"{t}net")
            for t in ("red", "blue")
            for i in (1, 3)
        ]

    async def topology(self, who: Principal) -> TopologyView:
        return TopologyView(
            hosts=await self.hosts(who),
            links=await self.links(who),
            tenants=await self.tenants(who),
            networks=[],
            routers=await self.routers(who),
            endhosts=await self.endhosts(who),
            connections=await self.connections(who),
        )

    async def hosts(self, who: Principal) -> list[HostView]:
        gone = ElementStatus(state="unreachable", reason="no answer to a probe in 1 s")
        return [
            HostView(name=f"h{i}", agent=f"10.0.0.{i}:830", status=gone if i == 3 else UP)
            for i in (1, 2, 3)
        ]

    async def links(self, who: Principal) -> list[LinkView]:
        def arc(direction: str) -> LinkDirection:
            held = self.reserved[direction]
            return LinkDirection(direction=direction, reserved_bps=held, free_bps=CAPACITY - held)

        return [
            LinkView(name=f"l{a}{b}", a=f"h{a}", b=f"h{b}", capacity_bps=CAPACITY,
                     directions=[arc(f"h{a} -> h{b}"), arc(f"h{b} -> h{a}")],
                     status=UP if a == 1 else ElementStatus(state="down", reported_by="h2"))
            for a, b in ((1, 2), (2, 3))
        ]  # fmt: skip

    async def tenants(self, who: Principal) -> list[TenantView]:
        return [TenantView(name=t) for t in ("blue", "red") if who.may_see(t)]

    async def routers(self, who: Principal, tenant: str | None = None) -> list[RouterView]:
        return [
            RouterView(tenant=t, name=f"{t}-vr{i}", host=f"h{i}", networks=[f"{t}net"])
            for t in ("red", "blue")
            for i in (1, 2, 3)
            if who.may_see(t)
        ]

    async def endhosts(self, who: Principal, tenant: str | None = None) -> list[EndHostView]:
        return [e for e in self.endhost_list if who.may_see(e.tenant)]

    async def connections(
        self, who: Principal, tenant: str | None = None, include_released: bool = False
    ) -> list[ConnectionView]:
        return [
            c
            for c in self.conns.values()
            if who.may_see(c.tenant) and (include_released or c.status != "released")
        ]

    async def create_connection(self, who, tenant, request, idempotency_key=None, timings=None):
        who.require_tenant(tenant)
        path = ["h1", "h2", "h3"]
        for direction in ("h1 -> h2", "h2 -> h3"):
            free = CAPACITY - self.reserved[direction]
            if request.bandwidth > free:
                missing = request.bandwidth - free
                short = Shortfall(link="l12" if "h1" in direction else "l23",
                                  direction=direction, requested_bps=request.bandwidth,
                                  free_bps=free, missing_bps=missing)  # fmt: skip
                raise Rejected(f"link {short.link} lacks {missing} bit/s", [short])
        for direction in ("h1 -> h2", "h2 -> h3"):
            self.reserved[direction] += request.bandwidth
        hops = [
            Hop(host=h, router=f"{tenant}-vr{h[1]}", sid=None if h == "h1" else f"fc00:{h[1]}::7")
            for h in path
        ]
        view = ConnectionView(
            tenant=tenant, name=request.name, status="established", a=request.a, b=request.b,
            bandwidth=request.bandwidth, path=path, hops=hops, created=datetime.now(UTC),
        )  # fmt: skip
        self.conns[(tenant, request.name)] = view
        return ConnectionAnswer(connection=view)

    async def connection(self, who: Principal, tenant: str, name: str) -> ConnectionView:
        who.require_tenant(tenant)
        if (tenant, name) not in self.conns:
            raise NotFound(f"no connection {name!r} in tenant {tenant!r}", field="name")
        return self.conns[(tenant, name)]

    async def history(self, who, tenant, name):
        view = await self.connection(who, tenant, name)
        return [ConnectionEvent(at=view.created, kind="created", detail="path h1 h2 h3")]

    async def counters(self, who, tenant, name):
        view = await self.connection(who, tenant, name)
        shaper = ShaperCounters(
            direction=f"{view.a} -> {view.b}", host="h1", router="r1",
            bytes=123456, packets=789, drops=2,
        )  # fmt: skip
        return ConnectionCounters(tenant=tenant, name=name, shapers=[shaper])

    async def release_connection(self, who, tenant, name, timings=None):
        view = await self.connection(who, tenant, name)
        for direction in ("h1 -> h2", "h2 -> h3"):
            self.reserved[direction] -= view.bandwidth
        released = view.model_copy(update={"status": "released"})
        self.conns[(tenant, name)] = released
        return released


async def authenticate(token: str) -> Principal:
    if token not in TOKENS:
        raise Unauthorized("the token is not known to this controller")
    if TOKENS[token] is None:
        raise Unauthorized("the token expired at 2026-11-22T10:00:00+00:00")
    return TOKENS[token]


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    app.mount("/ui", make_console(InMemoryService(), authenticate, refresh_seconds=2))
    return TestClient(app, base_url="http://testserver", follow_redirects=False)


def log_in(client: TestClient, token: str) -> None:
    answer = client.post("/ui/login", data={"token": token})
    assert answer.status_code == 303, answer.text


def test_a_page_without_login_leads_to_the_login_page(client):
    answer = client.get("/ui/")
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/ui/login?reason=not%20logged%20in")
    page = client.get(answer.headers["location"])
    assert "not logged in: log in with an API token" in page.text
    assert 'type="password"' in page.text


def test_login_sets_an_httponly_strict_cookie_for_the_console_only(client):
    answer = client.post("/ui/login", data={"token": "prov", "next": "/ui/connections"})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/connections"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{session.COOKIE}=prov;")
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/ui"):
        assert attribute.lower() in cookie.lower()


def test_login_never_redirects_to_another_site(client):
    answer = client.post("/ui/login", data={"token": "prov", "next": "https://evil.example/"})
    assert answer.headers["location"] == "/ui/"


def test_a_wrong_token_is_refused_with_the_reason(client):
    answer = client.post("/ui/login", data={"token": "guess"})
    assert answer.status_code == 401
    assert "the token is not known to this controller" in answer.text
    assert "set-cookie" not in answer.headers


def test_an_expired_token_leads_back_to_the_login_page_with_why(client):
    client.cookies.set(session.COOKIE, "old", path="/ui")
    answer = client.get("/ui/connections")
    assert answer.status_code == 303
    assert "expired" in answer.headers["location"]
    assert f'{session.COOKIE}=""' in answer.headers["set-cookie"]  # forgotten
    # htmx requests are told where to go instead (it would swap a page into a fragment)
    client.cookies.set(session.COOKIE, "old", path="/ui")
    answer = client.post("/ui/connections", headers={"HX-Request": "true"}, data={})
    assert answer.status_code == 204
    assert answer.headers["hx-redirect"].startswith("/ui/login?reason=the%20token%20expired")


def test_the_topology_page_carries_the_graph_and_the_link_table(client):
    log_in(client, "prov")
    page = client.get("/ui/")
    assert page.status_code == 200
    assert page.text.count('class="host-row"') == 3
    assert page.text.count('class="arc-row"') == 4  # 2 links, both directions
    assert "/ui/static/vendor/cytoscape.min.js" in page.text
    state = client.get("/ui/topology/state").json()
    assert {arc["direction"] for arc in state["arcs"]} == {
        "h1 -> h2", "h2 -> h1", "h2 -> h3", "h3 -> h2"
    }  # fmt: skip


def test_the_topology_page_shows_which_hosts_and_links_failed(client):
    log_in(client, "prov")
    page = client.get("/ui/").text
    assert "<strong>unreachable</strong> (no answer to a probe in 1 s)" in page
    assert page.count('<td class="state">down</td>') == 2  # l23, both directions
    states = {arc["link"]: arc["state"] for arc in client.get("/ui/topology/state").json()["arcs"]}
    assert states == {"l12": "up", "l23": "down"}


def test_request_through_the_form_shows_the_established_answer(client):
    log_in(client, "red")
    form = {"tenant": "red", "name": "web", "a": "red1", "b": "red3", "bandwidth": "300mbit"}
    answer = client.post("/ui/connections", data=form, headers={"HX-Request": "true"})
    assert answer.status_code == 201
    assert "established" in answer.text
    assert "h1 → h2 → h3" in answer.text
    assert "/ui/?connection=red/web" in answer.text
    detail = client.get("/ui/connections/red/web")
    assert "fc00:3::7" in detail.text and "300 Mbit/s" in detail.text
    # the ingress shaper's counters, as the service reads them from the agent
    assert 'id="connection-shapers"' in detail.text
    assert all(n in detail.text for n in ("red1 -&gt; red3", "123456", "789"))


def test_a_rejection_shows_which_link_lacks_how_much(client):
    log_in(client, "prov")
    form = {"tenant": "red", "name": "big", "a": "red1", "b": "red3", "bandwidth": "2gbit"}
    answer = client.post("/ui/connections", data=form)  # without htmx: the whole page
    assert answer.status_code == 409
    assert "no-capacity" in answer.text and "link l12 lacks 1000000000 bit/s" in answer.text
    assert 'class="shortfall"' in answer.text and "h1 -&gt; h2" in answer.text
    assert 'value="big"' in answer.text  # the form keeps what was typed


def test_bad_input_gets_the_api_text_and_nothing_changes(client):
    log_in(client, "red")
    form = {"tenant": "red", "name": "x", "a": "red1", "b": "red3", "bandwidth": "fast"}
    answer = client.post("/ui/connections", data=form, headers={"HX-Request": "true"})
    assert answer.status_code == 400
    assert "bandwidth: &#39;fast&#39; is not a rate" in answer.text
    assert "Traceback" not in answer.text
    assert client.get("/ui/topology/state").json()["paths"] == {}


def test_a_tenant_may_not_act_for_another(client):
    log_in(client, "red")
    form = {"tenant": "blue", "name": "x", "a": "blue1", "b": "blue3", "bandwidth": "1mbit"}
    answer = client.post("/ui/connections", data=form, headers={"HX-Request": "true"})
    assert answer.status_code == 403
    assert "may not act on tenant &#39;blue&#39;" in answer.text
    page = client.get("/ui/routers")
    assert "red-vr1" in page.text and "blue" not in page.text


def test_release_from_the_detail_page(client):
    log_in(client, "red")
    form = {"tenant": "red", "name": "web", "a": "red1", "b": "red3", "bandwidth": "1mbit"}
    client.post("/ui/connections", data=form)
    answer = client.post("/ui/connections/red/web/release", headers={"HX-Request": "true"})
    assert answer.status_code == 200 and "released" in answer.text
    assert client.get("/ui/topology/state").json()["paths"] == {}


def test_a_change_from_another_site_is_refused(client):
    log_in(client, "red")
    form = {"tenant": "red", "name": "web", "a": "red1", "b": "red3", "bandwidth": "1mbit"}
    answer = client.post("/ui/connections", data=form, headers={"Origin": "https://evil.example"})
    assert answer.status_code == 403
    assert client.get("/ui/topology/state").json()["paths"] == {}


def test_an_unknown_connection_shows_the_error_text_not_a_trace(client):
    log_in(client, "prov")
    answer = client.get("/ui/connections/red/nothing")
    assert answer.status_code == 404
    assert "no connection &#39;nothing&#39; in tenant &#39;red&#39;" in answer.text
    assert "Traceback" not in answer.text
