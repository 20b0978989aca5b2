"""Installs the test hooks of faulty_vnet.py in `vnet` processes a test starts with them set."""

import os
import sys

if any(
    os.environ.get(hook)
    for hook in (
        "VNET_TEST_FAIL_AT_STEP",
        "VNET_TEST_HANG_AT_STEP",
        "VNET_TEST_KILL_AFTER_SPAWN",
        "VNET_TEST_KILL_IN_RECORD_WRITE",
        "VNET_TEST_NETCONF_FAULTS",
    )
):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import faulty_vnet

    faulty_vnet.install_from_environment()
