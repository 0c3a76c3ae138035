"""Malformed pods at both schedulers: refused with a 422 naming the field, or Pending with upstream's reason.

Owns the bad-input part of the scheduling reliability issue. The cluster, the stack and the
readers are those of :mod:`stackfaults` (imported, not copied): one embedded cluster on
the ``default`` profile (a tainted control plane and two single-numa-node workers, pod scope) runs
in this process, with the stack installed through the operator, so the NUMA-aware scheduler is a
real ``nrop-scheduler`` process in a pod and the default scheduler the cluster's own.

Each pod of :data:`PENDING` passes API validation but can run nowhere: requests far beyond any node
(cpu, memory, hugepages; two cpu values past an int64 of millicores, where upstream's arithmetic
wraps and ours deliberately does not: see the table), an extended
resource no node has, node affinity to a label nobody carries, a nodeSelector nobody matches, a
pod aimed at the tainted control plane without the toleration, and, for the NUMA-aware scheduler,
an init container bigger than any NUMA zone. A batch is created for each scheduler and every pod:

* stays Pending with ``PodScheduled=False`` reason ``Unschedulable``;
* gets a ``FailedScheduling`` event from that scheduler whose message is upstream's exact text
  (``FitError``: a sorted histogram of the filter reasons, then the preemption diagnosis).

Each pod of :data:`REFUSED` is refused at create with a 422 ``Invalid`` Status whose causes name
the field, in upstream's wording (``pkg/apis/core/validation``). A case the embedded API server
did not refuse would be a strict xfail naming the gap (its ``gap``); none is left.

With the default scheduler the init-container pod fits a worker and that worker's kubelet rejects
it as upstream's does (``Failed``, ``TopologyAffinityError``).

Each quantity of :data:`STORED` is one upstream accepts, however large (its API server has no upper
bound on container resources; a ``BinarySI`` value is capped at 2^63-1 by the parser): the pod is
created and serves the quantity as upstream would print it.

After each batch a well-formed guaranteed pod (2 CPUs, 256Mi) for the same scheduler still runs
within seconds on ``worker-0`` with exclusive CPUs of one NUMA zone, and the NUMA-aware scheduler
kept its process (same PID, no container restart).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import pytest
from kubernetes.dynamic.exceptions import DynamicApiError

# The shared cluster, stack and readers. Fixtures are found by their name in this module, so they
# are imported under it, and the tests' parameters of the same names are not redefinitions.
from stackfaults import (
    OPERANDS,
    TARGET,
    cluster_config,
    container_status,
    guaranteed_pod,
    installed,
    numa_cpus,
    operand_pod,
    pod_cpus,
    process_of,
    wait_for,
)

from nrop.localcluster.cluster import LocalCluster
from nrop.suite.e2e import objects
from nrop.suite.e2e.kube import POD, Kube, Manifest
from nrop.suite.e2e.wait import waiters
from nrop.suite.install import stack

# The shared fixtures, used by name only.
__all__ = ["cluster_config", "installed"]

pytestmark = pytest.mark.slow

DEFAULT_SCHEDULER: Final = "default-scheduler"
CONTROL_PLANE: Final = "control-plane"
#: A well-formed pod must be Running this soon after a batch (the scheduler keeps scheduling).
KEEPS_SCHEDULING: Final = 15.0
#: How long the batch's FailedScheduling events may take (every pod is tried at once).
FAILED_SCHEDULING: Final = 30.0

# -- upstream's texts -----------------------------------------------------------------------------

TAINT: Final = "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_VICTIMS: Final = "No preemption victims found for incoming pod"


def fit_error(filters: dict[str, int], preemption: dict[str, int]) -> str:
    """Upstream ``FitError.Error()`` for the 3 nodes, with DefaultPreemption's own FitError as the
    post-filter message (each part is " <msg>.", so the preemption part ends in ".."). Both
    histograms are "<count> <reason>" sorted as strings."""

    def histogram(reasons: dict[str, int]) -> str:
        return ", ".join(sorted(f"{n} {reason}" for reason, n in reasons.items()))

    preempt = f"preemption: 0/3 nodes are available: {histogram(preemption)}."
    return f"0/3 nodes are available: {histogram(filters)}. {preempt}."


def unresolvable_on_workers(reason: str) -> str:
    """Both workers fail with an UnschedulableAndUnresolvable ``reason``, the control plane on its taint."""
    return fit_error({TAINT: 1, reason: 2}, {NOT_HELPFUL: 3})


# -- the cases ------------------------------------------------------------------------------------

Mutation = Callable[[Manifest], None]


def _resources(
    requests: dict[str, Any], limits: dict[str, Any] | None = None, *, init: bool = False
) -> Mutation:
    """Raw requests and limits (limits = requests unless given), untouched by the client's parser."""

    def mutate(pod: Manifest) -> None:
        container = pod["spec"]["containers"][0]
        if init:
            init_container = copy.deepcopy(container)
            init_container["name"] = "init"
            init_container["command"] = ["sleep", "1"]
            pod["spec"]["initContainers"] = [init_container]
            # The app container is guaranteed too, so that the pod is (the NUMA-aware filter
            # checks only what a guaranteed pod asks for).
            container["resources"] = {"requests": dict(GUARANTEED), "limits": dict(GUARANTEED)}
            container = init_container
        container["resources"] = {
            "requests": dict(requests),
            "limits": dict(requests if limits is None else limits),
        }

    return mutate


def _required_affinity(*expressions: dict[str, Any], terms: list[Any] | None = None) -> Mutation:
    def mutate(pod: Manifest) -> None:
        selector_terms = [{"matchExpressions": list(expressions)}] if terms is None else terms
        pod["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": selector_terms}
            }
        }

    return mutate


def _node_selector(selector: dict[str, str]) -> Mutation:
    def mutate(pod: Manifest) -> None:
        pod["spec"]["nodeSelector"] = dict(selector)

    return mutate


def _all(*mutations: Mutation) -> Mutation:
    def mutate(pod: Manifest) -> None:
        for mutation in mutations:
            mutation(pod)

    return mutate


GUARANTEED: Final = {"cpu": "1", "memory": "64Mi"}


@dataclass(frozen=True)
class Pending:
    """A pod the API accepts and no node can run: ``message`` per scheduler (``None``: not for it)."""

    name: str
    mutate: Mutation
    numa_aware: str | None
    default: str | None

    def message(self, numa_aware: bool) -> str | None:
        return self.numa_aware if numa_aware else self.default


def _both(name: str, mutate: Mutation, message: str) -> Pending:
    return Pending(name, mutate, message, message)


PENDING: Final = (
    _both(
        "huge-cpu",
        _resources({"cpu": "100000", "memory": "64Mi"}),
        unresolvable_on_workers("Insufficient cpu"),
    ),
    _both(
        "huge-memory",
        _resources({"cpu": "1", "memory": "1Ei"}),
        unresolvable_on_workers("Insufficient memory"),
    ),
    _both(
        "huge-hugepages",
        _resources({**GUARANTEED, "hugepages-2Mi": "1Ei"}),
        unresolvable_on_workers("Insufficient hugepages-2Mi"),
    ),
    # Past what millicores in an int64 hold. Upstream's schedulers read Quantity.MilliValue(), which
    # ignores the overflow: 2^63-1 CPUs come out as -1000m (the big.Int path, x1000 wrapped) and 1e30
    # as 0 (AsScaledInt64 gives 0, false), so upstream would bind both and leave them to the kubelet.
    # api.quantity is exact on purpose (no wrap-around), so ours report what the pod asks for.
    _both(
        "int64-cpu",
        _resources({"cpu": "9223372036854775807", "memory": "64Mi"}),
        unresolvable_on_workers("Insufficient cpu"),
    ),
    _both(
        "exponent-cpu",
        _resources({"cpu": "1e30", "memory": "64Mi"}),
        unresolvable_on_workers("Insufficient cpu"),
    ),
    _both(
        "unknown-resource",
        _resources({**GUARANTEED, "example.org/unknown": "1"}),
        unresolvable_on_workers("Insufficient example.org/unknown"),
    ),
    _both(
        "affinity-to-no-label",
        _all(
            _resources(GUARANTEED),
            _required_affinity({"key": "example.org/no-such-label", "operator": "In", "values": ["x"]}),
        ),
        unresolvable_on_workers(AFFINITY),
    ),
    _both(
        "affinity-exists-nowhere",
        _all(
            _resources(GUARANTEED),
            _required_affinity({"key": "example.org/no-such-label", "operator": "Exists"}),
        ),
        unresolvable_on_workers(AFFINITY),
    ),
    _both(
        "selector-nobody-matches",
        _all(_resources(GUARANTEED), _node_selector({"example.org/nobody": "here"})),
        unresolvable_on_workers(AFFINITY),
    ),
    _both(
        "untolerated-control-plane",
        _all(_resources(GUARANTEED), _node_selector({"kubernetes.io/hostname": CONTROL_PLANE})),
        unresolvable_on_workers(AFFINITY),
    ),
    # 30 CPUs: more than either zone (20 and 22 allocatable), less than a worker (42). Only the
    # NUMA-aware filter sees it (pod scope: "cannot align pod", Unschedulable, so preemption looks
    # for victims on the workers); the default scheduler binds it and the kubelet refuses it.
    Pending(
        "init-bigger-than-a-zone",
        _resources({"cpu": "30", "memory": "64Mi"}, init=True),
        fit_error({TAINT: 1, "cannot align pod": 2}, {NOT_HELPFUL: 1, NO_VICTIMS: 2}),
        None,
    ),
)


@dataclass(frozen=True)
class Refused:
    """A pod upstream's API server refuses: 422 ``Invalid`` with these ``(field, reason, message)`` causes."""

    name: str
    mutate: Mutation
    causes: tuple[tuple[str, str, str], ...]
    #: Why the embedded API server does not refuse it yet (a strict xfail), or "" when it does.
    gap: str = ""

    def status_message(self) -> str:
        """Upstream ``NewInvalid``: one error as is, several as ``[a, b]`` (``ToAggregate``)."""
        errors = [f"{path}: {message}" for path, _, message in self.causes]
        joined = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
        return f'Pod "{self.name}" is invalid: {joined}'


_TERM0: Final = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
_EXPR0: Final = f"{_TERM0}[0].matchExpressions[0]"

_LIMIT_EXT: Final = "spec.containers[0].resources.limits[example.org/unknown]"
_REQUEST_EXT: Final = "spec.containers[0].resources.requests[example.org/unknown]"
_LABEL_VALUE: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

REFUSED: Final = (
    # cpu may be overcommitted: a request alone, so that only the request is wrong.
    Refused(
        "negative-cpu",
        _resources({"cpu": "-1"}, {}),
        (
            (
                "spec.containers[0].resources.requests[cpu]",
                "FieldValueInvalid",
                'Invalid value: "-1": must be greater than or equal to 0',
            ),
        ),
    ),
    # An extended resource needs limit = request: both are wrong, limits reported first.
    Refused(
        "fractional-extended",
        _resources({**GUARANTEED, "example.org/unknown": "500m"}),
        (
            (_LIMIT_EXT, "FieldValueInvalid", 'Invalid value: "500m": must be an integer'),
            (_REQUEST_EXT, "FieldValueInvalid", 'Invalid value: "500m": must be an integer'),
        ),
    ),
    Refused(
        "extended-without-limit",
        _resources({**GUARANTEED, "example.org/unknown": "1"}, GUARANTEED),
        (
            (
                "spec.containers[0].resources.limits",
                "FieldValueRequired",
                "Required value: Limit must be set for non overcommitable resources",
            ),
        ),
    ),
    Refused(
        "in-with-no-values",
        _required_affinity({"key": "example.org/zone", "operator": "In", "values": []}),
        (
            (
                f"{_EXPR0}.values",
                "FieldValueRequired",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
        ),
    ),
    Refused(
        "exists-with-values",
        _required_affinity({"key": "example.org/zone", "operator": "Exists", "values": ["x"]}),
        (
            (
                f"{_EXPR0}.values",
                "FieldValueForbidden",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
        ),
    ),
    Refused(
        "no-selector-terms",
        _required_affinity(terms=[]),
        ((_TERM0, "FieldValueRequired", "Required value: must have at least one node selector term"),),
    ),
    Refused(
        "gt-with-two-values",
        _required_affinity({"key": "example.org/cores", "operator": "Gt", "values": ["1", "2"]}),
        (
            (
                f"{_EXPR0}.values",
                "FieldValueRequired",
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
            ),
        ),
    ),
    Refused(
        "exists-toleration-with-value",
        lambda pod: pod["spec"].__setitem__(
            "tolerations", [{"key": "example.org/k", "operator": "Exists", "value": "v"}]
        ),
        (
            (
                "spec.tolerations[0].operator",
                "FieldValueInvalid",
                # The bad value is the whole (internal) toleration, printed with Go's %#v.
                'Invalid value: core.Toleration{Key:"example.org/k", Operator:"Exists", Value:"v", '
                'Effect:"", TolerationSeconds:(*int64)(nil)}: '
                "value must be empty when `operator` is 'Exists'",
            ),
        ),
    ),
    Refused(
        "selector-bad-value",
        _node_selector({"example.org/k": "not a label value"}),
        (("spec.nodeSelector", "FieldValueInvalid", f'Invalid value: "not a label value": {_LABEL_VALUE}'),),
    ),
)


@dataclass(frozen=True)
class Stored:
    """A quantity upstream accepts, and the form it stores and serves (``Quantity.String()``: the
    text as sent only where its parser cached it, else the canonical form)."""

    name: str
    resource: str
    sent: str
    stored: str
    gap: str = ""


STORED: Final = (
    Stored("exponent", "cpu", "1e30", "1e30"),
    Stored("exbibyte", "memory", "1Ei", "1Ei"),
    Stored("past-int64", "cpu", "99999999999999999999999", "99999999999999999999999"),
    # A BinarySI value is capped at 2^63-1 by the parser; it prints in decimal (not a power of 1024).
    Stored("capped-binary", "memory", "16Ei", "9223372036854775807"),
    Stored("not-canonical", "cpu", "1000m", "1"),
    # 10^5000 is past int64 but within inf.Dec; its exponent is not a multiple of 3, so upstream does
    # not keep the string (ParseQuantity keeps it only when scale%3 == 0) and String() moves the
    # exponent down to one (int64Amount.AsCanonicalBytes, "case 2, -1": x100, exponent - 2).
    Stored("past-max-digits", "cpu", "1e5000", "100e4998"),
)


def _stored_params() -> list[Any]:
    return [
        pytest.param(
            case, id=case.name, marks=[pytest.mark.xfail(strict=True, reason=case.gap)] if case.gap else []
        )
        for case in STORED
    ]


def _refused_params() -> list[Any]:
    return [
        pytest.param(
            case, id=case.name, marks=[pytest.mark.xfail(strict=True, reason=case.gap)] if case.gap else []
        )
        for case in REFUSED
    ]


# -- reading the cluster --------------------------------------------------------------------------


def _malformed_pod(namespace: str, scheduler: str, name: str, mutate: Mutation) -> Manifest:
    pod = objects.new_test_pod_pause(namespace, name)
    pod["spec"]["schedulerName"] = scheduler
    mutate(pod)
    return pod


def _failed_scheduling(kube: Kube, namespace: str, name: str) -> list[Manifest]:
    return [e for e in kube.events_for(namespace, name, "Pod") if e.get("reason") == "FailedScheduling"]


def _reporter(event: Manifest) -> str:
    return str(event.get("reportingComponent") or (event.get("source") or {}).get("component"))


def _pod_scheduled(pod: Manifest) -> dict[str, Any]:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == "PodScheduled"), {})


def _scheduler_state(kube: Kube, cluster: LocalCluster, installed: stack.Stack) -> tuple[int, int]:
    """The NUMA-aware scheduler's (PID, restartCount)."""
    operand = OPERANDS["scheduler"]
    pod = operand_pod(kube, installed, operand)
    restarts = int(container_status(pod, operand.container).get("restartCount") or 0)
    return process_of(cluster, pod, operand.container), restarts


def _keeps_scheduling(kube: Kube, cluster: LocalCluster, namespace: str, scheduler: str) -> None:
    """A well-formed guaranteed pod runs on TARGET within KEEPS_SCHEDULING, with the CPUs of one zone."""
    pod = guaranteed_pod(namespace, scheduler)
    kube.create(pod)
    running = waiters.for_pod_phase(
        kube, namespace, "guaranteed", "Running", interval=0.5, timeout=KEEPS_SCHEDULING
    )
    assert running["spec"]["nodeName"] == TARGET
    cpus = pod_cpus(cluster, TARGET, namespace, "guaranteed")
    assert len(cpus) == 2
    zones = [z for z, zone_cpus in numa_cpus(TARGET, cluster).items() if cpus <= zone_cpus]
    assert len(zones) == 1, f"CPUs {sorted(cpus)} span NUMA zones"


# -- the tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "preemption", "expected"),
    [
        pytest.param(
            {"Insufficient cpu": 2, TAINT: 1},
            {NOT_HELPFUL: 3},
            "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
            "2 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..",
            id="histograms-sorted-as-strings",
        ),
        pytest.param(
            {"cannot align pod": 2, TAINT: 1},
            {NO_VICTIMS: 2, NOT_HELPFUL: 1},
            "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
            "2 cannot align pod. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
            "2 No preemption victims found for incoming pod..",
            id="two-preemption-reasons",
        ),
    ],
)
def test_fit_error_text(filters: dict[str, int], preemption: dict[str, int], expected: str) -> None:
    assert fit_error(filters, preemption) == expected


@pytest.mark.parametrize("numa_aware", [True, False], ids=["numa-aware", "default"])
def test_malformed_pods_stay_pending_with_upstreams_reason_and_the_scheduler_keeps_scheduling(
    numa_aware: bool,
    kube: Kube,
    cluster: LocalCluster,
    installed: stack.Stack,
    namespace: str,
) -> None:
    scheduler = installed.scheduler_name if numa_aware else DEFAULT_SCHEDULER
    before = _scheduler_state(kube, cluster, installed)
    cases = {case.name: case.message(numa_aware) for case in PENDING if case.message(numa_aware) is not None}
    for case in PENDING:
        if case.name in cases:
            kube.create(_malformed_pod(namespace, scheduler, case.name, case.mutate))

    found = wait_for(
        lambda: {name: _failed_scheduling(kube, namespace, name) for name in cases},
        lambda events: all(events.values()),
        f"a FailedScheduling event for each of {sorted(cases)}",
        FAILED_SCHEDULING,
    )
    wrong = {
        name: [(e.get("message"), _reporter(e)) for e in events]
        for name, events in found.items()
        if any(e.get("message") != cases[name] or _reporter(e) != scheduler for e in events)
    }
    assert not wrong, f"expected from {scheduler}: {cases}\ngot: {wrong}"
    for name, message in cases.items():
        pod = kube.get(POD, name, namespace)
        assert pod["status"]["phase"] == "Pending", waiters.pod_summary(pod)
        assert not pod["spec"].get("nodeName"), waiters.pod_summary(pod)
        condition = _pod_scheduled(pod)
        assert (condition.get("status"), condition.get("reason")) == ("False", "Unschedulable"), condition
        assert condition.get("message") == message

    _keeps_scheduling(kube, cluster, namespace, scheduler)
    assert _scheduler_state(kube, cluster, installed) == before, "the NUMA-aware scheduler restarted"


@pytest.mark.parametrize("case", _refused_params())
def test_invalid_pods_are_refused_with_a_422_naming_the_field(
    case: Refused, kube: Kube, namespace: str
) -> None:
    pod = _malformed_pod(namespace, DEFAULT_SCHEDULER, case.name, case.mutate)
    with pytest.raises(DynamicApiError) as raised:
        kube.create(pod)
    status = raised.value
    body = status.body if isinstance(status.body, dict) else json.loads(status.body)
    assert (status.status, body.get("reason")) == (422, "Invalid"), body
    causes = [(c.get("field"), c.get("reason"), c.get("message")) for c in body["details"]["causes"]]
    assert causes == list(case.causes)
    assert body["message"] == case.status_message()


@pytest.mark.parametrize("numa_aware", [True, False], ids=["numa-aware", "default"])
def test_pods_upstream_refuses_never_stop_the_scheduler(
    numa_aware: bool, kube: Kube, cluster: LocalCluster, installed: stack.Stack, namespace: str
) -> None:
    """What the embedded API server lets through but upstream refuses reaches the schedulers: each pod
    is decided (bound, or a FailedScheduling event), never on the tainted control plane, and the
    scheduler survives it (no crash, no wedge) and keeps scheduling."""
    scheduler = installed.scheduler_name if numa_aware else DEFAULT_SCHEDULER
    before = _scheduler_state(kube, cluster, installed)
    accepted = []
    for case in REFUSED:
        try:
            kube.create(_malformed_pod(namespace, scheduler, case.name, case.mutate))
        except DynamicApiError as exc:
            assert exc.status == 422, exc
        else:
            accepted.append(case.name)
    decided = wait_for(
        lambda: {name: kube.get(POD, name, namespace) for name in accepted},
        lambda pods: all(
            p["spec"].get("nodeName") or _failed_scheduling(kube, namespace, n) for n, p in pods.items()
        ),
        f"{scheduler} to bind or to refuse each of {accepted}",
        FAILED_SCHEDULING,
    )
    for name, pod in decided.items():
        assert pod["spec"].get("nodeName") != CONTROL_PLANE, waiters.pod_summary(pod)
        reporters = {_reporter(e) for e in _failed_scheduling(kube, namespace, name)}
        assert reporters <= {scheduler}, reporters
    _keeps_scheduling(kube, cluster, namespace, scheduler)
    assert _scheduler_state(kube, cluster, installed) == before, "the NUMA-aware scheduler restarted"


def test_the_default_scheduler_binds_an_init_container_bigger_than_a_zone_and_the_kubelet_refuses_it(
    kube: Kube, cluster: LocalCluster, installed: stack.Stack, namespace: str
) -> None:
    """Without the NUMA-aware filter the pod fits a worker, and its kubelet's topology manager
    (single-numa-node) rejects it: Failed, ``TopologyAffinityError``, as upstream's kubelet."""
    (case,) = [c for c in PENDING if c.name == "init-bigger-than-a-zone"]
    kube.create(_malformed_pod(namespace, DEFAULT_SCHEDULER, case.name, case.mutate))
    pod = waiters.for_pod_phase(kube, namespace, case.name, "Failed", interval=0.5, timeout=FAILED_SCHEDULING)
    assert pod["spec"]["nodeName"] in ("worker-0", "worker-1")
    assert pod["status"]["reason"] == "TopologyAffinityError"
    assert (
        pod["status"]["message"] == "Pod was rejected: Resources cannot be allocated with Topology locality"
    )
    _keeps_scheduling(kube, cluster, namespace, DEFAULT_SCHEDULER)


@pytest.mark.parametrize("case", _stored_params())
def test_huge_quantities_are_stored_as_upstream_serves_them(case: Stored, kube: Kube, namespace: str) -> None:
    """Nothing schedules these pods (a scheduler nobody runs): only the API server's answer counts."""
    requests = {"cpu": "1", "memory": "64Mi", case.resource: case.sent}
    pod = _malformed_pod(namespace, "no-such-scheduler", case.name, _resources(requests))
    created = kube.create(pod)
    resources = created["spec"]["containers"][0]["resources"]
    assert resources["requests"][case.resource] == case.stored
    assert resources["limits"][case.resource] == case.stored
