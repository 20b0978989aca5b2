"""Where the sender's CPU goes: perf samples grouped by kernel function."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from vnet.tools.errors import ToolError

PERF_FREQUENCY = 1000  # Hz; with cpu-clock every sample stands for 1 ms of CPU


# -- profile: where the CPU goes ---------------------------------------------------

IDLE_PREFIXES: tuple[str, ...] = (
    "default_idle",
    "pv_native_safe_halt",
    "native_safe_halt",
    "cpuidle",
    "do_idle",
    "acpi_idle",
    "poll_idle",
    "mwait_idle",
    "intel_idle",
    "cpu_idle",
)
# First match wins; the names are the kernel's own prefixes.
FUNCTION_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "sender",
        ("packet_", "tpacket_", "skb_set_owner_w", "sock_", "skb_copy_ubufs", "__sys_send"),
    ),
    (
        "locks",
        (
            "_raw_spin",
            "__raw_callee_save___pv_queued",
            "queued_spin",
            "__pv_queued",
            "__rcu_read_",
            "rcu_read_",
        ),
    ),
    # br_netfilter's hooks, and the netfilter core they call (no rules are loaded).
    (
        "netfilter",
        (
            "br_nf_",
            "nf_bridge",
            "brnf_",
            "setup_pre_routing",
            "br_validate",
            "nf_",
            "nft_",
            "__nf_",
        ),
    ),
    ("bridge", ("br_", "__br_", "nbp_", "fdb_")),
    ("veth", ("veth_",)),
    ("vxlan", ("vxlan", "udp_tunnel", "iptunnel")),
    ("tc+drop", ("cls_bpf", "tcf_", "bpf_prog", "tc_run", "sch_handle", "__tcf")),
    (
        "ip fwd",
        (
            "ip_",
            "__ip_",
            "fib",
            "neigh_",
            "__neigh",
            "arp_",
            "inet_",
            "dst_",
            "ipv4_",
            "rt_",
            "udp_v4_early_demux",
        ),
    ),
    (
        "memory",
        (
            "kmem_cache_",
            "kmalloc",
            "__kmalloc",
            "kfree",
            "__alloc_",
            "alloc_pages",
            "get_page_from_freelist",
            "__free_pages",
            "free_unref",
            "rmqueue",
            "__slab",
            "___slab",
            "skb_release",
            "__build_skb",
            "build_skb",
            "memcpy",
            "__memcpy",
            "__pi_memcpy",
            "memset",
            "__memset",
            "skb_copy_bits",
            "page_",
            "__page_",
            "kmalloc_reserve",
            "alloc_skb",
            "__alloc_skb",
            "skb_free",
            "__kfree_skb",
            "napi_skb_cache",
        ),
    ),
    (
        "net core",
        (
            "netif_",
            "__netif_",
            "net_rx_action",
            "process_backlog",
            "dev_",
            "__dev_",
            "skb_",
            "__skb",
            "eth_",
            "napi_",
            "__napi",
            "validate_xmit",
            "passthru_features",
            "enqueue_to_backlog",
            "consume_skb",
            "sch_direct_xmit",
            "do_softirq",
            "__do_softirq",
            "handle_softirqs",
            "__local_bh_enable",
            "net_",
            "netdev_",
            "__netdev_",
            "gro_",
        ),
    ),
)
OTHER_KERNEL = "kernel"
OTHER_PROCESSES = "others"
IDLE = "idle"
GROUP_NAMES = [*(name for name, _ in FUNCTION_GROUPS), OTHER_KERNEL, OTHER_PROCESSES]


SENDER = FUNCTION_GROUPS[0][0]


def function_group(comm: str, symbol: str, kernel: bool = True) -> str:
    """The group of one perf sample (IDLE when the CPU had nothing to do).

    Softirq work runs in whichever context it interrupts: trafgen's,
    ksoftirqd's or the idle task's (swapper), so those count as ours.
    """
    if kernel and symbol.startswith(IDLE_PREFIXES):
        return IDLE
    if not (comm == "trafgen" or comm.startswith(("ksoftirqd", "swapper"))):
        return OTHER_PROCESSES
    if not kernel:
        return SENDER if comm == "trafgen" else OTHER_KERNEL
    for name, prefixes in FUNCTION_GROUPS:
        if symbol.startswith(prefixes):
            return name
    return OTHER_KERNEL


PERF_LINE = re.compile(r"^\s*(?P<comm>.*?)\s+[0-9a-f]+\s+(?P<sym>.*?)\s*\((?P<dso>[^()]*)\)$")


def parse_perf_script(text: str) -> Counter[str]:
    """`perf script -F comm,ip,sym,dso` -> samples per function group, IDLE included.

    A line is the command name (which may hold spaces), the address in hex,
    the symbol ("[unknown]" when perf cannot name it) and the object in
    parentheses ("[kernel.kallsyms]" for the kernel).
    """
    groups: Counter[str] = Counter()
    for line in text.splitlines():
        match = PERF_LINE.match(line)
        if match is None:
            continue
        kernel = match["dso"] == "[kernel.kallsyms]"
        groups[function_group(match["comm"], match["sym"], kernel)] += 1
    return groups


def perf_works() -> bool:
    """perf is there and may sample the CPUs (root, or a permissive paranoid level)."""
    if shutil.which("perf") is None:
        return False
    try:
        done = subprocess.run(
            ["perf", "stat", "-e", "cpu-clock", "-C", "0", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _perf(argv: list[str], timeout: float) -> str:
    """Run perf (in our own namespace: it samples CPUs, not namespaces); stdout."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as err:
        raise ToolError(f"{' '.join(argv[:2])}: {err}") from None
    if done.returncode != 0:
        raise ToolError(f"{' '.join(argv[:2])} failed: {done.stderr.strip()[:200]}")
    return done.stdout


def profile(cpus: Sequence[int], seconds: float) -> Counter[str]:
    """Samples per function group on `cpus` for `seconds`, with perf's cpu-clock."""
    with tempfile.TemporaryDirectory(prefix="vnet-perf-") as tmp:
        data = str(Path(tmp) / "perf.data")
        record = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_FREQUENCY)]
        record += ["-C", ",".join(map(str, cpus)), "-o", data, "--", "sleep", f"{seconds:.3f}"]
        _perf(record, seconds + 30)
        script = _perf(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"], 60)
        return parse_perf_script(script)
