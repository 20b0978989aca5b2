"""RESTCONF reads its bodies with the model's one strict reader (issue 22): a 5000-digit VNI,
a body nested 100 000 deep, a member given twice, an empty or non-ASCII bandwidth, on POST,
PUT and PATCH of virtual-networks, in JSON and XML: each a 400 naming what is wrong, running
unchanged (the real Datastore without the kernel, as in test_restconf_app)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import httpx
import pytest

from tests.unit.test_restconf_app import AUTH, run
from vnet.agent.datastore import Datastore
from vnet.agent.restconf.codec import JSON, XML

NETS = "/restconf/data/vnet-router:virtual-networks"
NS = "urn:vnet:yang:vnet-router"


def network_json(**fields: str) -> bytes:
    """A virtual-networks body whose one network has `fields` spelled verbatim (as JSON)."""
    members = {"name": '"n3"', "tenant": '"a"', "vni": "12", **fields}
    inner = ", ".join(f'"{k}": {v}' for k, v in members.items())
    return ('{"vnet-router:virtual-networks": {"network": [{' + inner + "}]}}").encode()


def network_xml(vni: str = "12", bandwidth: str | None = None) -> bytes:
    extra = f"<bandwidth>{bandwidth}</bandwidth>" if bandwidth is not None else ""
    return (
        f'<virtual-networks xmlns="{NS}"><network><name>n3</name><tenant>a</tenant>'
        f"<vni>{vni}</vni>{extra}</network></virtual-networks>"
    ).encode()


DEEP = b'{"vnet-router:virtual-networks": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
JSON_CASES = [
    (network_json(vni="9" * 5000), "5000 digits"),
    (network_json(vni="1" + "0" * 30), "digits"),
    (network_json(vni="1e30"), "too large"),
    (network_json(vni="12.5"), "vni"),
    (DEEP, "deep"),
    (network_json(name='"n3", "name": "n4"'), "given twice"),
    (network_json(bandwidth='""'), "bandwidth"),
    (network_json(bandwidth='"\u0661\u0660\u0660"'), "bandwidth"),
    (network_json(bandwidth='"1.5"'), "bandwidth"),
    (network_json(bandwidth='"1_000"'), "bandwidth"),
]
XML_CASES = [
    (network_xml(vni="9" * 5000), "vni"),
    (network_xml(vni="\u0661\u0662"), "vni"),
    (network_xml(vni="１２"), "vni"),
    (network_xml(bandwidth=""), "bandwidth"),
    (network_xml(bandwidth="\uff11\uff10"), "bandwidth"),
    (b"<a>" * 100_000 + b"</a>" * 100_000, "well-formed"),
]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_bad_numbers_and_bodies_are_400_and_change_nothing(tmp_path: Path, method: str) -> None:
    path = "/restconf/data" if method == "POST" else NETS

    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        before = copy.deepcopy(ds.running)
        for ctype, cases in ((JSON, JSON_CASES), (XML, XML_CASES)):
            for raw, needle in cases:
                r = await c.request(
                    method, path, content=raw, auth=AUTH, headers={"Content-Type": ctype}
                )
                assert r.status_code == 400, (method, ctype, raw[:80], r.text[:400])
                assert needle in r.text, (method, raw[:80], r.text[:400])
                # the connection and the server still serve (no 500, no reset)
                assert (await c.get(NETS, auth=AUTH)).status_code == 200
        assert ds.running == before

    run(tmp_path, body)


def test_a_valid_network_is_still_taken(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        raw = network_json(bandwidth='"100000000"')
        r = await c.patch(NETS, content=raw, auth=AUTH, headers={"Content-Type": JSON})
        assert r.status_code == 204, r.text
        names = [n["name"] for n in ds.running["vnet-router:virtual-networks"]["network"]]
        assert names == ["n1", "n2", "n3"]

    run(tmp_path, body)


@pytest.mark.parametrize("tenant", ["a/../b", "<b>x</b>", "\U0001f600"])
def test_a_tenant_name_outside_the_rule_is_400_at_its_leaf(tmp_path: Path, tenant: str) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        before = copy.deepcopy(ds.running)
        raw = network_json(tenant=json.dumps(tenant))
        r = await c.patch(NETS, content=raw, auth=AUTH, headers={"Content-Type": JSON})
        assert r.status_code == 400, r.text
        assert "tenant" in r.json()["ietf-restconf:errors"]["error"][0]["error-path"], r.text
        assert ds.running == before

    run(tmp_path, body)


def test_text_beside_a_containers_elements_is_refused(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        before = copy.deepcopy(ds.running)
        raw = f'<underlay xmlns="{NS}">true</underlay>'.encode()
        path = "/restconf/data/vnet-router:underlay"
        r = await c.put(path, content=raw, auth=AUTH, headers={"Content-Type": XML})
        assert r.status_code == 400 and "holds elements, not text" in r.text, r.text
        assert ds.running == before

    run(tmp_path, body)
