"""Static pods: the kubelet's file source and its mirror pods, as ``pkg/kubelet/config/file.go``,
``config/common.go`` and ``pkg/kubelet/pod/mirror_client.go`` do them.

Owns, as pure functions over plain dicts:

* decoding a manifest as the kubelet does: JSON or YAML, non-strict (unknown fields are
  dropped, as Go's decoder drops them, so a mis-indented ``limits:`` vanishes), the API's
  defaults applied, then the file source's own defaults: namespace ``default``, name
  ``<name>-<node name>``, a UID hashed from the decoded pod, the node and the file
  (md5, as ``applyDefaults``), ``spec.nodeName``, the ``kubernetes.io/config.hash``
  annotation and the ``{operator: Exists, effect: NoExecute}`` toleration;
* the annotations the pod config merger adds (``config.source: file``, ``config.seen``);
* the mirror pod body (``kubernetes.io/config.mirror: <hash>``, owned by the Node as its
  controller) and how to tell a mirror pod, and whose mirror it is;

and :class:`StaticPods`, the thin loop: every :data:`POLL_INTERVAL` seconds it reads the
node's manifest directory, hands new static pods (``("ADDED", pod)``) and vanished ones
(``("STATIC_REMOVED", uid)``) to the kubelet's queue, where they are admitted and run like
any bound pod, and keeps exactly one mirror pod in the API per static pod the kubelet runs:
created when missing, replaced when deleted or outdated, removed once its static pod has
terminated.  The kubelet itself ignores mirror pods' watch events.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from nrop.api.metatime import rfc3339_micro
from nrop.api.quantity import canonical
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions import validation
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions, WriteOptions
from nrop.localcluster.apiserver.decisions.strategies import default_pod_spec
from nrop.localcluster.apiserver.openapi import definitions
from nrop.localcluster.clock import Clock

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.clients import InProcessAPI

__all__ = [
    "CONFIG_HASH",
    "CONFIG_MIRROR",
    "CONFIG_SEEN",
    "CONFIG_SOURCE",
    "MANIFESTS_DIR",
    "POLL_INTERVAL",
    "ManifestError",
    "StaticPods",
    "decode_manifest",
    "is_manifest_name",
    "is_mirror_of",
    "is_mirror_pod",
    "is_static_pod",
    "mirror_pod",
    "static_pod_name",
    "static_pod_uid",
    "with_config_annotations",
]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: The node's ``staticPodPath``, relative to its root.
MANIFESTS_DIR = Path("etc/kubernetes/manifests")
#: Seconds between two reads of the manifest directory.  Upstream re-lists every
#: ``fileCheckFrequency`` (20 s) and reacts to inotify events in between; one short poll
#: gives about the same latency here.
POLL_INTERVAL = 1.0
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_MIRROR = "kubernetes.io/config.mirror"
CONFIG_SEEN = "kubernetes.io/config.seen"
CONFIG_SOURCE = "kubernetes.io/config.source"
FILE_SOURCE = "file"

_POD_DEFINITION = "io.k8s.api.core.v1.Pod"
#: What ``applyDefaults`` adds to every static pod, so node problems never evict it.
STATIC_TOLERATION: Obj = {"operator": "Exists", "effect": "NoExecute"}


class ManifestError(ValueError):
    """A manifest the file source cannot turn into a pod (the kubelet logs it and tries again later)."""


# -- decoding ---------------------------------------------------------------------------------


def is_manifest_name(name: str) -> bool:
    """Whether a directory entry is read as a manifest: not hidden, a JSON or YAML suffix."""
    return not name.startswith(".") and name.endswith(MANIFEST_SUFFIXES)


def static_pod_name(name: str, node_name: str) -> str:
    """``generatePodName``: the manifest's name, a dash and the node name in lower case."""
    return f"{name}-{node_name.lower()}"


def static_pod_uid(pod: Obj, node_name: str, source: str) -> str:
    """The UID (and config hash) of a decoded pod: md5 of the object, the node and the file."""
    hasher = hashlib.md5(usedforsecurity=False)
    hasher.update(json.dumps(pod, sort_keys=True, separators=(",", ":")).encode())
    hasher.update(f"host:{node_name}".encode())
    hasher.update(f"file:{source}".encode())
    return hasher.hexdigest()


def _drop_nulls(value: Any) -> Any:
    """Go decodes ``null`` into a zero value, which the object then omits."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value if v is not None]
    return value


def _quantity_strings(spec: Obj) -> None:
    """Quantities written as YAML numbers (``cpu: 2``) come out of Go's decoder as strings."""
    lists = [c.get("resources") or {} for c in (*spec.get("initContainers", ()), *spec.get("containers", ()))]
    for values in (
        *(r.get(k) for r in lists for k in ("limits", "requests")),
        spec.get("overhead"),
        *((spec.get("resources") or {}).get(k) for k in ("limits", "requests")),
    ):
        for name, value in (values or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                values[name] = canonical(str(value))


def _add_or_update_toleration(spec: Obj, toleration: Obj) -> None:
    """``AddOrUpdateTolerationInPod``: one toleration per key/operator/value/effect."""
    same = ("key", "operator", "value", "effect")
    tolerations = [
        t for t in spec.get("tolerations") or () if any(t.get(k) != toleration.get(k) for k in same)
    ]
    spec["tolerations"] = [*tolerations, dict(toleration)]


def decode_manifest(data: bytes | str, source: str, node_name: str) -> Obj:
    """The static pod of one manifest file; :class:`ManifestError` says why there is none."""
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as err:
        why = " ".join(str(err).split())  # one log line
        raise ManifestError(f"{source}: couldn't parse as pod({why}), please check manifest file") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: couldn't parse as pod(not an object), please check manifest file")
    if not doc.get("kind"):
        raise ManifestError(f"{source}: Object 'Kind' is missing")
    if (doc.get("apiVersion"), doc.get("kind")) != ("v1", "Pod"):
        raise ManifestError(
            f"{source}: couldn't parse as pod(invalid pod: kind {doc.get('kind')} "
            f"in version {doc.get('apiVersion')!r}), please check manifest file"
        )
    result = validation.validate_builtin(definitions.load(), _POD_DEFINITION, doc, field_validation="Ignore")
    if not result.ok:
        causes = "; ".join(f"{c.field}: {c.message}" for c in result.errors)
        raise ManifestError(f"{source}: invalid pod: {causes}")
    pod: Obj = _drop_nulls(result.pruned)
    meta = pod.setdefault("metadata", {})
    if not meta.get("name"):
        raise ManifestError(f"{source}: invalid pod: name is needed for the pod")
    pod.pop("status", None)
    _quantity_strings(pod.setdefault("spec", {}))
    default_pod_spec(pod.setdefault("spec", {}))
    uid = meta.get("uid") or static_pod_uid(pod, node_name, source)
    meta["uid"] = uid
    meta["name"] = static_pod_name(meta["name"], node_name)
    meta["namespace"] = meta.get("namespace") or "default"
    meta.setdefault("annotations", {})[CONFIG_HASH] = uid
    pod["spec"]["nodeName"] = node_name
    _add_or_update_toleration(pod["spec"], STATIC_TOLERATION)
    pod["status"] = {"phase": "Pending"}
    return pod


def with_config_annotations(pod: Obj, seen: str) -> Obj:
    """The pod as the config merger hands it on: its source and when it was first seen."""
    out = copy.deepcopy(pod)
    annotations = out["metadata"].setdefault("annotations", {})
    annotations[CONFIG_SOURCE] = FILE_SOURCE
    annotations[CONFIG_SEEN] = seen
    return out


# -- mirror pods ------------------------------------------------------------------------------


def _annotations(pod: Obj) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def is_static_pod(pod: Obj) -> bool:
    """A pod from the kubelet's file source (not its mirror in the API)."""
    return _annotations(pod).get(CONFIG_SOURCE) == FILE_SOURCE and CONFIG_MIRROR not in _annotations(pod)


def is_mirror_pod(pod: Obj) -> bool:
    return CONFIG_MIRROR in _annotations(pod)


def is_mirror_of(mirror: Obj, static: Obj) -> bool:
    """``IsMirrorPodOf``: same full name, and the mirror carries the static pod's hash."""
    m, s = mirror.get("metadata") or {}, static.get("metadata") or {}
    return (m.get("namespace"), m.get("name")) == (s.get("namespace"), s.get("name")) and _annotations(
        mirror
    ).get(CONFIG_MIRROR) == _annotations(static).get(CONFIG_HASH)


def mirror_pod(static: Obj, node_name: str, node_uid: str) -> Obj:
    """``CreateMirrorPod``'s body: the static pod, its hash as ``config.mirror``, owned by the Node."""
    body = copy.deepcopy(static)
    meta = body["metadata"]
    meta.pop("uid", None)
    body.pop("status", None)
    meta["annotations"][CONFIG_MIRROR] = _annotations(static).get(CONFIG_HASH, "")
    meta["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid, "controller": True}
    ]
    return body


# -- the loop ---------------------------------------------------------------------------------

#: What the kubelet does with a static pod UID: runs it (a mirror is due), is stopping it
#: (its mirror stays until it has ended), or nothing (never admitted, rejected, or gone).
PodState = Literal["running", "terminating"] | None


@dataclass
class _Scan:
    pods: dict[str, Obj] = field(default_factory=dict)  # uid -> decoded static pod
    failures: dict[Path, str] = field(default_factory=dict)  # file -> why it was not used


def _read_manifests(directory: Path, node_name: str) -> _Scan:
    scan = _Scan()
    names: dict[tuple[str, str], Path] = {}
    try:
        entries = sorted(directory.iterdir())
    except OSError as err:
        scan.failures[directory] = f"Unable to read config path {directory}: {err}"
        return scan
    for path in entries:
        if not is_manifest_name(path.name) or not path.is_file():
            continue
        try:
            pod = decode_manifest(path.read_bytes(), str(path), node_name)
        except (OSError, ManifestError) as err:
            scan.failures[path] = f"Could not process manifest file {path}: {err}"
            continue
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        if key in names:
            scan.failures[path] = (
                f"Could not process manifest file {path}: duplicate pod name {key[1]!r} "
                f"(already from {names[key]}), ignoring"
            )
            continue
        names[key] = path
        scan.pods[pod["metadata"]["uid"]] = pod
    return scan


class StaticPods:
    """The file source and mirror pods of one kubelet; :meth:`run` is its task on the event loop."""

    def __init__(
        self,
        server: InProcessAPI,
        node_name: str,
        directory: Path,
        *,
        enqueue: Callable[[tuple[Any, ...]], None],
        state: Callable[[str], PodState],
        clock: Clock,
        opts: WriteOptions,
        interval: float = POLL_INTERVAL,
    ) -> None:
        self.server = server
        self.node_name = node_name
        self.directory = directory
        self.interval = interval
        self._enqueue = enqueue
        self._state = state
        self._clock = clock
        self._opts = opts
        self._pods: dict[str, Obj] = {}  # uid -> static pod, as handed to the kubelet
        self._warned: dict[Path, str] = {}
        self._refused: set[str] = set()  # static pods whose mirror the API server refused
        self._pod_kind = server.registry.lookup("", "v1", "pods")

    async def run(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                self.sync()
            except errors.StatusError as err:
                log.warning("node %s: static pods: %s", self.node_name, err)
            await asyncio.sleep(self.interval)

    def sync(self) -> None:
        """One poll: read the manifests, hand on what changed, then bring the mirror pods in line."""
        scan = _read_manifests(self.directory, self.node_name)
        self._report(scan.failures)
        for uid in self._pods.keys() - scan.pods.keys():
            pod = self._pods.pop(uid)
            log.info(
                "node %s: static pod %s removed from %s", self.node_name, _full_name(pod), self.directory
            )
            self._enqueue(("STATIC_REMOVED", uid))
        for uid, pod in scan.pods.items():
            if uid in self._pods:
                continue
            self._pods[uid] = with_config_annotations(pod, rfc3339_micro(self._clock.now()))
            log.info(
                "node %s: static pod %s (uid %s) from %s",
                self.node_name,
                _full_name(pod),
                uid,
                self.directory,
            )
            self._enqueue(("ADDED", self._pods[uid]))
        self._sync_mirrors()

    def _report(self, failures: dict[Path, str]) -> None:
        """A warning per file and problem, once; the file is read again at every poll."""
        for path, message in failures.items():
            if self._warned.get(path) != message:
                log.warning("node %s: %s", self.node_name, message)
        self._warned = dict(failures)

    def _sync_mirrors(self) -> None:
        assert self._pod_kind is not None
        mirrors = {
            (p["metadata"]["namespace"], p["metadata"]["name"]): p
            for p in self.server.store.list(self._pod_kind.storage)
            if (p.get("spec") or {}).get("nodeName") == self.node_name and is_mirror_pod(p)
        }
        for uid, static in self._pods.items():
            if self._state(uid) != "running":
                continue
            key = (static["metadata"]["namespace"], static["metadata"]["name"])
            mirror = mirrors.pop(key, None)
            if mirror is not None and (
                mirror["metadata"].get("deletionTimestamp") or not is_mirror_of(mirror, static)
            ):
                self._delete(mirror, "Deleted mirror pod because it is outdated")
                mirror = None
            if mirror is None:
                self._create(uid, static)
        for mirror in mirrors.values():
            if self._state(_annotations(mirror).get(CONFIG_MIRROR, "")) is None:
                self._delete(mirror, "Deleted orphaned mirror pod")

    def _create(self, uid: str, static: Obj) -> None:
        assert self._pod_kind is not None
        node = self.server.store.get(("", "nodes"), "", self.node_name)
        if node is None or node["metadata"].get("deletionTimestamp"):
            return  # upstream: no mirror pod for a node that is not (or no longer) in the cluster
        body = mirror_pod(static, self.node_name, node["metadata"]["uid"])
        namespace = body["metadata"]["namespace"]
        try:
            self.server.rest.create(self._pod_kind, namespace, body, self._opts)
        except errors.AlreadyExists:
            return
        except errors.StatusError as err:
            # Tried again at every poll (a namespace may appear), said once.
            level = logging.DEBUG if uid in self._refused else logging.WARNING
            self._refused.add(uid)
            log.log(
                level, "node %s: Failed creating a mirror pod %s: %s", self.node_name, _full_name(static), err
            )
            return
        log.info("node %s: created mirror pod %s", self.node_name, _full_name(static))
        self._enqueue(("SYNC", uid))  # the pod's status goes to its new mirror

    def _delete(self, mirror: Obj, why: str) -> None:
        assert self._pod_kind is not None
        meta = mirror["metadata"]
        try:
            self.server.rest.delete(
                self._pod_kind,
                meta["namespace"],
                meta["name"],
                DeleteOptions(grace_period=0, preconditions={"uid": meta["uid"]}),
            )
        except (errors.NotFound, errors.Conflict):
            return
        log.info("node %s: %s %s", self.node_name, why, _full_name(mirror))


def _full_name(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
