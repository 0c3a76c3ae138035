"""NUMA-aware preemption (upstream priority-based-placement.go): with the scheduler's
``preemptionMode`` Enabled and one schedulable node filled zone by zone, a new pod preempts
exactly the lowest-priority fillers it needs and only when its priority allows it; otherwise it
stays pending with "Preemption is not helpful for scheduling" and nothing is evicted.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import _accounting_helpers as acct
import _nropcr_helpers as nropcr
import _polling_helpers as polling
import pytest

from nrop.api.quantity import Quantity, coerce
from nrop.suite import WaitTimeout, entry, nrtupdates, objects, spec, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][preemption] priority-based workload placement functionality",
    "Serial",
    "disruptive",
    "scheduler",
    "feature:preemption",
)
FIXTURE_BASENAME = "e2e-test-preemption"

SYSTEM_NODE_CRITICAL = "system-node-critical"
CUSTOM_LOW = "e2e-preemption-low"
CUSTOM_MEDIUM = "e2e-preemption-medium"
CUSTOM_HIGH = "e2e-preemption-high"
PENDING_TIMEOUT = 300.0
#: ``Consistently`` windows and intervals of upstream's checks (kept on every target).
CONSISTENTLY_WINDOW = 120.0
CONSISTENTLY_INTERVAL = 10.0
#: ``setPreemptionMode``'s poll of the scheduler object (15s), kept on every target (see there).
UPSTREAM_MODE_POLL = 15.0
#: ``ensurePodsNotEvicted``'s window and interval (1m / 10s).
NOT_EVICTED_WINDOW = 60.0
NOT_EVICTED_INTERVAL = 10.0


@pytest.fixture
def priority_classes(fxt: Any) -> Iterator[list[dict]]:
    """The Describe's BeforeEach/AfterEach: the NRT list, and the custom priority classes
    (the AfterEach deletes each of them that exists, even when a creation failed)."""
    kube = fxt.kube
    nrt_list = kube.list(k8s.NRT)
    try:
        for name, value, level in (
            (CUSTOM_LOW, 100, "low"),
            (CUSTOM_MEDIUM, 200, "medium"),
            (CUSTOM_HIGH, 300, "high"),
        ):
            try:
                kube.create(
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                    }
                )
            except k8s.ApiError as err:
                raise AssertionError(f"cannot create {level} priority class {acct.q(name)}: {err}") from None
        yield nrt_list
    finally:
        for name in (CUSTOM_LOW, CUSTOM_MEDIUM, CUSTOM_HIGH):
            found = acct.expect_ok(
                lambda name=name: kube.get_or_none(k8s.PRIORITYCLASS, name),
                f"cannot get priority class {acct.q(name)}",
            )
            if found is None:
                continue
            acct.expect_ok(
                lambda name=name: kube.delete(k8s.PRIORITYCLASS, name, missing_ok=False),
                f"cannot delete priority class {acct.q(name)}",
            )


def _set_preemption_mode(fxt: Any, name: str, mode: str | None) -> None:
    """``setPreemptionMode``: Get+Update until it goes through (5m / 10s), then the scheduler
    object Available at its generation (1m / 15s) and carrying the new mode."""
    kube, timeouts = fxt.kube, fxt.config.timeouts
    log.info("setting preemption mode to %s", mode)

    def mutate(obj: dict) -> None:
        obj.setdefault("spec", {})["preemptionMode"] = mode
        if mode is None:
            del obj["spec"]["preemptionMode"]

    polling.update_object(kube, k8s.NROSCHED, name, mutate, timeout=300, interval=timeouts.poll(10))

    log.info("verifying the scheduler object was updated properly with the new value %s", mode)
    updated: list[dict] = []

    def synced() -> str | None:
        try:  # g.Expect(Get).To(Succeed()) inside the Eventually: a failed Get is retried
            obj = kube.get(k8s.NROSCHED, name)
        except k8s.ApiError as err:
            return f"cannot get {acct.q(name)}: {err}"
        updated[:] = [obj]
        return nropcr.synced_at_problem(
            obj.get("status"), nropcr.CONDITION_AVAILABLE, obj["metadata"]["generation"]
        )

    # Upstream's 15 s interval, not the embedded cluster's 1 s cap: the first look comes before
    # the operator has seen the change, so the spec goes on one interval later, with the new
    # scheduler long running. Capped, it went on while the new scheduler was starting: the
    # fillers were then pending at its start, queued in name order rather than creation order,
    # and the second one scheduled first left the first one's copy (the test pod) outside the
    # placement its cache had decoded, so the eviction simulation failed.
    polling.eventually(synced, "failed to update the schedulerName field", 60, UPSTREAM_MODE_POLL)
    found = (updated[0].get("spec") or {}).get("preemptionMode")
    assert found == mode, f"failed to update the schedulerName field,expected {mode} but found {found}"


@pytest.fixture
def preemption_enabled(
    fxt: Any,
    suite_config: Any,
    priority_classes: list[dict],
    defer_cleanup: Callable[[Callable[[], None]], None],
) -> None:
    """ "when preemptionMode is set to Enabled": set it; the initial value is put back by a
    ``DeferCleanup``, after the ``AfterEach`` (namespace teardown and cooldown), as upstream."""
    name = suite_config.nrosched["metadata"]["name"]
    initial_obj = acct.expect_ok(
        lambda: fxt.kube.get(k8s.NROSCHED, name), f"cannot get {acct.q(name)} in the cluster"
    )
    initial = (initial_obj.get("spec") or {}).get("preemptionMode")
    if initial == "Enabled":
        return
    _set_preemption_mode(fxt, name, "Enabled")

    def revert() -> None:
        log.info("reverting preemption mode")
        _set_preemption_mode(fxt, name, initial)

    defer_cleanup(revert)


@dataclass
class Target:
    node: str
    nrt_list: list[dict]


@pytest.fixture
def target(
    fxt: Any,
    priority_classes: list[dict],
    preemption_enabled: None,
    defer_cleanup: Callable[[Callable[[], None]], None],
) -> Target:
    """ "when one node is schedulable and the others are unschedulable": cordon every other node
    (uncordoned by a ``DeferCleanup``, registered before the first cordon, as upstream)."""
    kube = fxt.kube
    nrt_list = priority_classes
    candidates = e2enrt.filter_zone_count_equal(nrt_list, 2)
    if len(candidates) < 1:
        fxt.skip(f"not enough nodes with 2 NUMA zones: found {len(candidates)}")
    candidates = e2enrt.filter_by_policy(candidates, e2enrt.SINGLE_NUMA_NODE)
    if len(candidates) < 1:
        fxt.skip(f"not enough nodes with SingleNUMANode policy - found {len(candidates)}")
    target_node = ""
    for name in e2enrt.accumulate_names(candidates):
        if not (kube.get(k8s.NODE, name).get("spec") or {}).get("unschedulable"):
            target_node = name  # the first schedulable one
            break
    assert target_node, "no schedulable node found"
    log.info("target node for preemption test: %s", target_node)

    cordoned: list[str] = []
    nodes = acct.expect_ok(lambda: kube.list(k8s.NODE), "cannot list cluster nodes")

    def uncordon() -> None:
        for name in cordoned:
            acct.expect_ok(
                lambda name=name: kube.patch(k8s.NODE, name, {"spec": {"unschedulable": False}}),
                f"cannot uncordon node {acct.q(name)}",
            )
            log.info("uncordoned node %s", name)

    defer_cleanup(uncordon)
    for node in nodes:
        name = node["metadata"]["name"]
        if name == target_node or (node.get("spec") or {}).get("unschedulable"):
            continue
        acct.expect_ok(
            lambda name=name: kube.patch(k8s.NODE, name, {"spec": {"unschedulable": True}}),
            f"cannot cordon node {acct.q(name)}",
        )
        cordoned.append(name)
        log.info("cordoned node %s", name)
    return Target(node=target_node, nrt_list=nrt_list)


def _find_nrt(nrt_list: list[dict], node: str) -> dict:
    """``FindFromList`` asserted with the specs' message."""
    nrt = e2enrt.find(nrt_list, node)
    assert nrt is not None, f"no NRT data for target node {acct.q(node)}"
    return nrt


def _padding_pod_spec(fxt: Any, suite_config: Any, node: str, zone: dict, leave: acct.ResList) -> dict:
    """``makePaddingPod`` asserted with the specs' message."""
    try:
        return e2epad.make_padding_pod(fxt.namespace, node, zone, leave, image=suite_config.pause_image)
    except ValueError as err:  # a zone without the resource, or NotEnoughResourcesError
        raise AssertionError(
            f"cannot create padding pod spec for node {acct.q(node)} zone {acct.q(zone['name'])}: {err}"
        ) from None


def _uids(kube: Any, pods: list[dict]) -> dict[str, str]:
    """``getNamesToUIDs``."""
    uids = {}
    for p in pods:
        meta = p["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        pod = acct.expect_ok(
            lambda meta=meta: kube.get(k8s.POD, meta["name"], meta["namespace"]),
            f"cannot get filler pod {key}",
        )
        uids[meta["name"]] = pod["metadata"]["uid"]
    return uids


def _ensure_not_evicted(kube: Any, pods: list[dict], uids: dict[str, str]) -> None:
    """``ensurePodsNotEvicted`` (1m / 10s), asserted "failed to have the filler pods running":
    on every poll each pod exists, is not being deleted and keeps its UID."""

    def problem() -> str | None:
        for fp in pods:
            name = fp["metadata"]["name"]
            try:
                pod = kube.get(k8s.POD, name, fp["metadata"]["namespace"])
            except k8s.ApiError as err:
                return f"cannot get filler pod {acct.q(name)}: {err}"
            log.info(
                "pod status %s/%s originalUID %s currentUID %s phase %s",
                pod["metadata"]["namespace"],
                name,
                uids[name],
                pod["metadata"]["uid"],
                acct.phase(pod),
            )
            if pod["metadata"].get("deletionTimestamp"):
                return f"filler pod {acct.q(name)} should not have been evicted"
            if pod["metadata"]["uid"] != uids[name]:
                return (
                    f"filler pod {acct.q(name)} UID should not have changed (was {acct.q(uids[name])}, now "
                    f"{acct.q(pod['metadata']['uid'])})"
                )
        return None

    # upstream's own loop, not Gomega's: a last poll once the window has ended
    polling.consistently(
        problem,
        "failed to have the filler pods running",
        NOT_EVICTED_WINDOW,
        NOT_EVICTED_INTERVAL,
        last_look=True,
    )


def _eviction_not_expected(kube: Any, test_pod: dict, fillers: list[dict], uids: dict[str, str]) -> None:
    """``evictionNotExpected``: the test pod stays Pending (2m / 10s), unschedulable with
    "Preemption is not helpful for scheduling", and no filler is evicted."""
    namespace, name = test_pod["metadata"]["namespace"], test_pod["metadata"]["name"]
    log.info("verifying test pod %s/%s remains pending", namespace, name)
    seen: list[dict] = []

    def pending() -> str | None:
        try:
            pod = kube.get(k8s.POD, name, namespace)
        except k8s.ApiError as err:
            return f"cannot get pod {namespace}/{name}: {err}"
        seen[:] = [pod]
        if acct.phase(pod) != "Pending":
            return f"pod {namespace}/{name} is not pending"
        return None

    polling.consistently(
        pending, "failed to have the pod pending", CONSISTENTLY_WINDOW, CONSISTENTLY_INTERVAL
    )
    pod = seen[0]
    assert acct.phase(pod) == "Pending", f"pod {namespace}/{name} is not pending"
    conditions = (pod.get("status") or {}).get("conditions") or []
    assert len(conditions) == 1, f"pod {namespace}/{name} should have only one condition: {conditions}"
    cond = conditions[0]
    assert cond.get("type") == "PodScheduled", f"expected condition type PodScheduled, got {cond}"
    assert cond.get("status") == "False", f"expected condition status False, got {cond}"
    assert cond.get("reason") == "Unschedulable", f"expected condition reason Unschedulable, got {cond}"
    assert "Preemption is not helpful for scheduling" in str(cond.get("message") or ""), (
        f"expected the condition message to contain 'Preemption is not helpful for scheduling', got {cond}"
    )
    log.info("verifying all other filler pods continue to run")
    _ensure_not_evicted(kube, fillers, uids)


def _scaled(res: acct.ResList, factor: int) -> acct.ResList:
    return {name: qty * factor for name, qty in res.items()}


class TestWhenPreemptionModeIsSetToEnabled:
    pytestmark = spec("when preemptionMode is set to Enabled")

    class TestWhenOneNodeIsSchedulableAndTheOthersAreUnschedulable:
        pytestmark = spec("when one node is schedulable and the others are unschedulable")

        @spec("priority-based workload placement should work as expected", "tier2")
        @pytest.mark.parametrize(
            "filler_class,new_class,eviction_expected",
            [
                entry("default-priority fillers vs default-priority new workload", "", "", False),
                entry(
                    "default-priority fillers vs system-node-critical new workload",
                    "",
                    SYSTEM_NODE_CRITICAL,
                    True,
                ),
                entry(
                    "system-node-critical fillers vs default-priority new workload",
                    SYSTEM_NODE_CRITICAL,
                    "",
                    False,
                ),
                entry(
                    "system-node-critical fillers vs system-node-critical new workload",
                    SYSTEM_NODE_CRITICAL,
                    SYSTEM_NODE_CRITICAL,
                    False,
                ),
                entry(
                    "custom low-priority fillers vs custom medium-priority new workload",
                    CUSTOM_LOW,
                    CUSTOM_MEDIUM,
                    True,
                ),
                entry(
                    "custom medium-priority fillers vs custom low-priority new workload",
                    CUSTOM_MEDIUM,
                    CUSTOM_LOW,
                    False,
                ),
            ],
        )
        def test_priority_matrix(
            self,
            fxt: Any,
            suite_config: Any,
            target: Target,
            filler_class: str,
            new_class: str,
            eviction_expected: bool,
        ) -> None:
            kube = fxt.kube
            scheduler = suite_config.scheduler_name
            log.info(
                "filler priority class %r, new pod priority class %r, eviction expected %s",
                filler_class,
                new_class,
                eviction_expected,
            )
            nrt_info = _find_nrt(target.nrt_list, target.node)
            load = acct.baseload_for_node(
                kube, target.node, f"cannot get base load for {acct.q(target.node)}"
            )

            # fillers saturate the target node, zone by zone
            fillers = []
            for zone in acct.zones(nrt_info):
                pod = _padding_pod_spec(fxt, suite_config, target.node, zone, load)
                if filler_class:
                    pod["spec"]["priorityClassName"] = filler_class
                pod["spec"]["schedulerName"] = scheduler
                objects.pin_pod_to(pod, target.node, zone["name"])
                fillers.append(
                    acct.expect_ok(
                        lambda pod=pod: kube.create(pod),
                        f"cannot create filler pod for zone {acct.q(zone['name'])}",
                    )
                )
            assert not e2epad.wait_for_padding_pods_running(kube, fillers), (
                "some padding pods have failed to run"
            )
            fxt.settle_nrts()
            uids = _uids(kube, fillers)

            test_pod = acct.new_test_pod(fxt.namespace, "test-workload", suite_config.pause_image)
            test_pod["spec"]["schedulerName"] = scheduler
            if new_class:
                test_pod["spec"]["priorityClassName"] = new_class
            # the resources of filler 0: this triggers the preemption logic
            limits = copy.deepcopy(fillers[0]["spec"]["containers"][0]["resources"]["limits"])
            test_pod["spec"]["containers"][0]["resources"] = {
                "limits": limits,
                "requests": copy.deepcopy(limits),
            }
            test_pod = acct.expect_ok(lambda: kube.create(test_pod), "cannot create test workload pod")

            if not eviction_expected:
                _eviction_not_expected(kube, test_pod, fillers, uids)
                return

            log.info("verifying one filler pod is preempted and evicted")
            evicted: set[str] = set()

            def one_evicted() -> str | None:
                for fp in fillers:
                    try:
                        kube.get(k8s.POD, fp["metadata"]["name"], fxt.namespace)
                    except k8s.ApiError as err:
                        # as upstream: NotFound means evicted, any other error is ignored (polled again)
                        if k8s.is_not_found(err):
                            evicted.add(fp["metadata"]["name"])
                if len(evicted) != 1:
                    return f"expected one filler pod to be evicted, got {len(evicted)}"
                return None

            polling.eventually(
                one_evicted, "failed to have the pod running", PENDING_TIMEOUT, fxt.config.timeouts.poll(10)
            )
            log.info("verifying test pod becomes running after preemption")
            try:
                waiters.for_pod_phase(
                    kube, fxt.namespace, "test-workload", "Running", timeout=PENDING_TIMEOUT
                )
            except WaitTimeout as err:
                raise AssertionError(f"test pod did not become Running after preemption: {err}") from None

            log.info("verifying the rest of the filler pods continue to run")

            def others_running() -> str | None:
                for fp in fillers:
                    name = fp["metadata"]["name"]
                    if name in evicted:
                        continue
                    try:
                        pod = kube.get(k8s.POD, name, fxt.namespace)
                    except k8s.ApiError as err:
                        return f"cannot get pod {fxt.namespace}/{name}: {err}"
                    if acct.phase(pod) != "Running":
                        return f"pod {fxt.namespace}/{name} is not running"
                    if pod["metadata"].get("deletionTimestamp"):
                        return f"filler pod {acct.q(name)} should not have been evicted"
                return None

            polling.consistently(
                others_running,
                "more than one filler pod was evicted",
                CONSISTENTLY_WINDOW,
                CONSISTENTLY_INTERVAL,
            )

        class TestWhenFillerPodsHaveMixedPriorities:
            pytestmark = spec("when filler pods have mixed priorities")

            @spec(
                "should remain pending when the new pod is not priority enough despite the node-level sufficient "
                "space"
            )
            def test_mixed_priorities(self, fxt: Any, suite_config: Any, target: Target) -> None:
                # Every request derives from the baseload B. Per zone: one default-priority filler with
                # two containers of B each, one medium-priority filler with all but B; so a zone needs
                # 7B. The preemptor asks 4B: at low priority, evicting the default fillers frees 3B per
                # zone (6B on the node) and it may not evict medium ones: it stays pending. At high
                # priority it must evict exactly one medium filler, nothing else.
                kube = fxt.kube
                scheduler = suite_config.scheduler_name
                target_nrt = _find_nrt(target.nrt_list, target.node)
                load = acct.baseload_for_node(
                    kube, target.node, f"cannot get base load for {acct.q(target.node)}"
                )
                least = _scaled(load, 7)
                for idx, zone in enumerate(acct.zones(target_nrt)):
                    for res in zone.get("resources") or ():
                        available = coerce(res["available"])
                        least_qty = least.get(res["name"], Quantity(0))
                        if available < least_qty:
                            fxt.skip(
                                f"not enough availableresources in zone {idx} to fit the test pod: least required "
                                f"resources per zone are {least_qty}, found {available}"
                            )

                default_pods = []
                for zone_idx, pod_name in (
                    (0, "default-priority-filler-1"),
                    (1, "default-priority-filler-2"),
                ):
                    res = dict(rl.to_manifest(load))
                    res[objects.numacell_resource_name(zone_idx)] = "1"
                    pod = acct.new_test_pod(fxt.namespace, pod_name, suite_config.pause_image)
                    pod["spec"]["schedulerName"] = scheduler
                    first = pod["spec"]["containers"][0]
                    first["name"] = "default-priority-filler-1-cnt-0"
                    first["resources"] = {"limits": dict(res), "requests": dict(res)}
                    second = copy.deepcopy(first)
                    second["name"] = "cnt-2"
                    pod["spec"]["containers"] = [first, second]
                    default_pods.append(pod)
                fillers = [
                    acct.expect_ok(lambda pod=pod: kube.create(pod), f"cannot create victim pod {idx}")
                    for idx, pod in enumerate(default_pods, start=1)
                ]
                assert not e2epad.wait_for_padding_pods_running(kube, fillers), (
                    "some padding pods have failed to run"
                )
                fxt.settle_nrts()
                updated_nrt = nrtupdates.get_updated_for_node(
                    kube, target_nrt, 60, interval=fxt.config.timeouts.nrt_update_interval
                )

                medium = []
                for idx, zone in enumerate(acct.zones(updated_nrt)):
                    pod = _padding_pod_spec(fxt, suite_config, target.node, zone, load)
                    pod["metadata"]["name"] = f"medium-priority-filler-{idx + 1}"
                    pod["spec"]["priorityClassName"] = CUSTOM_MEDIUM
                    pod["spec"]["schedulerName"] = scheduler
                    objects.pin_pod_to(pod, target.node, zone["name"])
                    medium.append(
                        acct.expect_ok(
                            lambda pod=pod: kube.create(pod),
                            f"cannot create filler pod for zone {acct.q(zone['name'])}",
                        )
                    )
                fillers += medium
                assert not e2epad.wait_for_padding_pods_running(kube, medium), (
                    "some padding pods have failed to run"
                )
                fxt.settle_nrts()
                uids = _uids(kube, fillers)

                template = acct.new_test_pod(fxt.namespace, "test-workload", suite_config.pause_image)
                template["spec"]["schedulerName"] = scheduler
                template["spec"]["priorityClassName"] = CUSTOM_LOW
                request = rl.to_manifest(_scaled(load, 4))
                template["spec"]["containers"][0]["resources"] = {
                    "limits": dict(request),
                    "requests": dict(request),
                }

                # phase 1: a low-priority preemptor stays pending, evicting the default fillers is not enough
                phase1 = copy.deepcopy(template)
                phase1["metadata"]["name"] = "preemptor-phase-1"
                phase1 = acct.expect_ok(lambda: kube.create(phase1), "cannot create test workload pod")
                _eviction_not_expected(kube, phase1, fillers, uids)
                kube.delete(k8s.POD, "preemptor-phase-1", fxt.namespace, missing_ok=False)
                try:
                    waiters.for_pod_deleted(kube, fxt.namespace, "preemptor-phase-1", timeout=PENDING_TIMEOUT)
                except WaitTimeout as err:
                    raise AssertionError(f"failed to delete test pod: {err}") from None

                # phase 2: a high-priority preemptor runs, evicting the fewest fillers: one medium one
                phase2 = copy.deepcopy(template)
                phase2["metadata"]["name"] = "preemptor-phase-2"
                phase2["spec"]["priorityClassName"] = CUSTOM_HIGH
                acct.expect_ok(lambda: kube.create(phase2), "cannot create preemptor pod phase 2")
                try:
                    waiters.for_pod_phase(
                        kube, fxt.namespace, "preemptor-phase-2", "Running", timeout=PENDING_TIMEOUT
                    )
                except WaitTimeout as err:
                    raise AssertionError(
                        f"test pod phase 2 did not become Running after preemption: {err}"
                    ) from None

                evicted = next(
                    (
                        p["metadata"]["name"]
                        for p in medium
                        if kube.get_or_none(k8s.POD, p["metadata"]["name"], fxt.namespace) is None
                    ),
                    "",
                )
                assert evicted, "no medium-priority filler pod was evicted"
                kept = [p for p in fillers if p["metadata"]["name"] != evicted]
                log.info("verifying the rest of the filler pods continue to run")
                _ensure_not_evicted(kube, kept, uids)

        class TestWhenPodsAreCreatedInBursts:
            pytestmark = spec("when pods are created in bursts")

            @spec("should not falsely evict pods because the cache in not yet updated")
            def test_no_false_eviction(self, fxt: Any, suite_config: Any, target: Target) -> None:
                # a burst of low-priority pods sized on the baseload CPUs, the last two high-priority:
                # with the NRT cache not yet updated, preemption must not evict on a dirty state
                kube = fxt.kube
                load = acct.baseload_for_node(
                    kube, target.node, f"cannot get base load for {acct.q(target.node)}"
                )
                per_pod_cpu = load["cpu"]  # the smaller, the harder for preemption on a dirty state
                target_nrt = _find_nrt(target.nrt_list, target.node)
                total_count = 0
                for zone in acct.zones(target_nrt):
                    min_count = 0
                    for res in zone.get("resources") or ():
                        if res["name"] != "cpu":
                            continue
                        available = coerce(res["available"])
                        total, count = per_pod_cpu, 0
                        while True:
                            if available < total + load["cpu"]:
                                # enough pods to give a race a chance
                                if count < 4:
                                    fxt.skip(
                                        f"not enough available resources in zone {zone['name']} to fit the "
                                        f"test pods: {available}"
                                    )
                                break
                            count += 1
                            total = total + per_pod_cpu
                        if min_count == 0 or count < min_count:
                            min_count = count
                    total_count += min_count

                resources = {"cpu": str(per_pod_cpu), "memory": "32Mi"}  # an arbitrary small memory request
                pods = []
                for idx in range(total_count):
                    pod = acct.new_test_pod(fxt.namespace, "test-workload", suite_config.pause_image)
                    pod["metadata"]["name"] = f"pod-{idx}"
                    pod["spec"]["schedulerName"] = suite_config.scheduler_name
                    # the last two pods are high-priority
                    pod["spec"]["priorityClassName"] = CUSTOM_HIGH if idx > total_count - 3 else CUSTOM_LOW
                    pod["spec"]["containers"][0]["resources"] = {
                        "limits": dict(resources),
                        "requests": dict(resources),
                    }
                    pods.append(
                        acct.expect_ok(lambda pod=pod: kube.create(pod), "cannot create test workload pod")
                    )
                assert not e2epad.wait_for_padding_pods_running(kube, pods), (
                    "some padding pods have failed to run"
                )
                fxt.settle_nrts()
                log.info("ensure all pods are kept running")
                for pod in pods:
                    name = pod["metadata"]["name"]
                    current = acct.expect_ok(
                        lambda name=name: kube.get(k8s.POD, name, fxt.namespace),
                        f"cannot get pod {acct.q(name)}",
                    )
                    assert acct.phase(current) == "Running", f"pod {acct.pod_key(current)} is not running"
