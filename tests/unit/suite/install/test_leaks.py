"""The leak check's comparison (``nrop.suite.install.leaks.compare``), a table of before/after snapshots."""

from __future__ import annotations

import pytest

from nrop.suite.install.leaks import Snapshot, compare

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


def test_kinds_the_cluster_does_not_serve_are_left_out_and_other_errors_raise() -> None:
    from typing import Any

    import pytest

    from nrop.suite.e2e import kube as k
    from nrop.suite.install.leaks import take

    class Cluster:
        def __init__(self, denied: k.Kind | None = None) -> None:
            self.denied = denied

        def list(self, kind: k.Kind) -> list[dict[str, Any]]:
            if kind in (k.NROP, k.NROSCHED):
                raise k.UnknownKindError(f"the cluster does not serve {kind.kind}")
            if kind == self.denied:
                raise PermissionError(f"{kind.kind}: forbidden")
            if kind == k.PRIORITYCLASS:
                return [{"metadata": {"name": "high"}}]
            return []

    snapshot = take(Cluster())  # type: ignore[arg-type]
    assert snapshot.objects == frozenset({"PriorityClass/high"})
    with pytest.raises(PermissionError, match="RuntimeClass: forbidden"):
        take(Cluster(denied=k.RUNTIMECLASS))  # type: ignore[arg-type]
