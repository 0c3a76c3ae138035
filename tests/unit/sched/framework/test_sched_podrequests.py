"""Table tests of the NRT plugin's request arithmetic and resource predicates."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.quantity import parse
from nrop.sched.framework import podrequests as pr


def ctr(
    name: str = "c",
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    **extra: Any,
):
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "resources": resources, **extra}


def pod(containers=(), init=(), overhead=None, qos_class=None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if overhead:
        spec["overhead"] = overhead
    out: dict[str, Any] = {"metadata": {"namespace": "ns", "name": "p"}, "spec": spec}
    if qos_class:
        out["status"] = {"qosClass": qos_class}
    return out


def q(values: dict[str, str]) -> dict[str, Any]:
    return {k: parse(v) for k, v in values.items()}


def guaranteed(cpu: str, memory: str, **extra: str) -> dict[str, Any]:
    values = {"cpu": cpu, "memory": memory, **extra}
    return ctr(requests=values, limits=values)


# --- container requests ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        pytest.param(ctr(requests={"cpu": "1"}), {"cpu": "1"}, id="requests-only"),
        pytest.param(
            ctr(limits={"cpu": "2", "memory": "1Gi"}),
            {"cpu": "2", "memory": "1Gi"},
            id="limits-default-requests",
        ),
        pytest.param(
            ctr(requests={"cpu": "500m"}, limits={"cpu": "2", "memory": "1Gi"}),
            {"cpu": "500m", "memory": "1Gi"},
            id="request-wins-over-limit",
        ),
        pytest.param(ctr(), {}, id="nothing"),
        pytest.param({"name": "bare"}, {}, id="no-resources-key"),
    ],
)
def test_container_requests(container: dict[str, Any], expected: dict[str, str]) -> None:
    assert pr.container_requests(container) == q(expected)


@pytest.mark.parametrize(
    ("the_pod", "expected"),
    [
        pytest.param(
            pod([ctr(requests={"cpu": "1"}), ctr(requests={"cpu": "2", "memory": "1Gi"})]),
            {"cpu": "3", "memory": "1Gi"},
            id="apps-add-up",
        ),
        pytest.param(
            pod([ctr(requests={"cpu": "1"}), ctr(requests={"cpu": "2"})], init=[ctr(requests={"cpu": "4"})]),
            {"cpu": "4"},
            id="larger-init-wins",
        ),
        pytest.param(
            pod([ctr(requests={"cpu": "1"}), ctr(requests={"cpu": "2"})], init=[ctr(requests={"cpu": "2"})]),
            {"cpu": "3"},
            id="smaller-init-ignored",
        ),
        pytest.param(
            pod(
                [ctr(requests={"cpu": "1", "memory": "3Gi"})],
                init=[
                    ctr(requests={"cpu": "2", "memory": "1Gi"}),
                    ctr(requests={"cpu": "1", "memory": "2Gi"}),
                ],
            ),
            {"cpu": "2", "memory": "3Gi"},
            id="max-per-resource-independently",
        ),
        pytest.param(
            pod([ctr(requests={"cpu": "1"})], init=[ctr(requests={"example.com/dev": "1"})]),
            {"cpu": "1", "example.com/dev": "1"},
            id="init-only-resource-kept",
        ),
        pytest.param(
            pod([ctr(requests={"cpu": "1"})], init=[ctr(requests={"cpu": "2"}, restartPolicy="Always")]),
            {"cpu": "2"},
            id="sidecar-not-accumulated",
        ),
        pytest.param(
            pod([ctr(requests={"cpu": "3"})], overhead={"cpu": "250m", "memory": "100Mi"}),
            {"cpu": "3250m", "memory": "100Mi"},
            id="overhead-added-per-name",
        ),
        pytest.param(
            pod([ctr(requests={"cpu": "1"})], init=[ctr(requests={"cpu": "4"})], overhead={"cpu": "1"}),
            {"cpu": "5"},
            id="overhead-after-init-max",
        ),
    ],
)
def test_pod_effective_request(the_pod: dict[str, Any], expected: dict[str, str]) -> None:
    assert pr.pod_effective_request(the_pod) == q(expected)


@pytest.mark.parametrize(
    ("the_pod", "expected"),
    [
        pytest.param(pod([guaranteed("1", "1Gi")]), "Guaranteed", id="computed-guaranteed"),
        pytest.param(pod([ctr(requests={"cpu": "1"})]), "Burstable", id="computed-burstable"),
        pytest.param(pod([ctr()]), "BestEffort", id="computed-besteffort"),
        pytest.param(
            pod([ctr(requests={"example.com/dev": "1"})]), "BestEffort", id="devices-only-besteffort"
        ),
        pytest.param(pod([ctr()], qos_class="Guaranteed"), "Guaranteed", id="status-wins"),
    ],
)
def test_pod_qos(the_pod: dict[str, Any], expected: str) -> None:
    assert pr.pod_qos(the_pod) == expected


# --- resource kinds ----------------------------------------------------------------------

#                 name                     native host   affine scalar extended
KINDS = [
    ("cpu", True, False, True, False, False),
    ("memory", True, False, True, False, False),
    ("hugepages-2Mi", True, False, True, True, False),
    ("hugepages-1Gi", True, False, True, True, False),
    ("ephemeral-storage", True, True, False, False, False),
    ("storage", True, True, False, False, False),
    ("pods", True, False, False, False, False),
    ("example.com/dev", False, True, False, True, True),
    ("openshift.io/sriov", False, True, False, True, True),
    ("kubernetes.io/something", True, False, False, True, False),
    ("foo.kubernetes.io/bar", True, False, False, True, False),
    ("attachable-volumes-aws-ebs", True, False, False, True, False),
    ("requests.example.com/dev", False, True, False, False, False),
    ("Bad_Domain/dev", False, True, False, False, False),
]


@pytest.mark.parametrize(
    ("name", "native", "host_level", "affine", "scalar", "extended"),
    [pytest.param(*row, id=row[0]) for row in KINDS],
)
def test_resource_kinds(
    name: str, native: bool, host_level: bool, affine: bool, scalar: bool, extended: bool
) -> None:
    assert pr.is_native_resource(name) is native
    assert pr.is_host_level_resource(name) is host_level
    assert pr.is_numa_affine_resource(name) is affine
    assert pr.is_scalar_resource(name) is scalar
    assert pr.is_extended_resource(name) is extended


@pytest.mark.parametrize(
    ("the_pod", "expected"),
    [
        pytest.param(pod([ctr(requests={"cpu": "1"})]), False, id="native-only"),
        pytest.param(pod([ctr(requests={"example.com/dev": "1"})]), True, id="app-device"),
        pytest.param(pod([ctr()], init=[ctr(limits={"example.com/dev": "1"})]), True, id="init-device-limit"),
        pytest.param(pod([ctr(requests={"kubernetes.io/x": "1"})]), False, id="prefixed-native"),
    ],
)
def test_include_non_native(the_pod: dict[str, Any], expected: bool) -> None:
    assert pr.include_non_native(the_pod) is expected


# --- exclusivity -------------------------------------------------------------------------

NRT_NAMES = frozenset({"cpu", "memory", "example.com/dev"})


@pytest.mark.parametrize(
    ("qos", "name", "amount", "nrt_names", "expected"),
    [
        pytest.param("Guaranteed", "cpu", "2", NRT_NAMES, True, id="g-integral-cpu"),
        pytest.param("Guaranteed", "cpu", "1500m", NRT_NAMES, False, id="g-fractional-cpu"),
        pytest.param("Guaranteed", "cpu", "0", NRT_NAMES, False, id="g-zero-cpu"),
        pytest.param("Guaranteed", "memory", "1", NRT_NAMES, True, id="g-memory"),
        pytest.param("Guaranteed", "memory", "0", NRT_NAMES, False, id="g-zero-memory"),
        pytest.param("Guaranteed", "hugepages-2Mi", "2Mi", NRT_NAMES, True, id="g-hugepages"),
        pytest.param("Guaranteed", "ephemeral-storage", "1Gi", NRT_NAMES, False, id="g-storage"),
        pytest.param("Burstable", "cpu", "2", NRT_NAMES, False, id="burstable-cpu"),
        pytest.param("Burstable", "example.com/dev", "1", NRT_NAMES, True, id="burstable-device-in-nrt"),
        pytest.param("Guaranteed", "example.com/gpu", "1", NRT_NAMES, False, id="device-not-in-nrt"),
        pytest.param("BestEffort", "example.com/dev", "1", None, False, id="no-nrt"),
    ],
)
def test_is_exclusive(
    qos: str, name: str, amount: str, nrt_names: frozenset[str] | None, expected: bool
) -> None:
    assert pr.is_exclusive(qos, name, parse(amount), nrt_names) is expected


@pytest.mark.parametrize(
    ("the_pod", "expected"),
    [
        pytest.param(pod([guaranteed("1", "1Gi")]), True, id="guaranteed-memory-always-exclusive"),
        pytest.param(pod([ctr(requests={"cpu": "2"})]), False, id="burstable-cpu"),
        pytest.param(pod([ctr(requests={"example.com/dev": "1"})]), True, id="besteffort-device"),
        pytest.param(
            pod([ctr()], init=[ctr(requests={"example.com/dev": "1"})]), False, id="init-device-finishes"
        ),
        pytest.param(
            pod([ctr()], init=[ctr(requests={"example.com/dev": "1"}, restartPolicy="Always")]),
            True,
            id="sidecar-device-counts",
        ),
    ],
)
def test_are_exclusive_for_pod(the_pod: dict[str, Any], expected: bool) -> None:
    assert pr.are_exclusive_for_pod(the_pod, NRT_NAMES) is expected
