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

import _config_helpers as cfg

from nrop.suite import nrt as e2enrt
from nrop.suite import objects, scheduling, waiters
from nrop.suite.fixture import pop_node_name
from nrop.suite.kube import DAEMONSET, NROP
from nrop.suite.specs import spec
from nrop.suite.waiting import WaitTimeout, wait_for

log = logging.getLogger(__name__)

pytestmark = spec("[serial][disruptive] numaresources extra checks of this project", "extra")
FIXTURE_BASENAME = "e2e-test-extras"

#: the env var a manual edit adds to the RTE container, and the operator must take away
MANUAL_EDIT_ENV = {"name": "E2E_NROP_MANUAL_EDIT", "value": "to-be-reverted-by-the-operator"}


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
    candidates = e2enrt.filter_zone_count_equal(
        e2enrt.filter_by_policy_and_scope(fxt.initial_nrts, "single-numa-node", "pod"), 2
    )
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
        cfg.eventually(
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

        cfg.eventually(
            edit_undone,
            f"the operator did not restore daemonset {namespace}/{name} after a manual edit",
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
