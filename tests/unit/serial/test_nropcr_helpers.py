"""Tables of serial/_nropcr_helpers.py's pure decisions: the condition checks
(``isNROOperSyncedAt``, ``isDegradedWith``, Available), the node-group config
(``nodeGroups[0].config``, ``DefaultNodeGroupConfig().Merge``, ``cmp.Equal``), a pool's status
entry and the related-object strings."""

from __future__ import annotations

import _nropcr_helpers as nropcr
import pytest


def _cond(ctype: str, status: str = "True", **extra: object) -> dict:
    return {"type": ctype, "status": status, **extra}


@pytest.mark.parametrize(
    ("conditions", "ctype", "found"),
    [
        pytest.param(None, "Available", None, id="no-conditions"),
        pytest.param([], "Available", None, id="empty"),
        pytest.param([_cond("Degraded"), _cond("Available", "False")], "Available", 1, id="found-by-type"),
        pytest.param([_cond("Available"), _cond("Available", "False")], "Available", 0, id="first-of-two"),
        pytest.param([_cond("Degraded")], "Available", None, id="other-types-only"),
    ],
)
def test_find_condition(conditions, ctype, found) -> None:
    expected = None if found is None else conditions[found]
    assert nropcr.find_condition(conditions, ctype) is expected


@pytest.mark.parametrize(
    ("status", "problem"),
    [
        pytest.param(None, "nil status", id="nil-status"),
        pytest.param({}, "missing condition", id="no-conditions"),
        pytest.param({"conditions": [_cond("Degraded")]}, "missing condition", id="other-condition"),
        pytest.param(
            {"conditions": [_cond("Available", "False", observedGeneration=3)]},
            "condition not true",
            id="not-true",
        ),
        pytest.param(
            {"conditions": [_cond("Available", observedGeneration=2)]},
            "condition at 2 expected 3",
            id="older-generation",
        ),
        pytest.param(
            {"conditions": [_cond("Available")]}, "condition at None expected 3", id="no-generation"
        ),
        pytest.param({"conditions": [_cond("Available", observedGeneration=3)]}, None, id="synced"),
    ],
)
def test_synced_at_problem(status, problem) -> None:
    assert nropcr.synced_at_problem(status, "Available", 3) == problem


DEGRADED = _cond("Degraded", message="node groups: duplicate pool", reason="ValidationErrorUnderNodeGroups")


@pytest.mark.parametrize(
    ("conditions", "degraded"),
    [
        pytest.param([DEGRADED], True, id="match"),
        pytest.param(None, False, id="no-conditions"),
        pytest.param([{**DEGRADED, "status": "False"}], False, id="not-degraded"),
        pytest.param([{**DEGRADED, "message": "something else"}], False, id="other-message"),
        pytest.param([{**DEGRADED, "reason": "InternalError"}], False, id="other-reason"),
        pytest.param([{k: v for k, v in DEGRADED.items() if k != "message"}], False, id="no-message"),
        pytest.param([_cond("Available"), DEGRADED], True, id="among-others"),
    ],
)
def test_is_degraded_with(conditions, degraded) -> None:
    assert nropcr.is_degraded_with(conditions, "duplicate pool", nropcr.REASON_NODEGROUPS_ERROR) is degraded


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        pytest.param({"status": {"conditions": [_cond("Available")]}}, None, id="available"),
        pytest.param({}, "condition Available was not found: None", id="no-status"),
        pytest.param(
            {"status": {"conditions": [_cond("Degraded")]}},
            "condition Available was not found: [{'type': 'Degraded', 'status': 'True'}]",
            id="missing",
        ),
        pytest.param(
            {"status": {"conditions": [_cond("Available", "False")]}},
            "Expected operator condition to be Available=True, got: [{'type': 'Available', 'status': 'False'}]",
            id="false",
        ),
    ],
)
def test_available_true_problem(obj, problem) -> None:
    assert nropcr.available_true_problem(obj) == problem


@pytest.mark.parametrize(
    ("group", "config"),
    [
        pytest.param({"poolName": "worker"}, {}, id="missing-created"),
        pytest.param({"poolName": "worker", "config": None}, {}, id="null-created"),
        pytest.param({"config": {"infoRefreshMode": "Events"}}, {"infoRefreshMode": "Events"}, id="kept"),
    ],
)
def test_first_group_config_creates_and_returns_the_live_dict(group, config) -> None:
    nrop = {"spec": {"nodeGroups": [group, {"poolName": "other"}]}}
    got = nropcr.first_group_config(nrop)
    assert got == config
    got["tolerations"] = []
    assert nrop["spec"]["nodeGroups"][0]["config"] is got


DEFAULTS = dict(nropcr.DEFAULT_NODE_GROUP_CONFIG)


@pytest.mark.parametrize(
    ("user", "merged"),
    [
        pytest.param(None, DEFAULTS, id="none"),
        pytest.param({}, DEFAULTS, id="empty"),
        pytest.param({"infoRefreshMode": "Events"}, {**DEFAULTS, "infoRefreshMode": "Events"}, id="one-knob"),
        pytest.param(
            {"podsFingerprinting": "Disabled", "infoRefreshPeriod": "32s", "infoRefreshPause": "Enabled"},
            {
                **DEFAULTS,
                "podsFingerprinting": "Disabled",
                "infoRefreshPeriod": "32s",
                "infoRefreshPause": "Enabled",
            },
            id="three-knobs",
        ),
        pytest.param({"infoRefreshMode": None}, DEFAULTS, id="null-keeps-default"),
        pytest.param({"tolerations": [{"key": "k"}]}, DEFAULTS, id="tolerations-not-carried"),
    ],
)
def test_merged_config(user, merged) -> None:
    assert nropcr.merged_config(user) == merged


@pytest.mark.parametrize(
    ("status_conf", "equal"),
    [
        pytest.param(None, False, id="not-reported"),
        pytest.param(DEFAULTS, True, id="same"),
        pytest.param({**DEFAULTS, "infoRefreshPeriod": "10.000s"}, True, id="same-duration-other-spelling"),
        pytest.param({**DEFAULTS, "infoRefreshPeriod": "0m10s"}, True, id="same-duration-minutes"),
        pytest.param({**DEFAULTS, "infoRefreshPeriod": "11s"}, False, id="other-duration"),
        pytest.param({**DEFAULTS, "tolerations": []}, True, id="empty-list-is-nil"),
        pytest.param({**DEFAULTS, "tolerations": None}, True, id="null-is-nil"),
        pytest.param({**DEFAULTS, "tolerations": [{"key": "k"}]}, False, id="extra-tolerations"),
        pytest.param({**DEFAULTS, "infoRefreshMode": "Events"}, False, id="other-mode"),
        pytest.param(
            {k: v for k, v in DEFAULTS.items() if k != "infoRefreshPause"}, False, id="missing-knob"
        ),
    ],
)
def test_config_equal(status_conf, equal) -> None:
    assert nropcr.config_equal(status_conf, DEFAULTS) is equal


@pytest.mark.parametrize(
    ("status", "found"),
    [
        pytest.param({}, None, id="no-status"),
        pytest.param({"status": {"nodeGroups": None}}, None, id="null-groups"),
        pytest.param({"status": {"nodeGroups": [{"selector": "other"}]}}, None, id="other-pool"),
        pytest.param(
            {"status": {"nodeGroups": [{"selector": "other"}, {"selector": "worker", "config": {}}]}},
            1,
            id="found",
        ),
    ],
)
def test_pool_of_status(status, found) -> None:
    expected = None if found is None else status["status"]["nodeGroups"][found]
    assert nropcr.pool_of_status(status, "worker") is expected


def test_related_objects_rte_are_sorted_with_every_daemonset() -> None:
    daemonsets = [{"namespace": "ns", "name": "rte-worker"}, {"namespace": "ns", "name": "rte-master"}]
    assert nropcr.related_objects_rte("ns", daemonsets) == [
        "/namespaces//ns",
        "apps/daemonsets/ns/rte-master",
        "apps/daemonsets/ns/rte-worker",
        "machineconfiguration.openshift.io/kubeletconfigs//",
        "machineconfiguration.openshift.io/machineconfigs//",
        "topology.node.k8s.io/noderesourcetopologies//",
    ]


def test_related_objects_scheduler() -> None:
    assert nropcr.related_objects_scheduler("ns", {"namespace": "ns", "name": "secondary-scheduler"}) == [
        "/namespaces//ns",
        "apps/deployments/ns/secondary-scheduler",
    ]


@pytest.mark.parametrize(
    ("refs", "strings"),
    [
        pytest.param(None, [], id="none"),
        pytest.param([], [], id="empty"),
        pytest.param(
            [
                {"group": "apps", "resource": "daemonsets", "namespace": "ns", "name": "b"},
                {"resource": "namespaces", "name": "ns"},
                {"group": "apps", "resource": "daemonsets", "namespace": "ns", "name": "a"},
            ],
            ["/namespaces//ns", "apps/daemonsets/ns/a", "apps/daemonsets/ns/b"],
            id="sorted-missing-fields-empty",
        ),
    ],
)
def test_object_refs(refs, strings) -> None:
    assert nropcr.object_refs(refs) == strings


def test_status_and_expected_lists_compare_equal() -> None:
    """The spec compares object_refs(status.relatedObjects) with related_objects_*: same spelling."""
    status = [
        {"group": "", "resource": "namespaces", "namespace": "", "name": "ns"},
        {"group": "apps", "resource": "deployments", "namespace": "ns", "name": "sched"},
    ]
    assert nropcr.object_refs(status) == nropcr.related_objects_scheduler(
        "ns", {"namespace": "ns", "name": "sched"}
    )
