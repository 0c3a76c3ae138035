"""The leak check's comparison (``nrop.suite.leaks.compare``), a table of before/after snapshots."""

from __future__ import annotations

import pytest

from nrop.suite.leaks import Snapshot, compare

NODE = {"worker-0": ({"role": "worker"}, frozenset(), False)}
BEFORE = Snapshot(
    namespaces=frozenset({"default", "numaresources"}),
    bare_pods=frozenset({"default/keep"}),
    objects=frozenset({"NUMAResourcesOperator/numaresourcesoperator"}),
    nodes=NODE,
)


def _after(**changes: object) -> Snapshot:
    fields = {
        "namespaces": BEFORE.namespaces,
        "bare_pods": BEFORE.bare_pods,
        "objects": BEFORE.objects,
        "nodes": BEFORE.nodes,
    }
    fields.update(changes)
    return Snapshot(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        pytest.param(_after(), [], id="clean"),
        pytest.param(
            _after(namespaces=BEFORE.namespaces - {"numaresources"}),
            [],
            id="a namespace removed is not a leak",
        ),
        pytest.param(
            _after(namespaces=BEFORE.namespaces | {"e2e-test-x-1"}),
            ["namespace e2e-test-x-1 is left"],
            id="namespace",
        ),
        pytest.param(
            _after(bare_pods=BEFORE.bare_pods | {"default/padpod-1", "e2e-test-x-1/p"}),
            ["pod default/padpod-1 is left"],
            id="bare pod in a namespace that existed (the new namespace is reported on its own)",
        ),
        pytest.param(
            _after(objects=BEFORE.objects | {"PriorityClass/e2e-preemption-low"}),
            ["PriorityClass/e2e-preemption-low is left"],
            id="cluster object",
        ),
        pytest.param(
            _after(objects=frozenset()),
            ["NUMAResourcesOperator/numaresourcesoperator is gone"],
            id="cluster object deleted",
        ),
        pytest.param(
            _after(
                nodes={"worker-0": ({"role": "worker", "test": "a"}, frozenset({"k=v:NoSchedule"}), True)}
            ),
            [
                "node worker-0: label test is 'a', was None",
                "node worker-0: taint k=v:NoSchedule is left",
                "node worker-0: unschedulable is True, was False",
            ],
            id="node labels taints cordon",
        ),
    ],
)
def test_compare(after: Snapshot, expected: list[str]) -> None:
    assert compare(BEFORE, after) == expected


def test_a_kind_that_is_not_served_is_told_from_other_errors() -> None:
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    from nrop.suite import kube as k

    class Http(Exception):
        def __init__(self, status: int) -> None:
            super().__init__(status)
            self.status = status

    assert k.is_not_served(ResourceNotFoundError("no kind"))  # unknown to discovery
    assert k.is_not_served(Http(404))  # a stale discovery cache: the list answers 404
    assert not k.is_not_served(Http(403))
    assert not k.is_not_served(ValueError("other"))
