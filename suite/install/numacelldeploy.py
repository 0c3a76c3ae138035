"""The numacell device plugin as BeforeSuite deploys it: manifests, deployment, readiness.

Owns upstream's ``numacell/manifests`` and the waits around it: which program the
container starts (upstream's ``/bin/numacell -alsologtostderr -v 3``, or the project's
``numacell`` console script, found on the ``PATH`` of the project's image, with the same
flags), the ServiceAccount, Role, RoleBinding and one privileged DaemonSet
``numacell-dp-<pool>-ds`` per node-group pool, shaped as upstream's: the only volume is the
``hostPath`` of the kubelet's device-plugin directory, and the plugin reads the node's sysfs
at its default ``/sys`` (which a container runtime mounts into every container; the
embedded kubelet mounts the emulated node's there, or, where it gets no mount namespaces,
passes the node's paths as flags itself), the checks
BeforeSuite polls (the DaemonSets ready, every NRT zone exposing an allocatable
``kni.node/numacellNN``), and :func:`deploy_numacell`, the one place that creates the
manifests and waits for the DaemonSets: BeforeSuite (:mod:`nrop.suite.install.infra`) and the
project's own tests deploy numacell through it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nrop.api import images
from nrop.api.nrt import NodeResourceTopology
from nrop.numacell import deviceplugin as numacell
from nrop.suite.e2e.kube import DAEMONSET, Kube, Manifest
from nrop.suite.e2e.wait import waiters
from nrop.suite.e2e.wait.polling import wait_for

__all__ = [
    "DEVICE_PLUGIN_PATH",
    "NUMACELL_PREFIX",
    "OWN_PROGRAM",
    "UPSTREAM_PROGRAM",
    "NumacellProgram",
    "Pool",
    "daemonset_ready",
    "deploy_numacell",
    "numacell_manifests",
    "numacell_program",
    "zones_expose_numacell",
]

log = logging.getLogger(__name__)

NUMACELL_PREFIX = "numacell-dp"
DEVICE_PLUGIN_PATH = numacell.DEFAULT_DEVICE_PLUGIN_PATH
#: Upstream's DaemonSet arguments (``numacell/manifests.DaemonSet``).
_ARGS = ("-alsologtostderr", "-v", "3")


class Pool(Protocol):
    """A node-group pool (:class:`nrop.suite.install.nodegroups.NodeGroupPool`): a name and the nodes it selects."""

    @property
    def name(self) -> str: ...
    @property
    def match_labels(self) -> Mapping[str, str]: ...
    @property
    def match_expressions(self) -> tuple[Mapping[str, Any], ...]: ...


@dataclass(frozen=True)
class NumacellProgram:
    """How the numacell container starts: upstream's binary, or the project's ``numacell`` script."""

    command: tuple[str, ...]
    args: tuple[str, ...]


UPSTREAM_PROGRAM = NumacellProgram(("/bin/numacell",), _ARGS)
#: The project's image installs its console scripts on its ``PATH``, not in ``/bin``.
OWN_PROGRAM = NumacellProgram(("numacell",), _ARGS)


def numacell_program(image: str) -> NumacellProgram:
    """The project's ``numacell`` for the project's own image (any registry or tag), upstream's binary otherwise."""
    return OWN_PROGRAM if images.is_own_image(image) else UPSTREAM_PROGRAM


def numacell_manifests(
    namespace: str, pools: Sequence[Pool], image: str, program: NumacellProgram
) -> list[Manifest]:
    """ServiceAccount ``numacell-dp-sa``, Role ``numacell-dp-ro``, RoleBinding ``numacell-dp-rb`` and one
    privileged DaemonSet ``numacell-dp-<pool>-ds`` per pool, as upstream's ``numacell/manifests``."""
    sa, role, binding = f"{NUMACELL_PREFIX}-sa", f"{NUMACELL_PREFIX}-ro", f"{NUMACELL_PREFIX}-rb"
    manifests: list[Manifest] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": role, "namespace": namespace},
            "rules": [
                {
                    "apiGroups": ["security.openshift.io"],
                    "resourceNames": ["privileged"],
                    "resources": ["securitycontextconstraints"],
                    "verbs": ["use"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": binding, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
        },
    ]
    for pool in pools:
        name = f"{NUMACELL_PREFIX}-{pool.name}"
        labels = {"name": f"{name}-pod"}
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 0,
            "restartPolicy": "Always",
            "serviceAccountName": sa,
            "containers": [
                {
                    "name": f"{name}-cnt",
                    "image": image,
                    "command": list(program.command),
                    "args": list(program.args),
                    "imagePullPolicy": "IfNotPresent" if images.is_own_image(image) else "Always",
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "kubeletsockets", "mountPath": DEVICE_PLUGIN_PATH}],
                }
            ],
            "volumes": [
                {"name": "kubeletsockets", "hostPath": {"path": DEVICE_PLUGIN_PATH, "type": "Directory"}}
            ],
        }
        if pool.match_labels:
            spec["nodeSelector"] = dict(pool.match_labels)
        if pool.match_expressions:
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in pool.match_expressions]}]
                    }
                }
            }
        manifests.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": f"{name}-ds", "namespace": namespace},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": spec},
                },
            }
        )
    return manifests


def daemonset_ready(ds: Mapping[str, Any] | None) -> bool:
    """``AreDaemonSetPodsReady`` (:func:`nrop.suite.e2e.wait.waiters.are_daemonset_pods_ready`: every desired
    pod scheduled and available) at the current generation."""
    if ds is None:
        return False
    status = ds.get("status") or {}
    observed = int(status.get("observedGeneration") or 0)
    return observed >= int(ds["metadata"].get("generation") or 0) and waiters.are_daemonset_pods_ready(status)


def zones_expose_numacell(nrt: Mapping[str, Any] | None) -> bool:
    """Every zone of ``nrt`` has an allocatable ``kni.node/numacell*`` resource.

    Upstream (``ForNodeResourceTopologyToHave``) only asks for the name. A kubelet keeps a
    departed plugin's resource with nothing allocatable for minutes, so after an earlier run
    the name alone would pass before the new plugin registered, and the reference NRTs would
    be recorded without the devices.
    """
    if nrt is None:
        return False
    zones = NodeResourceTopology.from_dict(nrt).zones
    return bool(zones) and all(
        any(numacell.is_resource_name(r.name) and int(str(r.allocatable)) > 0 for r in z.resources)
        for z in zones
    )


def deploy_numacell(
    kube: Kube,
    namespace: str,
    pools: Sequence[Pool],
    image: str,
    program: NumacellProgram | None = None,
    *,
    timeout: float,
    interval: float,
    progress: Callable[[str], None] = log.info,
) -> list[Manifest]:
    """Create :func:`numacell_manifests` in ``namespace`` (which must exist) and wait until every
    DaemonSet is :func:`daemonset_ready`, each up to ``timeout``; the ready DaemonSets.

    ``program`` defaults to :func:`numacell_program` of ``image``; ``progress`` gets a line once
    the DaemonSets are created and once they are ready.
    """
    manifests = numacell_manifests(namespace, pools, image, program or numacell_program(image))
    for manifest in manifests:
        kube.create(manifest)
    names = [m["metadata"]["name"] for m in manifests if m["kind"] == "DaemonSet"]
    progress(f"numacell daemonsets created: {', '.join(names)}")
    ready = [
        wait_for(
            lambda name=name: kube.get_or_none(DAEMONSET, name, namespace),
            daemonset_ready,
            f"daemonset {namespace}/{name} ready",
            timeout,
            interval=interval,
        )
        for name in names
    ]
    progress("numacell daemonsets ready")
    return ready
