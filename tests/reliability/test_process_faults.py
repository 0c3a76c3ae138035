"""Every operand of the stack survives ``kill -9``, and a node's kubelet survives a restart.

On the shared cluster and stack of :mod:`stackfaults`. For each operand, its process (found by
its working directory: the container's directory below the node root, where the kubelet starts
it) gets SIGKILL, and at once a guaranteed pod (2 CPUs, 256Mi) aimed at ``worker-0`` is created
for the NUMA-aware scheduler, so that it is scheduled, admitted and accounted across the crash.
Then, as a user would see:

* the kubelet restarted the container: exit code 137, ``restartCount`` one higher, a new
  process, ready again, one more ``Started`` event and no ``BackOff`` (upstream's kubelet
  restarts a container that crashed for the first time without back-off);
* the pod is Running on ``worker-0``, ``Scheduled`` by the NUMA-aware scheduler, with
  exclusive CPUs of a single NUMA zone (podresources);
* the node's NRT converges to the reference minus the pod's request in that zone, the other
  worker's NRT is the reference;
* the operator reconciles both CRs (a spoiled desired-hash annotation on the exporter
  DaemonSet and on the scheduler Deployment is put back) and both are healthy;
* deleting the pod brings every NRT back to the reference.

Last, ``worker-0``'s kubelet is restarted with its own configuration (``Fleet.restart`` is a
reboot: the new kubelet records ``Starting``, its containers run again): the running
guaranteed pod keeps its exclusive CPUs (podresources of the new kubelet) and the NRT comes
back to what it was.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from stackfaults import (
    OPERANDS,
    TARGET,
    TIMEOUT,
    available,
    cluster_config,
    container_events,
    container_status,
    expected_available,
    guaranteed_pod,
    installed,
    node_starts,
    numa_cpus,
    operand_pod,
    pod_cpus,
    pod_cpus_or_none,
    process_of,
    reference,
    reverted_by_the_operator,
    scheduled_by,
    stack_healthy,
    wait_available,
    wait_for,
)

from nrop.localcluster.cluster import ClusterThread, LocalCluster
from nrop.operator.decisions.naming import SCHEDULER_DEPLOYMENT
from nrop.suite.e2e import resourcelist as rl
from nrop.suite.e2e.kube import (
    DAEMONSET,
    DEPLOYMENT,
    POD,
    Kube,
)
from nrop.suite.e2e.wait import waiters
from nrop.suite.install import stack

# The shared fixtures, used by name only.
__all__ = ["cluster_config", "installed", "reference"]

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("which", list(OPERANDS))
def test_kill_9_of_an_operand_while_a_pod_is_scheduled(
    which: str,
    kube: Kube,
    cluster: LocalCluster,
    installed: stack.Stack,
    reference: dict[str, dict[str, rl.ResourceList]],
    namespace: str,
) -> None:
    operand = OPERANDS[which]
    victim = operand_pod(kube, installed, operand)
    restarts = int(container_status(victim, operand.container).get("restartCount") or 0)
    started = container_events(kube, victim, operand.container, "Started")
    backoffs = container_events(kube, victim, operand.container, "BackOff")
    pid = process_of(cluster, victim, operand.container)

    # The pod comes while the operand is down: it is scheduled (and admitted, and accounted)
    # across the crash, and when the scheduler is the victim its restarted process binds it.
    os.kill(pid, signal.SIGKILL)
    kube.create(guaranteed_pod(namespace, installed.scheduler_name))

    meta = victim["metadata"]
    restarted = wait_for(
        lambda: kube.get(POD, meta["name"], meta["namespace"]),
        lambda p: (
            container_status(p, operand.container).get("restartCount") == restarts + 1
            and bool(container_status(p, operand.container).get("ready"))
        ),
        f"the {which} container to be restarted once and ready",
        TIMEOUT,
    )
    terminated = container_status(restarted, operand.container)["lastState"]["terminated"]
    assert terminated["exitCode"] == 137
    assert process_of(cluster, restarted, operand.container) != pid
    wait_for(
        lambda: container_events(kube, restarted, operand.container, "Started"),
        lambda n: n == started + 1,
        f"one more Started event for the {which} container",
        10.0,
    )
    # The first restart after a crash has no back-off (upstream's kubelet): no BackOff event.
    assert container_events(kube, restarted, operand.container, "BackOff") == backoffs

    pod = waiters.for_pod_phase(kube, namespace, "guaranteed", "Running", interval=0.5, timeout=TIMEOUT)
    assert pod["spec"]["nodeName"] == TARGET
    assert scheduled_by(kube, namespace, "guaranteed") == [installed.scheduler_name]
    cpus = pod_cpus(cluster, TARGET, namespace, "guaranteed")
    assert len(cpus) == 2
    zones = [zone for zone, zone_cpus in numa_cpus(TARGET, cluster).items() if cpus <= zone_cpus]
    assert len(zones) == 1, f"CPUs {cpus} span NUMA zones"
    wait_available(
        kube, expected_available(reference, zones[0]), f"the reference minus the pod in {zones[0]}"
    )
    reverted_by_the_operator(kube, DAEMONSET, installed.rte_daemonsets[0].split("/")[1], installed.namespace)
    reverted_by_the_operator(kube, DEPLOYMENT, SCHEDULER_DEPLOYMENT, installed.namespace)
    wait_for(lambda: kube, stack_healthy, "both CRs to be healthy again", TIMEOUT)

    kube.delete(POD, "guaranteed", namespace, grace_period_seconds=0)
    waiters.for_pod_deleted(kube, namespace, "guaranteed", timeout=TIMEOUT)
    wait_available(kube, reference, "the reference once the pod is gone")


def test_a_kubelet_restart_keeps_exclusive_cpus_and_the_nrt(
    kube: Kube,
    cluster_thread: ClusterThread,
    cluster: LocalCluster,
    installed: stack.Stack,
    reference: dict[str, dict[str, rl.ResourceList]],
    namespace: str,
) -> None:
    kube.create(guaranteed_pod(namespace, installed.scheduler_name))
    waiters.for_pod_phase(kube, namespace, "guaranteed", "Running", interval=0.5, timeout=TIMEOUT)
    cpus = pod_cpus(cluster, TARGET, namespace, "guaranteed")
    (zone,) = [z for z, zone_cpus in numa_cpus(TARGET, cluster).items() if cpus <= zone_cpus]
    expected = expected_available(reference, zone)
    wait_available(kube, expected, f"the reference minus the pod in {zone}")
    exporter = operand_pod(kube, installed, OPERANDS["exporter"])
    exporter_id = container_status(exporter, OPERANDS["exporter"].container)["containerID"]
    starts = node_starts(kube, TARGET)

    fleet = cluster.fleet
    assert fleet is not None
    kubelet_config = fleet.kubelets[TARGET].spec.kubelet
    restart = cluster_thread.call(lambda: asyncio.ensure_future(fleet.restart(TARGET, kubelet_config)))
    wait_for(restart.done, bool, f"the kubelet of {TARGET} to restart", TIMEOUT)
    assert cluster_thread.call(restart.exception) is None
    wait_for(
        lambda: node_starts(kube, TARGET),
        lambda n: n == starts + 1,
        f"the new kubelet of {TARGET} to record Starting",
        10.0,
    )

    # The restart is a reboot: every container of the node starts again (a new container ID).
    wait_for(
        lambda: container_status(
            kube.get(POD, exporter["metadata"]["name"], exporter["metadata"]["namespace"]),
            OPERANDS["exporter"].container,
        ),
        lambda s: bool(s.get("ready")) and s.get("containerID") != exporter_id,
        "the exporter to run again under the new kubelet",
        TIMEOUT,
    )
    # The new kubelet's podresources server lists the pod once it admitted it again.
    again = wait_for(
        lambda: pod_cpus_or_none(cluster, TARGET, namespace, "guaranteed"),
        bool,
        "the new kubelet to report the guaranteed pod on podresources",
        TIMEOUT,
    )
    assert again == cpus
    assert kube.get(POD, "guaranteed", namespace)["status"]["phase"] == "Running"
    # The new exporter reads the new kubelet (whose device plugins register again): the NRT
    # comes back to what it was, and stays so for two more refreshes.
    wait_available(kube, expected, f"the reference minus the pod in {zone} after the restart")
    time.sleep(2.5)
    assert available(kube) == expected
