"""The embedded MachineConfig operator's decisions: pools, overlays, rendered names, roll-out, status.

Tables over :mod:`nrop.localcluster.controllers.decisions.machineconfigs` (the controller itself runs in
``tests/conformance/test_machineconfig_operator.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.controllers.decisions import machineconfigs as mc
from nrop.localcluster.controllers.machineconfigoperator import (
    booted_specs,
    default_pools,
    initial_kubeletconfig,
    tuned_pool_members,
)
from nrop.localcluster.profiles import load_profile

NOW = "2026-01-01T00:00:00Z"
WORKER_SPEC = next(s for s in load_profile("default").nodes() if s.name == "worker-0")


def pool(name: str, node_selector: dict[str, Any] | None, labels: dict[str, str] | None = None) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}, "generation": 3},
        "spec": {"nodeSelector": node_selector},
    }


def role(name: str) -> dict[str, Any]:
    return {"matchLabels": {f"node-role.kubernetes.io/{name}": ""}}


POOLS = [
    pool("master", role("master")),
    pool("worker", role("worker")),
    pool("a", role("a")),
    pool("b", role("b")),
]
W, M, A, B = ({f"node-role.kubernetes.io/{r}": ""} for r in ("worker", "master", "a", "b"))


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(W, ("worker", ""), id="worker"),
        pytest.param({**W, **A}, ("a", ""), id="custom-wins-over-worker"),
        pytest.param({**M, **W}, ("master", ""), id="master-wins-over-worker"),
        pytest.param({**M, **A}, ("master", ""), id="master-wins-over-custom"),
        pytest.param(
            {**W, **A, **B},
            (None, "belongs to 2 custom roles, cannot proceed with this Node"),
            id="two-custom-pools",
        ),
        pytest.param({"node-role.kubernetes.io/control-plane": ""}, (None, ""), id="no-pool"),
    ],
)
def test_pool_of_node(labels: dict[str, str], expected: tuple[str | None, str]) -> None:
    assert mc.pool_of_node(labels, POOLS) == expected


@pytest.mark.parametrize(
    ("payloads", "expected"),
    [
        pytest.param([], {}, id="none"),
        pytest.param([{"topologyManagerScope": "pod"}], {"topologyManagerScope": "pod"}, id="one"),
        pytest.param(
            [{"topologyManagerScope": "pod"}, {"topologyManagerScope": "container"}],
            {"topologyManagerScope": "container"},
            id="later-wins",
        ),
        pytest.param(
            [{"evictionHard": {"memory.available": "100Mi"}}, {"evictionHard": {"nodefs.available": "5%"}}],
            {"evictionHard": {"memory.available": "100Mi", "nodefs.available": "5%"}},
            id="maps-merge-key-by-key",
        ),
        pytest.param(
            [{"reservedMemory": [{"numaNode": 0}]}, {"reservedMemory": [{"numaNode": 1}]}],
            {"reservedMemory": [{"numaNode": 1}]},
            id="lists-replace",
        ),
    ],
)
def test_merge_payloads(payloads: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert mc.merge_payloads(payloads) == expected


def test_an_empty_overlay_gives_the_profile_configuration_back() -> None:
    assert mc.overlay_kubelet(WORKER_SPEC, {}) == WORKER_SPEC.kubelet


@pytest.mark.parametrize(
    ("overlay", "field", "value"),
    [
        pytest.param(
            {"topologyManagerScope": "container"}, "topology_manager_scope", "container", id="scope"
        ),
        pytest.param({"topologyManagerPolicy": "none"}, "topology_manager_policy", "none", id="policy"),
        pytest.param({"cpuManagerReconcilePeriod": "5s"}, "cpu_manager_policy", "static", id="ignored-field"),
        pytest.param(
            {"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}},
            "cpu_manager_policy_options",
            {"full-pcpus-only": "true"},
            id="options",
        ),
        pytest.param(
            {  # the install suite's kc-test payload (objects.TestKC)
                "cpuManagerPolicy": "static",
                "cpuManagerReconcilePeriod": "5s",
                "reservedSystemCPUs": "0,1",
                "memoryManagerPolicy": "Static",
                "systemReserved": {"memory": "512Mi"},
                "kubeReserved": {"memory": "512Mi"},
                "evictionHard": {"memory.available": "100Mi"},
                "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
                "topologyManagerPolicy": "single-numa-node",
                "topologyManagerScope": "pod",
            },
            "reserved_system_cpus",
            "0,1",
            id="test-kc",
        ),
    ],
)
def test_overlay_kubelet(overlay: dict[str, Any], field: str, value: Any) -> None:
    assert getattr(mc.overlay_kubelet(WORKER_SPEC, overlay), field) == value


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        pytest.param(
            {"podsPerCore": 4},
            "fields not supported by the embedded cluster's kubelets: podsPerCore",
            id="unknown",
        ),
        pytest.param({"topologyManagerScope": "numa"}, "topologyManagerScope", id="refused-scope"),
        pytest.param(
            {"memoryManagerPolicy": "Static", "reservedMemory": []}, "reserved", id="refused-memory"
        ),
    ],
)
def test_overlay_kubelet_rejects(overlay: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mc.overlay_kubelet(WORKER_SPEC, overlay)


def test_rendered_name_is_per_pool_and_content() -> None:
    name = mc.rendered_name("worker", {"a": 1, "b": 2})
    assert name.startswith("rendered-worker-") and len(name) == len("rendered-worker-") + 32
    assert name == mc.rendered_name("worker", {"b": 2, "a": 1})
    assert name != mc.rendered_name("worker", {"a": 1})
    assert name != mc.rendered_name("master", {"a": 1, "b": 2})


def test_machine_config_objects_join_the_pools_that_select_them() -> None:
    def obj(name: str, role: str, spec: dict | None = None, deleting: bool = False) -> dict:
        meta = {"name": name, "labels": {"machineconfiguration.openshift.io/role": role}}
        if deleting:
            meta["deletionTimestamp"] = "2026-11-29T10:00:00Z"
        return {"metadata": meta, "spec": spec or {}}

    objects = [obj("51-x-test", "mcp-test"), obj("50-w", "worker"), obj("52-gone", "worker", deleting=True)]
    expressions = {"matchExpressions": [{"key": "machineconfiguration.openshift.io/role", "operator": "In",
                                         "values": ["mcp-test", "worker"]}]}  # fmt: skip
    test_pool = {"metadata": {"name": "mcp-test"}, "spec": {"machineConfigSelector": expressions}}
    worker = {"metadata": {"name": "worker"}, "spec": {"machineConfigSelector": {"matchLabels": {
        "machineconfiguration.openshift.io/role": "worker"}}}}  # fmt: skip
    selected = mc.selected_machine_configs(test_pool, objects)
    assert [m["metadata"]["name"] for m in selected] == ["50-w", "51-x-test"]
    assert [m["metadata"]["name"] for m in mc.selected_machine_configs(worker, objects)] == ["50-w"]
    assert mc.selected_machine_configs({"metadata": {"name": "p"}, "spec": {}}, objects) == []
    # the objects are part of the rendered config: their names and content change its name
    assert mc.rendered_name("mcp-test", {}, selected) != mc.rendered_name("mcp-test", {})
    changed = [selected[0], obj("51-x-test", "mcp-test", {"kernelArguments": ["a"]})]
    assert mc.rendered_name("mcp-test", {}, selected) != mc.rendered_name("mcp-test", {}, changed)
    assert mc.generated_sources("mcp-test", 1, ["51-x-test"]) == [
        "00-mcp-test",
        "01-mcp-test-kubelet",
        "51-x-test",
        "99-mcp-test-generated-kubelet",
    ]


def kc(name: str, selector: dict[str, Any] | None, payload: dict[str, Any] | None = None) -> dict:
    spec: dict[str, Any] = {"machineConfigPoolSelector": selector}
    if payload is not None:
        spec["kubeletConfig"] = payload
    return {"metadata": {"name": name}, "spec": spec}


WORKER_POOL = {"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}}


@pytest.mark.parametrize(
    ("obj", "pools", "problem"),
    [
        pytest.param(kc("k", WORKER_POOL, {"topologyManagerScope": "pod"}), ["worker"], "", id="ok"),
        pytest.param(
            kc("k", WORKER_POOL),
            [],
            "could not find any MachineConfigPool set for KubeletConfig k",
            id="no-pool",
        ),
        pytest.param(
            kc("k", WORKER_POOL, {"podsPerCore": 1}),
            ["worker"],
            "KubeletConfiguration for pool worker (node worker-0): fields not supported by the embedded "
            "cluster's kubelets: podsPerCore",
            id="not-expressible",
        ),
        pytest.param(kc("k", WORKER_POOL, {"podsPerCore": 1}), ["empty"], "", id="pool-without-nodes"),
    ],
)
def test_kubeletconfig_problem(obj: dict, pools: list[str], problem: str) -> None:
    assert mc.kubeletconfig_problem(obj, pools, {"worker": [WORKER_SPEC]}) == problem


def test_kubeletconfig_pools_match_pool_labels() -> None:
    pools = default_pools()
    assert mc.kubeletconfig_pools(kc("k", WORKER_POOL), pools) == ["worker"]
    assert mc.kubeletconfig_pools(kc("k", {}), pools) == ["master", "worker"]
    assert mc.kubeletconfig_pools(kc("k", None), pools) == []


@pytest.mark.parametrize(
    ("problem", "expected"),
    [
        pytest.param("", ("Success", "True", "Success"), id="success"),
        pytest.param("bad", ("Failure", "False", "Error: bad"), id="failure"),
    ],
)
def test_kubeletconfig_condition(problem: str, expected: tuple[str, str, str]) -> None:
    cond = mc.kubeletconfig_condition(problem, NOW)
    assert (cond["type"], cond["status"], cond["message"]) == expected


def st(name: str, current: str, desired: str, state: str = mc.STATE_DONE, ready: bool = True) -> mc.NodeState:
    return mc.NodeState(name, current, desired, state, ready)


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param([st("a", "old", "old"), st("b", "old", "old")], ["a"], id="one-at-a-time"),
        pytest.param([st("a", "old", "new", mc.STATE_WORKING), st("b", "old", "old")], [], id="one-updating"),
        pytest.param([st("a", "new", "new"), st("b", "old", "old")], ["b"], id="next-after-first"),
        pytest.param([st("a", "new", "new"), st("b", "new", "new")], [], id="all-updated"),
        pytest.param([st("a", "old", "old", ready=False), st("b", "old", "old")], [], id="not-ready-counts"),
    ],
)
def test_nodes_to_update(nodes: list[mc.NodeState], expected: list[str]) -> None:
    assert mc.nodes_to_update(nodes, "new") == expected


@pytest.mark.parametrize(
    ("nodes", "counts", "updated", "configuration"),
    [
        pytest.param(
            [st("a", "new", "new"), st("b", "new", "new")], (2, 2, 2, 0), "True", "new", id="updated"
        ),
        pytest.param(
            [st("a", "new", "new"), st("b", "old", "new", mc.STATE_WORKING)],
            (2, 1, 1, 1),
            "False",
            "old",
            id="updating",
        ),
        pytest.param([], (0, 0, 0, 0), "True", "new", id="empty-pool"),
    ],
)
def test_pool_status(
    nodes: list[mc.NodeState], counts: tuple[int, int, int, int], updated: str, configuration: str
) -> None:
    mcp = pool("worker", role("worker"))
    mcp["status"] = {"configuration": {"name": "old"}}
    status = mc.pool_status(mcp, nodes, "new", ["00-worker"], NOW)
    assert (
        status["machineCount"],
        status["updatedMachineCount"],
        status["readyMachineCount"],
        status["unavailableMachineCount"],
    ) == counts
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["Updated"] == updated
    assert conditions["Updating"] == ("False" if updated == "True" else "True")
    assert conditions["Degraded"] == "False"
    assert status["configuration"]["name"] == configuration
    assert status["observedGeneration"] == 3


@pytest.mark.parametrize(
    ("profile", "members"),
    [
        ("default", {"worker": ["worker-0", "worker-1"]}),
        ("mno", {"worker": ["worker-0", "worker-1"]}),
        ("compact", {"master": ["master-0", "master-1", "master-2"]}),
        (
            "mno-masters-schedulable",
            {"master": ["master-0", "master-1", "master-2"], "worker": ["worker-0", "worker-1"]},
        ),
    ],
)
def test_the_pools_a_numa_tuned_cluster_gives_a_kubeletconfig(
    profile: str, members: dict[str, list[str]]
) -> None:
    found = tuned_pool_members(load_profile(profile).nodes())
    assert {pool: [s.name for s in nodes] for pool, nodes in found.items()} == members
    if "master" in found:
        kc = initial_kubeletconfig(found["master"][0], "master")
        assert kc["metadata"]["name"] == "master-numa-topology"
        assert kc["spec"]["machineConfigPoolSelector"] == {
            "matchLabels": {"pools.operator.machineconfiguration.openshift.io/master": ""}
        }


INTERMEDIATE_IANA = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
]


@pytest.mark.parametrize(
    ("profile", "payload"),
    [
        (None, {"tlsMinVersion": "VersionTLS12", "tlsCipherSuites": INTERMEDIATE_IANA}),
        (
            {"type": "Intermediate", "intermediate": {}},
            {"tlsMinVersion": "VersionTLS12", "tlsCipherSuites": INTERMEDIATE_IANA},
        ),
        (
            {"type": "Modern", "modern": {}},
            {"tlsMinVersion": "VersionTLS13", "tlsCipherSuites": INTERMEDIATE_IANA[:3]},
        ),
        # MCO: a Custom profile without its spec, or an unknown type, falls back to Intermediate
        ({"type": "Custom"}, {"tlsMinVersion": "VersionTLS12", "tlsCipherSuites": INTERMEDIATE_IANA}),
        ({"type": "Unheard"}, {"tlsMinVersion": "VersionTLS12", "tlsCipherSuites": INTERMEDIATE_IANA}),
        # OpenSSL names become IANA ones; a suite Go lacks (DHE) is dropped
        (
            {
                "type": "Custom",
                "custom": {
                    "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES128-GCM-SHA256"],
                    "minTLSVersion": "VersionTLS11",
                },
            },
            {"tlsMinVersion": "VersionTLS11", "tlsCipherSuites": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]},
        ),
    ],
)
def test_the_kubelet_tls_settings_mco_renders_for_a_profile(profile: Any, payload: dict[str, Any]) -> None:
    assert mc.tls_payload(profile) == payload


@pytest.mark.parametrize(
    ("fields", "kept"),
    [
        pytest.param({"topologyManagerPolicy": "none"}, {"topologyManagerPolicy": "none"}, id="set"),
        pytest.param({"syncFrequency": "0s", "containerRuntimeEndpoint": "", "maxPods": 0}, {}, id="zero-scalars"),
        pytest.param({"failSwapOn": False, "maxPods": 110}, {"failSwapOn": False, "maxPods": 110}, id="false-is-set"),
        pytest.param(
            {"authentication": {"x509": {}, "webhook": {"cacheTTL": "0s"}, "anonymous": {}}, "memorySwap": {}}, {},
            id="structs-of-zeros",
        ),
        pytest.param(
            {"logging": {"flushFrequency": 0, "verbosity": 4, "options": {"json": {"infoBufferSize": "0"}}}},
            {"logging": {"verbosity": 4}}, id="a-struct-keeps-what-is-set",
        ),
        pytest.param({"reservedSystemCPUs": "0", "evictionHard": {"memory.available": "100Mi"}},
                     {"evictionHard": {"memory.available": "100Mi"}}, id="zero-quantity"),
        pytest.param({"allowedUnsafeSysctls": [], "clusterDNS": ["10.0.0.10"]}, {"clusterDNS": ["10.0.0.10"]}, id="lists"),
    ],
)  # fmt: skip
def test_kubeletconfig_fields_without_go_zero_values(fields: dict[str, Any], kept: dict[str, Any]) -> None:
    assert mc.without_zero_values(fields) == kept


def test_a_kubeletconfig_a_go_client_wrote_back_renders_what_it_sets() -> None:
    # what upstream's suite writes after reading worker-numa-topology into Go structs
    written = {
        "syncFrequency": "0s", "authentication": {"x509": {}, "webhook": {"cacheTTL": "0s"}, "anonymous": {}},
        "authorization": {"webhook": {"cacheAuthorizedTTL": "0s", "cacheUnauthorizedTTL": "0s"}},
        "topologyManagerPolicy": "none", "topologyManagerScope": "pod", "memorySwap": {},
        "logging": {"flushFrequency": 0, "verbosity": 0, "options": {"text": {"infoBufferSize": "0"}}},
        "crashLoopBackOff": {}, "containerRuntimeEndpoint": "",
    }  # fmt: skip
    kc = {"metadata": {"name": "worker-numa-topology"}, "spec": {"kubeletConfig": written}}
    assert mc.payload_of(kc) == {"topologyManagerPolicy": "none", "topologyManagerScope": "pod"}
    worker = next(s for s in load_profile("default").nodes() if s.name == "worker-0")
    assert mc.kubeletconfig_problem(kc, ["worker"], {"worker": [worker]}) == ""


def test_a_kubeletconfig_tls_profile_overrides_the_clusters() -> None:
    kc = {"spec": {"kubeletConfig": {"maxPods": 200}, "tlsSecurityProfile": {"type": "Modern", "modern": {}}}}
    assert mc.payload_of(kc) == {"maxPods": 200, **mc.tls_payload({"type": "Modern"})}


def test_nodes_boot_with_the_clusters_initial_tls_and_a_profile_change_renders_anew() -> None:
    booted = booted_specs(load_profile("default").nodes())
    worker = next(s for s in booted if s.name == "worker-0")
    assert worker.kubelet.tls_min_version == "VersionTLS12"
    assert list(worker.kubelet.tls_cipher_suites) == INTERMEDIATE_IANA
    intermediate = mc.merge_payloads([mc.tls_payload(None)])
    modern = mc.merge_payloads([mc.tls_payload({"type": "Modern"})])
    assert mc.rendered_name("worker", intermediate) != mc.rendered_name("worker", modern)
    # the node as booted already runs the pool's Intermediate rendering: nothing rolls at start
    assert mc.overlay_kubelet(worker, intermediate) == worker.kubelet
    assert mc.overlay_kubelet(worker, modern).tls_min_version == "VersionTLS13"


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ({"tlsMinVersion": "VersionTLS14"}, 'unknown tls version "VersionTLS14"'),
        ({"tlsCipherSuites": ["TLS_NOPE"]}, "Cipher suite TLS_NOPE not supported or doesn't exist"),
    ],
)
def test_a_kubelet_refuses_unknown_tls_settings(overlay: dict[str, Any], message: str) -> None:
    worker = next(s for s in load_profile("default").nodes() if s.name == "worker-0")
    with pytest.raises(ValueError, match=message):
        mc.overlay_kubelet(worker, overlay)
