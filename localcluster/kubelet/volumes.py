"""Volumes of pods that run as processes: where each one lives on the host, what it holds, and how
processes find it.

Owns three steps:

* **plan** (pure, :func:`plan_volumes`): every volume of the pod gets a host directory.
  ``hostPath`` resolves inside the node's root (``/sys`` is ``<node root>/sys``, the
  kubelet's ``/var/lib/kubelet/pod-resources`` is the node's podresources directory, and
  ``..`` never leaves the root); ``emptyDir``, ``configMap``, ``secret``, ``downwardAPI``
  and ``projected`` live in the pod's directory
  ``<node root>/var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~<type>/<name>``, as on a
  real node. Other volume types are refused (:class:`VolumeError`);
* **contents** (pure given its lookups, :func:`volume_files`): the files of ConfigMap,
  Secret, downward-API and projected volumes (``items``, ``defaultMode``/``mode``,
  ``optional``; a projected ``serviceAccountToken`` is minted through the token issuer
  passed in); :func:`materialise` writes them, creates ``emptyDir`` directories and checks
  (or creates) ``hostPath`` paths per their ``type``;
* **mounts** (pure, :func:`container_mounts` and :func:`mount_plan`): what the kubelet
  hands the container runtime (``makeMounts``): each ``volumeMount`` (with ``subPath``),
  read-only when it says so and always for ConfigMap, Secret, downward-API and projected
  volumes, then the termination message file; the runtime adds the node's sysfs at
  ``/sys`` and orders them as containerd does. A process container runs in a mount
  namespace of its own holding these mounts (:mod:`.launching`);
* **paths** (pure, :func:`container_paths` and :func:`rewrite`): where the machine refuses
  mount namespaces, the kubelet instead rewrites every occurrence of a ``mountPath`` (and of
  ``terminationMessagePath`` and the runtime's ``/sys``) in the command, the arguments and
  the environment values of a container into the host path behind it (``--sysfs=/host-sys``
  becomes ``--sysfs=<node root>/sys``). Paths inside file contents are not rewritten.

ConfigMap and Secret volumes are written when a container of the pod is (re)started, not
kept in sync while it runs; projected volumes holding a service-account token are written
again, with a new token, once it has lived 80 % of its lifetime (:mod:`.podworker`).
"""

from __future__ import annotations

import base64
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from nrop.localcluster.kubelet.decisions.containerenv import (
    ConfigError,
    DownwardFacts,
    field_value,
    resource_value,
)

__all__ = [
    "DEFAULT_TERMINATION_MESSAGE_PATH",
    "SYSFS",
    "Mount",
    "PathMap",
    "PlannedVolume",
    "VolumeError",
    "container_mounts",
    "container_paths",
    "create_missing_sources",
    "host_path",
    "materialise",
    "mount_plan",
    "plan_volumes",
    "rewrite",
    "rewrite_all",
    "token_lifetime",
    "token_refresh_delay",
    "volume_files",
]

Obj = Mapping[str, Any]
Lookup = Callable[[str], Obj | None]
#: ``(audiences, expiration seconds) -> token``.
TokenIssuer = Callable[[list[str], int], str]

DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
_POD_DIR_TYPES = {
    "emptyDir": "kubernetes.io~empty-dir",
    "configMap": "kubernetes.io~configmap",
    "secret": "kubernetes.io~secret",
    "downwardAPI": "kubernetes.io~downward-api",
    "projected": "kubernetes.io~projected",
}
_HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)
_DEFAULT_MODE = 0o644
_DEFAULT_TOKEN_SECONDS = 3600


class VolumeError(Exception):
    """A volume that cannot be set up (the container waits in ``ContainerCreating``)."""


@dataclass(frozen=True)
class PlannedVolume:
    name: str
    kind: str  # the volume source field: hostPath, emptyDir, configMap, ...
    path: Path  # where it lives on the host
    source: Obj


def host_path(node_root: Path, path: str) -> Path:
    """A ``hostPath`` inside the node's root; ``..`` cannot climb above it."""
    normal = posixpath.normpath("/" + path.lstrip("/"))
    return node_root / normal.lstrip("/") if normal != "/" else node_root


def plan_volumes(pod: Obj, node_root: Path, pod_dir: Path) -> dict[str, PlannedVolume]:
    """Every volume of the pod with its host directory; :class:`VolumeError` for unsupported ones."""
    planned: dict[str, PlannedVolume] = {}
    for index, volume in enumerate((pod.get("spec") or {}).get("volumes") or ()):
        name = str(volume.get("name", ""))
        kinds = [k for k in volume if k != "name" and volume[k] is not None]
        if len(kinds) != 1:
            raise VolumeError(f"spec.volumes[{index}]: must specify exactly one volume type")
        kind = kinds[0]
        source = volume[kind] or {}
        if kind == "hostPath":
            if source.get("type", "") not in _HOST_PATH_TYPES:
                raise VolumeError(
                    f'spec.volumes[{index}].hostPath.type: Unsupported value: "{source.get("type")}"'
                )
            path = host_path(node_root, str(source.get("path", "")))
        elif kind in _POD_DIR_TYPES:
            path = pod_dir / "volumes" / _POD_DIR_TYPES[kind] / name
        else:
            raise VolumeError(
                f'spec.volumes[{index}]: volume "{name}" of type {kind} is not supported by the emulated kubelet'
            )
        planned[name] = PlannedVolume(name, kind, path, source)
    return planned


# -- contents ---------------------------------------------------------------------------------


def _mode(item: Obj, default: int) -> int:
    mode = item.get("mode")
    return int(mode) if isinstance(mode, int) else default


def _object_data(obj: Obj, secret: bool) -> dict[str, bytes]:
    if secret:
        out = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        out.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
        return out
    out = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    out.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return out


def _keyed(source: Obj, lookup: Lookup, kind: str, default_mode: int) -> dict[str, tuple[bytes, int]]:
    """Files of a ConfigMap or Secret source (``items`` select and rename keys)."""
    name = str(source.get("name") or source.get("secretName") or "")
    obj = lookup(name)
    if obj is None:
        if source.get("optional"):
            return {}
        raise VolumeError(f'{kind.lower()} "{name}" not found')
    data = _object_data(obj, kind == "Secret")
    items = source.get("items")
    if not items:
        return {key: (value, default_mode) for key, value in data.items()}
    files: dict[str, tuple[bytes, int]] = {}
    for item in items:
        key = str(item.get("key", ""))
        if key not in data:
            if source.get("optional"):
                continue
            raise VolumeError(f"{kind.lower()} references non-existent config key: {key}")
        files[str(item.get("path", key))] = (data[key], _mode(item, default_mode))
    return files


def _downward(source: Obj, pod: Obj, facts: DownwardFacts, default_mode: int) -> dict[str, tuple[bytes, int]]:
    files: dict[str, tuple[bytes, int]] = {}
    containers = {c["name"]: c for c in (pod.get("spec") or {}).get("containers") or ()}
    for item in source.get("items") or ():
        path = str(item.get("path", ""))
        try:
            if item.get("fieldRef") is not None:
                value = field_value(str(item["fieldRef"].get("fieldPath", "")), pod, facts)
            elif item.get("resourceFieldRef") is not None:
                selector = item["resourceFieldRef"]
                container = containers.get(str(selector.get("containerName", "")))
                if container is None:
                    raise VolumeError(
                        f"downwardAPI item {path}: containerName must name a container of the pod"
                    )
                value = resource_value(selector, container, facts)
            else:
                raise VolumeError(f"downwardAPI item {path}: needs fieldRef or resourceFieldRef")
        except ConfigError as exc:
            raise VolumeError(f"downwardAPI item {path}: {exc}") from None
        files[path] = (value.encode(), _mode(item, default_mode))
    return files


def volume_files(
    volume: PlannedVolume,
    pod: Obj,
    facts: DownwardFacts,
    config_maps: Lookup,
    secrets: Lookup,
    issue_token: TokenIssuer,
) -> dict[str, tuple[bytes, int]]:
    """``relative path -> (content, mode)`` of a ConfigMap, Secret, downward-API or projected volume."""
    source = volume.source
    default_mode = _mode({"mode": source.get("defaultMode")}, _DEFAULT_MODE)
    if volume.kind == "configMap":
        return _keyed(source, config_maps, "ConfigMap", default_mode)
    if volume.kind == "secret":
        return _keyed(source, secrets, "Secret", default_mode)
    if volume.kind == "downwardAPI":
        return _downward(source, pod, facts, default_mode)
    if volume.kind != "projected":
        return {}
    files: dict[str, tuple[bytes, int]] = {}
    for index, projection in enumerate(source.get("sources") or ()):
        if projection.get("serviceAccountToken") is not None:
            token = projection["serviceAccountToken"]
            audiences = [str(token["audience"])] if token.get("audience") else []
            seconds = int(token.get("expirationSeconds") or _DEFAULT_TOKEN_SECONDS)
            files[str(token.get("path", "token"))] = (issue_token(audiences, seconds).encode(), default_mode)
        elif projection.get("configMap") is not None:
            files.update(_keyed(projection["configMap"], config_maps, "ConfigMap", default_mode))
        elif projection.get("secret") is not None:
            files.update(_keyed(projection["secret"], secrets, "Secret", default_mode))
        elif projection.get("downwardAPI") is not None:
            files.update(_downward(projection["downwardAPI"], pod, facts, default_mode))
        else:
            raise VolumeError(
                f'projected volume "{volume.name}": sources[{index}] of type '
                f"{', '.join(sorted(projection))} is not supported by the emulated kubelet"
            )
    return files


def _check_host_path(volume: PlannedVolume) -> None:
    kind = str(volume.source.get("type", ""))
    path = volume.path
    shown = str(volume.source.get("path", ""))
    if kind == "DirectoryOrCreate":
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
        return
    if kind == "FileOrCreate":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o644, exist_ok=True)
        return
    checks: dict[str, tuple[Callable[[int], bool], str]] = {
        "Directory": (stat.S_ISDIR, "is not a directory"),
        "File": (stat.S_ISREG, "is not a file"),
        "Socket": (stat.S_ISSOCK, "is not a socket file"),
        "CharDevice": (stat.S_ISCHR, "is not a character device"),
        "BlockDevice": (stat.S_ISBLK, "is not a block device"),
    }
    if kind not in checks:
        return
    test, problem = checks[kind]
    try:
        mode = path.stat().st_mode
    except OSError:
        raise VolumeError(f"hostPath type check failed: {shown} {problem}") from None
    if not test(mode):
        raise VolumeError(f"hostPath type check failed: {shown} {problem}")


def token_lifetime(volume: PlannedVolume) -> int | None:
    """The shortest ``expirationSeconds`` of the service-account tokens a projected volume holds."""
    if volume.kind != "projected":
        return None
    seconds = [
        int(projection["serviceAccountToken"].get("expirationSeconds") or _DEFAULT_TOKEN_SECONDS)
        for projection in volume.source.get("sources") or ()
        if projection.get("serviceAccountToken") is not None
    ]
    return min(seconds, default=None)


#: A projected token is replaced once it has lived this part of its lifetime (the kubelet's
#: token manager refreshes at 80 % of the TTL).
TOKEN_REFRESH_FRACTION = 0.8


def token_refresh_delay(volumes: Iterable[PlannedVolume]) -> float | None:
    """Seconds after writing ``volumes`` when their tokens are due for replacement (``None``: no token)."""
    lifetimes = [t for volume in volumes if (t := token_lifetime(volume)) is not None]
    return min(lifetimes) * TOKEN_REFRESH_FRACTION if lifetimes else None


def materialise(volume: PlannedVolume, files: Mapping[str, tuple[bytes, int]]) -> None:
    """Create the volume on the host: check a hostPath, or (re)write a pod-directory volume."""
    if volume.kind == "hostPath":
        _check_host_path(volume)
        return
    volume.path.mkdir(parents=True, exist_ok=True)
    for relative, (content, mode) in files.items():
        target = volume.path / posixpath.normpath("/" + relative).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.tmp")
        temporary.write_bytes(content)
        os.chmod(temporary, mode)
        os.replace(temporary, target)


# -- how a container's processes see them -----------------------------------------------------


class Mount(NamedTuple):
    """A bind mount of a container: a host path at a path inside the container."""

    source: str
    target: str
    read_only: bool


#: Volumes whose files the kubelet writes: always mounted read-only (their mounter's
#: ``GetAttributes().ReadOnly``, which ``makeMounts`` ORs with the volumeMount's ``readOnly``).
_READ_ONLY_KINDS = frozenset({"configMap", "secret", "downwardAPI", "projected"})
SYSFS = "/sys"


def container_mounts(
    container: Obj, volumes: Mapping[str, PlannedVolume], container_dir: Path, where: str
) -> list[Mount]:
    """The kubelet's mounts of a container: its ``volumeMounts`` (``subPath`` applied), then the
    termination message file (unless a volume is mounted there). A mount over ``/`` is left
    out: nothing can be mapped there."""
    mounts: dict[str, Mount] = {}
    for index, mount in enumerate(container.get("volumeMounts") or ()):
        name = str(mount.get("name", ""))
        if name not in volumes:
            raise VolumeError(f'{where}.volumeMounts[{index}].name: Not found: "{name}"')
        volume = volumes[name]
        source = volume.path
        sub_path = str(mount.get("subPath") or "")
        if sub_path:
            source = source / posixpath.normpath("/" + sub_path).lstrip("/")
        target = _clean(str(mount.get("mountPath", "")))
        read_only = bool(mount.get("readOnly")) or volume.kind in _READ_ONLY_KINDS
        mounts[target] = Mount(str(source), target, read_only)
    message_path = _clean(str(container.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH))
    mounts.setdefault(message_path, Mount(str(container_dir / "termination-log"), message_path, False))
    mounts.pop("/", None)
    return list(mounts.values())


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


def mount_plan(
    container: Obj,
    volumes: Mapping[str, PlannedVolume],
    node_root: Path,
    container_dir: Path,
    where: str,
) -> list[Mount]:
    """Every mount of a container's own mount namespace, in the order they are made.

    containerd and CRI-O mount a sysfs into every container, read-only unless the container
    is privileged: the *host's* sysfs, since a mount namespace does not virtualise it. On an
    emulated node the node's sysfs tree plays the host's, so it is what a container finds at
    ``/sys`` (unless a volume is mounted there, which then replaces it, as containerd drops a
    default mount that a CRI mount shadows). The kubelet's mounts follow, sorted by the
    number of parts of their target (containerd's ``sortMounts``), so that a mount is never
    hidden by one of its parents.
    """
    mounts = container_mounts(container, volumes, container_dir, where)
    privileged = bool((container.get("securityContext") or {}).get("privileged"))
    defaults = [Mount(str(host_path(node_root, SYSFS)), SYSFS, not privileged)]
    targets = {mount.target for mount in mounts}
    return [m for m in defaults if m.target not in targets] + sorted(mounts, key=lambda m: _depth(m.target))


def create_missing_sources(mounts: Sequence[Mount]) -> None:
    """Create the host directory of a mount that has none (a ``hostPath`` without a type, a
    ``subPath``), as containerd does before it binds it."""
    for mount in mounts:
        if not os.path.lexists(mount.source):
            os.makedirs(mount.source, mode=0o755, exist_ok=True)


#: ``container path -> host path`` of one container.
PathMap = dict[str, str]


def container_paths(
    container: Obj, volumes: Mapping[str, PlannedVolume], node_root: Path, container_dir: Path, where: str
) -> PathMap:
    """Every path :func:`mount_plan` would mount for a container (the node's sysfs at ``/sys``,
    mount paths with ``subPath``, the termination message path), mapped to its host path."""
    return {m.target: m.source for m in mount_plan(container, volumes, node_root, container_dir, where)}


def _clean(path: str) -> str:
    return posixpath.normpath("/" + path.lstrip("/"))


_NAME_CHAR = r"[\w.\-]"


def rewrite(text: str, paths: Mapping[str, str]) -> str:
    """Every whole occurrence of a container path in ``text`` replaced by its host path.

    A container path matches where it is not part of a longer name: ``/host-sys`` matches
    in ``--sysfs=/host-sys/devices`` and ``unix:///host-sys``, not in ``/data/host-sys``
    or ``/host-system``. Longer paths win.
    """
    if not paths:
        return text
    alternatives = "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True))
    pattern = re.compile(rf"(?<!{_NAME_CHAR})(?:{alternatives})(?!{_NAME_CHAR})")
    return pattern.sub(lambda m: paths[m.group(0)], text)


def rewrite_all(words: Sequence[str], paths: Mapping[str, str]) -> list[str]:
    return [rewrite(word, paths) for word in words]
