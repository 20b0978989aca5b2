"""`vnet controller run` as a real process on a three-host lab with agents, driven with curl in
JSON and XML (issue 12, parts 1 and 4): tokens made by the CLI, a
connection established through the agents, a retried request with the same Idempotency-Key
making no second connection, Server-Timing, bad input refused with nothing changed on any
agent, release, and a clean stop by PID on SIGTERM.

The agents are checked with independent NETCONF sessions (the service tests' lab support)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree
from ruamel.yaml import YAML

from tests.metrics_support import parse, value
from vnet.lab.access import agent_endpoint
from vnet.model.controller_config import ControllerConfig
from vnet.tools import postgres
from vnet.tools.processes import stop_child
from vnet.tools.procfs import listening
from vnet.tools.wait import wait_until

from .conftest import VNET, require_tools
from .controller_service_support import HOSTS, Lab
from .world_support import unique_database

V1 = "/api/v1"
XML = "application/xml"


@pytest.fixture(scope="module")
def lab(service_lab: Lab) -> Lab:
    """The session's triangle, borrowed (conftest.py guards it)."""
    require_tools("curl")
    return service_lab


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(
    lab: Lab,
    directory: Path,
    database: str | None,
    namespace: str | None = None,
    hosts: tuple[str, ...] = HOSTS,
) -> Path:
    """The controller's configuration: the lab's file as inventory, the agents of `hosts` by
    password file, a private port; with `namespace`, served in it and reaching the agents
    from it."""
    agents = []
    for host in hosts:
        ep = agent_endpoint(lab.name, host)
        secret = directory / f"{host}.password"
        secret.write_text(f"{ep.password}\n")
        secret.chmod(0o600)
        agents.append(
            {
                "host": host,
                "address": ep.address,
                "netconf_port": ep.port,
                "user": ep.user,
                "password_file": str(secret),
                "namespace": None if namespace else ep.namespace,
                "hostkey": ep.hostkey,
            }
        )
    settings = {
        "state_dir": str(directory / "state"),
        "port": free_port(),
        "inventory": str(lab.path),
        "agents": agents,
        "reconcile_interval": 3600,
        "confirm_timeout": 30,
        **({"database": database} if database else {}),
        **({"namespace": namespace} if namespace else {}),
    }
    path = directory / "controller.yaml"
    YAML().dump(settings, path)
    return path


@dataclass
class Controller:
    process: subprocess.Popen[bytes]
    config: ControllerConfig
    config_file: Path
    url: str
    log: Path
    certificate: str  # its self-signed HTTPS certificate, which curl verifies

    def token(self, *args: str) -> str:
        argv = [VNET, "controller", "token", "create", "--config", str(self.config_file), *args]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def start(config_file: Path, log: Path) -> Controller:
    """`vnet controller run` as our child, once its ready file says it listens."""
    config = ControllerConfig.model_validate(YAML(typ="safe").load(config_file.read_text()))
    with log.open("wb") as out:
        argv = [VNET, "controller", "run", "--config", str(config_file)]
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(
            config.ready_path.exists,
            60,
            "the controller's ready file",
            interval=0.05,
            give_up=lambda: "it exited" if process.poll() is not None else None,
        )
    except Exception:
        stop_child(process)
        raise AssertionError(f"controller did not start:\n{log.read_text()}") from None
    ready = json.loads(config.ready_path.read_text())
    assert ready["pid"] == process.pid
    return Controller(process, config, config_file, ready["url"], log, ready["certificate"])


@pytest.fixture
def controller(lab: Lab, tmp_path: Path) -> Iterator[Controller]:
    c = start(write_config(lab, tmp_path, None), tmp_path / "controller.log")
    yield c
    stop_child(c.process)  # only if a test failed before its own stop


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)

    def xml(self) -> etree._Element:
        return etree.fromstring(self.body)


def curl(
    c: Controller,
    method: str,
    path: str,
    token: str | None,
    *args: str,
    netns: str | None = None,
    prefix: str = V1,
) -> Answer:
    """One request with curl (run in `netns` if given): its status, headers, body."""
    argv = ["curl", "-sS", "--cacert", c.certificate, "-X", method, "-D", "-"]
    argv += [f"{c.url}{prefix}{path}", *args]
    if netns is not None:
        argv = ["ip", "netns", "exec", netns, *argv]
    if token is not None:
        argv += ["-H", f"Authorization: Bearer {token}"]
    raw = subprocess.run(argv, check=True, capture_output=True, timeout=120).stdout
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(int(lines[0].split()[1]), headers, body)


def post_json(c: Controller, path: str, token: str, body: object, *more: str) -> Answer:
    return curl(
        c,
        "POST",
        path,
        token,
        "-H",
        "Content-Type: application/json",
        "-d",
        json.dumps(body),
        *more,
    )


def pieces(lab: Lab) -> dict[str, set[str]]:
    return lab.controller_pieces()


VIDEO = {"name": "video", "a": "pc1", "b": "pc3", "protocol": "udp", "dst_port": 5004}
XML_REQUEST = (
    "<ConnectionRequest><name>voice</name><a>pc1</a><b>pc3</b><protocol>udp</protocol>"
    "<dst_port>5006</dst_port><bandwidth>2mbit</bandwidth></ConnectionRequest>"
)


# the HTTP contract through the real process: the database is not what is tested here (the
# two controllers on one PostgreSQL below are; test_controller_api_postgres.py runs the API's
# tests on it), so SQLite only
def test_controller_process_json_and_xml_with_curl(lab: Lab, controller: Controller) -> None:
    c = controller
    provider = c.config.provider_token_path.read_text().strip()
    assert curl(c, "GET", "/whoami", provider).json() == {"role": "provider", "tenant": None}
    acme = c.token("--role", "tenant", "--tenant", "acme")
    beta = c.token("--role", "tenant", "--tenant", "beta")
    assert curl(c, "GET", "/whoami", acme).json() == {"role": "tenant", "tenant": "acme"}
    create_in_json_once(lab, c, acme)
    create_in_xml(c, acme)
    scrape_agrees(c, provider, acme)
    refuse_bad_input(lab, c, acme, beta)
    for name in ("video", "voice"):
        gone = curl(c, "DELETE", f"/tenants/acme/connections/{name}", acme)
        assert gone.status == 200 and gone.json()["status"] == "released"  # type: ignore[index]
        assert "server-timing" in gone.headers
    assert pieces(lab) == {host: set() for host in HOSTS}
    # SIGTERM by PID while a client follows the event stream: a clean exit, the stream
    # ended, the ready file removed
    events = follow_events(c, acme)
    try:
        c.process.send_signal(signal.SIGTERM)
        assert c.process.wait(30) == 0, c.log.read_text()
        assert events.wait(10) == 0
    finally:
        stop_child(events)
    assert not c.config.ready_path.exists()


def follow_events(c: Controller, token: str) -> subprocess.Popen[bytes]:
    """curl following GET /events, once its first event arrived."""
    argv = ["curl", "-sSN", "--cacert", c.certificate, f"{c.url}{V1}/events"]
    argv += ["-H", f"Authorization: Bearer {token}"]
    events = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert events.stdout is not None
    assert events.stdout.readline() == b"event: links\n"
    data = events.stdout.readline()
    assert data.startswith(b"data: [") and b'"directions"' in data
    return events


def create_in_json_once(lab: Lab, c: Controller, acme: str) -> None:
    """Established through the agents and timed; the retry with the same key makes nothing."""
    key = ("-H", "Idempotency-Key: order-1")
    body = {**VIDEO, "bandwidth": "20mbit"}
    first = post_json(c, "/tenants/acme/connections", acme, body, *key)
    assert first.status == 201, first.body
    view = first.json()["connection"]  # type: ignore[index]
    assert (view["status"], view["bandwidth"]) == ("established", 20_000_000)
    assert (view["path"][0], view["path"][-1]) == ("h1", "h3")
    timing = dict(p.strip().split(";dur=") for p in first.headers["server-timing"].split(","))
    assert set(timing) == {"db", "path", "devices", "api"}
    assert float(timing["devices"]) > 0 and float(timing["api"]) > 0
    installed = pieces(lab)
    assert installed["h1"] and installed["h3"]
    again = post_json(c, "/tenants/acme/connections", acme, body, *key)
    assert again.status == 201 and again.json()["connection"] == view  # type: ignore[index]
    assert pieces(lab) == installed  # no second connection anywhere


def create_in_xml(c: Controller, acme: str) -> None:
    xml = curl(
        c,
        "POST",
        "/tenants/acme/connections",
        acme,
        *("-H", f"Content-Type: {XML}", "-H", f"Accept: {XML}", "--data-binary", XML_REQUEST),
    )
    assert xml.status == 201, xml.body
    assert xml.headers["content-type"].startswith(XML)
    root = xml.xml()
    assert (root.tag, root.findtext("connection/status")) == ("ConnectionAnswer", "established")
    assert root.findtext("connection/bandwidth") == "2000000"
    listing = curl(c, "GET", "/connections", acme, "-H", f"Accept: {XML}").xml()
    assert listing.tag == "ConnectionViewList"
    assert sorted(v.findtext("name") or "" for v in listing) == ["video", "voice"]


def scrape_agrees(c: Controller, provider: str, acme: str) -> None:
    """/metrics, read with Prometheus's parser, says what /links and /hosts say: the two
    connections' reservations per link direction, every agent up; and the admissions made."""
    assert curl(c, "GET", "/metrics", None, prefix="").status == 401
    assert curl(c, "GET", "/metrics", acme, prefix="").status == 403
    links = curl(c, "GET", "/links", provider).json()
    hosts = curl(c, "GET", "/hosts", provider).json()
    scraped = curl(c, "GET", "/metrics", provider, prefix="")
    assert scraped.status == 200, scraped.body
    samples = parse(scraped.body.decode())
    held = 0
    for link in links:  # type: ignore[attr-defined]
        for d in link["directions"]:
            src, dst = d["direction"].split(" -> ")
            where = {"link": link["name"], "source": src, "target": dst}
            assert value(samples, "vnet_controller_link_reserved_bps", **where) == d["reserved_bps"]
            assert value(samples, "vnet_controller_link_free_bps", **where) == d["free_bps"]
            held += d["reserved_bps"]
    assert held >= 22_000_000  # video (20 Mbit/s) and voice (2 Mbit/s), on every hop
    for host in hosts:  # type: ignore[attr-defined]
        assert host["reachable"] is True, host
        assert value(samples, "vnet_controller_agent_up", host=host["name"]) == 1
    # video, its retry (answered with the same connection) and voice
    admitted = {"operation": "create", "outcome": "admitted", "reason": ""}
    assert value(samples, "vnet_controller_admissions_total", **admitted) == 3


def refuse_bad_input(lab: Lab, c: Controller, acme: str, beta: str) -> None:
    """A precise error for each, and nothing changes on any agent."""
    held = pieces(lab)
    path = "/tenants/acme/connections"
    new = {**VIDEO, "name": "extra", "dst_port": 5008, "bandwidth": "1mbit"}
    bad_xml = ("-H", f"Content-Type: {XML}", "--data-binary", "<ConnectionRequest><name>")
    refused = [
        (post_json(c, path, beta, new), 403, "forbidden"),
        (post_json(c, path, "vnet_wrong", new), 401, "unauthorized"),
        (post_json(c, path, acme, {**new, "bandwidth": "0"}), 422, "invalid"),
        (post_json(c, path, acme, {**new, "bandwidth": "100gbit"}), 400, "bad-request"),
        (post_json(c, path, acme, {**new, "path": ["h3", "h1"]}), 400, "bad-request"),
        (post_json(c, path, acme, {**new, "a": "nobody"}), 404, None),
        (curl(c, "POST", path, acme, *bad_xml), 400, "bad-request"),
    ]
    for answer, status, code in refused:
        assert answer.status == status, answer.body
        if answer.headers["content-type"].startswith(XML):
            error = {e.tag: e.text for e in answer.xml()}
        else:
            error = answer.json()  # type: ignore[assignment]
        assert error["reason"]
        assert code is None or error["code"] == code
    # 95 Mbit/s with its headers and margin exceed the direct 100 Mbit/s link, asked for
    full = post_json(c, path, acme, {**new, "bandwidth": "95mbit", "path": ["h1", "h3"]})
    assert full.status == 409, full.body
    shortfalls = full.json()["shortfalls"]  # type: ignore[index]
    assert [s["direction"] for s in shortfalls] == ["h1 -> h3"]
    assert shortfalls[0]["missing_bps"] > 0
    assert pieces(lab) == held


def test_controller_serves_inside_its_namespace(lab: Lab, tmp_path: Path) -> None:
    """With `namespace` (a lab's management network) it listens there and only there, and
    reaches the agents from there; SIGTERM still stops it cleanly."""
    management = agent_endpoint(lab.name, "h1").namespace
    assert management is not None
    c = start(write_config(lab, tmp_path, None, management), tmp_path / "controller.log")
    try:
        assert listening(management, c.config.port)
        assert not listening(None, c.config.port)
        token = c.config.provider_token_path.read_text().strip()
        hosts = curl(c, "GET", "/hosts", token, netns=management).json()
        assert sorted(h["name"] for h in hosts) == list(HOSTS)  # type: ignore[index]
        refused = subprocess.run(["curl", "-sS", f"{c.url}{V1}/whoami"], capture_output=True)
        assert refused.returncode != 0  # nothing answers here, outside the namespace
        c.process.send_signal(signal.SIGTERM)
        assert c.process.wait(30) == 0, c.log.read_text()
    finally:
        stop_child(c.process)


def test_two_controllers_on_one_postgresql_never_over_admit(
    lab: Lab, pg: postgres.Postgres, tmp_path: Path
) -> None:
    """20 simultaneous requests of 10 Mbit/s on the 100 Mbit/s link h1-h3 (asked for by
    path, so nothing is moved), split across two controller processes sharing one database:
    exactly as many are established as fit (8: 11.3 Mbit/s each on the wire, 99 usable),
    every other one is refused naming that link, and the agents hold exactly the admitted."""
    database = pg.create_database(unique_database("two"))
    both = []
    for n in (1, 2):
        (tmp_path / f"c{n}").mkdir()
        both.append(start(write_config(lab, tmp_path / f"c{n}", database), tmp_path / f"c{n}.log"))
    try:
        token = both[0].config.provider_token_path.read_text().strip()

        def ask(i: int) -> Answer:
            body = {**VIDEO, "name": f"p{i}", "dst_port": 6000 + i, "bandwidth": "10mbit"}
            return post_json(
                both[i % 2], "/tenants/acme/connections", token, {**body, "path": ["h1", "h3"]}
            )

        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(ask, range(20)))
        admitted = [a for a in answers if a.status == 201]
        refused = [a.json() for a in answers if a.status != 201]
        assert len(admitted) == 8, [a.body for a in answers]
        assert all(r["code"] == "no-capacity" for r in refused), refused  # type: ignore[index]
        assert {s["link"] for r in refused for s in r["shortfalls"]} == {"h1-h3"}  # type: ignore[index]
        assert len(lab.connection_names("h1")) == 8  # the ingress pieces, read from the agent
        for a in admitted:
            name = a.json()["connection"]["name"]  # type: ignore[index]
            assert curl(both[1], "DELETE", f"/tenants/acme/connections/{name}", token).status == 200
        assert pieces(lab) == {host: set() for host in HOSTS}
    finally:
        for c in both:
            stop_child(c.process)
