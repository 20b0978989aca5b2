"""A lab file's `controller:` section: its checks (precise, at file:line) and what the lab
hands the controller (its ControllerConfig and inventory) and records about it."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from vnet.lab.controller import (
    CONFIG,
    PASSWORD,
    controller_config,
    inventory_text,
    prepare,
)
from vnet.lab.record import ControllerRecord, LabRecord
from vnet.lab.topology_file import TopologyFileError, parse_topology_text
from vnet.model import build_topology
from vnet.model.controller_config import ControllerConfig
from vnet.tools.processes import ProcessRecord

EXAMPLE = Path(__file__).parents[2] / "examples" / "controller.yaml"

BASE = """\
name: t
hosts: [{name: h1}, {name: h2}]
links:
  - {a: h1, b: h2, rate: 1gbit}
"""


def parse(text: str) -> object:
    return parse_topology_text(text, Path("lab.yaml"))


def problems(text: str) -> list[str]:
    with pytest.raises(TopologyFileError) as caught:
        parse(text)
    return caught.value.lines


def test_defaults_and_margin_spellings() -> None:
    topo = parse(BASE + "management: {}\ncontroller: {}\n")
    assert topo.controller is not None  # type: ignore[attr-defined]
    assert (topo.controller.port, topo.controller.margin) == (8480, Fraction(1, 20))  # type: ignore[attr-defined]
    assert topo.controller.database is None  # type: ignore[attr-defined]
    for spelling in ("0.05", "5%", "1/20", "'5 %'"):
        t = parse(BASE + f"management: {{}}\ncontroller: {{margin: {spelling}}}\n")
        assert t.controller.margin == Fraction(1, 20), spelling  # type: ignore[attr-defined]
    assert parse(BASE + "management: {}\ncontroller: {margin: 0}\n").controller.margin == 0  # type: ignore[attr-defined]


def test_controller_needs_agents_at_its_line() -> None:
    assert problems(BASE + "controller: {}\n") == [
        "lab.yaml:5:1: controller: a controller configures the hosts through their agents: "
        "add a `management:` section with agents (the default)"
    ]
    lines = problems(BASE + "management: {agents: false}\ncontroller: {port: 9000}\n")
    assert len(lines) == 1
    assert lines[0].startswith("lab.yaml:6:1: controller: a controller configures the hosts")


def test_controller_needs_every_links_rate() -> None:
    text = "name: t\nhosts: [{name: h1}, {name: h2}, {name: h3}]\nlinks:\n"
    text += "  - {a: h1, b: h2, rate: 1gbit}\n  - {a: h2, b: h3}\nmanagement: {}\ncontroller: {}\n"
    (line,) = problems(text)
    assert line.startswith("lab.yaml:5:5: links[1]")
    assert "link h2-h3" in line
    assert "give this link a rate" in line
    # without a controller a link may go without a rate, as before
    assert parse(text.replace("controller: {}\n", "")).controller is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("section", "where", "says"),
    [
        ("{margin: 1}", "controller.margin", "from 0 up to (not including) 1"),
        ("{margin: lots}", "controller.margin", "is not a share"),
        ("{margin: true}", "controller.margin", "expected a share"),
        ("{port: 0}", "controller.port", "greater than or equal to 1"),
        ("{confirm_timeout: 0}", "controller.confirm_timeout", "greater than or equal to 1"),
        ("{utilisation_interval: 0}", "controller.utilisation_interval", "greater than 0"),
        ("{databse: x}", "controller.databse", "unknown field"),
    ],
)
def test_bad_values_name_their_field(section: str, where: str, says: str) -> None:
    lines = problems(BASE + f"management: {{}}\ncontroller: {section}\n")
    assert len(lines) == 1, lines
    assert f" {where}" in lines[0] and says in lines[0], lines[0]


def test_config_and_inventory_handed_to_the_controller(tmp_path: Path) -> None:
    topo = parse(EXAMPLE.read_text())
    text = EXAMPLE.read_text() + (
        "connections:\n  - {name: c, a: pc1, b: pc3, bandwidth: 1mbit, path: [r1, r3]}\n"
    )
    (tmp_path / "lab.yaml").write_text(text)
    inventory = inventory_text(topo, str(tmp_path / "lab.yaml"))  # type: ignore[arg-type]
    data = YAML(typ="safe").load(inventory)
    assert "connections" not in data and "controller" not in data
    assert [h["name"] for h in data["hosts"]] == ["h1", "h2", "h3"]
    inventory_topo = build_topology(data)  # what the controller loads is a valid topology
    assert [e.name for e in inventory_topo.endhosts] == ["pc1", "pc2", "pc3"]

    config = controller_config(topo, tmp_path)  # type: ignore[arg-type]
    assert (config.listen, config.port, config.namespace) == ("172.30.0.254", 8480, "vnet-ctl-mgmt")
    assert [(a.host, a.address, a.netconf_port) for a in config.agents] == [
        ("h1", "172.30.0.1", 830),
        ("h2", "172.30.0.2", 830),
        ("h3", "172.30.0.3", 830),
    ]
    assert {a.password_file for a in config.agents} == {tmp_path / PASSWORD}
    assert config.margin == Fraction(1, 20) and config.database is None
    assert config.utilisation_interval == 1.0  # the section's default, the controller's too
    faster = parse(
        EXAMPLE.read_text().replace("controller:\n", "controller:\n  utilisation_interval: 0.2\n")
    )
    assert controller_config(faster, tmp_path).utilisation_interval == 0.2  # type: ignore[arg-type]
    assert config.provider_token_path == tmp_path / "provider.token"


def test_prepare_writes_private_files_and_says_when_they_change(tmp_path: Path) -> None:
    topo = parse(EXAMPLE.read_text())
    directory = tmp_path / "controller"
    assert prepare(topo, directory, "pw1", str(EXAMPLE)) is True  # type: ignore[arg-type]
    assert (directory / PASSWORD).read_text() == "pw1"
    modes = {p.name: p.stat().st_mode & 0o777 for p in directory.iterdir()}
    assert modes == {CONFIG: 0o600, "inventory.yaml": 0o600, PASSWORD: 0o600}
    assert directory.stat().st_mode & 0o777 == 0o700
    ControllerConfig.model_validate_json((directory / CONFIG).read_text())
    assert prepare(topo, directory, "pw1", str(EXAMPLE)) is False  # type: ignore[arg-type]
    assert prepare(topo, directory, "pw2", str(EXAMPLE)) is True  # type: ignore[arg-type]


def test_record_keeps_the_controller() -> None:
    rec = LabRecord(
        "t",
        processes=[ProcessRecord(42, 7, "controller")],
        controller=ControllerRecord(
            url="http://172.30.0.254:8480",
            namespace="vnet-t-mgmt",
            token_file="/run/vnet/labs/t/controller/provider.token",
            state_dir="/run/vnet/labs/t/controller",
            config="/run/vnet/labs/t/controller/controller.yaml",
        ),
    )
    import json

    again = LabRecord.from_dict(json.loads(rec.to_json()))
    assert again == rec
    assert LabRecord.from_dict({"name": "old"}).controller is None  # records from before
