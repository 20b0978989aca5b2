"""vnet.client loads each client's library only when that client is asked for: the
controller and `vnet lab up` talk NETCONF only, `vnet conn|tenant|net` the controller only."""

from __future__ import annotations

import subprocess
import sys

import pytest

LIBRARIES = ("httpx", "ncclient", "paramiko")


def loaded_after(statement: str) -> set[str]:
    probe = (
        f"import sys\n{statement}\nprint(' '.join(m for m in {LIBRARIES!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.split())


@pytest.mark.parametrize(
    ("statement", "libraries"),
    [
        ("from vnet.client import Endpoint, ClientError, ConnectError, TimedOut", set()),
        ("from vnet.client import NetconfClient, connect_manager", {"ncclient", "paramiko"}),
        ("from vnet.client import ControllerClient, ControllerError, read_token", {"httpx"}),
        ("from vnet.client import RestconfClient", {"httpx"}),
        ("from vnet.client import AgentClient, connect", set(LIBRARIES)),
    ],
)
def test_each_client_loads_its_own_library_only(statement: str, libraries: set[str]) -> None:
    assert loaded_after(statement) == libraries


def test_an_unknown_name_is_an_attribute_error() -> None:
    import vnet.client

    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        vnet.client.Nothing  # noqa: B018
