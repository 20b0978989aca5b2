"""The web console in a real browser (issue 13): Debian's Chromium driven by Playwright against
a real controller over the 40-end-host example lab (real agents). Log in, see the topology,
request a connection through the form and see its path, be refused with the reason, release,
and check that a tenant administrator's pages hold no other tenant's objects. Screenshots of
the main pages and the topology page's render time go to out/console/ (reported, not
asserted)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from vnet.client import NetconfClient
from vnet.controller.ui.session import COOKIE
from vnet.lab.access import agent_endpoint
from vnet.model.topology import Interface, VirtualRouter
from vnet.tools import processes
from vnet.tools.iperf3 import Iperf3Server, client_argv

from .conftest import Labs, require_tools
from .console_support import CHROMIUM, OUTPUT, Controller, start_controller

pytestmark = pytest.mark.root
WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
RED = re.compile(r"\bred\b")  # the tenant, its objects (red-r1, red-pc1, red/web...)
SLOW = 90_000  # ms: a create reaches every agent of the path (confirmed commit)
# an ed25519 public key's base64, as `vnet agent hostkey` prints it (any well-formed one)
HOSTKEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


@pytest.fixture(scope="module")
def controller(module_labs: Labs) -> Iterator[Controller]:
    require_tools(CHROMIUM)
    yield from start_controller(module_labs)


@pytest.fixture(scope="module")
def browser(controller: Controller) -> Iterator[Browser]:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        # root runs no sandboxed renderer; the pages are our own, on loopback. The console is
        # HTTPS with a self-signed certificate: the browser trusts exactly its key (pinned)
        pin = f"--ignore-certificate-errors-spki-list={controller.spki_sha256}"
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", pin])
        yield chromium
        chromium.close()


def new_page(browser: Browser, viewport: dict[str, int] = WIDE) -> Page:
    page = browser.new_context(viewport=viewport).new_page()
    page.set_default_timeout(30_000)
    return page


def log_in(page: Page, controller: Controller, token: str) -> None:
    page.goto(controller.console)
    expect(page).to_have_url(
        controller.url
        + "/ui/login?reason=not%20logged%20in%3A%20log%20in%20with%20an%20API%20token"
    )
    page.get_by_label("API token").fill(token)
    page.keyboard.press("Enter")  # the keyboard suffices
    expect(page.get_by_role("heading", name="Topology", exact=True)).to_be_visible()


def topology_ready(page: Page) -> dict[str, float]:
    """Open the topology page; milliseconds from the request to the graph drawn, and where
    they went: the controller's answer (the page built from the service) and the drawing."""
    started = time.monotonic()
    page.goto(page.url.split("/ui/")[0] + "/ui/")
    page.wait_for_selector("#topology[data-ready=true]")
    wall = (time.monotonic() - started) * 1000
    timing = page.evaluate(
        """() => { const n = performance.getEntriesByType("navigation")[0];
                   return { answer_ms: n.responseEnd - n.requestStart,
                            ready_ms: window.vnetReadyAt, drawing_ms: window.vnetTopologyMs }; }"""
    )
    return {"wall_ms": round(wall, 1), **{k: round(v, 1) for k, v in timing.items()}}


def shoot(page: Page, name: str) -> None:
    page.screenshot(path=OUTPUT / f"{name}.png", full_page=True)


def request_form(
    page: Page, name: str, bandwidth: str, tenant: str = "red", path: str = "", port: int = 5001
) -> None:
    """From end host <tenant>-1-1 (on h1) to <tenant>-3-1 (on h3), UDP to `port`."""
    if page.get_by_label("Tenant").count():  # a provider chooses; a tenant acts for its own
        page.get_by_label("Tenant").select_option(tenant)
    page.get_by_label("Name").fill(name)
    page.get_by_label("From end host").select_option(f"{tenant}-1-1")
    page.get_by_label("To end host").select_option(f"{tenant}-3-1")
    page.get_by_label("Bandwidth").fill(bandwidth)
    page.get_by_label("Protocol").select_option("udp")
    page.get_by_label("Destination port").fill(str(port))
    page.get_by_label("Explicit path (optional)").fill(path)
    page.get_by_role("button", name="Request").click()


def see_the_whole_topology(page: Page) -> None:
    """The example's 4 hosts, 8 VRs and 5 links, in the graph and in the tables."""
    assert page.evaluate("vnetGraph.nodes('.host').length") == 4
    assert page.evaluate("vnetGraph.edges('.arc').length") == 10  # 5 links, both directions
    assert page.evaluate("vnetGraph.nodes('.router').length") == 8
    expect(page.locator("#hosts-table tbody tr")).to_have_count(4)
    expect(page.get_by_role("heading", name="Underlay links (5)")).to_be_visible()


def request_one_that_fits_and_one_that_does_not(page: Page) -> None:
    page.get_by_role("link", name="Connections").click()
    request_form(page, "web", "300mbit", path="h1 h2 h3")  # not the direct h1-h3 link
    answer = page.locator("#request-answer")
    expect(answer).to_contain_text("established", timeout=SLOW)
    expect(answer).to_contain_text("h1 → h2 → h3")
    expect(page.locator("#connections-table")).to_contain_text("web")

    # fits an empty 1 Gbit/s link, not beside "web" (an explicit path: nothing is moved)
    request_form(page, "huge", "600mbit", path="h1 h2 h3", port=5002)
    expect(answer.locator(".error")).to_contain_text("no-capacity", timeout=SLOW)
    lacking = answer.locator("tr.shortfall", has_text="h1 -> h2")  # which link lacks how much
    expect(lacking).to_have_count(1)
    expect(lacking.locator("td").nth(4)).to_contain_text("bit/s")
    shoot(page, "connections")

    request_form(page, "huger", "2gbit", port=5003)  # more than any link: the reason why
    expect(answer.locator(".error")).to_contain_text("more than any link can carry")

    page.get_by_label("Name").fill("bad name!")  # the page refuses before sending
    assert not page.locator("#req-name").evaluate("el => el.checkValidity()")


def test_provider_requests_sees_the_path_is_refused_and_releases(controller, browser):
    page = new_page(browser)
    log_in(page, controller, controller.provider_token)
    visits = [topology_ready(page) for _ in range(5)]
    (OUTPUT / "render-time.json").write_text(json.dumps(visits, indent=1))
    print("topology page of the 40-end-host example, 5 visits:", *visits, sep="\n  ")
    see_the_whole_topology(page)
    shoot(page, "topology")
    for table in ("tenants", "networks", "routers"):
        page.get_by_role("link", name=table.capitalize()).click()
        expect(page.locator(f"#{table}-table tbody tr").first).to_be_visible()
        shoot(page, table)
    request_one_that_fits_and_one_that_does_not(page)

    page.goto(controller.console + "?connection=red/web")
    page.wait_for_selector("#topology[data-ready=true]")
    on_path = page.evaluate("vnetGraph.edges('.arc.on-path').map(e => e.data('direction'))")
    assert sorted(on_path) == ["h1 -> h2", "h2 -> h3"]
    expect(page.locator("#path-info")).to_contain_text("red/web")
    shoot(page, "topology-path")

    page.goto(controller.url + "/ui/connections/red/web")
    expect(page.locator("#connection-state")).to_have_text("established")
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    page.get_by_label("New bandwidth").fill("200mbit")  # make-before-break, same path
    page.get_by_role("button", name="Modify").click()
    change = page.locator("#change-answer")
    expect(change).to_contain_text("established", timeout=SLOW)
    expect(change).to_contain_text("at 200 Mbit/s")
    page.reload()
    expect(page.locator("#connection-history")).to_contain_text("modified")
    shoot(page, "connection")
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Release").click()
    expect(page.locator("#change-answer")).to_contain_text("released", timeout=SLOW)

    live = controller.api("GET", "/connections").json()
    assert [c["name"] for c in live] == []  # the API agrees: nothing left
    links = controller.api("GET", "/links").json()
    assert all(d["reserved_bps"] == 0 for link in links for d in link["directions"])


def test_a_tenant_administrator_sees_only_its_own_tenant(controller, browser):
    body = {"name": "red-secret", "a": "red-1-2", "b": "red-3-2", "bandwidth": "5mbit"}
    made = controller.api("POST", "/tenants/red/connections", json=body)
    assert made.status_code == 201, made.text
    page = new_page(browser)
    log_in(page, controller, controller.token("blue"))
    pages = ("", "tenants", "networks", "routers", "connections", "connections?released=true")
    for path in pages:
        page.goto(controller.console + path)
        html = page.content()
        assert not RED.search(html), f"/ui/{path} shows tenant red's objects"
        assert "blue" in html
    # fetched by the page itself: the browser, not Playwright's own client, trusts the pin
    state = page.evaluate(
        "async url => (await fetch(url)).text()", controller.console + "topology/state"
    )
    assert not RED.search(state)
    page.goto(controller.console)
    shoot(page, "topology-tenant")
    page.goto(controller.console + "connections")
    request_form(page, "blue-web", "10mbit", tenant="blue")  # a tenant has no tenant choice
    expect(page.locator("#request-answer")).to_contain_text("established", timeout=SLOW)
    controller.api("DELETE", "/tenants/red/connections/red-secret")
    controller.api("DELETE", "/tenants/blue/connections/blue-web")


def test_a_phone_sized_window(controller, browser):
    page = new_page(browser, PHONE)
    log_in(page, controller, controller.token("blue"))
    page.wait_for_selector("#topology[data-ready=true]")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shoot(page, "topology-phone")
    page.goto(controller.console + "connections")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shoot(page, "connections-phone")


def test_an_expired_token_leads_back_to_the_login_page(controller, browser):
    token = controller.token("blue", expires_in=1)
    time.sleep(1.5)  # expired before it is used: no race with a slow machine
    page = new_page(browser)
    page.goto(controller.console + "login")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("expired")
    # the same token in the console's cookie (a login from before it expired)
    page.context.add_cookies([{"name": COOKIE, "value": token, "url": controller.console}])
    page.goto(controller.console + "routers")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("the token expired at")


def test_live_utilisation_follows_traffic(controller, browser):
    """UDP at 40 Mbit/s from red-1-2 (h1) to red-3-2 (h3), routed by red's VRs over the direct
    h1-h3 link: the topology page's figure for h1 -> h3 rises while it flows. The delay from
    the sender's start to the page showing it is reported (the service polls the agents'
    class counters and the page the service, each every utilisation_interval), not asserted."""
    require_tools("iperf3")
    page = new_page(browser)
    log_in(page, controller, controller.provider_token)
    cell = page.locator('tr[data-arc="arc:h1-h3:h1"] .utilisation')
    expect(cell).not_to_contain_text("Mbit/s", timeout=SLOW)  # quiet before
    receiver, sender = (f"vnet-{controller.lab}-{node}" for node in ("red-3-2", "red-1-2"))
    with Iperf3Server(receiver, json=False):
        started = time.monotonic()
        flow = processes.spawn(
            sender,
            client_argv("10.1.3.2", 10, udp_rate="40M"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            expect(cell).to_contain_text("Mbit/s", timeout=10_000)
            shown = time.monotonic() - started
            shoot(page, "topology-live")
        finally:
            processes.stop_child(flow)
    print(f"live utilisation: h1 -> h3 shown {shown:.2f} s after the sender started")
    (OUTPUT / "live-lag.json").write_text(json.dumps({"shown_after_s": round(shown, 2)}))


def test_deletes_from_the_tables_and_a_refusal_shows_what_holds_it(controller, browser):
    """A VR, an end host and a tenant made through the API go from the console's tables
    (the VR from its agent too: the API's listing and the agent agree); a network with VRs
    on it is refused with the controller's reason and its holders, and stays."""
    vr = {
        "name": "red-rx",
        "host": "h2",
        "interfaces": [{"network": "red-core", "ipv4": "10.1.0.50/24", "ipv6": "fd01::50/64"}],
    }
    pc = {"name": "red-9", "host": "h1", "network": "red-lan1", "ipv4": "10.1.1.99/24"}
    for path, body in (
        ("/tenants/red/routers", vr),
        ("/tenants/red/endhosts", pc),
        ("/tenants", {"name": "green"}),
    ):
        made = controller.api("POST", path, json=body)
        assert made.status_code == 201, made.text  # fmt: skip
    page = new_page(browser)
    log_in(page, controller, controller.provider_token)
    answer = page.locator("#delete-answer")

    page.goto(controller.console + "routers")
    page.get_by_role("button", name="Delete VR red-rx").click()
    expect(answer).to_contain_text("deleted: VR red-rx", timeout=SLOW)
    expect(page.locator("#routers-table")).not_to_contain_text("red-rx")

    page.goto(controller.console + "networks")
    page.get_by_role("button", name="Delete network red-lan1").click()
    expect(answer).to_contain_text("409 in-use")
    expect(answer.locator("ul.holders")).to_contain_text("VR 'red-r1'")
    expect(answer.locator("ul.holders")).to_contain_text("end host 'red-1-1'")
    shoot(page, "delete-refused")
    page.get_by_role("button", name="Delete end host red-9").click()
    expect(answer).to_contain_text("deleted: end host red-9")

    page.goto(controller.console + "tenants")
    page.get_by_role("button", name="Delete tenant green").click()
    expect(answer).to_contain_text("deleted: tenant green")

    routers = {r["name"]: r["host"] for r in controller.api("GET", "/routers").json()}
    assert "red-rx" not in routers and routers["red-r1"] == "h1"
    assert "red-lan1" in {n["name"] for n in controller.api("GET", "/networks").json()}
    assert "red-9" not in {e["name"] for e in controller.api("GET", "/endhosts").json()}
    assert "green" not in {t["name"] for t in controller.api("GET", "/tenants").json()}
    with NetconfClient(agent_endpoint(controller.lab, "h2")) as agent:  # the agent
        assert "red-rx" not in {r.name for r in agent.routers(state=False)}


def test_a_vr_made_on_an_agent_is_shown_adopted_and_deleted(controller, browser):
    """A VR made on h3's agent directly is listed to the provider with an adopt form; adopted
    into red it joins the routers table (and the API's list), and goes again from there."""
    itf = Interface(network="red-core", ipv4="10.1.0.60/24", ipv6="fd01::60/64")
    with NetconfClient(agent_endpoint(controller.lab, "h3")) as agent:
        agent.create_router(VirtualRouter(name="red-ux", host="h3", interfaces=[itf]))
    page = new_page(browser)
    log_in(page, controller, controller.provider_token)
    page.goto(controller.console + "routers")
    expect(page.locator("#unmanaged-table")).to_contain_text("red-ux")
    row = page.locator("#unmanaged-table tr", has_text="red-ux")
    row.get_by_label("tenant").select_option("red")
    shoot(page, "unmanaged")
    row.get_by_role("button", name="Adopt VR red-ux").click()
    expect(page.locator("#delete-answer")).to_contain_text("adopted: VR red-ux", timeout=SLOW)
    expect(page.locator("#routers-table")).to_contain_text("red-ux")
    routers = {r["name"]: r["tenant"] for r in controller.api("GET", "/routers").json()}
    assert routers["red-ux"] == "red"
    page.get_by_role("button", name="Delete VR red-ux").click()
    expect(page.locator("#delete-answer")).to_contain_text("deleted: VR red-ux", timeout=SLOW)
    with NetconfClient(agent_endpoint(controller.lab, "h3")) as agent:
        assert "red-ux" not in {r.name for r in agent.routers(state=False)}


def test_the_provider_removes_and_adds_links_on_the_hosts_and_links_page(controller, browser):
    """Removing a link moves the connection crossing it first (the page lists the move);
    removing one a pinned connection needs is refused naming it, and nothing changes; the
    link comes back through the add form."""
    flow = {"a": "red-1-1", "b": "red-3-1", "protocol": "udp", "bandwidth": "10mbit"}
    free = {"name": "free", **flow, "dst_port": 5009}
    made = controller.api("POST", "/tenants/red/connections", json=free)
    assert made.status_code == 201 and made.json()["connection"]["path"] == ["h1", "h3"]
    pinned = {"name": "pinned", **flow, "dst_port": 5010, "path": ["h1", "h2", "h3"]}
    assert controller.api("POST", "/tenants/red/connections", json=pinned).status_code == 201
    page = new_page(browser)
    try:
        log_in(page, controller, controller.provider_token)
        page.get_by_role("link", name="Hosts & links").click()
        expect(page.locator("#links-table tbody tr")).to_have_count(5)
        page.get_by_role("button", name="Remove link h1-h3").click()
        answer = page.locator("#underlay-answer")
        expect(answer).to_contain_text("link h1-h3 removed", timeout=SLOW)
        expect(answer.locator("li.moved")).to_contain_text("red/free: h1 → h3 ⇒")
        expect(page.locator("#links-table tbody tr")).to_have_count(4)
        shoot(page, "underlay")

        page.get_by_role("button", name="Remove link h1-h2").click()
        expect(answer.locator(".error")).to_contain_text("in-use", timeout=SLOW)
        stuck = answer.locator("tr.unmovable-row", has_text="red/pinned")
        expect(stuck).to_contain_text("was asked for explicitly")
        expect(page.locator("#links-table tbody tr")).to_have_count(4)  # nothing changed

        page.get_by_label("From host").fill("h1")
        page.get_by_label("To host").fill("h3")
        page.get_by_label("Rate").fill("1gbit")
        page.get_by_role("button", name="Add link").click()
        expect(answer).to_contain_text("link h1-h3 added", timeout=SLOW)
        expect(page.locator("#links-table tbody tr")).to_have_count(5)
    finally:
        for name in ("free", "pinned"):
            controller.api("DELETE", f"/tenants/red/connections/{name}")
        controller.api("POST", "/links", json={"a": "h1", "b": "h3", "rate": "1gbit"})
    assert "h1-h3" in [x["name"] for x in controller.api("GET", "/links").json()]


def add_host_with_agent(page: Page, password_file: str) -> None:
    page.get_by_label("Name").fill("h8")
    page.get_by_label("Address").fill("127.0.0.1")
    page.get_by_label("NETCONF port").fill("1")
    page.get_by_label("Host key").fill(f"ssh-ed25519 {HOSTKEY}")
    page.get_by_label("Password file").fill(password_file)
    page.get_by_role("button", name="Add host").click()


def test_the_provider_adds_a_host_with_its_agent_on_the_hosts_and_links_page(controller, browser):
    """The host form's agent fields: a secret file given as a path (not a name in the
    controller's secrets directory) is refused naming the field (nothing added); a well-formed
    agent is kept and asked at once, and the answer says it does not answer (nothing listens
    on loopback's port 1)."""
    page = new_page(browser)
    try:
        log_in(page, controller, controller.provider_token)
        page.get_by_role("link", name="Hosts & links").click()
        answer = page.locator("#underlay-answer")
        add_host_with_agent(page, "/etc/shadow")  # a name in the secrets directory, or nothing
        expect(answer.locator(".error")).to_contain_text("agent.password_file", timeout=SLOW)
        assert "h8" not in [h["name"] for h in controller.api("GET", "/hosts").json()]

        add_host_with_agent(page, "")  # the page came back whole: the form is empty again
        expect(answer).to_contain_text("its agent at 127.0.0.1:1 does not answer", timeout=SLOW)
        row = page.locator("#hosts-table tbody tr", has_text="h8")
        expect(row).to_contain_text("127.0.0.1:1")
    finally:
        controller.api("DELETE", "/hosts/h8")
    assert "h8" not in [h["name"] for h in controller.api("GET", "/hosts").json()]


def test_the_provider_adds_and_removes_hosts_on_the_hosts_and_links_page(controller, browser):
    """A host added through the form joins the hosts table and goes with its Remove button;
    removing h2 while a pinned connection runs through it is refused naming that connection,
    and nothing changes."""
    flow = {"a": "red-1-1", "b": "red-3-1", "protocol": "udp", "bandwidth": "10mbit"}
    pinned = {"name": "via-h2", **flow, "dst_port": 5011, "path": ["h1", "h2", "h3"]}
    assert controller.api("POST", "/tenants/red/connections", json=pinned).status_code == 201
    before = [h["name"] for h in controller.api("GET", "/hosts").json()]
    page = new_page(browser)
    try:
        log_in(page, controller, controller.provider_token)
        page.get_by_role("link", name="Hosts & links").click()
        hosts = page.locator("#hosts-table tbody tr")
        expect(hosts).to_have_count(len(before))
        answer = page.locator("#underlay-answer")

        page.get_by_label("Name").fill("h9")
        page.get_by_role("button", name="Add host").click()
        expect(answer).to_contain_text("host h9 added", timeout=SLOW)
        expect(hosts).to_have_count(len(before) + 1)
        page.get_by_role("button", name="Remove host h9").click()
        expect(answer).to_contain_text("host h9 removed", timeout=SLOW)
        expect(hosts).to_have_count(len(before))

        page.get_by_role("button", name="Remove host h2").click()
        expect(answer.locator(".error")).to_contain_text("in-use", timeout=SLOW)
        stuck = answer.locator("tr.unmovable-row", has_text="red/via-h2")
        expect(stuck).to_contain_text("was asked for explicitly")
        expect(hosts).to_have_count(len(before))  # nothing changed
    finally:
        controller.api("DELETE", "/tenants/red/connections/via-h2")
    assert [h["name"] for h in controller.api("GET", "/hosts").json()] == before
    assert controller.api("GET", "/tenants/red/connections/via-h2").json()["status"] == "released"
