"""The table of images the emulated container runtime knows, besides the project's own: what a
container of each runs, as the real image would.

Upstream's serial suite deploys or reads back a handful of images; each is an entry of
:data:`KNOWN_IMAGES`, matched on its repository (registry and path, any tag or digest, as
containerd normalises it: ``pause:3.9`` is ``docker.io/library/pause``):

* images whose **programs run as processes**: an executable of the image (matched by its
  base name, as a ``PATH`` lookup or an absolute path both reach it) is one of this
  distribution's console scripts, run with the container's arguments: upstream's numacell
  device plugin (``/bin/numacell``, the project's ``numacell``), the resource topology
  exporter (``/bin/resource-topology-exporter``) and the scheduler-plugins scheduler
  (``/bin/kube-scheduler``, the project's ``nrop-scheduler``);
* what the **base** of such an image brings that the suite execs (:data:`BASE_TOOLS`): upstream's
  images are built on ubi9-minimal, rhel9-minimal or CentOS Stream 9, which ship ``sh`` and
  ``curl`` (7.76.1): ``sh`` is the machine's ``/bin/sh`` (POSIX, on every Debian), ``curl`` the
  project's ``nrop-curl``. The scheduler-plugins image of kubernetes-sigs is distroless and has
  neither;
* images that are **simulated** (:mod:`.simulation`): the pause image, whose entrypoint
  ``/pause`` runs until stopped and exits 0 on SIGTERM (upstream's ``quay.io/openshift-kni/pause``
  is built on ubi-minimal, so its ``/bin/sleep 1s`` init containers complete, as the simulator
  plays ``sleep``).

Every entry carries the image's ``ENTRYPOINT`` and ``CMD``, applied as a runtime does
(:func:`container_argv`): no ``command`` runs the entrypoint, followed by ``args`` or, when
there are none, by ``CMD``.

:data:`DEFAULT_PATH_FLAGS` lists, per console script, the paths the program reads by default
as the flags naming them. Where the machine refuses mount namespaces the kubelet cannot mount
the node's ``/sys`` or a ``hostPath`` at those paths, so it passes these flags (rewritten to
the host paths like every argument) ahead of the container's own arguments, which still win.

Pure data and lookups; the own-image patterns and the decision between process and
simulator are in :mod:`.entrypoints`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Any

from nrop.localcluster.kubelet.decisions.podruntime import normalize_image

__all__ = [
    "BASE_TOOLS",
    "DEFAULT_PATH_FLAGS",
    "KNOWN_IMAGES",
    "KnownImage",
    "container_argv",
    "known_image",
    "repository",
]


@dataclass(frozen=True)
class KnownImage:
    """One image the runtime knows: its repositories, its defaults, and what runs as a process."""

    #: What the image is, for messages.
    name: str
    #: ``fnmatch`` patterns of the normalised repository (no tag, no digest).
    repositories: tuple[str, ...]
    #: The image's ``ENTRYPOINT`` and ``CMD``.
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    #: Executables of the image run as real processes: base name -> console script of this distribution.
    programs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: Executables its base image brings: base name -> console script, or a program of the machine.
    tools: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def runs_processes(self) -> bool:
        """Whether the image's containers run as processes (else they are simulated)."""
        return bool(self.programs)

    @property
    def executables(self) -> Mapping[str, str]:
        """Everything a process of the image may run: its base's tools and its own programs."""
        return MappingProxyType({**self.tools, **self.programs})


#: What the bases of upstream's images (ubi9-minimal, rhel9-minimal, CentOS Stream 9), and the
#: project's image, provide that the suite execs in pods: the shell, the machine's (an absolute
#: path names a program of the machine), and curl, the project's.
BASE_TOOLS: Mapping[str, str] = MappingProxyType({"sh": "/bin/sh", "curl": "nrop-curl"})


#: The images upstream's suite deploys or reads back, and what they run.
KNOWN_IMAGES: tuple[KnownImage, ...] = (
    KnownImage(
        "numacell device plugin",
        ("*/openshift-kni/numacell-device-plugin",),
        entrypoint=("/bin/numacell", "-alsologtostderr", "-v", "3"),
        programs=MappingProxyType({"numacell": "numacell", "numazone": "numacell"}),
        tools=BASE_TOOLS,
    ),
    KnownImage(
        "resource topology exporter",
        (
            "*/openshift-kni/resource-topology-exporter",
            "*/k8stopologyawareschedwg/resource-topology-exporter",
        ),
        entrypoint=("/bin/resource-topology-exporter",),
        programs=MappingProxyType({"resource-topology-exporter": "resource-topology-exporter"}),
        tools=BASE_TOOLS,
    ),
    KnownImage(
        "scheduler-plugins scheduler",
        ("*/openshift-kni/scheduler-plugins",),
        entrypoint=("/bin/kube-scheduler",),
        programs=MappingProxyType({"kube-scheduler": "nrop-scheduler"}),
        tools=BASE_TOOLS,
    ),
    KnownImage(
        "scheduler-plugins scheduler (kubernetes-sigs, distroless)",
        ("*/scheduler-plugins/kube-scheduler",),
        entrypoint=("/bin/kube-scheduler",),
        programs=MappingProxyType({"kube-scheduler": "nrop-scheduler"}),
    ),
    KnownImage("pause", ("*/pause",), entrypoint=("/pause",)),
)

#: Per console script: the paths it reads by default, as flags (given where there is no mount namespace).
DEFAULT_PATH_FLAGS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"numacell": ("--sysfs=/sys", "--device-plugin-path=/var/lib/kubelet/device-plugins")}
)


def repository(image: str) -> str:
    """The normalised repository of ``image``: ``quay.io/x/pause:3.9`` -> ``quay.io/x/pause``."""
    name = normalize_image(image).split("@", 1)[0]
    head, slash, last = name.rpartition("/")
    return f"{head}{slash}{last.split(':', 1)[0]}"


def known_image(image: str, table: Sequence[KnownImage] = KNOWN_IMAGES) -> KnownImage | None:
    """The entry of ``table`` for ``image``, or ``None`` when the runtime does not know it."""
    if not image:
        return None
    repo = repository(image)
    return next((entry for entry in table if any(fnmatchcase(repo, p) for p in entry.repositories)), None)


def container_argv(container: Mapping[str, Any], known: KnownImage | None) -> tuple[list[str], list[str]]:
    """``command`` and ``args`` a container runs: its own, completed by the image's ENTRYPOINT and CMD.

    As a runtime applies them: without ``command`` the entrypoint runs, followed by ``args``,
    or by ``CMD`` when there are no ``args`` either; a ``command`` replaces both.
    """
    command = [str(word) for word in container.get("command") or ()]
    args = [str(word) for word in container.get("args") or ()]
    if command or known is None:
        return command, args
    return list(known.entrypoint), args or list(known.cmd)
