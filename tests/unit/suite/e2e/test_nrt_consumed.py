"""Table tests of nrop.suite.e2e.nrt.consumed: consumption at least the requests per zone, node and
topology-manager scope, and unchanged availability."""

from __future__ import annotations

import pytest
from nrt_samples import nrt, two_zone_nrt

from nrop.suite.e2e.nrt import consumed as nrtconsumed
from nrop.suite.e2e.resourcelist import of


@pytest.mark.parametrize(
    ("updated", "required", "qos", "zone_hit", "node_hit"),
    [
        (
            two_zone_nrt("a", cpu1="16", mem1="20Gi"),
            {"cpu": "4", "memory": "1Gi"},
            "Guaranteed",
            "node-1",
            "a",
        ),
        (two_zone_nrt("a", cpu1="16"), {"cpu": "4", "memory": "1Gi"}, "Guaranteed", "", ""),
        (two_zone_nrt("a"), {"cpu": "4", "memory": "1Gi"}, "Burstable", "node-0", "a"),
        (two_zone_nrt("a", cpu0="14"), {"cpu": "4", "ephemeral-storage": "1Gi"}, "Guaranteed", "node-0", "a"),
        (two_zone_nrt("a", cpu0="16", cpu1="18"), {"cpu": "4"}, "Guaranteed", "", "a"),
    ],
)
def test_consumed_resources_at_least(updated, required, qos, zone_hit, node_hit) -> None:
    initial = two_zone_nrt("a")
    assert nrtconsumed.check_zone_consumed_resources_at_least(initial, updated, of(required), qos) == zone_hit
    assert nrtconsumed.check_node_consumed_resources_at_least(initial, updated, of(required), qos) == node_hit
    assert (
        nrtconsumed.check_consumed_resources_for_scope("pod", initial, updated, of(required), qos) == zone_hit
    )
    assert (
        nrtconsumed.check_consumed_resources_for_scope("container", initial, updated, of(required), qos)
        == node_hit
    )


def test_check_equal_available_resources() -> None:
    assert nrtconsumed.check_equal_available_resources(two_zone_nrt("a"), two_zone_nrt("a", rv="3"))
    assert not nrtconsumed.check_equal_available_resources(two_zone_nrt("a"), two_zone_nrt("a", mem1="1Gi"))
    with pytest.raises(ValueError, match="cannot find zone"):
        nrtconsumed.check_equal_available_resources(
            two_zone_nrt("a"), nrt("a", two_zone_nrt("a")["zones"][0])
        )
