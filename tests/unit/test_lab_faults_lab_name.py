"""Failure injection finds a lab's namespaces under the name the lab runs under, also
when that is not its file's name (a benchmark's or a demo's lab, `lab.up(path,
topology=...)` under a name of its own): the record names the file, the lab its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnet.lab import faults
from vnet.lab import record as records
from vnet.lab.record import LabRecord, write_record

CONTROLLER = Path(__file__).resolve().parents[2] / "examples" / "controller.yaml"


def test_a_lab_renamed_from_its_file_is_cut_in_its_own_namespaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "RECORD_DIR", tmp_path)
    write_record(LabRecord(name="cb1234", file=str(CONTROLLER)))  # the file says "ctl"
    topo = faults._topology("cb1234")
    assert topo.name == "cb1234"
    ends = faults._ends(topo, faults.link_of(topo, "h1-h3"))
    assert [ns for ns, _ in ends] == ["vnet-cb1234-h1", "vnet-cb1234-h3"]
    write_record(LabRecord(name="ctl", file=str(CONTROLLER)))  # under its file's name
    assert faults._topology("ctl").name == "ctl"
