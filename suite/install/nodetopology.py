"""Whether the cluster's nodes will do for the serial suite: upstream's ``CheckNodesTopology``.

Step 2 of the suite's BeforeSuite (``test/e2e/serial/config/config.go``), before any
infrastructure is deployed (:mod:`nrop.suite.install.infra`): at least
:data:`MIN_SNN_NODES` NRTs with ``single-numa-node``; on every node of the NROP node groups the
NRT's topology-manager attributes equal the kubelet's configuration (read from
``/api/v1/nodes/<n>/proxy/configz``); an NRT for every worker; ``full-pcpus-only`` not
enabled. Problems come back as upstream's messages, all of them at once, so the plugin can skip
with the reason instead of failing. The rule is the pure :func:`topology_problems`, table-tested;
:func:`check_nodes_topology` gathers its inputs from the cluster.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nrop.api.fielderrors import go_quote
from nrop.suite.e2e.kube import NODE, NROP, NRT, Kube, UnknownKindError, name_of
from nrop.suite.e2e.nrt.topologies import attribute as nrt_attribute
from nrop.suite.e2e.objects import NROP_NAME
from nrop.suite.install.errors import InfraError
from nrop.suite.install.nodegroups import mcp_finder, node_group_pools

__all__ = [
    "MIN_SNN_NODES",
    "check_nodes_topology",
    "kubelet_configuration",
    "topology_problems",
]

log = logging.getLogger(__name__)

#: ``minNumberOfNodesWithSameTopology``.
MIN_SNN_NODES = 2
SINGLE_NUMA_NODE = "single-numa-node"
TM_POLICY_ATTR = "topologyManagerPolicy"
TM_SCOPE_ATTR = "topologyManagerScope"
#: What the kubelet uses when its configuration leaves them empty.
TM_POLICY_DEFAULT = "none"
TM_SCOPE_DEFAULT = "container"
FULL_PCPUS_ONLY = "full-pcpus-only"
WORKER_ROLE_LABEL = "node-role.kubernetes.io/worker"


def topology_problems(
    kconfigs: Mapping[str, Mapping[str, Any] | None],
    nrts: Sequence[Mapping[str, Any]],
    workers: Iterable[str],
) -> list[str]:
    """Everything ``CheckNodesTopology`` would reject, in its order and with its messages.

    ``kconfigs`` maps each node of the NROP node groups to its ``KubeletConfiguration``
    (``None``: it could not be read). Unlike upstream, which stops at the first failing
    step, every problem is reported, so that one skip reason names all that is missing.
    """
    problems: list[str] = []
    snn = [n for n in nrts if nrt_attribute(n, TM_POLICY_ATTR) == SINGLE_NUMA_NODE]
    if len(snn) < MIN_SNN_NODES:
        problems.append(
            f"Not enough nodes with {go_quote(SINGLE_NUMA_NODE)} topology found {len(snn)} needed {MIN_SNN_NODES}"
        )
    by_name = {name_of(n): n for n in nrts}
    for node, kconfig in sorted(kconfigs.items()):
        nrt = by_name.get(node)
        if nrt is None:
            problems.append(f"Unable to find NRT for node {go_quote(node)}")
            continue
        if kconfig is None:
            continue  # reported below as a missing KubeletConfig
        for attr, key, default, what in (
            (TM_POLICY_ATTR, "topologyManagerPolicy", TM_POLICY_DEFAULT, "policy"),
            (TM_SCOPE_ATTR, "topologyManagerScope", TM_SCOPE_DEFAULT, "scope"),
        ):
            value = nrt_attribute(nrt, attr)
            if value is None:
                problems.append(f"Attribute {go_quote(attr)} not reported on NRT {go_quote(node)}")
                break
            expected = str(kconfig.get(key) or default)
            if value != expected:
                problems.append(
                    f"Inconsistent topology manager {what} for node {go_quote(node)}: "
                    f"NRT={go_quote(value)} KConfig={go_quote(expected)}"
                )
                break
    for name in sorted(by_name):
        if kconfigs.get(name) is None:
            problems.append(f"Unable to find KubeletConfig for node {go_quote(name)}")
    for worker in sorted(workers):
        if worker not in by_name:
            problems.append(f"failed to find NRT for {go_quote(worker)}")
    for node, kconfig in sorted(kconfigs.items()):
        options = (kconfig or {}).get("cpuManagerPolicyOptions") or {}
        if str(options.get(FULL_PCPUS_ONLY, "false")).strip().lower() in ("true", "1", "t"):
            problems.append(f"SMT alignment enabled for node {go_quote(node)}")
    return problems


def kubelet_configuration(kube: Kube, node: str) -> dict[str, Any] | None:
    """The node's ``KubeletConfiguration`` from ``/api/v1/nodes/<node>/proxy/configz``; ``None`` if unreadable."""
    try:
        body = json.loads(kube.node_proxy(node, "configz"))
    except Exception as err:  # an API error, a refused proxy or a body that is not JSON
        log.warning("cannot read the kubelet configuration of node %s: %s", node, err)
        return None
    config = body.get("kubeletconfig") if isinstance(body, dict) else None
    return dict(config) if isinstance(config, dict) else None


def _node_names(kube: Kube, selector: str) -> list[str]:
    return sorted(name_of(n) for n in kube.list(NODE, label_selector=selector or None))


def check_nodes_topology(kube: Kube, nrop: Mapping[str, Any] | None = None) -> list[str]:
    """``CheckNodesTopology`` against the cluster: the problems (upstream's messages), empty when fine.

    The TAS nodes are those of the NROP's node groups (``nrop`` or the cluster's
    ``numaresourcesoperator``); without an NROP there are none, and only the NRT checks apply.
    """
    if nrop is None:
        nrop = kube.get_if_served(NROP, NROP_NAME)
    problems: list[str] = []
    tas_nodes: set[str] = set()
    if nrop is None:
        problems.append(f"NUMAResourcesOperator {go_quote(NROP_NAME)} not found: no TAS-enabled nodes")
    else:
        try:
            node_groups = nrop.get("spec", {}).get("nodeGroups") or ()
            for pool in node_group_pools(node_groups, mcp_finder(kube)):
                tas_nodes.update(_node_names(kube, pool.selector))
        except InfraError as err:
            problems.append(str(err))
    kconfigs = {node: kubelet_configuration(kube, node) for node in sorted(tas_nodes)}
    try:
        nrts = kube.list(NRT)
    except UnknownKindError:
        problems.append(f"the cluster does not serve {NRT.kind} objects ({NRT.api_version})")
        nrts = []
    workers = _node_names(kube, WORKER_ROLE_LABEL)
    problems += topology_problems(kconfigs, nrts, workers)
    return problems
