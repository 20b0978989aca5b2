"""RESTCONF against a real agent, with curl as the client (inside the agent's
namespace), ncclient and the kernel as independent witnesses."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from lxml import etree
from ncclient import manager

from vnet.substrate import nsfs
from vnet.tools import processes

from .agent_support import AgentUnderTest, running_agent
from .conftest import require_tools

NS = "urn:vnet:yang:vnet-router"
JSON_T = "application/yang-data+json"
XML_T = "application/yang-data+xml"
RC = "urn:ietf:params:xml:ns:yang:ietf-restconf"
NETWORKS = {
    "vnet-router:virtual-networks": {
        "network": [
            {
                "name": "n1",
                "tenant": "a",
                "vni": 10,
                "ipv4-prefix": "10.1.0.0/24",
                "ipv6-prefix": "fd00:1::/64",
            },
            {"name": "n2", "tenant": "a", "vni": 11, "ipv4-prefix": "10.2.0.0/24"},
        ]
    }
}


@dataclass
class Reply:
    code: int  # curl's exit code
    status: int  # HTTP status (0 if none)
    headers: dict[str, str]
    body: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.body)

    def error(self) -> dict:
        errors = self.json()["ietf-restconf:errors"]["error"]
        assert len(errors) == 1, self.body
        return errors[0]


def curl(
    a: AgentUnderTest,
    method: str,
    path: str,
    body: str | None = None,
    ctype: str | None = None,
    accept: str | None = None,
    user: str = "admin:s3cret",
    tls: tuple[str, ...] = ("-k",),
    scheme: str = "https",
) -> Reply:
    argv = ["curl", "-sS", "-i", "-X", method, "--max-time", "20", *tls]
    if user:
        argv += ["-u", user]
    if ctype:
        argv += ["-H", f"Content-Type: {ctype}"]
    if accept:
        argv += ["-H", f"Accept: {accept}"]
    if body is not None:
        argv += ["--data-binary", body]
    argv.append(f"{scheme}://{a.address}:{a.restconf_port}{path}")
    done = processes.run(a.namespace, argv, timeout=30)
    head, _, rest = done.stdout.replace("\r\n", "\n").partition("\n\n")
    lines = head.splitlines()
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return Reply(done.returncode, status, headers, rest, done.stderr)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    require_tools("curl")
    with running_agent(tmp_path_factory.mktemp("restconf")) as a:
        r = curl(
            a, "PUT", "/restconf/data/vnet-router:virtual-networks", json.dumps(NETWORKS), JSON_T
        )
        assert r.status == 201, r
        yield a


@pytest.fixture(scope="module")
def nc(agent: AgentUnderTest) -> Iterator[manager.Manager]:
    m = agent.netconf()
    yield m
    m.close_session()


def nc_routers(m: manager.Manager) -> dict[str, dict[str, str]]:
    """name -> {leaf: text} of every router in running, as NETCONF shows it."""
    data = m.get_config("running").data
    out = {}
    for r in data.iterfind(f".//{{{NS}}}router"):
        out[r.findtext(f"{{{NS}}}name")] = {etree.QName(c).localname: c.text for c in r}
    return out


def router_url(name: str) -> str:
    return f"/restconf/data/vnet-router:routers/router={name}"


def test_host_meta_and_root(agent: AgentUnderTest) -> None:
    r = curl(agent, "GET", "/.well-known/host-meta", user="")
    assert r.status == 200, r
    link = etree.fromstring(r.body.encode()).find("{http://docs.oasis-open.org/ns/xri/xrd-1.0}Link")
    assert (link.get("rel"), link.get("href")) == ("restconf", "/restconf")
    r = curl(agent, "GET", "/restconf")
    assert r.status == 200 and r.headers["content-type"].startswith(JSON_T)
    assert r.json()["ietf-restconf:restconf"]["yang-library-version"] == "2019-01-04"
    r = curl(agent, "GET", "/restconf/yang-library-version", accept=XML_T)
    assert etree.fromstring(r.body.encode()).text == "2019-01-04"
    r = curl(agent, "GET", "/openapi.json", user="")
    assert "/restconf/data/vnet-router:routers/router={router}" in r.json()["paths"]


def test_the_docs_page_loads_only_what_the_agent_serves(agent: AgentUnderTest) -> None:
    """/docs works offline: curl fetches every script, style and icon from the agent."""
    page = curl(agent, "GET", "/docs", user="")
    assert page.status == 200, page
    assets = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.body)
    assert assets and all(a.startswith("/docs-assets/") for a in assets), assets
    base = f"https://{agent.address}:{agent.restconf_port}"
    for asset in assets:  # the icon is binary: only its status and size are read
        argv = ["curl", "-sS", "-k", "-o", "/dev/null", "-w", "%{http_code} %{size_download}"]
        got = processes.run(agent.namespace, [*argv, base + asset], timeout=30).stdout.split()
        assert got[0] == "200" and int(got[1]) > 0, (asset, got)


def test_https_with_the_self_signed_certificate(agent: AgentUnderTest) -> None:
    cert = agent.sandbox.config.restconf_cert_path
    key = agent.sandbox.config.restconf_key_path
    assert cert.exists() and key.exists()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    untrusted = curl(agent, "GET", "/restconf", tls=())
    assert untrusted.code == 60, untrusted  # SSL certificate problem
    pinned = curl(agent, "GET", "/restconf", tls=("--cacert", str(cert)))
    assert pinned.code == 0 and pinned.status == 200, pinned
    insecure = curl(agent, "GET", "/restconf", tls=("-k",))
    assert insecure.status == 200
    plain = curl(agent, "GET", "/restconf", tls=(), scheme="http")
    assert plain.status != 200, plain  # the port speaks TLS only


def test_wrong_password_is_401(agent: AgentUnderTest) -> None:
    for user in ("admin:wrong", "mallory:s3cret", ""):
        r = curl(agent, "GET", "/restconf/data/vnet-router:routers", user=user)
        assert r.status == 401, r
        assert r.headers["www-authenticate"].startswith("Basic"), r.headers
        assert r.error()["error-tag"] == "access-denied"


def test_create_json_seen_by_netconf_and_kernel_then_delete(
    agent: AgentUnderTest, nc: manager.Manager
) -> None:
    body = {
        "vnet-router:router": [
            {
                "name": "rj",
                "interface": [
                    {"name": "eth0", "network": "n1", "ipv4": "10.1.0.1/24", "ipv6": "fd00:1::1/64"}
                ],
                "route": [{"destination": "10.9.0.0/16", "next-hop": "10.1.0.254"}],
            }
        ]
    }
    r = curl(agent, "POST", "/restconf/data/vnet-router:routers", json.dumps(body), JSON_T)
    assert r.status == 201, r
    assert r.headers["location"].endswith(router_url("rj")), r.headers
    try:
        assert "rj" in nc_routers(nc)
        assert nc_routers(nc)["rj"]["index"].isdigit()
        assert nsfs.exists(agent.node_ns("rj"))
        got = curl(agent, "GET", router_url("rj"))
        entry = got.json()["vnet-router:router"][0]
        assert entry["oper-state"] == "running", entry
        assert entry["interface"][0]["oper-status"] == "up"
        assert int(entry["interface"][0]["statistics"]["in-packets"]) >= 0
        assert entry["route"] == body["vnet-router:router"][0]["route"]
        route = curl(agent, "GET", router_url("rj") + "/route=10.9.0.0%2F16")
        assert route.json() == {"vnet-router:route": body["vnet-router:router"][0]["route"]}
    finally:
        r = curl(agent, "DELETE", router_url("rj"))
    assert r.status == 204, r
    assert "rj" not in nc_routers(nc)
    assert not nsfs.exists(agent.node_ns("rj"))
    assert curl(agent, "GET", router_url("rj")).status == 404


def test_create_xml_with_pinned_cert_then_delete(
    agent: AgentUnderTest, nc: manager.Manager
) -> None:
    pin = ("--cacert", str(agent.sandbox.config.restconf_cert_path))
    xml = (
        f'<router xmlns="{NS}"><name>rx</name><index>42</index>'
        "<interface><name>eth0</name><network>n2</network><ipv4>10.2.0.1/24</ipv4></interface>"
        "</router>"
    )
    r = curl(agent, "POST", "/restconf/data/vnet-router:routers", xml, XML_T, tls=pin)
    assert r.status == 201, r
    try:
        assert nc_routers(nc)["rx"]["index"] == "42"
        assert nsfs.exists(agent.node_ns("rx"))
        got = curl(agent, "GET", router_url("rx") + "?content=config", accept=XML_T, tls=pin)
        assert got.headers["content-type"].startswith(XML_T)
        el = etree.fromstring(got.body.encode())
        assert el.tag == f"{{{NS}}}router"
        assert el.findtext(f"{{{NS}}}interface/{{{NS}}}network") == "n2"
        # stop it (plain patch, XML), see it stopped from NETCONF's <get>
        patch = f'<router xmlns="{NS}"><name>rx</name><admin-state>down</admin-state></router>'
        r = curl(agent, "PATCH", router_url("rx"), patch, XML_T, tls=pin)
        assert r.status == 204, r
        state = nc.get(filter=("subtree", f'<routers xmlns="{NS}"/>')).data
        assert state.findtext(f".//{{{NS}}}router/{{{NS}}}oper-state") == "stopped"
    finally:
        r = curl(agent, "DELETE", router_url("rx"), accept=XML_T, tls=pin)
    assert r.status == 204, r
    assert "rx" not in nc_routers(nc)
    assert not nsfs.exists(agent.node_ns("rx"))


def _post_json(a: AgentUnderTest, entry: dict) -> Reply:
    return curl(
        a,
        "POST",
        "/restconf/data/vnet-router:routers",
        json.dumps({"vnet-router:router": [entry]}),
        JSON_T,
    )


def test_error_bodies_and_status_codes(agent: AgentUnderTest, nc: manager.Manager) -> None:
    itf = [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.5/24"}]
    r = _post_json(agent, {"name": "rdup", "index": 77, "interface": itf})
    assert r.status == 201, r
    try:
        cases = {
            "bad name": (
                _post_json(agent, {"name": "0bad", "interface": itf}),
                400,
                "invalid-value",
                "/vnet-router:routers/router[name='0bad']/name",
            ),
            "name too long": (
                _post_json(agent, {"name": "a-very-long-router-name", "interface": itf}),
                400,
                "invalid-value",
                "/vnet-router:routers/router[name='a-very-long-router-name']/name",
            ),
            "unknown network": (
                _post_json(agent, {"name": "rn", "interface": [{"name": "eth0", "network": "n9"}]}),
                400,
                "invalid-value",
                "/vnet-router:routers/router[name='rn']/interface[name='eth0']/network",
            ),
            "duplicate index": (
                _post_json(agent, {"name": "ri", "index": 77, "interface": itf}),
                400,
                "invalid-value",
                "/vnet-router:routers/router[name='ri']/index",
            ),
            "existing entry": (
                _post_json(agent, {"name": "rdup", "interface": itf}),
                409,
                "data-exists",
                "/vnet-router:routers/router[name='rdup']",
            ),
            "malformed JSON": (
                curl(
                    agent,
                    "POST",
                    "/restconf/data/vnet-router:routers",
                    '{"vnet-router:router": [',
                    JSON_T,
                ),
                400,
                "malformed-message",
                None,
            ),
            "malformed XML": (
                curl(
                    agent,
                    "POST",
                    "/restconf/data/vnet-router:routers",
                    f'<router xmlns="{NS}"><name>x</router>',
                    XML_T,
                ),
                400,
                "malformed-message",
                None,
            ),
            "wrong module in URL": (
                curl(agent, "GET", "/restconf/data/vnet-routers:routers"),
                400,
                "unknown-namespace",
                None,
            ),
            "wrong module in body": (
                curl(
                    agent,
                    "POST",
                    "/restconf/data/vnet-router:routers",
                    json.dumps({"vnet:router": [{"name": "rw"}]}),
                    JSON_T,
                ),
                400,
                "unknown-namespace",
                None,
            ),
            "wrong namespace in XML": (
                curl(
                    agent,
                    "POST",
                    "/restconf/data/vnet-router:routers",
                    '<router xmlns="urn:example:other"><name>rw</name></router>',
                    XML_T,
                ),
                400,
                "unknown-namespace",
                None,
            ),
            "unknown node in URL": (
                curl(agent, "GET", "/restconf/data/vnet-router:routers/routr=r1"),
                400,
                "unknown-element",
                "/vnet-router:routers",
            ),
            "missing resource": (
                curl(agent, "GET", router_url("nosuch")),
                404,
                "invalid-value",
                "/vnet-router:routers/router[name='nosuch']",
            ),
        }
        problems = []
        for what, (reply, status, tag, path) in cases.items():
            try:
                e = reply.error()
            except (ValueError, KeyError, AssertionError):
                problems.append(f"{what}: no RESTCONF error body: {reply}")
                continue
            got = (reply.status, e["error-tag"], e.get("error-path") if path else None)
            if got != (status, tag, path) or not e.get("error-message"):
                problems.append(f"{what}: got {got}, want {(status, tag, path)}: {e}")
        assert not problems, "\n".join(problems)
        # an XML client gets the XML form
        r = curl(agent, "GET", router_url("nosuch"), accept=XML_T)
        assert r.status == 404 and r.headers["content-type"].startswith(XML_T)
        err = etree.fromstring(r.body.encode())
        assert err.findtext(f"{{{RC}}}error/{{{RC}}}error-tag") == "invalid-value"
        # nothing of the refused requests reached the datastore or the kernel
        assert set(nc_routers(nc)) == {"rdup"}
        for name in ("0bad", "rn", "ri", "rw"):
            assert not nsfs.exists(agent.node_ns(name))
    finally:
        assert curl(agent, "DELETE", router_url("rdup")).status == 204


def test_put_replaces_the_networks_and_refuses_a_key_mismatch(agent: AgentUnderTest) -> None:
    url = "/restconf/data/vnet-router:virtual-networks/network=n2"
    entry = {"name": "n2", "tenant": "a", "vni": 11, "ipv4-prefix": "10.2.0.0/24", "mtu": 1400}
    r = curl(agent, "PUT", url, json.dumps({"vnet-router:network": [entry]}), JSON_T)
    assert r.status == 204, r
    got = curl(agent, "GET", url).json()["vnet-router:network"][0]
    assert got["mtu"] == 1400
    wrong = {**entry, "name": "n3"}
    r = curl(agent, "PUT", url, json.dumps({"vnet-router:network": [wrong]}), JSON_T)
    assert r.status == 400 and "differs" in r.error()["error-message"], r
    entry.pop("mtu")
    r = curl(agent, "PUT", url, json.dumps({"vnet-router:network": [entry]}), JSON_T)
    assert r.status == 204, r
    assert "mtu" not in curl(agent, "GET", url + "?content=config").json()["vnet-router:network"][0]
