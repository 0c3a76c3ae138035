"""The first program of every container process: the parent-death signal, the container's own mount
namespace with its volumes, then ``exec`` of the container's command.

Run by path as ``python -I -S launching.py <kubelet pid> <namespace> <program> [args...]``
(:func:`launch_argv`), so it imports the standard library only and starts in a few
milliseconds:

* ``PR_SET_PDEATHSIG`` is set to SIGKILL, then the parent is checked to still be the
  kubelet that asked, so that even a cluster killed with SIGKILL takes its processes along;
* when ``<namespace>`` is not empty (JSON ``{"rootfs": dir, "mounts": [[source, target,
  read_only], ...]}``, the mounts in the order given) the process leaves the machine's mount
  namespace (``unshare(CLONE_NEWNS)``), makes every mount private (``mount --make-rprivate
  /``) before anything is mounted, so that nothing it mounts is seen outside, and binds
  each source (recursively, as containerd's ``rbind``; sources are opened first, so that a
  mount cannot hide another's source) at its target, remounting it read-only where asked;
* a target that does not exist is made without touching the machine's files: its deepest
  existing parent directory is *shadowed*: a tmpfs (same mode and owner) is mounted on it
  holding a bind of every entry it had (symlinks copied), and the missing directories (or
  the empty file, for a file source) are created in that tmpfs. The machine's ``/`` cannot
  be shadowed in place (a process does not see what is mounted on its own root), so for a
  missing top-level directory the shadow is built at ``rootfs`` and the process
  ``chroot``\\ s into it;
* failures to set up the namespace end the process with :data:`SETUP_FAILED` and a
  message on stderr (the pod log), as a runtime fails a container it cannot create;
  ``exec`` failures with 127, as a shell would.

``python -I -S launching.py --check`` (:func:`check`) tells whether this machine lets the
kubelet give containers their own mount namespace (root with ``CAP_SYS_ADMIN``).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["SETUP_FAILED", "check", "launch_argv"]

#: Exit code of a container whose mount namespace could not be set up (containerd's StartError code).
SETUP_FAILED = 128

_CLONE_NEWNS = 0x00020000
_PR_SET_PDEATHSIG = 1
_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
_MNT_DETACH = 0x2
#: ``statvfs`` flags with the same bit as their ``MS_*`` twin, kept by a read-only remount.
_KEPT_FLAGS = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC

_libc = ctypes.CDLL(None, use_errno=True)


def launch_argv(kubelet_pid: int, namespace: str, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` through this launcher (``namespace``: ``""`` or the JSON plan)."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(kubelet_pid), namespace, *argv]


@functools.cache
def check() -> str | None:
    """``None`` when containers can have their own mount namespace here, else why not (asked once)."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", os.path.abspath(__file__), "--check"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit code {done.returncode}")


# -- system calls -------------------------------------------------------------------------------


def _encode(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(_encode(source), _encode(target), _encode(fstype), ctypes.c_ulong(flags), _encode(data)):
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source or fstype or ''} on {target}: {os.strerror(errno)}")


def _unshare_mounts() -> None:
    if _libc.unshare(_CLONE_NEWNS):
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWNS): {os.strerror(errno)}")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)


# -- the namespace ----------------------------------------------------------------------------


class _Namespace:
    """The mounts made so far in this process's own mount namespace."""

    def __init__(self, rootfs: str) -> None:
        self.rootfs = rootfs
        #: Directories that are ours to write in: shadows and what was created inside them.
        self.writable: set[str] = set()

    def bind(self, source: str, target: str, read_only: bool) -> None:
        where = self._mount_point(target, os.path.isdir(source))
        _mount(source, where, None, _MS_BIND | _MS_REC)
        if read_only:
            kept = os.statvfs(where).f_flag & _KEPT_FLAGS
            _mount(None, where, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | kept)

    def _mount_point(self, target: str, directory: bool) -> str:
        """``target`` as it resolves now, created (in a shadow) when missing."""
        parts = [p for p in target.split("/") if p]
        current = "/"
        for index, part in enumerate(parts):
            candidate = os.path.join(current, part)
            if os.path.exists(candidate):
                current = os.path.realpath(candidate)  # /var/run -> /run
                continue
            if current not in self.writable:
                current = self._shadow(current)
            for middle in parts[index:-1]:
                current = os.path.join(current, middle)
                os.mkdir(current, 0o755)
                self.writable.add(current)
            current = os.path.join(current, parts[-1])
            if directory:
                os.mkdir(current, 0o755)
                self.writable.add(current)
            else:
                with open(current, "x"):
                    pass
            return current
        return current

    def _shadow(self, directory: str) -> str:
        """A tmpfs over ``directory`` with a bind of each of its entries; returns where it now is."""
        info = os.stat(directory)
        options = f"mode={stat.S_IMODE(info.st_mode):o},uid={info.st_uid},gid={info.st_gid}"
        if directory == "/":
            os.makedirs(self.rootfs, exist_ok=True)
            _mount("tmpfs", self.rootfs, "tmpfs", 0, options)
            _populate("/", self.rootfs)
            os.chroot(self.rootfs)
            os.chdir("/")
            # The bind of the top-level directory holding ``rootfs`` brought along a copy of
            # the half-built shadow: it has no business in the container.
            if os.path.ismount(self.rootfs):
                _libc.umount2(_encode(self.rootfs), _MNT_DETACH)
            self.writable = {"/"}
            return "/"
        original = os.open(directory, os.O_PATH | os.O_DIRECTORY)
        try:
            _mount("tmpfs", directory, "tmpfs", 0, options)
            _populate(f"/proc/self/fd/{original}", directory)
        finally:
            os.close(original)
        self.writable.add(directory)
        return directory


def _populate(source: str, shadow: str) -> None:
    """Every entry of ``source`` in ``shadow``: directories and files bound, symlinks copied."""
    with os.scandir(source) as entries:
        for entry in entries:
            target = os.path.join(shadow, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
                continue
            if entry.is_dir(follow_symlinks=False):
                os.mkdir(target)
            else:
                with open(target, "x"):
                    pass
            _mount(entry.path, target, None, _MS_BIND | _MS_REC)


def _enter(plan: dict[str, object]) -> None:
    mounts = plan.get("mounts")
    assert isinstance(mounts, list)
    _unshare_mounts()
    # Every source and the working directory are held open before anything is mounted (in
    # the new namespace: a bind's source must be one of its mounts): a mount over one of
    # their parents (an emptyDir at /tmp) must not hide them, as a runtime resolves sources
    # on the host, outside the container's view.
    sources = [os.open(str(source), os.O_PATH) for source, _, _ in mounts]
    cwd = os.getcwd()
    held_cwd = os.open(".", os.O_PATH | os.O_DIRECTORY)
    namespace = _Namespace(str(plan["rootfs"]))
    for fd, (_, target, read_only) in zip(sources, mounts, strict=True):
        namespace.bind(f"/proc/self/fd/{fd}", str(target), bool(read_only))
        os.close(fd)
    try:
        os.chdir(cwd)  # as the container sees it now (after a new root, its copy)
    except OSError:
        os.fchdir(held_cwd)  # hidden by a mount: stay where the process was started
    os.close(held_cwd)


# -- the program ----------------------------------------------------------------------------------


def _main(argv: list[str]) -> None:
    if argv[:1] == ["--check"]:
        try:
            _unshare_mounts()
        except OSError as exc:
            sys.stderr.write(f"{exc.strerror}\n")
            os._exit(1)
        os._exit(0)
    try:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except AttributeError:
        pass
    if os.getppid() != int(argv[0]):
        os._exit(137)
    if argv[1]:
        try:
            _enter(json.loads(argv[1]))
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            sys.stderr.write(f"failed to create the container's mounts: {exc.strerror}{where}\n")
            os._exit(SETUP_FAILED)
    try:
        os.execv(argv[2], argv[2:])
    except OSError as exc:
        sys.stderr.write(f"exec {argv[2]}: {exc}\n")
        os._exit(127)


if __name__ == "__main__":
    _main(sys.argv[1:])
