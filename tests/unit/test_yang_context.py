"""The libyang context is built once per process, also when threads ask for it at once (the
controller's NETCONF workers encode their first edits side by side). Each thread used to
build a context of its own, and the ones not kept were freed while their thread still read a
namespace from them: an edit went out with its `srv6` element in namespace '' or '.', and
the agent refused it (a CI run of the recovery tests)."""

from __future__ import annotations

import subprocess
import sys

# Each round starts from empty caches, as a new process does; a round is one first use.
ROUNDS = """
import threading
from vnet.model.yang import schema

seen = set()
for _ in range(12):
    for cached in (schema._loaded, schema.namespace_of, schema.root):
        cached.cache_clear()
    start = threading.Barrier(4)

    def ask():
        start.wait()
        try:
            seen.add(schema.namespace_of("vnet-router"))
        except UnicodeDecodeError:
            seen.add("garbage")

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print(sorted(seen))
"""


def test_threads_asking_at_once_share_one_context() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ROUNDS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['urn:vnet:yang:vnet-router']", done.stdout
