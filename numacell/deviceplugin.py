"""The numacell device plugin (``numacell``): one fake resource per NUMA cell, for pinning test pods.

Owns the program the suite runs as a DaemonSet on every TAS node (upstream
``test/deviceplugin``): for every NUMA cell found in a sysfs tree it serves a
kubelet **device plugin v1beta1** on its own unix socket and registers resource
``kni.node/numacellNN`` (NN = the cell id on two digits) with :data:`DEVICE_COUNT`
devices, each carrying the cell as its NUMA topology. Under the ``single-numa-node``
policy a container asking for ``kni.node/numacellNN: 1`` can only be admitted on cell NN.

Layout, as the rest of the project: the pure part (cell discovery from sysfs, names,
device lists, allocation answers) is plain functions over plain data; each cell's plugin is
the project's one device plugin server (:class:`~nrop.numacell.server.DevicePluginServer`,
built by :func:`cell_plugin`), and :class:`Manager` is a loop that registers every cell and
registers again whenever the kubelet comes back (its socket is re-created, or it removed ours
at start-up, as ``CleanupPluginDirectory`` does), until SIGTERM/SIGINT.

Upstream's flags (``-alsologtostderr``, ``-v N``, ``-sysfs``, ``-devices``, ``-discover``)
are accepted, with one or two dashes, and the defaults are upstream's paths (``/sys``,
``/var/lib/kubelet/device-plugins``): the embedded kubelets run this program for upstream's
image and DaemonSet unmodified. ``--device-plugin-path`` names the kubelet's directory too,
so that where the embedded kubelet gives containers no mount namespace it can pass both
paths as flags (rewritten to the node's).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc

from nrop.api.deviceplugin import DEVICE_PLUGIN_PATH, KUBELET_SOCKET_NAME, Device
from nrop.api.grpc.deviceplugin.v1beta1 import api_pb2
from nrop.numacell.server import AllocationError, DevicePluginServer

__all__ = [
    "DEFAULT_DEVICE_PLUGIN_PATH",
    "DEFAULT_SYSFS",
    "DEVICE_COUNT",
    "ENV_CELL_ID",
    "RESOURCE_NAMESPACE",
    "Manager",
    "allocate",
    "cell_devices",
    "cell_plugin",
    "device_id",
    "is_resource_name",
    "main",
    "read_cells",
    "resource_name",
    "socket_name",
]

log = logging.getLogger("numacell")

RESOURCE_NAMESPACE = "kni.node"
RESOURCE_PREFIX = "numacell"
#: Devices per cell (upstream ``NUMACellDefaultDeviceCount``); never decremented.
DEVICE_COUNT = 15
#: Set in every allocated container, for debugging (upstream ``NUMACellEnvironVarName``).
ENV_CELL_ID = "KNI_NODE_CELL_ID"
#: The device node handed to containers (upstream ``NUMACellDevicePath``).
DEVICE_PATH = "/dev/null"
DEFAULT_SYSFS = "/sys"
DEFAULT_DEVICE_PLUGIN_PATH = DEVICE_PLUGIN_PATH
#: ``sizeof(sockaddr_un.sun_path)`` minus the terminating NUL, on Linux.
MAX_SOCKET_PATH = 107
#: How often the manager looks at the kubelet socket and at its own sockets.
WATCH_INTERVAL = 0.5

_NODE_DIR = "devices/system/node"
_NODE_RE = re.compile(r"node([0-9]+)")


# -- pure part ------------------------------------------------------------------------------------


def device_id(cell: int) -> str:
    """``3`` -> ``numacell03`` (upstream ``MakeDeviceID``)."""
    return f"{RESOURCE_PREFIX}{cell:02d}"


def resource_name(cell: int) -> str:
    """``3`` -> ``kni.node/numacell03``."""
    return f"{RESOURCE_NAMESPACE}/{device_id(cell)}"


def is_resource_name(name: str) -> bool:
    """Whether ``name`` is a numacell resource (upstream ``IsResourceName``: a prefix check)."""
    return name.startswith(f"{RESOURCE_NAMESPACE}/{RESOURCE_PREFIX}")


def socket_name(cell: int) -> str:
    """The plugin's socket in the device-plugins directory: ``kni.node_numacell03``."""
    return f"{RESOURCE_NAMESPACE}_{device_id(cell)}"


def read_cells(sysfs: str | Path) -> list[int]:
    """The NUMA cell ids of the machine: the ``node<N>`` entries of ``devices/system/node``, sorted.

    A machine without that directory (no NUMA support in the kernel) is one cell, 0, as
    the kernel and ghw see it.
    """
    directory = Path(sysfs) / _NODE_DIR
    try:
        names = [entry.name for entry in directory.iterdir() if entry.is_dir()]
    except FileNotFoundError:
        return [0]
    return sorted(int(m.group(1)) for name in names if (m := _NODE_RE.fullmatch(name)))


def cell_devices(cell: int, count: int = DEVICE_COUNT) -> list[Device]:
    """The devices of ``cell``, ``numacell03-000`` …, every one healthy and on that NUMA node
    (count ≥ 1, else :data:`DEVICE_COUNT`)."""
    if count <= 0:
        count = DEVICE_COUNT
    return [Device(f"{device_id(cell)}-{index:03d}", True, (cell,)) for index in range(count)]


def allocate(cell: int, container_requests: Sequence[Sequence[str]]) -> api_pb2.AllocateResponse:
    """Upstream's answer: one device per container, ``/dev/null`` and ``KNI_NODE_CELL_ID=<cell>``;
    :class:`~nrop.numacell.server.AllocationError` with upstream's texts otherwise."""
    responses = []
    for ids in container_requests:
        if len(ids) != 1:
            raise AllocationError("can't allocate more than 1 numacell")
        if not ids[0].startswith(RESOURCE_PREFIX):
            raise AllocationError(f"cannot allocate numacell {json.dumps(ids[0])}")
        responses.append(
            api_pb2.ContainerAllocateResponse(
                devices=[
                    api_pb2.DeviceSpec(host_path=DEVICE_PATH, container_path=DEVICE_PATH, permissions="rw")
                ],
                envs={ENV_CELL_ID: str(cell)},
            )
        )
    return api_pb2.AllocateResponse(container_responses=responses)


# -- the plugins -----------------------------------------------------------------------------------


def cell_plugin(cell: int, plugin_dir: Path, count: int = DEVICE_COUNT) -> DevicePluginServer:
    """The device plugin of one cell, on ``<plugin dir>/kni.node_numacellNN``: upstream's answers,
    no preferred allocation, no ``PreStartContainer``."""
    return DevicePluginServer(
        resource_name(cell),
        cell_devices(cell, count),
        plugin_dir,
        socket_name=socket_name(cell),
        allocate=functools.partial(allocate, cell),
        get_preferred_allocation_available=False,
    )


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


@dataclass
class Manager:
    """Registers every cell plugin and again after each kubelet restart, until :meth:`stop`.

    The kubelet's socket is watched by inode: a new inode is a restarted kubelet. A plugin
    socket that disappeared (the kubelet cleans the directory when it starts) is served
    again. Registration failures are retried on the next tick.
    """

    plugins: list[DevicePluginServer]
    plugin_dir: Path
    interval: float = WATCH_INTERVAL

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self.registrations = 0

    @property
    def kubelet_socket(self) -> Path:
        return self.plugin_dir / KUBELET_SOCKET_NAME

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        registered_with: int | None = None
        registered: set[str] = set()
        try:
            while not self._stop.is_set():
                kubelet = _inode(self.kubelet_socket)
                if kubelet is None:
                    if registered_with is not None:
                        log.info("kubelet socket %s is gone; waiting for it", self.kubelet_socket)
                    registered_with = None
                    registered.clear()
                else:
                    if kubelet != registered_with:
                        if registered_with is not None:
                            log.info("kubelet socket re-created: registering again")
                        registered.clear()
                        registered_with = kubelet
                    for plugin in self.plugins:
                        if not plugin.serving or not plugin.socket_path.exists():
                            registered.discard(plugin.resource_name)
                        if plugin.resource_name not in registered and self._register(plugin):
                            registered.add(plugin.resource_name)
                self._stop.wait(self.interval)
        finally:
            for plugin in self.plugins:
                plugin.stop()

    def _register(self, plugin: DevicePluginServer) -> bool:
        try:
            plugin.start()
            plugin.register(self.kubelet_socket)
        except grpc.RpcError as err:
            log.error("registration of %s failed (retrying): %s", plugin.resource_name, err)
            return False
        self.registrations += 1
        return True


# -- command line ---------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="numacell",
        description="Device plugin exposing one kni.node/numacellNN resource per NUMA cell.",
    )
    parser.add_argument(
        "-sysfs", "--sysfs", default=DEFAULT_SYSFS, metavar="PATH", help="mount path of sysfs"
    )
    parser.add_argument(
        "-device-plugin-path",
        "--device-plugin-path",
        default=DEFAULT_DEVICE_PLUGIN_PATH,
        metavar="PATH",
        help="the kubelet's device plugin directory (kubelet.sock and the plugin sockets)",
    )
    parser.add_argument(
        "-devices",
        "--devices",
        type=int,
        default=DEVICE_COUNT,
        metavar="N",
        help="amount of devices to expose per cell (never decremented)",
    )
    parser.add_argument("-discover", "--discover", action="store_true", help="print the NUMA cells and exit")
    parser.add_argument(
        "-v", "--v", type=int, default=0, metavar="N", help="log verbosity (klog style; >= 4 is debug)"
    )
    parser.add_argument(
        "-alsologtostderr", "--alsologtostderr", action="store_true", help="accepted for compatibility"
    )
    parser.add_argument(
        "-logtostderr", "--logtostderr", action="store_true", help="accepted for compatibility"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.v >= 4 else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    cells = read_cells(args.sysfs)
    if args.discover:
        sys.stdout.write("".join(f"NUMA node {cell}\n" for cell in cells))
        return 0
    plugin_dir = Path(args.device_plugin_path)
    log.info(
        "NUMACell device plugin starting: sysfs=%s cells=%s devicesPerNUMACell=%d pid=%d",
        args.sysfs,
        cells,
        args.devices,
        os.getpid(),
    )
    count = args.devices if args.devices > 0 else DEVICE_COUNT
    plugins = [cell_plugin(cell, plugin_dir, count) for cell in cells]
    too_long = [str(p.socket_path) for p in plugins if len(os.fsencode(str(p.socket_path))) > MAX_SOCKET_PATH]
    if too_long:
        log.error("unix socket paths longer than %d bytes: %s", MAX_SOCKET_PATH, ", ".join(too_long))
        return 1
    manager = Manager(plugins, plugin_dir)

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received signal %s, shutting down", signal.Signals(signum).name)
        manager.stop()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, on_signal)
    manager.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
