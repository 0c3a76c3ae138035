"""BeforeSuite/AfterSuite decisions of the suite (nrop.suite.install.infra, nrop.suite.install.stack): environment
switches, node-group pools, numacell manifests and readiness checks."""

from __future__ import annotations

import pytest

from nrop.api.images import DEFAULT_IMAGE
from nrop.suite.e2e import config as suite_config
from nrop.suite.install import infra, nodegroups, numacelldeploy, operatorenv, stack


@pytest.mark.parametrize(
    ("environ", "image", "skipped", "validation"),
    [
        pytest.param({}, suite_config.NUMACELL_IMAGE_CI, False, False, id="defaults"),
        pytest.param(
            {"E2E_NUMACELL_DEVICE_PLUGIN_URL": "legacy:1"}, "legacy:1", False, False, id="legacy-url"
        ),
        pytest.param(
            {"E2E_NUMACELL_DEVICE_PLUGIN_URL": "legacy:1", "E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN": "new:2"},
            "new:2",
            False,
            False,
            id="new-url-wins",
        ),
        pytest.param(
            {"E2E_NROP_INFRA_TEARDOWN_SKIP": ""}, suite_config.NUMACELL_IMAGE_CI, True, False, id="skip-empty"
        ),
        pytest.param(
            {"E2E_INFRA_NO_TEARDOWN": "1"}, suite_config.NUMACELL_IMAGE_CI, True, False, id="skip-legacy"
        ),
        pytest.param(
            {"E2E_VALIDATE_SCHEDULER_IMAGE": "true"},
            suite_config.NUMACELL_IMAGE_CI,
            False,
            True,
            id="validate",
        ),
        pytest.param(
            {"E2E_VALIDATE_SCHEDULER_IMAGE": "yes"},
            suite_config.NUMACELL_IMAGE_CI,
            False,
            False,
            id="not-true",
        ),
    ],
)
def test_environment_switches(environ, image, skipped, validation) -> None:
    assert suite_config.numacell_image(environ) == image
    assert infra.teardown_skipped(environ) is skipped
    assert infra.scheduler_image_validation_enabled(environ) is validation


def test_dump_environment_lists_only_e2e_nrop_and_rte() -> None:
    text = infra.dump_environment(
        {"E2E_NROP_VERBOSE": "4", "HOME": "/root", "E2E_RTE_CI_IMAGE": "x", "E2E_X": "y"}
    )
    assert text.splitlines() == [
        "E2E NROP environment variables dump BEGIN",
        "- E2E_NROP_VERBOSE=4",
        "- E2E_RTE_CI_IMAGE=x",
        "E2E NROP environment variables dump END",
    ]


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        pytest.param(
            nodegroups.NodeGroupPool("worker", {"node-role.kubernetes.io/worker": ""}),
            "node-role.kubernetes.io/worker=",
            id="empty-value",
        ),
        pytest.param(nodegroups.NodeGroupPool("p", {"b": "2", "a": "1"}), "a=1,b=2", id="sorted"),
        pytest.param(
            nodegroups.NodeGroupPool(
                "p",
                {"role": "tas"},
                (
                    {"key": "zone", "operator": "In", "values": ["y", "x"]},
                    {"key": "gpu", "operator": "NotIn", "values": ["no"]},
                    {"key": "ssd", "operator": "Exists"},
                    {"key": "old", "operator": "DoesNotExist"},
                ),
            ),
            # upstream's Selector.String(): requirements sorted by key, values sorted
            "gpu notin (no),!old,role=tas,ssd,zone in (x,y)",
            id="expressions",
        ),
    ],
)
def test_pool_selector_as_a_query(pool, expected) -> None:
    assert pool.selector == expected


MCPS = [
    {
        "metadata": {
            "name": "worker-cnf",
            "labels": {"pools.operator.machineconfiguration.openshift.io/worker-cnf": ""},
        },
        "spec": {"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker-cnf": ""}}},
    },
    {
        "metadata": {"name": "ssd", "labels": {"tas": "on"}},
        "spec": {"nodeSelector": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
    },
]


def test_node_group_pools() -> None:
    asked: list[dict] = []

    def find_mcps(selector: dict) -> list[dict]:
        asked.append(selector)
        wanted = selector["matchLabels"]
        return [m for m in MCPS if all(m["metadata"]["labels"].get(k) == v for k, v in wanted.items())]

    pools = nodegroups.node_group_pools(
        [
            {"poolName": "worker"},
            {"machineConfigPoolSelector": {"matchLabels": {"tas": "on"}}},
            {"poolName": "worker"},
        ],
        find_mcps,
    )
    assert [(p.name, p.selector) for p in pools] == [
        ("worker", "node-role.kubernetes.io/worker="),
        ("ssd", "ssd"),
    ]
    assert asked == [{"matchLabels": {"tas": "on"}}]
    assert nodegroups.pool_of_mcp(MCPS[0]).match_labels == {"node-role.kubernetes.io/worker-cnf": ""}
    with pytest.raises(infra.InfraError, match=r"spec.nodeGroups\[0\]: cannot autodetect"):
        nodegroups.node_group_pools([{"machineConfigPoolSelector": {"matchLabels": {"x": "y"}}}])


def test_numacell_manifests_for_the_own_image() -> None:
    pools = nodegroups.node_group_pools([{"poolName": "worker"}])
    program = numacelldeploy.numacell_program(DEFAULT_IMAGE)
    sa, role, binding, ds = numacelldeploy.numacell_manifests(
        "e2e-test-infra-42", pools, DEFAULT_IMAGE, program
    )
    assert [(m["kind"], m["metadata"]["name"]) for m in (sa, role, binding, ds)] == [
        ("ServiceAccount", "numacell-dp-sa"),
        ("Role", "numacell-dp-ro"),
        ("RoleBinding", "numacell-dp-rb"),
        ("DaemonSet", "numacell-dp-worker-ds"),
    ]
    spec = ds["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["name"] == "numacell-dp-worker-cnt"
    # upstream's DaemonSet; the project's image has the program on its PATH, not in /bin
    assert container["command"] == ["numacell"]
    assert container["args"] == ["-alsologtostderr", "-v", "3"]
    assert container["securityContext"] == {"privileged": True}
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/var/lib/kubelet/device-plugins"]
    assert [v["hostPath"]["path"] for v in spec["volumes"]] == ["/var/lib/kubelet/device-plugins"]
    assert spec["nodeSelector"] == {"node-role.kubernetes.io/worker": ""}
    assert spec["serviceAccountName"] == "numacell-dp-sa"
    assert ds["spec"]["selector"]["matchLabels"] == {"name": "numacell-dp-worker-pod"}


def test_numacell_manifests_for_the_upstream_image() -> None:
    pools = [nodegroups.pool_of_mcp(MCPS[1])]
    image = suite_config.NUMACELL_IMAGE_CI
    *_, ds = numacelldeploy.numacell_manifests("ns", pools, image, numacelldeploy.numacell_program(image))
    spec = ds["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert (container["command"], container["args"]) == (["/bin/numacell"], ["-alsologtostderr", "-v", "3"])
    assert [v["name"] for v in spec["volumes"]] == ["kubeletsockets"]
    assert "nodeSelector" not in spec
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}]


def _ds(generation: int = 1, **status: int) -> dict:
    return {"metadata": {"generation": generation}, "status": {"observedGeneration": 1, **status}}


@pytest.mark.parametrize(
    ("ds", "ready", "fully"),
    [
        pytest.param(None, False, False, id="missing"),
        pytest.param(_ds(), False, True, id="nothing-desired"),
        pytest.param(
            _ds(desiredNumberScheduled=2, currentNumberScheduled=2, numberAvailable=2, numberReady=2),
            True,
            True,
            id="ready",
        ),
        pytest.param(
            _ds(
                desiredNumberScheduled=2,
                currentNumberScheduled=2,
                numberAvailable=1,
                numberReady=1,
                numberUnavailable=1,
            ),
            False,
            False,
            id="one-unavailable",
        ),
        pytest.param(
            _ds(2, desiredNumberScheduled=2, currentNumberScheduled=2, numberAvailable=2, numberReady=2),
            False,
            False,
            id="stale-generation",
        ),
        pytest.param(
            _ds(
                desiredNumberScheduled=2,
                currentNumberScheduled=2,
                numberAvailable=2,
                numberReady=2,
                numberMisscheduled=1,
            ),
            True,
            False,
            id="misscheduled",
        ),
    ],
)
def test_daemonset_readiness(ds, ready, fully) -> None:
    assert numacelldeploy.daemonset_ready(ds) is ready
    assert stack.daemonset_fully_ready(ds) is fully


def _zone(*names: str, allocatable: str = "1") -> dict:
    return {
        "name": "node-0",
        "type": "Node",
        "resources": [
            {"name": n, "capacity": "1", "allocatable": allocatable, "available": allocatable} for n in names
        ],
    }


@pytest.mark.parametrize(
    ("zones", "expected"),
    [
        pytest.param([], False, id="no-zones"),
        pytest.param(
            [_zone("cpu", "kni.node/numacell00"), _zone("kni.node/numacell01")], True, id="every-zone"
        ),
        pytest.param([_zone("cpu", "kni.node/numacell00"), _zone("cpu")], False, id="one-zone-without"),
        pytest.param(
            [_zone("kni.node/numacell00", allocatable="0"), _zone("kni.node/numacell01")],
            False,
            id="departed-plugin-nothing-allocatable",
        ),
    ],
)
def test_zones_expose_numacell(zones, expected) -> None:
    assert numacelldeploy.zones_expose_numacell({"metadata": {"name": "w0"}, "zones": zones}) is expected


def _conds(**statuses: str) -> dict:
    return {"status": {"conditions": [{"type": k, "status": v} for k, v in statuses.items()]}}


@pytest.mark.parametrize(
    ("obj", "healthy"),
    [
        pytest.param(
            _conds(Available="True", Upgradeable="True", Degraded="False", Progressing="False"),
            True,
            id="healthy",
        ),
        pytest.param(
            _conds(Available="True", Upgradeable="True", Degraded="False"), False, id="progressing-missing"
        ),
        pytest.param(
            _conds(Available="True", Upgradeable="True", Degraded="True", Progressing="False"),
            False,
            id="degraded",
        ),
        pytest.param(
            _conds(Available="False", Upgradeable="True", Degraded="False", Progressing="False"),
            False,
            id="unavailable",
        ),
        pytest.param({}, False, id="no-status"),
    ],
)
def test_scheduler_healthy(obj, healthy) -> None:
    assert stack.scheduler_healthy(obj) is healthy


def test_deployment_ready() -> None:
    dp = {
        "metadata": {"generation": 2},
        "spec": {"replicas": 1},
        "status": {"observedGeneration": 2, "updatedReplicas": 1, "readyReplicas": 1, "replicas": 1},
    }
    assert stack.deployment_ready(dp)
    assert not stack.deployment_ready({**dp, "status": {**dp["status"], "replicas": 2}}), (
        "an old pod is still there"
    )
    assert not stack.deployment_ready(None)


def test_install_crs_from_the_samples() -> None:
    nrop = stack.nrop_manifest("worker")
    assert nrop["metadata"]["name"] == "numaresourcesoperator"
    assert nrop["spec"]["nodeGroups"] == [{"poolName": "worker"}]
    assert nrop["spec"]["logLevel"] == "Debug"
    nrs = stack.nrosched_manifest("example.com/sched:1")
    assert (nrs["metadata"]["name"], nrs["spec"]["imageSpec"]) == (
        "numaresourcesscheduler",
        "example.com/sched:1",
    )


@pytest.mark.parametrize(
    ("environ", "pool"),
    [
        pytest.param({}, "worker", id="default"),
        pytest.param({"E2E_NODE_ROLE": "master"}, "master", id="compact"),
        pytest.param({"E2E_NODE_ROLE": ""}, "worker", id="empty"),
    ],
)
def test_node_role(environ, pool) -> None:
    assert stack.node_role(environ) == pool


def test_refresh_period_goes_to_the_node_group_config() -> None:
    nrop = stack.nrop_manifest("worker", refresh_period="2s")
    assert nrop["spec"]["nodeGroups"] == [{"poolName": "worker", "config": {"infoRefreshPeriod": "2s"}}]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param([], [{"name": "X", "value": "false"}], id="append"),
        pytest.param(
            [{"name": "A", "value": "1"}, {"name": "X", "value": "true"}],
            [{"name": "A", "value": "1"}, {"name": "X", "value": "false"}],
            id="replace-in-place",
        ),
        pytest.param(
            [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            [{"name": "X", "value": "false"}],
            id="valueFrom-replaced",
        ),
    ],
)
def test_with_env(env, expected) -> None:
    assert operatorenv.with_env(env, "X", "false") == expected
    assert operatorenv.has_env(expected, "X", "false")


def _sub(sub_name: str, **spec: str) -> dict:
    return {"metadata": {"name": sub_name}, "spec": spec}


@pytest.mark.parametrize(
    ("subs", "environ", "found"),
    [
        pytest.param([], {}, None, id="no-olm"),
        pytest.param(
            [_sub("a", name="other"), _sub("b", name="numaresources-operator")], {}, "b", id="by-spec-name"
        ),
        pytest.param([_sub("c", package="numaresources-operator")], {}, "c", id="by-package"),
        pytest.param(
            [_sub("b", name="numaresources-operator"), _sub("mine", name="x")],
            {"E2E_OPERATOR_SUBSCRIPTION_NAME": "mine"},
            "mine",
            id="by-env-name",
        ),
        pytest.param(
            [_sub("b", name="numaresources-operator")],
            {"E2E_OPERATOR_SUBSCRIPTION_NAME": "absent"},
            "b",
            id="env-name-absent-falls-back",
        ),
    ],
)
def test_find_subscription(subs, environ, found) -> None:
    sub = operatorenv.find_subscription(subs, environ)
    assert (sub["metadata"]["name"] if sub else None) == found


@pytest.mark.parametrize(
    ("environ", "ours", "image"),
    [
        pytest.param({}, None, suite_config.NUMACELL_IMAGE_CI, id="foreign-stack"),
        pytest.param({}, "localhost/nrop:latest", "localhost/nrop:latest", id="our-stack"),
        pytest.param(
            {"E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN": "x/numacell:1"},
            "localhost/nrop:latest",
            "x/numacell:1",
            id="explicit",
        ),
    ],
)
def test_numacell_image_is_ours_where_our_stack_runs_unless_chosen(
    environ: dict[str, str], ours: str | None, image: str
) -> None:
    assert suite_config.numacell_image(environ, ours) == image


def test_olm_manifests_carry_the_direct_install_deployment() -> None:
    from nrop.operator.decisions.manifests import install_manifests

    direct = install_manifests("ns", "img:1")
    (deployment,) = [m for m in direct if m["kind"] == "Deployment"]
    olm = stack.olm_manifests("ns", "img:1", {"B": "2", "A": "1"})
    assert [m["kind"] for m in olm] == [
        *(m["kind"] for m in direct if m is not deployment),
        "OperatorGroup",
        "Subscription",
        "ClusterServiceVersion",
    ]
    group, sub, csv = olm[-3:]
    assert group["spec"]["targetNamespaces"] == ["ns"]
    assert sub["metadata"] == {"name": "numaresources-operator", "namespace": "ns"}
    assert sub["spec"]["name"] == "numaresources-operator"
    assert sub["spec"]["startingCSV"] == csv["metadata"]["name"] == stack.csv_name()
    assert sub["spec"]["config"]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert csv["spec"]["install"]["strategy"] == "deployment"
    assert csv["spec"]["install"]["spec"]["deployments"] == [
        {
            "name": stack.OPERATOR_DEPLOYMENT,
            "label": deployment["metadata"]["labels"],
            "spec": deployment["spec"],
        }
    ]


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        pytest.param(None, "", id="absent"),
        pytest.param({"status": {}}, "", id="no-phase"),
        pytest.param({"status": {"phase": "Succeeded"}}, "Succeeded", id="phase"),
    ],
)
def test_csv_phase(phase, expected) -> None:
    assert stack.csv_phase(phase) == expected


@pytest.mark.parametrize(
    ("env", "pairs"),
    [
        pytest.param([], [], id="empty"),
        pytest.param([{"name": "A", "value": "1"}], [("A", "1")], id="value"),
        pytest.param(
            [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
            [("N", "")],
            id="valueFrom-reads-empty",
        ),
    ],
)
def test_env_pairs(env, pairs) -> None:
    assert operatorenv.env_pairs(env) == pairs
