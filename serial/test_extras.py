"""The project's own specs, not upstream's: each catches a seeded defect no upstream spec catches.

The kill table (``bench/defects.py``, ``docs/defects.md``) breaks the stack one realistic bug
at a time; where upstream's 158 specs stay green on a broken stack, a spec here, written in
upstream's style (its helpers, windows and messages), closes the hole. Each carries the label
``extra``: it is not among upstream's specs, not in the faithfulness ledger, and left out of
the comparison with upstream's own binary (``--label-filter '!extra'`` runs upstream's alone).
Each text names, after ``[extra:…]``, the defect it was written for.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import _accounting_helpers as acct
import _node_helpers as nodeh
import _nropcr_helpers as nropcr
import _operand_helpers as operands
import _polling_helpers as polling

from nrop.suite import WaitTimeout, objects, scheduling, spec, wait_for, waiters
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.fixture import pop_node_name
from nrop.suite.e2e.kube import DAEMONSET, DEPLOYMENT, NROP, NROSCHED, POD

log = logging.getLogger(__name__)

pytestmark = spec("[serial][disruptive] numaresources extra checks of this project", "extra")
FIXTURE_BASENAME = "e2e-test-extras"

#: the env var a manual edit adds to the RTE container, and the operator must take away
MANUAL_EDIT_ENV = {"name": "E2E_NROP_MANUAL_EDIT", "value": "to-be-reverted-by-the-operator"}


def _pod_scope_two_zone_nodes(fxt: Any) -> list[Any]:
    """The NRTs, at the spec's start, of nodes with policy single-numa-node, scope pod and 2 zones."""
    return e2enrt.filter_zone_count_equal(
        e2enrt.filter_by_policy_and_scope(fxt.initial_nrts, "single-numa-node", "pod"), 2
    )


def _cpus(zone: Any) -> int:
    available = e2enrt.available_from_zone(zone).get("cpu")
    return available.as_int64() if available is not None else 0


@spec(
    "[extra:kubelet-tm-ignores-pod-scope] a guaranteed pod whose two containers fit one NUMA zone each "
    "but not together is rejected by the kubelet with topology manager scope pod; scheduled by default "
    "scheduler",
    "tier1",
    "tmscope:pod",
    "unsched",
    "default-scheduler",
)
def test_pod_scope_admits_the_containers_together(fxt: Any, suite_config: Any) -> None:
    kube = fxt.kube
    candidates = _pod_scope_two_zone_nodes(fxt)
    if not candidates:
        fxt.skip("no node with topology manager policy single-numa-node, scope pod and 2 NUMA zones")
    target = pop_node_name(e2enrt.accumulate_names(candidates))
    assert target is not None, "unable to get targetNodeName"
    zones = e2enrt.zones_of(e2enrt.find(candidates, target) or {})
    available = [_cpus(zone) for zone in zones]
    # each container takes more than half of the largest zone, and fits the smallest one
    per_container = max(available) // 2 + 1
    if per_container > min(available):
        fxt.skip(f"the zones of {target} differ too much: available cpus {available}")
    log.info(
        "target %s, zones with %s cpus available: two containers of %d cpus", target, available, per_container
    )

    pod = objects.new_test_pod_pause(fxt.namespace, "testpod-two-cnt", containers=2)
    for index in range(2):
        objects.set_resources(pod, limits={"cpu": per_container, "memory": "256Mi"}, container=index)
    pod["spec"]["schedulerName"] = "default-scheduler"
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": target}
    kube.create(pod)
    namespace, name = fxt.namespace, pod["metadata"]["name"]

    def rejected() -> str | None:
        try:
            check = scheduling.check_pod_kubelet_reject_with_topology_affinity_error(kube, namespace, name)
        except scheduling.NoEventsError as err:
            return str(err)
        return None if check else str(check)

    try:
        polling.eventually(
            rejected,
            f"pod {namespace}/{name} with scheduler default-scheduler did NOT fail",
            60,
            fxt.config.timeouts.poll(1),
        )
    except WaitTimeout:
        waiters.log_events_for_pod(kube, namespace, name)
        raise


def _rte_env(ds: dict[str, Any]) -> list[dict[str, Any]]:
    return list(ds["spec"]["template"]["spec"]["containers"][0].get("env") or [])


def _rolled_out(ds: dict[str, Any] | None) -> bool:
    """The DaemonSet's controller saw its last change and every pod runs it, available."""
    if ds is None:
        return False
    status = ds.get("status") or {}
    desired = int(status.get("desiredNumberScheduled", 0))
    return (
        int(status.get("observedGeneration", 0)) >= int(ds["metadata"].get("generation", 0))
        and int(status.get("updatedNumberScheduled", 0)) == desired
        and waiters.are_daemonset_pods_ready(status)
    )


@spec(
    "[extra:operator-ignores-manual-edits] the RTE daemonset edited by hand is restored by the operator",
    "tier1",
    "feature:config",
)
def test_operator_restores_a_manually_edited_rte_daemonset(fxt: Any, suite_config: Any) -> None:
    kube = fxt.kube
    nrop = kube.get(NROP, suite_config.nrop["metadata"]["name"])
    refs = (nrop.get("status") or {}).get("daemonsets") or []
    assert refs, "node groups not reported, nothing to do"
    namespace, name = refs[0]["namespace"], refs[0]["name"]
    ds = kube.get(DAEMONSET, name, namespace)
    desired_env = _rte_env(ds)

    edited = copy.deepcopy(ds)
    edited["spec"]["template"]["spec"]["containers"][0]["env"] = [*desired_env, MANUAL_EDIT_ENV]
    log.info("editing daemonset %s/%s by hand: env %s added", namespace, name, MANUAL_EDIT_ENV["name"])
    kube.replace(edited)
    restored = False
    try:

        def edit_undone() -> str | None:
            env = _rte_env(kube.get(DAEMONSET, name, namespace))
            return (
                None if env == desired_env else f"container env is {env}, the operator renders {desired_env}"
            )

        polling.eventually(
            edit_undone,
            f"the operator did not restore DaemonSet {namespace}/{name} after a manual edit",
            120,
            fxt.config.timeouts.poll(1),
        )
        restored = True
    finally:
        if not restored:  # leave the cluster as the spec found it
            current = kube.get(DAEMONSET, name, namespace)
            current["spec"]["template"]["spec"]["containers"][0]["env"] = desired_env
            kube.replace(current)
        wait_for(
            lambda: kube.get_or_none(DAEMONSET, name, namespace),
            _rolled_out,
            f"daemonset {namespace}/{name} rolled out again",
            180,
            interval=fxt.config.timeouts.poll(5),
        )


# -- the scheduler's NUMA scoring strategy ------------------------------------------------------

#: the test pod, and what the padding leaves: on node A zone 0 less than the pod (it cannot go
#: there), zone 1 much more; on node B both zones in between, the same total as A's, so every
#: node-level score (NodeResourcesFit, BalancedAllocation) ties and only the NUMA score decides
SCORED_POD = rl.of({"cpu": "4", "memory": "2Gi"})
LEAVE_A = (rl.of({"cpu": "3", "memory": "1Gi"}), rl.of({"cpu": "17", "memory": "15Gi"}))
LEAVE_B = rl.of({"cpu": "10", "memory": "8Gi"})


def _scheduler_rolled_out(kube: Any, nrs_name: str, interval: float) -> None:
    """The NUMAResourcesScheduler is Available at its generation, its Deployment complete, and
    only its current pods run (the scheduler of the old configuration is gone)."""

    def problem() -> str | None:
        nrs = kube.get(NROSCHED, nrs_name)
        found = nropcr.synced_at_problem(
            nrs.get("status"), nropcr.CONDITION_AVAILABLE, nrs["metadata"]["generation"]
        )
        if found:
            return f"NUMAResourcesScheduler {nrs_name}: {found}"
        ref = nrs["status"]["deployment"]
        dp = kube.get(DEPLOYMENT, ref["name"], ref["namespace"])
        replicas = int(dp["spec"].get("replicas", 1))
        if not waiters.is_deployment_complete(
            int(dp["metadata"]["generation"]), dp.get("status") or {}, replicas
        ):
            return f"deployment {ref['namespace']}/{ref['name']} not complete: {dp.get('status')}"
        pods = kube.list(
            POD, ref["namespace"], label_selector=nodeh.selector_text(operands.SCHEDULER_POD_LABELS)
        )
        if len(pods) != replicas or any(pod["metadata"].get("deletionTimestamp") for pod in pods):
            return f"{len(pods)} scheduler pods, {replicas} wanted, none terminating"
        return None

    polling.eventually(problem, "the secondary scheduler to run its new configuration", 300, interval)


def _set_scoring_strategy(kube: Any, nrs_name: str, strategy: dict[str, Any] | None, interval: float) -> None:
    def mutate(obj: dict[str, Any]) -> None:
        if strategy is None:
            obj["spec"].pop("scoringStrategy", None)
        else:
            obj["spec"]["scoringStrategy"] = copy.deepcopy(strategy)

    polling.update_object(kube, NROSCHED, nrs_name, mutate, timeout=120, interval=interval)
    _scheduler_rolled_out(kube, nrs_name, interval)


@spec(
    "[extra:sched-score-strategy-ignored] with scoring strategy MostAllocated a guaranteed pod goes to "
    "the node whose fitting NUMA zone is the fuller one",
    "tier1",
    "tmscope:pod",
    "scheduler",
    "placement",
)
def test_most_allocated_prefers_the_fuller_zone(fxt: Any, suite_config: Any) -> None:
    kube = fxt.kube
    candidates = _pod_scope_two_zone_nodes(fxt)
    if len(candidates) < 2:
        fxt.skip(
            f"not enough nodes with policy single-numa-node, scope pod and 2 NUMA zones: {len(candidates)}"
        )
    node_a, node_b = sorted(e2enrt.accumulate_names(candidates))[:2]
    pads = []
    for node_name, leaves in ((node_a, LEAVE_A), (node_b, (LEAVE_B, LEAVE_B))):
        zones = acct.zones(acct.find_from_list(candidates, node_name))
        for zone, leave in zip(zones, leaves, strict=True):
            pod = e2epad.make_padding_pod(
                fxt.namespace, node_name, zone, leave, image=suite_config.pause_image
            )
            objects.pin_pod_to(pod, node_name, zone["name"])
            pads.append(kube.create(pod))
    assert not e2epad.wait_for_padding_pods_running(kube, pads), "some padding pods have failed to run"
    fxt.settle_nrts()

    # The strategy changes after the padding: the scheduler restarts with it and lists the NRTs as
    # they are now; the padding pods are foreign to it, so both nodes wait for one resync, which
    # flushes them together (their NRTs settled): the test pod then sees both, and is scored.
    nrs_name = suite_config.nrosched["metadata"]["name"]
    initial = copy.deepcopy(kube.get(NROSCHED, nrs_name)["spec"].get("scoringStrategy"))
    interval = fxt.config.timeouts.poll(5)
    log.info("scoring strategy %s -> MostAllocated", initial)
    _set_scoring_strategy(kube, nrs_name, {"type": "MostAllocated"}, interval)
    try:
        pod = objects.new_test_pod_pause(fxt.namespace, "testpod-scored", image=suite_config.pause_image)
        objects.set_resources(pod, limits=SCORED_POD)
        pod["spec"]["schedulerName"] = suite_config.scheduler_name
        kube.create(pod)
        running = waiters.for_pod_phase(
            kube, fxt.namespace, "testpod-scored", "Running", timeout=180, interval=interval
        )
        acct.expect_scheduled_with(kube, [running], suite_config.scheduler_name)
        landed = running["spec"].get("nodeName")
        assert landed == node_b, (
            f"pod {fxt.namespace}/testpod-scored landed on {landed}, expected {node_b}: with scoringStrategy "
            f"MostAllocated the NodeResourceTopologyMatch score of {node_b} (zones with "
            f"{rl.to_string(LEAVE_B)} left) beats {node_a}'s (its fitting zone with {rl.to_string(LEAVE_A[1])} "
            f"left), every node-level score being equal"
        )
    finally:
        _set_scoring_strategy(kube, nrs_name, initial, interval)
