"""`vnet conn|tenant|net|vr --lab L` find the lab's controller and agents from its record
alone: they neither import the lab's machinery (the substrate, pyroute2: 0.4 s of CPU per
command) nor need the lab's namespaces to say where to connect."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from vnet.lab.record import ControllerRecord, LabRecord

PROBE = """
import sys
from vnet.cli.controller_access import resolve
from vnet.lab.access import agent_endpoint, controller_access
import vnet.cli.conn_cmds, vnet.cli.vr_cmds
target = resolve(None, None, "l1")
machinery = ("pyroute2", "vnet.substrate", "vnet.lab.lab")
heavy = sorted(m for m in sys.modules if m.startswith(machinery))
print(target.url, target.namespace, heavy)
"""


def test_a_labs_controller_is_found_without_the_labs_machinery(tmp_path: Path) -> None:
    controller = ControllerRecord(
        url="https://192.0.2.1:8480",
        namespace="vnet-l1-mgmt",
        token_file=str(tmp_path / "token"),
        state_dir=str(tmp_path),
        config=str(tmp_path / "controller.yaml"),
    )
    labs = tmp_path / "labs"
    labs.mkdir()
    (labs / "l1.json").write_text(json.dumps(LabRecord("l1", controller=controller).to_dict()))
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "VNET_RUN_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["https://192.0.2.1:8480", "vnet-l1-mgmt", "[]"]
