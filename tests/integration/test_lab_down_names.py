"""`vnet lab down` names its lab as `lab up` does, by the topology file, or by name; a name
no lab has is said to be so, not reported as a lab brought down."""

from __future__ import annotations

from .conftest import Labs, lab_namespaces, vnet


def test_lab_down_takes_the_lab_s_file_and_says_when_no_lab_was_up(labs: Labs) -> None:
    name, path = labs.file("two-tenants.yaml")
    vnet("lab", "up", str(path))
    assert lab_namespaces(name)
    missing = vnet("lab", "down", "no-such-lab").stdout
    assert "no lab named 'no-such-lab' was up" in missing and name in missing, missing
    assert lab_namespaces(name), "another lab's name took this one down"
    wrong = vnet("lab", "down", str(path.with_name("nothing.yaml")), check=False)
    assert wrong.returncode != 0 and "no such topology file" in wrong.stderr, wrong
    gone = vnet("lab", "down", str(path)).stdout
    assert f"lab {name} is down" in gone and not lab_namespaces(name), gone
