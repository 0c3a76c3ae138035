"""A NUMAResourcesOperator's spec: validation (the Degraded reasons and messages) and node groups.

Validation runs in upstream's order and stops at the first failing rule:

1. the object's name (``IncorrectNUMAResourcesOperatorResourceName``);
2. ``spec.imageSpec`` while the exporter image is restricted (``CustomUserImage``);
3. the node groups (``ValidationErrorUnderNodeGroups``): one specifier each, no empty or
   duplicate pool names, at most 8 annotations, valid selectors, durations that parse,
   ``machineConfigPoolSelector`` only where MachineConfigPools exist, no MachineConfigPool
   and no node selected by two groups;
4. the tolerations of each group (``InternalError``, ``Unsupported value``, as the API
   server's refusal of the DaemonSet reads upstream).

A valid spec resolves into :class:`NodeGroup` values: the pool name (which names the
DaemonSet), the node selector of the DaemonSet and the effective (defaulted) config.

Pure: MachineConfigPools and nodes are passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from nrop.api import tolerations as tolerations_rules
from nrop.api.durations import parse_duration
from nrop.api.fielderrors import go_quote
from nrop.api.selectors import SelectorError, label_selector_from_dict, matches
from nrop.operator.decisions import naming
from nrop.operator.decisions.conditions import Reason, Step

__all__ = [
    "DEFAULT_CONFIG",
    "MAX_ANNOTATIONS",
    "NodeGroup",
    "effective_config",
    "resolve_groups",
    "validate",
]

Obj = Mapping[str, Any]

MAX_ANNOTATIONS: Final = 8
#: Upstream's ``DefaultNodeGroupConfig()``.
DEFAULT_CONFIG: Final[dict[str, Any]] = {
    "podsFingerprinting": "EnabledExclusiveResources",
    "infoRefreshMode": "Periodic",
    "infoRefreshPeriod": "10s",
    "infoRefreshPause": "Disabled",
}


@dataclass(frozen=True)
class NodeGroup:
    """A resolved node group: one exporter DaemonSet ``<nropName>-<pool_name>``."""

    pool_name: str
    node_selector: dict[str, str]
    config: dict[str, Any]
    annotations: dict[str, str] = field(default_factory=dict)


def effective_config(config: Obj | None) -> dict[str, Any]:
    """The defaults overlaid with the group's config (upstream's ``NormalizeConfig``)."""
    result = dict(DEFAULT_CONFIG)
    for key, value in (config or {}).items():
        if value is not None and value != []:
            result[key] = value
    return result


def _groups(spec: Obj) -> list[Obj]:
    return list(spec.get("nodeGroups") or [])


def _node_group_errors(groups: Sequence[Obj], has_mcps: bool) -> list[str]:
    """The first failing node-group rule's messages (upstream validators, in order)."""
    for idx, group in enumerate(groups):
        has_selector = group.get("machineConfigPoolSelector") is not None
        has_pool = group.get("poolName") is not None
        if not has_selector and not has_pool:
            return [f"node group {idx} missing any pool specifier"]
        if has_selector and has_pool:
            return [
                f"node group {idx} must have only a single specifier set: either PoolName or MachineConfigPoolSelector"
            ]
    empty = [
        f"pool name for pool #{idx} cannot be empty"
        for idx, g in enumerate(groups)
        if g.get("poolName") == ""
    ]
    if empty:
        return empty
    names = [g["poolName"] for g in groups if g.get("poolName") is not None]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        return [f"the pool name {go_quote(str(n))} has duplicates" for n in dups]
    many = [
        f"pool #{idx} has too many annotations {len(g['annotations'])} max {MAX_ANNOTATIONS}"
        for idx, g in enumerate(groups)
        if len(g.get("annotations") or {}) > MAX_ANNOTATIONS
    ]
    if many:
        return many
    errors: list[str] = []
    for idx, group in enumerate(groups):
        selector = group.get("machineConfigPoolSelector")
        if selector is None:
            continue
        if not has_mcps:
            errors.append(
                f"node group {idx}: spec.nodeGroups[{idx}].machineConfigPoolSelector needs MachineConfigPools, "
                "which this cluster does not have; Should specify PoolName only"
            )
            continue
        try:
            label_selector_from_dict(selector, path=f"spec.nodeGroups[{idx}].machineConfigPoolSelector")
        except SelectorError as exc:
            errors.append(str(exc))
    if errors:
        return errors
    for idx, group in enumerate(groups):
        config = group.get("config") or {}
        period = config.get("infoRefreshPeriod")
        if period is None:
            continue
        try:
            if parse_duration(str(period)) < 0:
                raise ValueError("must not be negative")
        except ValueError as exc:
            errors.append(
                f"spec.nodeGroups[{idx}].config.infoRefreshPeriod: invalid duration {go_quote(str(period))}: {exc}"
            )
    return errors


def validate(obj: Obj, *, exporter_image_restricted: bool, has_mcps: bool) -> Step | None:
    """The Degraded step for an invalid NUMAResourcesOperator, or None when it is valid."""
    name = obj.get("metadata", {}).get("name", "")
    if name != naming.NROP_NAME:
        return Step.degraded(
            Reason.INCORRECT_NROP_NAME, f"incorrect NUMAResourcesOperator resource name: {name}"
        )
    spec = obj.get("spec") or {}
    if exporter_image_restricted and spec.get("imageSpec"):
        return Step.degraded(
            Reason.CUSTOM_USER_IMAGE, f"custom operand image is not supported: {spec['imageSpec']}"
        )
    groups = _groups(spec)
    errors = _node_group_errors(groups, has_mcps)
    if errors:
        return Step.degraded(Reason.NODE_GROUPS_ERROR, "\n".join(errors))
    for idx, group in enumerate(groups):
        tolerations = (group.get("config") or {}).get("tolerations") or []
        errors += tolerations_rules.tolerations_errors(
            tolerations, f"spec.nodeGroups[{idx}].config.tolerations"
        )
    if errors:
        return Step.degraded(Reason.INTERNAL_ERROR, "\n".join(errors))
    return None


def _mcp_node_selector(mcp: Obj) -> dict[str, str]:
    selector = (mcp.get("spec") or {}).get("nodeSelector") or {}
    return dict(selector.get("matchLabels") or {})


def resolve_groups(
    obj: Obj, mcps: Sequence[Obj], nodes: Sequence[Obj], *, node_overlap: bool = True
) -> tuple[list[NodeGroup], list[str]]:
    """The node groups of a valid spec, and the overlap errors (MCP or node in two groups).

    ``node_overlap=False`` skips the node check: where MachineConfigPools exist, the MCO puts
    every node in one pool (upstream only rejects an MCP two groups select).
    """
    groups: list[NodeGroup] = []
    errors: list[str] = []
    mcp_owner: dict[str, int] = {}
    for idx, group in enumerate(_groups(obj.get("spec") or {})):
        config = effective_config(group.get("config"))
        annotations = dict(group.get("annotations") or {})
        if group.get("poolName") is not None:
            pool = group["poolName"]
            groups.append(NodeGroup(pool, {f"{naming.NODE_ROLE_PREFIX}{pool}": ""}, config, annotations))
            continue
        selected = [
            m for m in mcps if matches(group["machineConfigPoolSelector"], m["metadata"].get("labels") or {})
        ]
        if not selected:
            errors.append(
                f"node group {idx}: spec.nodeGroups[{idx}].machineConfigPoolSelector selects no MachineConfigPool"
            )
        for mcp in selected:
            mcp_name = mcp["metadata"]["name"]
            if mcp_owner.setdefault(mcp_name, idx) != idx:
                errors.append(
                    f"the MachineConfigPool {go_quote(str(mcp_name))} selected by at least two node groups"
                )
                continue
            groups.append(NodeGroup(mcp_name, _mcp_node_selector(mcp), config, annotations))
    owners: dict[str, str] = {}
    for group in groups if node_overlap else ():
        for node in nodes:
            labels = node["metadata"].get("labels") or {}
            if all(labels.get(k) == v for k, v in group.node_selector.items()):
                node_name = node["metadata"]["name"]
                other = owners.setdefault(node_name, group.pool_name)
                if other != group.pool_name:
                    errors.append(
                        f"the node {go_quote(str(node_name))} is selected by at least two node groups ({other}, {group.pool_name})"
                    )
    return groups, errors
