"""vnet bench mgmt --quick, as a user runs it: one real agent with all four interfaces,
netconfd and snmpd as baselines, in a namespace the bench makes and removes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vnet.bench.mgmt.plan import INTERFACES, OPERATIONS
from vnet.bench.mgmt.snmpd import snmpd_missing
from vnet.bench.netconf.netconfd import netconfd_missing
from vnet.substrate import nsfs

from .conftest import vnet


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    missing = netconfd_missing() or snmpd_missing()
    if missing:
        pytest.skip(f"the baselines cannot run here: {missing}")
    tmp = tmp_path_factory.mktemp("bench-mgmt")
    out = tmp / "results.json"
    vnet("bench", "mgmt", "--quick", "--json", str(out), "--out", str(tmp / "r"), timeout=240)
    return {"data": json.loads(out.read_text()), "report": tmp / "r"}


def samples(data: dict[str, Any], metric: str, series: str, x: Any) -> list[float]:
    for m in data["measurements"]:
        if (m["metric"], m["series"], m["x"]) == (metric, series, x):
            return list(m["samples"])
    return []


def test_every_interface_every_operation_is_measured(run: dict[str, Any]) -> None:
    data = run["data"]
    cycles = data["parameters"]["cycles"]
    for active in data["parameters"]["active"]:
        for iface in INTERFACES:
            for op in OPERATIONS:
                times = samples(data, f"time_{op}", iface, active)
                assert len(times) == cycles and all(t > 0 for t in times), (iface, op, active)
                cpu = samples(data, f"cpu_{op}", iface, active)
                assert len(cpu) == cycles and all(c >= 0 for c in cpu), (iface, op, active)


def test_bytes_grow_with_the_vrs_per_operation_and_with_the_session(run: dict[str, Any]) -> None:
    data = run["data"]
    few, many = data["parameters"]["per_op"][0], data["parameters"]["per_op"][-1]
    for iface in INTERFACES:
        for op in ("create", "retrieve", "remove"):
            new_few = min(samples(data, f"bytes_{op}", iface, few))
            kept_few = min(samples(data, f"bytes_{op}_kept", iface, few))
            kept_many = min(samples(data, f"bytes_{op}_kept", iface, many))
            # growth in a kept session: a new session's SSH/TLS set-up varies by more
            # (padding, ACKs) than a few VRs add, so 3 VRs in a new session could weigh less
            assert kept_many > kept_few > 0, (iface, op, kept_few, kept_many)
            # GETBULK answers carry counters whose BER length varies by a byte or two
            assert new_few >= kept_few - 8 and kept_few > 0, (iface, op, new_few, kept_few)
    # a NETCONF session's SSH handshake and hello outweigh one SNMPv2c request by far
    assert min(samples(data, "bytes_create", "NETCONF", few)) > 5 * min(
        samples(data, "bytes_create", "SNMPv2c", few)
    )


def test_both_baselines_ran_in_the_same_run(run: dict[str, Any]) -> None:
    data = run["data"]
    for op in OPERATIONS:
        assert samples(data, "netconf_floor_ms", "netconfd", op), op
    for series in ("agent v2c", "snmpd v2c", "agent v3", "snmpd v3"):
        assert samples(data, "snmp_floor_ms", series, "GETBULK 13 objects"), series
    idle = "idle, all front-ends, no session"
    for series in ("agent", "netconfd", "snmpd"):
        assert samples(data, "server_memory", series, idle), series
    load = data["parameters"]["load"]
    assert samples(data, "get_config", "netconfd", load)


def test_report_leads_with_the_papers_tables(run: dict[str, Any]) -> None:
    text = (Path(run["report"]) / "report.md").read_text()
    first_metric = text.index("## time_create")
    for table in ("Table I:", "Table II:", "Table III:", "Table IV:", "Fig. 10 (create)"):
        assert 0 < text.index(table) < first_metric, table
    assert "| paper: response time | SNMPv2c, RWS, NETCONF, SNMPv3 |" in text


def test_nothing_is_left_behind(run: dict[str, Any]) -> None:
    scope = run["data"]["parameters"]["scope"]
    assert nsfs.list_names(f"vnet-{scope}-") == []
