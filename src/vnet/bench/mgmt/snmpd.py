"""Net-SNMP snmpd in the bench namespace: the SNMP protocol floor.

snmpd serves IF-MIB for the namespace's interfaces; the bench adds as many
port-less bridges (inside that namespace only, gone with it; this kernel has
no dummy driver) as the agent has VRs, so both walk a table of the same number
of rows. Its configuration, persistent folder and log live in the sandbox's
folder; it is stopped by PID.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vnet.bench.mgmt import MgmtBenchError
from vnet.bench.snmp.workload import AUTH_KEY, COMMUNITY_RO, PRIV_KEY, USER
from vnet.lab.sandbox import ADDRESS, HostSandbox

SNMPD = "/usr/sbin/snmpd"
SNMPD_PORT = 1161
IF_ENTRY = "1.3.6.1.2.1.2.2.1"  # IF-MIB::ifEntry
IF_COLUMNS = 13  # ifIndex .. ifInUnknownProtos: as many objects as one VR's GETBULK

CONFIG = f"""\
agentAddress udp:{ADDRESS}:{SNMPD_PORT}
rocommunity {COMMUNITY_RO} {ADDRESS}
createUser {USER} SHA "{AUTH_KEY}" AES "{PRIV_KEY}"
rouser {USER} priv
"""


def snmpd_missing() -> str | None:
    return None if shutil.which(SNMPD) else "not installed: snmpd (apt-get install snmpd)"


def getbulk_oids() -> list[str]:
    """The OIDs just before ifEntry row 1's first 13 columns (GETBULK, 1 repetition)."""
    return [f"{IF_ENTRY}.{c}.0" for c in range(1, IF_COLUMNS + 1)]


@dataclass
class Snmpd:
    host: HostSandbox
    proc: subprocess.Popen[bytes] | None = None

    @property
    def dir(self) -> Path:
        return self.host.dir / "snmpd"

    def add_interfaces(self, count: int) -> None:
        """`count` port-less bridges in the namespace: the rows of snmpd's ifTable."""
        batch = "".join(f"link add bd{i} type bridge\n" for i in range(count))
        done = subprocess.run(
            ["ip", "-n", self.host.namespace, "-batch", "-"],
            input=batch,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise MgmtBenchError(f"adding {count} bridges: {done.stderr.strip()}")

    def start(self) -> None:
        d = self.dir
        d.mkdir()
        (d / "snmpd.conf").write_text(CONFIG)
        argv = ["env", "MIBS=", f"SNMP_PERSISTENT_DIR={d}", SNMPD, "-f", "-C", "-Lf"]
        argv += [str(d / "snmpd.log"), "-c", str(d / "snmpd.conf"), "-p", str(d / "snmpd.pid")]
        self.proc = self.host.spawn(argv, d / "snmpd.out")
        self.host.wait("snmpd", (d / "snmpd.pid").exists, self.proc, d / "snmpd.log")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid
