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
* **paths** (pure, :func:`container_paths` and :func:`rewrite`): processes are not put in
  a mount namespace, so the kubelet rewrites every occurrence of a ``mountPath`` (and of
  ``terminationMessagePath``) in the command, the arguments and the environment values of
  a container into the host path behind it (``--sysfs=/host-sys`` becomes
  ``--sysfs=<node root>/sys``). Paths inside file contents are not rewritten.

ConfigMap and Secret volumes are written when a container of the pod is (re)started, not
kept in sync while it runs; projected tokens are not rotated.
"""

from __future__ import annotations

import base64
import os
import posixpath
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nrop.localcluster.kubelet.containerenv import ConfigError, DownwardFacts, field_value, resource_value

__all__ = [
    "DEFAULT_TERMINATION_MESSAGE_PATH",
    "PathMap",
    "PlannedVolume",
    "VolumeError",
    "container_paths",
    "host_path",
    "materialise",
    "plan_volumes",
    "rewrite",
    "rewrite_all",
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

#: ``container path -> host path`` of one container.
PathMap = dict[str, str]


def container_paths(
    container: Obj, volumes: Mapping[str, PlannedVolume], container_dir: Path, where: str
) -> PathMap:
    """Mount paths (with ``subPath``) and the termination message path of a container, on the host."""
    paths: PathMap = {}
    for index, mount in enumerate(container.get("volumeMounts") or ()):
        name = str(mount.get("name", ""))
        if name not in volumes:
            raise VolumeError(f'{where}.volumeMounts[{index}].name: Not found: "{name}"')
        target = volumes[name].path
        sub_path = str(mount.get("subPath") or "")
        if sub_path:
            target = target / posixpath.normpath("/" + sub_path).lstrip("/")
        paths[_clean(str(mount.get("mountPath", "")))] = str(target)
    message_path = str(container.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH)
    paths.setdefault(_clean(message_path), str(container_dir / "termination-log"))
    paths.pop("/", None)  # a mount over / would rewrite every path; there is no such thing to map
    return paths


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
