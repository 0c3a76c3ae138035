"""The controllers' pure decisions: workload replicas and rollouts, DaemonSet placement, Job status,
node health, MachineConfig rendering, ClusterServiceVersions and CRD conditions. No I/O: the
controllers' loops call them.
"""

__all__ = [
    "clusterserviceversions",
    "crds",
    "daemonplacement",
    "jobstatus",
    "machineconfigs",
    "nodehealth",
    "replicas",
    "rollout",
    "rolloutstatus",
    "workloads",
]
