"""Named network namespaces, made and entered on the calling thread.

pyroute2's netns helpers fork a child for every namespace and every socket
made inside one (~7 ms each here); unshare/setns on the calling thread costs
~0.7 ms, which is what lets 100 VRs come up in well under a second. setns()
changes only the calling thread, and `entered()` always switches back.

Entering and listing live in vnet.tools.netns (tools start programs inside
namespaces too); this module adds making, removing and joining them.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import time
from collections.abc import Callable, Iterator

from vnet.tools.netns import CLONE_NEWNET, NETNS_RUN_DIR
from vnet.tools.netns import entered as entered  # the substrate's callers find it here too
from vnet.tools.netns import list_names as list_names

MS_BIND = 4096
MS_REC = 16384
MS_SHARED = 1 << 20
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def path(name: str) -> str:
    return os.path.join(NETNS_RUN_DIR, name)


def exists(name: str) -> bool:
    return os.path.exists(path(name))


def seconds_since_created(name: str) -> float:
    """How long ago the mount point was made (0 if it is gone: nothing to judge)."""
    try:
        return max(0.0, time.time() - os.stat(path(name)).st_mtime)
    except FileNotFoundError:
        return 0.0


def _ensure_run_dir() -> None:
    """Make /run/netns a shared mount point, as iproute2 does, so mounts propagate. Once
    per process: the kernel makes each namespace's mount below it shared too, one by one,
    so doing it at each create cost what the namespaces present do."""
    global _run_dir_shared
    if _run_dir_shared and os.path.isdir(NETNS_RUN_DIR):
        return
    os.makedirs(NETNS_RUN_DIR, exist_ok=True)
    run_dir = NETNS_RUN_DIR.encode()
    if _libc.mount(b"", run_dir, b"none", MS_SHARED | MS_REC, None) != 0:
        _check(_libc.mount(run_dir, run_dir, b"none", MS_BIND | MS_REC, None), "bind /run/netns")
        _check(_libc.mount(b"", run_dir, b"none", MS_SHARED | MS_REC, None), "share /run/netns")
    _run_dir_shared = True


_run_dir_shared = False  # this process made /run/netns a shared mount point


def create(name: str, prepare: Callable[[], None] | None = None) -> None:
    """Create the named namespace; FileExistsError if the name is taken. `prepare` runs
    inside it before it is bound to its name (the calling thread is in it then)."""
    _ensure_run_dir()
    target = path(name)
    os.close(os.open(target, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        _check(_libc.unshare(CLONE_NEWNET), f"unshare for {name}")
        try:
            if prepare is not None:
                prepare()
            _check(
                _libc.mount(b"/proc/thread-self/ns/net", target.encode(), b"none", MS_BIND, None),
                f"bind-mount namespace {name}",
            )
        finally:
            _check(_libc.setns(home, CLONE_NEWNET), "return to the original namespace")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise
    finally:
        os.close(home)


def remove(name: str) -> None:
    """Unmount and unlink; the kernel frees the namespace once nothing holds it."""
    target = path(name)
    if _libc.umount2(target.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):  # EINVAL: not a mount (crash remnant)
            raise OSError(err, f"umount {target}: {os.strerror(err)}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(target)


def join(name: str) -> None:
    """Move the calling thread into `name` for good, e.g. right before exec()."""
    fd = os.open(path(name), os.O_RDONLY)
    try:
        _check(_libc.setns(fd, CLONE_NEWNET), f"enter namespace {name}")
    finally:
        os.close(fd)


def write_sysctls(values: dict[str, str], optional: tuple[str, ...] = ()) -> None:
    """Write sysctls of the namespace the calling thread is in (net.* are per namespace);
    a key that starts with one of `optional` is left out when this kernel has no such key.

    Through a procfs instance of its own, mounted nowhere and gone once closed: the kernel
    keeps one cached /proc/sys entry per namespace under one name (net/ipv4, net/ipv6)
    and a lookup through /proc compares the name with each of them, so there the sysctls
    of a new VR cost what the namespaces present do (3.1 ms with 3000, about a quarter of
    a create with 10,000); through a new instance, whose cache holds only this
    namespace's, 0.13 ms."""
    with _proc_of_own() as root:
        for key, value in values.items():
            try:
                fd = os.open("sys/" + key.replace(".", "/"), os.O_WRONLY, dir_fd=root)
            except FileNotFoundError:
                if key.startswith(optional):
                    continue
                raise
            try:
                os.write(fd, value.encode())
            finally:
                os.close(fd)


FSOPEN_CLOEXEC, FSCONFIG_CMD_CREATE, FSMOUNT_CLOEXEC = 1, 6, 1


@contextlib.contextmanager
def _proc_of_own() -> Iterator[int]:
    """The root of a new procfs instance (fsopen/fsmount: a mount attached nowhere, so
    nothing sees it and nothing is left behind), or /proc's where that cannot be had (a
    kernel before 5.2, a C library without fsopen, a mount refused)."""
    root = _new_proc()
    try:
        yield root
    finally:
        os.close(root)


def _new_proc() -> int:
    fs = _libc.fsopen(b"proc", FSOPEN_CLOEXEC) if hasattr(_libc, "fsopen") else -1
    if fs >= 0:
        try:
            if _libc.fsconfig(fs, FSCONFIG_CMD_CREATE, None, None, 0) == 0:
                root = int(_libc.fsmount(fs, FSMOUNT_CLOEXEC, 0))
                if root >= 0:
                    return root
        finally:
            os.close(fs)
    return os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)


def pids_inside_many(names: list[str]) -> dict[str, list[int]]:
    """Namespace -> processes inside it (to report, never to kill); one scan of /proc."""
    inodes: dict[int, str] = {}
    for name in names:
        try:
            inodes[os.stat(path(name)).st_ino] = name
        except FileNotFoundError:
            continue
    found: dict[str, list[int]] = {}
    if not inodes:
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ino = os.stat(f"/proc/{entry}/ns/net").st_ino
        except OSError:
            continue
        if ino in inodes:
            found.setdefault(inodes[ino], []).append(int(entry))
    return found
