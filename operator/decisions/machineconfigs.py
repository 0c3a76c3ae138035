"""The exporters' MachineConfigs on OpenShift: upstream's ``reconcileResourceMachineConfig``.

From OpenShift 4.18 the exporters run with the platform's built-in SELinux policy; a node
group annotated ``config.node.openshift-kni.io/selinux-policy: custom``
(:func:`nrop.api.annotations.custom_policy`) asks for the exporter's
own policy instead, which reaches the nodes as a MachineConfig of the group's pool:
``51-<NUMAResourcesOperator>-<pool>``, labelled so the pool's ``machineConfigSelector`` picks it
(its ``matchLabels``, else the pool's role label, checked against the selector), controlled by the
NUMAResourcesOperator, holding an Ignition config that writes the policy to
:data:`POLICY_PATH` and a systemd unit that installs it before the kubelet starts.

Per pool of a node group (paused pools are left alone and reported in the
``MachineConfigPoolPaused`` condition): a custom-policy pool gets its MachineConfig and the
operator waits until the pool runs it (its rendered configuration lists it and ``Updated`` is
not False); any other pool loses a MachineConfig of that name and the operator waits until the
pool no longer lists it. A pool still updating keeps the NUMAResourcesOperator Progressing
(``MachineConfigPoolIsUpdating``) until the pool's next change or the periodic resync (upstream
re-checks a minute later).

Pure: the controller reads and writes the objects.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any, Final

from nrop.api.fielderrors import go_quote
from nrop.api.selectors import matches
from nrop.operator.decisions.conditions import find
from nrop.operator.decisions.rtemanifests import owner_references

__all__ = [
    "POLICY_PATH",
    "ROLE_LABEL",
    "desired_machine_config",
    "ignition_config",
    "labels_problem",
    "machine_config_labels",
    "machine_config_name",
    "paused_message",
    "pool_updated",
    "unused",
]

Obj = dict[str, Any]
ROLE_LABEL: Final = "machineconfiguration.openshift.io/role"
POLICY_PATH: Final = "/etc/selinux/rte.cil"
INSTALL_SERVICE: Final = "rte-selinux-policy-install.service"
_IGNITION_VERSION = "3.2.0"

#: The exporter's SELinux policy module (CIL): its process type, a container domain that may
#: reach the kubelet's pod-resources socket and read its state files.
_POLICY = """\
(type rte)
(roletype system_r rte)
(typeattributeset domain (rte))
(typeattributeset container_domain (rte))
(typeattributeset svirt_sandbox_domain (rte))
(allow rte kubelet_var_lib_t (dir (getattr open read search watch)))
(allow rte kubelet_var_lib_t (file (getattr open read watch)))
(allow rte kubelet_var_lib_t (sock_file (getattr open read write)))
(allow rte kubelet_t (unix_stream_socket (connectto)))
(allow rte sysfs_t (dir (getattr open read search)))
(allow rte sysfs_t (file (getattr open read)))
(allow rte sysfs_t (lnk_file (getattr read)))
"""

_INSTALL_UNIT = f"""\
[Unit]
Description=Install RTE SELinux policy
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/usr/sbin/semodule -i {POLICY_PATH}

[Install]
WantedBy=multi-user.target
"""


def machine_config_name(nrop_name: str, pool: str) -> str:
    """``objectnames.GetMachineConfigName``."""
    return f"51-{nrop_name}-{pool}"


def machine_config_labels(mcp: Mapping[str, Any]) -> dict[str, str]:
    """``GetMachineConfigLabel``: the pool selector's ``matchLabels``, else its role label."""
    selector = (mcp.get("spec") or {}).get("machineConfigSelector") or {}
    if selector.get("matchLabels"):
        return dict(selector["matchLabels"])
    return {ROLE_LABEL: mcp["metadata"]["name"]}


def labels_problem(name: str, labels: Mapping[str, str], mcps: Iterable[Mapping[str, Any]]) -> str | None:
    """``validateMachineConfigLabels``: a MachineConfig with a role label must be selected by the
    ``machineConfigSelector`` of the pool that role names."""
    role = labels.get(ROLE_LABEL)
    if role is None:
        return None
    for mcp in mcps:
        if mcp["metadata"]["name"] != role:
            continue
        if not matches((mcp.get("spec") or {}).get("machineConfigSelector"), labels):
            return (
                f"machine config {go_quote(name)} labels does not match the machine config pool "
                f"{go_quote(role)} machine config selector"
            )
    return None


def ignition_config() -> Obj:
    """The Ignition config of the policy's MachineConfig: the policy file and its install unit."""
    encoded = base64.b64encode(_POLICY.encode()).decode()
    return {
        "ignition": {"version": _IGNITION_VERSION},
        "storage": {
            "files": [
                {
                    "path": POLICY_PATH,
                    "contents": {"source": f"data:text/plain;charset=utf-8;base64,{encoded}"},
                    "mode": 0o644,
                }
            ]
        },
        "systemd": {"units": [{"contents": _INSTALL_UNIT, "enabled": True, "name": INSTALL_SERVICE}]},
    }


def desired_machine_config(nrop: Mapping[str, Any], mcp: Mapping[str, Any]) -> Obj:
    """The custom policy's MachineConfig for ``mcp``, controlled by ``nrop``."""
    meta = nrop["metadata"]
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": machine_config_name(meta["name"], mcp["metadata"]["name"]),
            "labels": machine_config_labels(mcp),
            "ownerReferences": owner_references(nrop),
        },
        "spec": {"config": ignition_config()},
    }


def _lists(nrop_name: str, mcp: Mapping[str, Any]) -> bool:
    """``existsMachineConfig``: the pool's rendered configuration is made of our MachineConfig."""
    name = machine_config_name(nrop_name, mcp["metadata"]["name"])
    configuration = ((mcp.get("status") or {}).get("configuration")) or {}
    return any(source.get("name") == name for source in configuration.get("source") or ())


def _not_updated(mcp: Mapping[str, Any]) -> bool:
    updated = find((mcp.get("status") or {}).get("conditions") or [], "Updated")
    return updated is not None and updated.get("status") == "False"


def pool_updated(nrop_name: str, mcp: Mapping[str, Any], custom: bool) -> bool:
    """``IsMachineConfigPoolUpdated`` (custom policy) / ``IsMachineConfigPoolUpdatedAfterDeletion``."""
    return _lists(nrop_name, mcp) == custom and not _not_updated(mcp)


def paused_message(paused: Iterable[str]) -> str:
    """The ``MachineConfigPoolPaused`` condition's message ("" when no pool is paused)."""
    names = list(paused)
    return "detected paused MCPs: " + ", ".join(names) if names else ""


def unused(
    machine_configs: Iterable[Mapping[str, Any]], nrop: Mapping[str, Any], pools: Iterable[str]
) -> list[str]:
    """``DeleteUnusedMachineConfigs``: MachineConfigs ``nrop`` controls that no pool of its
    node groups has any more."""
    uid = nrop["metadata"]["uid"]
    expected = {machine_config_name(nrop["metadata"]["name"], pool) for pool in pools}
    return [
        mc["metadata"]["name"]
        for mc in machine_configs
        if any(ref.get("uid") == uid for ref in mc["metadata"].get("ownerReferences") or ())
        and mc["metadata"]["name"] not in expected
    ]
