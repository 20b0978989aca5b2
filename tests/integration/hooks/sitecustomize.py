"""Installs the test hooks of faulty_vnet.py in `vnet` processes a test starts with them set."""

import os
import sys

if os.environ.get("VNET_TEST_FAIL_AT_STEP") or os.environ.get("VNET_TEST_HANG_AT_STEP"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import faulty_vnet

    faulty_vnet.install_from_environment()
