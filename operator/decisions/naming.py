"""Names, labels and environment variables of the operator and of what it deploys.

The values are upstream's: suites on a real cluster look objects up by these names, so
they are spelled once, here.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "nodetopology.openshift.io"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
NROP_KIND: Final = "NUMAResourcesOperator"
NRS_KIND: Final = "NUMAResourcesScheduler"
NROP_PLURAL: Final = "numaresourcesoperators"
NRS_PLURAL: Final = "numaresourcesschedulers"
#: The singleton names the CRDs' CEL rules require.
NROP_NAME: Final = "numaresourcesoperator"
NRS_NAME: Final = "numaresourcesscheduler"

NAMESPACE: Final = "numaresources"
OPERATOR_NAME: Final = "numaresources-controller-manager"
#: The Lease the operator's replicas elect their leader through: upstream's ``defaultLeaderElectionID``
#: (cmd/main.go), which its manager passes as ``LeaderElectionID``.
LEADER_ELECTION_ID: Final = "0e2a6bd3.openshift-kni.io"
OPERATOR_CONTAINER: Final = "manager"
OPERATOR_LABELS: Final = {"app": "numaresources-operator", "control-plane": "controller-manager"}
OPERATOR_POD_LABELS: Final = {"app": "numaresources-operator"}
METRICS_PORT: Final = 8080
PROBES_PORT: Final = 8081

#: Every object the operator renders for a CR carries these labels (the owner's kind and name).
OWNER_KIND_LABEL: Final = "nodetopology.openshift.io/owner-kind"
OWNER_NAME_LABEL: Final = "nodetopology.openshift.io/owner-name"
#: Upstream's label naming the NUMAResourcesOperator on the exporter ConfigMaps.
RTE_OPERATOR_NAME_LABEL: Final = "numaresourcesoperator.nodetopology.openshift.io/name"
#: Upstream's label naming the node group's pool on the exporter ConfigMaps (suites find the pool's nodes by it).
RTE_POOL_LABEL: Final = "nodegroup.nodetopology.openshift.io/machineconfigpool"
FINALIZER: Final = "nodetopology.openshift.io/cleanup"

RTE_POD_LABELS: Final = {"name": "resource-topology"}
RTE_CONTAINER: Final = "resource-topology-exporter"
RTE_METRICS_PORT: Final = 2112
RTE_CONFIG_KEY: Final = "config.yaml"
RTE_ROLE_NAME: Final = "rte"
#: The Secret holding the exporters' metrics certificate (``--metrics-mode=httptls``).
RTE_METRICS_SECRET: Final = "rte-metrics-service-cert"

SCHEDULER_NAME: Final = "topo-aware-scheduler"
SCHEDULER_DEPLOYMENT: Final = "secondary-scheduler"
SCHEDULER_CONTAINER: Final = "secondary-scheduler"
SCHEDULER_POD_LABELS: Final = {"app": "secondary-scheduler"}
SCHEDULER_CONFIGMAP: Final = "topo-aware-scheduler-config"
SCHEDULER_CONFIG_KEY: Final = "config.yaml"
SCHEDULER_LEASE: Final = "numa-scheduler-leader"
SCHEDULER_ROLE_NAME: Final = "topology-aware-scheduler"

NRT_CRD: Final = "noderesourcetopologies.topology.node.k8s.io"

# Operator environment (upstream names).
ENV_SCHEDULER_IMAGE_VALIDATION: Final = "SCHEDULER_IMAGE_VALIDATION"
ENV_SCHEDULER_IMAGE_DIGESTS: Final = "SCHEDULER_IMAGE_DIGESTS"
ENV_EXPORTER_IMAGE_RESTRICTION: Final = "EXPORTER_IMAGE_RESTRICTION"
#: ``--metrics-mode`` of the exporters (disabled, http, httptls; default httptls as upstream).
ENV_EXPORTER_METRICS_MODE: Final = "EXPORTER_METRICS_MODE"
#: The image the operator runs from: its operands run it too.
ENV_OPERATOR_IMAGE: Final = "NROP_OPERATOR_IMAGE"
ENV_NAMESPACE: Final = "NAMESPACE"
ENV_POD_IP: Final = "POD_IP"
ENV_POD_NAME: Final = "POD_NAME"

#: Node role label prefix: a node group's ``poolName`` selects ``node-role.kubernetes.io/<pool>``.
NODE_ROLE_PREFIX: Final = "node-role.kubernetes.io/"
CONTROL_PLANE_ROLES: Final = ("control-plane", "master")

# Object annotations the operator recognises.
PAUSE_RECONCILIATION_ANNOTATION: Final = "config.numa-operator.openshift.io/pause-reconciliation"
NRT_API_DEFINITION_ANNOTATION: Final = "config.numa-operator.openshift.io/nrt-api-definition"
MULTIPLE_POOLS_ANNOTATION: Final = "config.node.openshift-kni.io/multiple-pools-per-tree"
