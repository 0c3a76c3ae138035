"""NUMAResourcesOperator / NUMAResourcesScheduler spec decisions: validation messages, defaults, node groups, replicas."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.operator.decisions import nropspec, nrsspec
from nrop.operator.decisions.conditions import Reason

DIGEST = "sha256:" + "a" * 64


def nrop(spec: dict[str, Any], name: str = "numaresourcesoperator") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def group(**fields: Any) -> dict[str, Any]:
    return fields


@pytest.mark.parametrize(
    ("obj", "restricted", "has_mcps", "reason", "message"),
    [
        pytest.param(nrop({}, name="other"), True, False, Reason.INCORRECT_NROP_NAME,
                     "incorrect NUMAResourcesOperator resource name: other", id="wrong-name"),
        pytest.param(nrop({"imageSpec": "quay.io/x/rte:1"}), True, False, Reason.CUSTOM_USER_IMAGE,
                     "custom operand image is not supported: quay.io/x/rte:1", id="custom-image"),
        pytest.param(nrop({"nodeGroups": [group()]}), True, False, Reason.NODE_GROUPS_ERROR,
                     "node group 0 missing any pool specifier", id="no-specifier"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", machineConfigPoolSelector={})]}), True, True,
                     Reason.NODE_GROUPS_ERROR,
                     "node group 0 must have only a single specifier set: either PoolName or MachineConfigPoolSelector",
                     id="two-specifiers"),
        pytest.param(nrop({"nodeGroups": [group(poolName="")]}), True, False, Reason.NODE_GROUPS_ERROR,
                     "pool name for pool #0 cannot be empty", id="empty-pool"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w"), group(poolName="w")]}), True, False,
                     Reason.NODE_GROUPS_ERROR, 'the pool name "w" has duplicates', id="duplicate-pool"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", annotations={str(i): "" for i in range(9)})]}), True,
                     False, Reason.NODE_GROUPS_ERROR, "pool #0 has too many annotations 9 max 8", id="annotations"),
        pytest.param(nrop({"nodeGroups": [group(machineConfigPoolSelector={"matchLabels": {"a": "b"}})]}), True,
                     False, Reason.NODE_GROUPS_ERROR,
                     "spec.nodeGroups[0].machineConfigPoolSelector needs MachineConfigPools", id="mcp-without-mco"),
        pytest.param(nrop({"nodeGroups": [group(machineConfigPoolSelector={"matchExpressions": [
                         {"key": "a", "operator": "In"}]})]}), True, True, Reason.NODE_GROUPS_ERROR,
                     "spec.nodeGroups[0].machineConfigPoolSelector.matchExpressions[0].values", id="bad-selector"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", config={"infoRefreshPeriod": "soon"})]}), True, False,
                     Reason.NODE_GROUPS_ERROR, 'spec.nodeGroups[0].config.infoRefreshPeriod: invalid duration "soon"',
                     id="bad-duration"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", config={"infoRefreshPeriod": "-1s"})]}), True, False,
                     Reason.NODE_GROUPS_ERROR, "must not be negative", id="negative-duration"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", config={"tolerations": [
                         {"key": "k", "operator": "Maybe"}]})]}), True, False, Reason.INTERNAL_ERROR,
                     'spec.nodeGroups[0].config.tolerations[0].operator: Unsupported value: "Maybe": '
                     'supported values: "Equal", "Exists"', id="toleration-operator"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", config={"tolerations": [
                         {"key": "k", "operator": "Exists", "effect": "Sometimes"}]})]}), True, False,
                     Reason.INTERNAL_ERROR, 'tolerations[0].effect: Unsupported value: "Sometimes"',
                     id="toleration-effect"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", config={"tolerations": [
                         {"key": "k", "operator": "Exists", "value": "v"}]})]}), True, False,
                     Reason.INTERNAL_ERROR, "value must be empty when `operator` is 'Exists'", id="toleration-value"),
    ],
)  # fmt: skip
def test_invalid_nrop(
    obj: dict[str, Any], restricted: bool, has_mcps: bool, reason: str, message: str
) -> None:
    step = nropspec.validate(obj, exporter_image_restricted=restricted, has_mcps=has_mcps)
    assert step is not None
    assert (step.type, step.reason) == ("Degraded", reason)
    assert message in step.message


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(nrop({}), id="no-groups"),
        pytest.param(nrop({"nodeGroups": [group(poolName="worker")]}), id="sample"),
        pytest.param(nrop({"imageSpec": "quay.io/x/rte:1", "nodeGroups": [group(poolName="w")]}), id="custom-image-allowed"),
        pytest.param(nrop({"nodeGroups": [group(poolName="w", config={"infoRefreshPeriod": "0s", "tolerations": [
            {"operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 5}]})]}),
            id="full-config"),
    ],
)  # fmt: skip
def test_valid_nrop(obj: dict[str, Any]) -> None:
    assert (
        nropspec.validate(obj, exporter_image_restricted="imageSpec" not in obj["spec"], has_mcps=False)
        is None
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(None, nropspec.DEFAULT_CONFIG, id="defaults"),
        pytest.param({"infoRefreshMode": "Events", "tolerations": []}, {**nropspec.DEFAULT_CONFIG, "infoRefreshMode": "Events"},
                     id="overlay"),
        pytest.param({"podsFingerprinting": "Disabled", "infoRefreshPause": "Enabled", "infoRefreshPeriod": "1m"},
                     {"podsFingerprinting": "Disabled", "infoRefreshMode": "Periodic", "infoRefreshPeriod": "1m",
                      "infoRefreshPause": "Enabled"}, id="all"),
    ],
)  # fmt: skip
def test_effective_config(config: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    assert nropspec.effective_config(config) == expected


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def mcp(name: str, labels: dict[str, str], node_labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeSelector": {"matchLabels": node_labels}},
    }


ROLE = "node-role.kubernetes.io/"


@pytest.mark.parametrize(
    ("groups", "mcps", "pools", "errors"),
    [
        pytest.param([group(poolName="worker")], [], [("worker", {ROLE + "worker": ""})], [], id="pool-name"),
        pytest.param([group(machineConfigPoolSelector={"matchLabels": {"p": "x"}})],
                     [mcp("mcp-x", {"p": "x"}, {ROLE + "x": ""}), mcp("mcp-y", {"p": "y"}, {ROLE + "y": ""})],
                     [("mcp-x", {ROLE + "x": ""})], [], id="mcp-selector"),
        pytest.param([group(machineConfigPoolSelector={"matchLabels": {"p": "x"}}),
                      group(machineConfigPoolSelector={"matchExpressions": [{"key": "p", "operator": "Exists"}]})],
                     [mcp("mcp-x", {"p": "x"}, {ROLE + "x": ""})], [("mcp-x", {ROLE + "x": ""})],
                     ['the MachineConfigPool "mcp-x" selected by at least two node groups'], id="mcp-twice"),
        pytest.param([group(poolName="worker"), group(poolName="gpu")], [], None,
                     ['the node "n1" is selected by at least two node groups (worker, gpu)'], id="node-twice"),
        pytest.param([group(machineConfigPoolSelector={"matchLabels": {"p": "none"}})], [], [],
                     ["node group 0: spec.nodeGroups[0].machineConfigPoolSelector selects no MachineConfigPool"],
                     id="mcp-none"),
    ],
)  # fmt: skip
def test_resolve_groups(
    groups: list[Any], mcps: list[Any], pools: list[Any] | None, errors: list[str]
) -> None:
    nodes = [node("n1", **{ROLE + "worker": "", ROLE + "gpu": ""}), node("n2", **{ROLE + "x": ""})]
    resolved, found = nropspec.resolve_groups(nrop({"nodeGroups": groups}), mcps, nodes)
    if pools is not None:
        assert [(g.pool_name, g.node_selector) for g in resolved] == pools
    assert found == errors


def test_resolve_groups_leaves_node_overlaps_to_the_machineconfig_operator() -> None:
    """With MachineConfigPools a node is in one pool (MCO decides): only an MCP twice is an error."""
    nodes = [node("n1", **{ROLE + "worker": "", ROLE + "gpu": ""})]
    groups = [group(poolName="worker"), group(poolName="gpu")]
    resolved, found = nropspec.resolve_groups(nrop({"nodeGroups": groups}), [], nodes, node_overlap=False)
    assert [g.pool_name for g in resolved] == ["worker", "gpu"]
    assert found == []


# ----------------------------------------------------------------------------- scheduler


def nrs(spec: dict[str, Any], name: str = "numaresourcesscheduler") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("obj", "environ", "reason", "message"),
    [
        pytest.param(nrs({"imageSpec": "x"}, name="other"), {}, Reason.INCORRECT_NRS_NAME,
                     "incorrect NUMAResourcesScheduler resource name: other", id="wrong-name"),
        pytest.param(nrs({"imageSpec": "quay.io/openshift-kni/scheduler-plugins:4.12-snapshot"}), {},
                     Reason.INVALID_SCHEDULER_IMAGE,
                     'image "quay.io/openshift-kni/scheduler-plugins:4.12-snapshot" must be referenced by digest, not by tag',
                     id="tag"),
        pytest.param(nrs({"imageSpec": "quay.io/s@sha256:abc"}), {}, Reason.INVALID_SCHEDULER_IMAGE,
                     'has malformed digest "sha256:abc": expected sha256:<64 hex chars>', id="bad-digest"),
        pytest.param(nrs({"imageSpec": f"quay.io/s@{DIGEST}"}), {}, Reason.INVALID_SCHEDULER_IMAGE,
                     f'digest "{DIGEST}" is not in the trusted list. To extend the list, update the environment '
                     'variable "SCHEDULER_IMAGE_DIGESTS"', id="untrusted"),
        pytest.param(nrs({"imageSpec": "quay.io/s:1", "cacheResyncPeriod": "fast"}),
                     {"SCHEDULER_IMAGE_VALIDATION": "false"}, Reason.INTERNAL_ERROR,
                     'spec.cacheResyncPeriod: invalid duration "fast"', id="bad-period"),
        pytest.param(nrs({"imageSpec": "quay.io/s:1", "replicas": -1}), {"SCHEDULER_IMAGE_VALIDATION": "false"},
                     Reason.INTERNAL_ERROR, "spec.replicas: Invalid value: -1", id="negative-replicas"),
    ],
)  # fmt: skip
def test_invalid_nrs(obj: dict[str, Any], environ: dict[str, str], reason: str, message: str) -> None:
    step = nrsspec.validate(obj, nrsspec.ImageValidation(environ))
    assert step is not None
    assert (step.type, step.reason) == ("Degraded", reason)
    assert message in step.message


@pytest.mark.parametrize(
    ("image", "environ"),
    [
        pytest.param("localhost/numaresources-operator-tests:latest", {}, id="own-image"),
        pytest.param(
            "quay.io/openshift-kni/numaresources-operator-tests:4.20", {}, id="own-image-other-registry"
        ),
        pytest.param(
            f"quay.io/s@{DIGEST}", {"SCHEDULER_IMAGE_DIGESTS": f"sha256:{'b' * 64}, {DIGEST}"}, id="trusted"
        ),
        pytest.param("quay.io/s:tag", {"SCHEDULER_IMAGE_VALIDATION": "false"}, id="validation-off"),
    ],
)
def test_valid_nrs_images(image: str, environ: dict[str, str]) -> None:
    assert nrsspec.validate(nrs({"imageSpec": image}), nrsspec.ImageValidation(environ)) is None


def test_normalize_fills_upstream_defaults() -> None:
    spec = nrsspec.normalize({"imageSpec": "i", "scoringStrategy": {"resources": [{"name": "cpu"}]}})
    assert spec == {
        "imageSpec": "i",
        "schedulerName": "topo-aware-scheduler",
        "logLevel": "Normal",
        "cacheResyncPeriod": "5s",
        "cacheResyncDebug": "DumpJSONFile",
        "schedulerInformer": "Dedicated",
        "cacheResyncDetection": "Relaxed",
        "scoringStrategy": {"resources": [{"name": "cpu"}], "type": "LeastAllocated"},
    }
    assert nrsspec.status_period(spec) == "5s"
    assert nrsspec.status_period({**spec, "cacheResyncPeriod": "0s"}) is None


@pytest.mark.parametrize(
    ("requested", "control_plane", "workers", "expected"),
    [
        pytest.param(None, 1, 2, 1, id="one-control-plane"),
        pytest.param(None, 2, 2, 1, id="two-prefer-odd"),
        pytest.param(None, 3, 0, 3, id="three"),
        pytest.param(None, 5, 0, 3, id="capped"),
        pytest.param(None, 0, 4, 3, id="no-control-plane-uses-workers"),
        pytest.param(0, 1, 2, 0, id="explicit-zero"),
        pytest.param(1, 3, 0, 1, id="explicit"),
    ],
)
def test_compute_replicas(requested: int | None, control_plane: int, workers: int, expected: int) -> None:
    assert nrsspec.compute_replicas(requested, control_plane, workers) == expected


@pytest.mark.parametrize(
    ("requested", "control_plane", "workers", "message"),
    [
        pytest.param(
            2,
            1,
            5,
            "should not be greater than the number of the nodes with role control-plane",
            id="too-many",
        ),
        pytest.param(None, 0, 0, "no worker nodes found", id="no-nodes"),
    ],
)
def test_compute_replicas_errors(
    requested: int | None, control_plane: int, workers: int, message: str
) -> None:
    with pytest.raises(nrsspec.ReplicasError, match=message):
        nrsspec.compute_replicas(requested, control_plane, workers)


@pytest.mark.parametrize(("sent", "expected"), [(1.0, 1), (0.0, 0), (2, 2), (None, None)])
def test_normalize_makes_integral_replicas_an_int(sent: Any, expected: int | None) -> None:
    # Found by CR fuzzing: the schema admits `replicas: 1.0`, the Deployment's int32 field does not.
    spec = nrsspec.normalize({"imageSpec": "i", **({} if sent is None else {"replicas": sent})})
    assert spec.get("replicas") == expected and type(spec.get("replicas")) is type(expected)
