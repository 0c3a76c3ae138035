"""MachineConfig decisions of the embedded cluster: pool membership, rendered configs, roll-out steps.

Pure, after openshift/machine-config-operator (MCO), for the part of it the NUMA specs use:
KubeletConfigs laid over the kubelet configuration of the nodes of a MachineConfigPool.

* :func:`pool_of_node`: the one pool a node belongs to (``master`` wins, then a single custom
  pool, then ``worker``; a node two custom pools select belongs to none, as MCO refuses it);
* :func:`kubeletconfig_problem`: why a KubeletConfig cannot be rendered (no pool selected, a
  field the emulated kubelet cannot express, a configuration its kubelets would refuse);
* :func:`tls_payload`: the kubelet TLS settings of the cluster's TLS profile (``APIServer``), in
  every pool's rendered config, as MCO's kubelet template has them;
* :func:`merge_payloads` / :func:`overlay_kubelet`: the pool's KubeletConfigs merged in
  creation order (maps merged key by key, other fields replaced, as MCO's ``mergo`` override)
  over the cluster's TLS settings and laid over a node's profile configuration;
* :func:`rendered_name`: ``rendered-<pool>-<md5 of the merged payload>``;
* :func:`nodes_to_update`: the nodes whose ``desiredConfig`` moves to the target now
  (``maxUnavailable`` 1: one node at a time);
* :func:`pool_status`: the MachineConfigPool status MCO writes (counts, conditions,
  ``configuration`` moved to the target once every node runs it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nrop.api import tlsprofiles
from nrop.api.selectors import matches
from nrop.localcluster.kubelet.decisions.nodeobjects import configz
from nrop.localcluster.kubelet.decisions.nodestatus import KubeletConfigError, validate_kubelet_config
from nrop.localcluster.kubelet.machine import KubeletConfig, NodeSpec
from nrop.localcluster.profiles.schema import KUBELET_FIELDS, ProfileError, parse_kubelet_config

__all__ = [
    "CURRENT_CONFIG",
    "DESIRED_CONFIG",
    "IGNORED_FIELDS",
    "MASTER",
    "REASON",
    "STATE",
    "STATE_DEGRADED",
    "STATE_DONE",
    "STATE_WORKING",
    "WORKER",
    "NodeState",
    "base_fields",
    "generated_sources",
    "kubeletconfig_condition",
    "kubeletconfig_pools",
    "kubeletconfig_problem",
    "merge_payloads",
    "nodes_to_update",
    "overlay_kubelet",
    "payload_of",
    "pool_of_node",
    "pool_status",
    "rendered_name",
    "selected_machine_configs",
    "tls_payload",
    "without_zero_values",
]

Obj = dict[str, Any]

MASTER = "master"
WORKER = "worker"
_ANNOTATION_PREFIX = "machineconfiguration.openshift.io/"
CURRENT_CONFIG = _ANNOTATION_PREFIX + "currentConfig"
DESIRED_CONFIG = _ANNOTATION_PREFIX + "desiredConfig"
STATE = _ANNOTATION_PREFIX + "state"
STATE_DONE = "Done"
STATE_WORKING = "Working"
STATE_DEGRADED = "Degraded"
REASON = _ANNOTATION_PREFIX + "reason"
#: KubeletConfiguration fields a real kubelet takes and the emulated one has no use for: accepted
#: (they are part of the rendered config) but without effect.
IGNORED_FIELDS = frozenset(
    {
        "apiVersion",
        "kind",
        "cpuManagerReconcilePeriod",
        "kubeAPIQPS",
        "kubeAPIBurst",
        "podPidsLimit",
        "serializeImagePulls",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "imageMinimumGCAge",
        "containerLogMaxSize",
        "containerLogMaxFiles",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "evictionPressureTransitionPeriod",
        "nodeStatusMaxImages",
        "shutdownGracePeriod",
        "shutdownGracePeriodCriticalPods",
    }
)
_MAP_FIELDS = frozenset(
    {
        "cpuManagerPolicyOptions",
        "systemReserved",
        "kubeReserved",
        "evictionHard",
        "topologyManagerPolicyOptions",
        "featureGates",
    }
)


# -- pools and nodes --------------------------------------------------------------------------------


def pool_of_node(labels: Mapping[str, str], pools: Iterable[Mapping[str, Any]]) -> tuple[str | None, str]:
    """The pool of a node with ``labels`` (MCO's ``getPrimaryPoolForNode``), or None and why."""
    selected = [
        pool["metadata"]["name"]
        for pool in pools
        if matches((pool.get("spec") or {}).get("nodeSelector"), labels)
    ]
    custom = sorted(name for name in selected if name not in (MASTER, WORKER))
    if len(custom) > 1:
        return None, f"belongs to {len(custom)} custom roles, cannot proceed with this Node"
    if MASTER in selected:
        return MASTER, ""
    if custom:
        return custom[0], ""
    if WORKER in selected:
        return WORKER, ""
    return None, ""


def base_fields(kubelet: KubeletConfig) -> Obj:
    """A profile kubelet configuration as KubeletConfiguration fields (what an overlay merges into)."""
    spec = NodeSpec(name="base", machine=None, kubelet=kubelet)  # type: ignore[arg-type]
    document = configz(spec)["kubeletconfig"]
    return {key: value for key, value in document.items() if key in KUBELET_FIELDS}


def merge_payloads(payloads: Iterable[Mapping[str, Any]]) -> Obj:
    """KubeletConfig payloads merged in order: later ones win, maps merged key by key."""
    merged: Obj = {}
    for payload in payloads:
        for key, value in payload.items():
            if key in _MAP_FIELDS and isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = json.loads(json.dumps(value))
    return merged


def overlay_kubelet(spec: NodeSpec, overlay: Mapping[str, Any]) -> KubeletConfig:
    """``spec``'s profile kubelet configuration with ``overlay`` laid over it; ValueError if the
    emulated kubelet cannot express it or would refuse to start with it."""
    fields = {key: value for key, value in overlay.items() if key not in IGNORED_FIELDS}
    unknown = sorted(set(fields) - set(KUBELET_FIELDS))
    if unknown:
        raise ValueError(f"fields not supported by the embedded cluster's kubelets: {', '.join(unknown)}")
    merged = merge_payloads([base_fields(spec.kubelet), fields])
    try:
        kubelet = parse_kubelet_config(merged, "KubeletConfiguration")
        validate_kubelet_config(replace(spec, kubelet=kubelet))
    except (ProfileError, KubeletConfigError) as exc:
        raise ValueError(str(exc)) from None
    return kubelet


def rendered_name(
    pool: str, overlay: Mapping[str, Any], machine_configs: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The rendered MachineConfig name of ``pool`` with the merged KubeletConfig ``overlay`` and
    the MachineConfig objects the pool selects (their names and specs)."""
    content: Any = overlay
    if machine_configs:
        selected = [{"name": m["metadata"]["name"], "spec": m.get("spec") or {}} for m in machine_configs]
        content = {"kubelet": overlay, "machineConfigs": selected}
    digest = hashlib.md5(json.dumps(content, sort_keys=True).encode(), usedforsecurity=False).hexdigest()
    return f"rendered-{pool}-{digest}"


def selected_machine_configs(
    pool: Mapping[str, Any], machine_configs: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The MachineConfig objects the pool's ``machineConfigSelector`` selects, by name (the order
    MCO merges them in); none when the pool has no selector."""
    selector = (pool.get("spec") or {}).get("machineConfigSelector")
    if selector is None:
        return []
    chosen = [
        m
        for m in machine_configs
        if not m["metadata"].get("deletionTimestamp") and matches(selector, m["metadata"].get("labels") or {})
    ]
    return sorted(chosen, key=lambda m: m["metadata"]["name"])


# -- KubeletConfigs ---------------------------------------------------------------------------------


def kubeletconfig_pools(kc: Mapping[str, Any], pools: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the pools whose labels the KubeletConfig's ``machineConfigPoolSelector`` matches."""
    selector = (kc.get("spec") or {}).get("machineConfigPoolSelector")
    return sorted(
        pool["metadata"]["name"] for pool in pools if matches(selector, pool["metadata"].get("labels") or {})
    )


def tls_payload(profile: Mapping[str, Any] | None) -> Obj:
    """The kubelet TLS settings MCO renders for a ``tlsSecurityProfile`` (``GetSecurityProfileCiphers``):
    the profile's ``tlsMinVersion`` and its ciphers by their IANA names (those Go implements); no
    profile, an unknown type or a ``Custom`` one without its spec: Intermediate."""
    try:
        spec = tlsprofiles.profile_spec(profile)
    except tlsprofiles.ProfileError:
        spec = tlsprofiles.TLS_PROFILES[tlsprofiles.DEFAULT_PROFILE_TYPE]
    return {
        "tlsMinVersion": spec.min_tls_version,
        "tlsCipherSuites": tlsprofiles.openssl_to_iana_cipher_suites(spec.ciphers),
    }


def without_zero_values(fields: Mapping[str, Any]) -> Obj:
    """``kubeletConfig`` fields as MCO merges them into a pool's kubelet configuration: its
    ``mergo.Merge(..., WithOverride)`` skips a field whose value is Go's zero value, so a
    KubeletConfig written back by a Go client (every field without ``omitempty`` serialized:
    ``"0s"`` durations, ``0``, ``""``, a zero quantity ``"0"``, structs of such) changes only the
    fields it sets. ``false`` stays: the configuration's booleans are pointers, set when written."""
    kept: Obj = {}
    for key, value in fields.items():
        pruned = _pruned(value)
        if pruned is not _ZERO:
            kept[key] = pruned
    return kept


_ZERO = object()
_ZERO_SCALARS = ("", "0s", "0")


def _pruned(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value in _ZERO_SCALARS):
        return _ZERO
    if isinstance(value, int | float) and not isinstance(value, bool) and value == 0:
        return _ZERO
    if isinstance(value, Mapping):
        return without_zero_values(value) or _ZERO
    if isinstance(value, list) and not value:
        return _ZERO
    return value


def payload_of(kc: Mapping[str, Any]) -> Obj:
    """What a KubeletConfig contributes to its pools' rendered config (``kubeletConfig`` fields
    without Go's zero values, :func:`without_zero_values`; its own ``tlsSecurityProfile`` over
    the cluster's, and ``autoSizingReserved``, which only changes the rendered name here)."""
    spec = kc.get("spec") or {}
    payload = without_zero_values(spec.get("kubeletConfig") or {})
    if spec.get("tlsSecurityProfile") is not None:
        payload.update(tls_payload(spec["tlsSecurityProfile"]))
    if spec.get("autoSizingReserved") is not None:
        payload["autoSizingReserved"] = spec["autoSizingReserved"]
    return payload


def kubeletconfig_problem(
    kc: Mapping[str, Any], pool_names: Sequence[str], members: Mapping[str, Sequence[NodeSpec]]
) -> str:
    """Why MCO would not render ``kc`` ("" when it renders): no pool, or a configuration that a
    node of one of its pools (``members``: pool -> profile specs) cannot take."""
    name = kc["metadata"]["name"]
    if not pool_names:
        return f"could not find any MachineConfigPool set for KubeletConfig {name}"
    fields = {k: v for k, v in payload_of(kc).items() if k != "autoSizingReserved"}
    for pool in pool_names:
        for spec in members.get(pool, ()):
            try:
                overlay_kubelet(spec, fields)
            except ValueError as exc:
                return f"KubeletConfiguration for pool {pool} (node {spec.name}): {exc}"
    return ""


def kubeletconfig_condition(problem: str, now: str) -> Obj:
    """MCO's ``wrapErrorWithCondition``: ``Success``/True, or ``Failure``/False with ``Error: ...``."""
    if problem:
        return {
            "type": "Failure",
            "status": "False",
            "message": f"Error: {problem}",
            "lastTransitionTime": now,
        }
    return {"type": "Success", "status": "True", "message": "Success", "lastTransitionTime": now}


# -- roll-out -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeState:
    """A node of a pool as the MCO sees it: its config annotations and readiness."""

    name: str
    current: str
    desired: str
    state: str
    ready: bool = True

    @property
    def unavailable(self) -> bool:
        """Updating (desired not reached, or the daemon still working) or not Ready."""
        return self.current != self.desired or self.state != STATE_DONE or not self.ready

    def updated(self, target: str) -> bool:
        return self.current == target and self.desired == target and self.state == STATE_DONE


def nodes_to_update(nodes: Sequence[NodeState], target: str, max_unavailable: int = 1) -> list[str]:
    """Nodes whose ``desiredConfig`` becomes ``target`` now, by name, within ``max_unavailable``."""
    capacity = max_unavailable - sum(1 for node in nodes if node.unavailable)
    if capacity <= 0:
        return []
    return sorted(node.name for node in nodes if node.desired != target)[:capacity]


def _condition(ctype: str, status: bool, message: str, now: str, old: Mapping[str, Mapping[str, Any]]) -> Obj:
    text = "True" if status else "False"
    previous = old.get(ctype) or {}
    since = previous.get("lastTransitionTime") if previous.get("status") == text else now
    return {"type": ctype, "status": text, "lastTransitionTime": since, "reason": "", "message": message}


def pool_status(
    pool: Mapping[str, Any], nodes: Sequence[NodeState], target: str, sources: Sequence[str], now: str
) -> Obj:
    """The status MCO computes for ``pool`` whose nodes are ``nodes`` and target ``target``."""
    status = pool.get("status") or {}
    updated = sum(1 for node in nodes if node.updated(target))
    ready = sum(1 for node in nodes if node.updated(target) and node.ready)
    unavailable = sum(1 for node in nodes if node.unavailable)
    done = updated == len(nodes)
    configuration = dict(status.get("configuration") or {})
    if done or not configuration.get("name"):
        configuration = {
            "name": target,
            "source": [
                {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": name}
                for name in sources
            ],
        }
    old = {c.get("type", ""): c for c in status.get("conditions") or ()}
    conditions = [
        _condition("RenderDegraded", False, "", now, old),
        _condition("NodeDegraded", False, "", now, old),
        _condition("Degraded", False, "", now, old),
        _condition(
            "Updated", done, f"All nodes are updated with MachineConfig {target}" if done else "", now, old
        ),
        _condition(
            "Updating",
            not done,
            "" if done else f"All nodes are updating to MachineConfig {target}",
            now,
            old,
        ),
    ]
    return {
        "observedGeneration": pool["metadata"].get("generation", 1),
        "configuration": configuration,
        "machineCount": len(nodes),
        "updatedMachineCount": updated,
        "readyMachineCount": ready,
        "unavailableMachineCount": unavailable,
        "degradedMachineCount": 0,
        "conditions": conditions,
    }


def generated_sources(pool: str, kc_count: int, selected: Iterable[str] = ()) -> list[str]:
    """The MachineConfigs a pool's rendered config is made of, by name: the base ones, one per
    KubeletConfig, and the MachineConfig objects it selects."""
    names = [f"00-{pool}", f"01-{pool}-kubelet", *selected]
    names += [f"99-{pool}-generated-kubelet" + (f"-{i}" if i else "") for i in range(kc_count)]
    return sorted(names)
