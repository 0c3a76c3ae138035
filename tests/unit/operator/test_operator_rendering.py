"""Rendering: install manifests, the exporter objects and flags, the scheduler objects and configuration."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nrop.api import crds, tlsprofiles
from nrop.localcluster.apiserver.crd.schema import validate_crd
from nrop.operator import main, samples
from nrop.operator.decisions import naming, nropspec, nrsspec, rtemanifests, schedmanifests
from nrop.operator.decisions.manifests import OPERATOR_RULES, install_manifests
from nrop.sched.config import configuration as schedconfig
from nrop.sched.framework import registry

NROP = {
    "metadata": {"name": "numaresourcesoperator", "uid": "u1"},
    "spec": {"nodeGroups": [{"poolName": "worker"}]},
}
NRS = {"metadata": {"name": "numaresourcesscheduler", "uid": "u2"}, "spec": {"imageSpec": "quay.io/x/numaresources-operator-tests:1"}}  # fmt: skip


def by_kind(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


# ----------------------------------------------------------------------------- install


def test_install_manifests_names_and_env() -> None:
    objects = install_manifests(
        "ns1", "reg/numaresources-operator-tests:v", {"SCHEDULER_IMAGE_VALIDATION": "false"}
    )
    assert [o["kind"] for o in objects] == [
        "CustomResourceDefinition", "CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole",
        "ClusterRoleBinding", "Role", "RoleBinding", "Deployment",
    ]  # fmt: skip
    deployment = by_kind(objects)[("Deployment", "numaresources-controller-manager")]
    assert deployment["metadata"]["namespace"] == "ns1"
    assert deployment["metadata"]["labels"] == {
        "app": "numaresources-operator",
        "control-plane": "controller-manager",
    }
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"]["app"] == "numaresources-operator"
    container = template["spec"]["containers"][0]
    assert (container["name"], container["image"], container["command"]) == (
        "manager", "reg/numaresources-operator-tests:v", ["numaresources-operator"]
    )  # fmt: skip
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["SCHEDULER_IMAGE_VALIDATION"] == "false"
    assert env["NROP_OPERATOR_IMAGE"] == "reg/numaresources-operator-tests:v"
    assert {p["containerPort"] for p in container["ports"]} == {8080, 8081}
    binding = by_kind(objects)[("ClusterRoleBinding", "numaresources-controller-manager")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "numaresources-controller-manager", "namespace": "ns1"}
    ]


@pytest.mark.parametrize("name", ["numaresourcesoperator", "numaresourcesscheduler"])
def test_crds_are_valid_singletons(name: str) -> None:
    crd = crds.load(name)
    assert validate_crd(crd) == []
    version = crd["spec"]["versions"][0]
    assert crd["spec"]["scope"] == "Cluster" and version["subresources"] == {"status": {}}
    rule = version["schema"]["openAPIV3Schema"]["x-kubernetes-validations"][0]
    assert rule["rule"] == f"has(self.metadata.name) && self.metadata.name == '{name}'"
    assert rule["message"] == f"This is a singleton resource and the object name must be '{name}'."


@pytest.mark.parametrize("kind", ["NUMAResourcesOperator", "NUMAResourcesScheduler"])
def test_samples(kind: str) -> None:
    sample = samples.load(kind)
    assert sample["kind"] == kind and sample["apiVersion"] == "nodetopology.openshift.io/v1"
    assert sample["metadata"]["name"] in ("numaresourcesoperator", "numaresourcesscheduler")
    sample["metadata"]["name"] = "changed"
    assert samples.load(kind)["metadata"]["name"] != "changed"


def test_sample_nrop_node_groups() -> None:
    assert samples.load("NUMAResourcesOperator")["spec"]["nodeGroups"] == [{"poolName": "worker"}]


def test_render_cli_prints_install_manifests(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main.main(
            ["render", "--namespace", "n2", "--image", "img", "--env", "EXPORTER_IMAGE_RESTRICTION=false"]
        )
        == 0
    )
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs == install_manifests("n2", "img", {"EXPORTER_IMAGE_RESTRICTION": "false"})


def test_inspect_features(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["--inspect-features"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metadata"] == {"version": "v5.0.0"}
    assert "wlplacement" in out["active"] and len(out["active"]) == 26


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["version"]) == 0
    assert capsys.readouterr().out.startswith("numaresources-operator ")


# ----------------------------------------------------------------------------- exporters


def cfg(**fields: Any) -> dict[str, Any]:
    return nropspec.effective_config(fields)


@pytest.mark.parametrize(
    ("config", "level", "present", "absent"),
    [
        pytest.param(cfg(), "Normal",
                     ["-v=2", "--sleep-interval=10s", "--pods-fingerprint=true", "--refresh-node-resources", "--add-nrt-owner=false",
                      "--pods-fingerprint-method=with-exclusive-resources"],
                     ["--no-publish"], id="defaults"),
        pytest.param(cfg(infoRefreshMode="Events"), "Debug", ["-v=4", "--sleep-interval=0s", "--notify-file=/run/rte/notify"],
                     [], id="events"),
        pytest.param(cfg(infoRefreshMode="PeriodicAndEvents", infoRefreshPeriod="1m30s"), "Trace",
                     ["-v=6", "--sleep-interval=1m30s", "--notify-file=/run/rte/notify"], [], id="both"),
        pytest.param(cfg(infoRefreshMode="Periodic"), "TraceAll", ["-v=8"], ["--notify-file=/run/rte/notify"],
                     id="periodic"),
        pytest.param(cfg(podsFingerprinting="Enabled"), "Normal", ["--pods-fingerprint-method=all"], [], id="pfp-all"),
        pytest.param(cfg(podsFingerprinting="Disabled"), "Normal", ["--pods-fingerprint=false"],
                     ["--pods-fingerprint=true"], id="pfp-off"),
        pytest.param(cfg(infoRefreshPause="Enabled"), "Normal", ["--no-publish"], [], id="paused"),
    ],
)  # fmt: skip
def test_exporter_args(config: dict[str, Any], level: str, present: list[str], absent: list[str]) -> None:
    args = rtemanifests.exporter_args(config, level)
    assert set(present) <= set(args), args
    assert not set(absent) & set(args), args


def test_exporter_objects() -> None:
    group = nropspec.NodeGroup(
        "worker", {"node-role.kubernetes.io/worker": ""},
        cfg(tolerations=[{"key": "k", "effect": "NoSchedule"}]),
    )  # fmt: skip
    kubelets = {"worker": rtemanifests.KubeletSettings("single-numa-node", "pod")}
    nrop = {**NROP, "spec": {**NROP["spec"], "podExcludes": [{"namespace": "kube-*", "name": "x"}]}}
    objects = by_kind(rtemanifests.render(nrop, [group], kubelets, "ns", "img"))
    cm = objects[("ConfigMap", "numaresourcesoperator-worker")]
    labels = cm["metadata"]["labels"]
    assert labels["numaresourcesoperator.nodetopology.openshift.io/name"] == "numaresourcesoperator"
    assert labels["nodegroup.nodetopology.openshift.io/machineconfigpool"] == "worker"
    assert yaml.safe_load(cm["data"]["config.yaml"]) == {
        "kubelet": {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"},
        "podExclude": [{"namespacePattern": "kube-*", "namePattern": "x"}],
    }
    ds = objects[("DaemonSet", "numaresourcesoperator-worker")]
    pod = ds["spec"]["template"]
    assert pod["metadata"]["labels"]["name"] == "resource-topology"
    assert ds["spec"]["selector"]["matchLabels"] == pod["metadata"]["labels"]
    container = pod["spec"]["containers"][0]
    assert (container["name"], container["image"], container["command"]) == (
        "resource-topology-exporter", "img", ["resource-topology-exporter"]
    )  # fmt: skip
    assert pod["spec"]["nodeSelector"] == {"node-role.kubernetes.io/worker": ""}
    assert pod["spec"]["tolerations"] == [{"key": "k", "effect": "NoSchedule", "operator": "Equal"}]
    assert pod["spec"]["serviceAccountName"] == "rte"
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    host_paths = {v["hostPath"]["path"] for v in pod["spec"]["volumes"] if "hostPath" in v}
    assert host_paths == {"/sys", "/var/lib/kubelet/pod-resources", "/run/rte"}
    assert ds["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert {("ServiceAccount", "rte"), ("ClusterRole", "rte"), ("ClusterRoleBinding", "rte"), ("Role", "rte"),
            ("RoleBinding", "rte")} <= set(objects)  # fmt: skip


def test_exporters_of_two_groups_never_share_a_node() -> None:
    """Upstream's DaemonSetAffinitySettings and DaemonSetRolloutSettings: every group's exporter
    pods repel one another per host (the base template's labels, not the group's), rolled 25% at once."""
    groups = [nropspec.NodeGroup(pool, {}, cfg()) for pool in ("master", "worker")]
    objects = by_kind(rtemanifests.render(NROP, groups, {}, "ns", "img"))
    for pool in ("master", "worker"):
        ds = objects[("DaemonSet", f"numaresourcesoperator-{pool}")]
        assert ds["spec"]["updateStrategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%"},
        }
        anti = ds["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        assert anti["requiredDuringSchedulingIgnoredDuringExecution"] == [
            {
                "labelSelector": {"matchLabels": {"name": "resource-topology"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]


@pytest.mark.parametrize(
    ("mode", "certs"),
    [pytest.param("disabled", False, id="disabled"), pytest.param("http", False, id="http"),
     pytest.param("httptls", True, id="httptls")],
)  # fmt: skip
def test_exporter_metrics_modes(mode: str, certs: bool) -> None:
    group = nropspec.NodeGroup("worker", {}, cfg())
    objects = by_kind(rtemanifests.render(NROP, [group], {}, "ns", "img", mode))
    pod = objects[("DaemonSet", "numaresourcesoperator-worker")]["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert f"--metrics-mode={mode}" in args and "--metrics-port=2112" in args
    assert ("--metrics-certs-dir=/etc/secrets/rte" in args) is certs
    secrets = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
    assert secrets == (["rte-metrics-service-cert"] if certs else [])


def test_exporter_pods_restart_on_a_new_config() -> None:
    group = nropspec.NodeGroup("worker", {}, cfg())

    def digest(policy: str) -> str:
        kubelets = {"worker": rtemanifests.KubeletSettings(policy, "pod")}
        ds = by_kind(rtemanifests.render(NROP, [group], kubelets, "ns", "img"))[
            ("DaemonSet", "numaresourcesoperator-worker")
        ]
        return ds["spec"]["template"]["metadata"]["annotations"][rtemanifests.CONFIG_HASH_ANNOTATION]

    assert digest("single-numa-node") != digest("restricted")


# ----------------------------------------------------------------------------- scheduler


def args_of(config: dict[str, Any]) -> dict[str, Any]:
    return config["profiles"][0]["pluginConfig"][0]["args"]


@pytest.mark.parametrize(
    ("spec", "replicas", "check"),
    [
        pytest.param({}, 1, lambda c: args_of(c)["cacheResyncPeriodSeconds"] == 5
                     and "reserve" not in c["profiles"][0]["plugins"]
                     and not c["leaderElection"]["leaderElect"], id="defaults"),
        pytest.param({"cacheResyncPeriod": "0s"}, 1, lambda c: "cacheResyncPeriodSeconds" not in args_of(c)
                     and c["profiles"][0]["plugins"]["reserve"] == {"disabled": [{"name": "NodeResourceTopologyMatch"}]},
                     id="no-cache"),
        pytest.param({"cacheResyncPeriod": "7s"}, 1, lambda c: args_of(c)["cacheResyncPeriodSeconds"] == 7, id="period"),
        pytest.param({"cacheResyncDetection": "Aggressive"}, 1, lambda c: args_of(c)["cache"]["foreignPodsDetect"] == "All",
                     id="aggressive"),
        pytest.param({}, 1, lambda c: args_of(c)["cache"] == {"foreignPodsDetect": "OnlyExclusiveResources",
                                                              "resyncMethod": "Autodetect", "informerMode": "Dedicated"},
                     id="relaxed"),
        pytest.param({"schedulerInformer": "Shared"}, 1, lambda c: args_of(c)["cache"]["informerMode"] == "Shared",
                     id="shared"),
        pytest.param({"schedulerName": "test-topology-scheduler"}, 1,
                     lambda c: c["profiles"][0]["schedulerName"] == "test-topology-scheduler", id="name"),
        pytest.param({"preemptionMode": "Enabled"}, 1, lambda c: args_of(c)["preemptionMode"] == "Enabled", id="preemption"),
        pytest.param({"preemptionMode": "Disabled"}, 1, lambda c: "preemptionMode" not in args_of(c), id="no-preemption"),
        pytest.param({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 2}]}}, 1,
                     lambda c: args_of(c)["scoringStrategy"] == {"type": "MostAllocated",
                                                                 "resources": [{"name": "cpu", "weight": 2}]},
                     id="scoring"),
        pytest.param({}, 3, lambda c: c["leaderElection"] == {"leaderElect": True, "resourceLock": "leases",
                                                              "resourceName": "numa-scheduler-leader",
                                                              "resourceNamespace": "ns"}, id="ha"),
    ],
)  # fmt: skip
def test_scheduler_config(spec: dict[str, Any], replicas: int, check: Any) -> None:
    config = schedmanifests.scheduler_config(nrsspec.normalize({"imageSpec": "i", **spec}), "ns", replicas)
    assert check(config), config
    # nrop-scheduler reads it as it is.
    parsed = schedconfig.parse(
        config, registry.REGISTRY, registry.NOT_IMPLEMENTED, registry.DEFAULT_MULTI_POINT
    )
    assert [p.scheduler_name for p in parsed.profiles] == [config["profiles"][0]["schedulerName"]]


@pytest.mark.parametrize(
    ("image", "command"),
    [
        pytest.param("quay.io/x/numaresources-operator-tests:1", ["nrop-scheduler"], id="own-image"),
        pytest.param(
            "quay.io/openshift-kni/scheduler-plugins@sha256:" + "a" * 64,
            ["/bin/kube-scheduler"],
            id="upstream",
        ),
    ],
)
def test_scheduler_objects(image: str, command: list[str]) -> None:
    spec = nrsspec.normalize({"imageSpec": image, "logLevel": "Debug"})
    objects = by_kind(schedmanifests.render(NRS, spec, "ns", 2))
    dp = objects[("Deployment", "secondary-scheduler")]
    pod = dp["spec"]["template"]
    assert dp["spec"]["replicas"] == 2
    assert pod["metadata"]["labels"] == {"app": "secondary-scheduler"}
    container = pod["spec"]["containers"][0]
    assert (container["image"], container["command"]) == (image, command)
    assert container["args"] == ["--config=/etc/kubernetes/config.yaml", "-v=4"]
    assert pod["spec"]["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "secondary-scheduler"}},
            "matchLabelKeys": ["pod-template-hash"],
        }
    ]
    cm = objects[("ConfigMap", naming.SCHEDULER_CONFIGMAP)]
    assert yaml.safe_load(cm["data"]["config.yaml"])["leaderElection"]["leaderElect"] is True
    assert {("ServiceAccount", "secondary-scheduler"), ("ClusterRole", "topology-aware-scheduler"),
            ("Role", "topology-aware-scheduler")} <= set(objects)  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], {"namespace": "numaresources", "leader_elect": True, "verbosity": 2}, id="defaults"),
        pytest.param(["run", "--namespace", "n", "-v", "4"], {"namespace": "n", "leader_elect": True, "verbosity": 4},
                     id="run"),
        pytest.param(["--leader-elect", "false"], {"leader_elect": False}, id="no-election"),
        pytest.param(["run", "--image", "img", "--metrics-bind-address", ":9"], {"image": "img", "metrics_address": ":9"},
                     id="flags"),
    ],
)  # fmt: skip
def test_run_options(argv: list[str], expected: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from nrop.operator import running

    seen: dict[str, Any] = {}

    def fake_run(options: running.Options, environ: Any) -> int:
        seen.update(dataclasses.asdict(options))
        return 0

    monkeypatch.delenv("NAMESPACE", raising=False)
    monkeypatch.setattr(running, "run", fake_run)
    assert main.main(argv) == 0
    assert {k: seen[k] for k in expected} == expected


def test_configz_settings() -> None:
    from nrop.operator.kubeletconfig import group_nodes, settings_from_configz

    body = {"kubeletconfig": {"topologyManagerPolicy": "restricted", "topologyManagerScope": "pod"}}
    assert settings_from_configz(body) == rtemanifests.KubeletSettings("restricted", "pod")
    assert settings_from_configz({"kubeletconfig": {}}) == rtemanifests.KubeletSettings("none", "container")
    group = nropspec.NodeGroup("worker", {"node-role.kubernetes.io/worker": ""}, cfg())
    nodes = [{"metadata": {"name": n, "labels": labels}} for n, labels in
             (("b", {"node-role.kubernetes.io/worker": ""}), ("a", {"node-role.kubernetes.io/worker": ""}), ("c", {}))]  # fmt: skip
    assert group_nodes(group, nodes) == ["a", "b"]


# ----------------------------------------------------------------------------- metrics TLS (cluster TLS profile)

INTERMEDIATE_TLS = tlsprofiles.settings_from_profile(tlsprofiles.TLS_PROFILES["Intermediate"])
MODERN_TLS = tlsprofiles.settings_from_profile(tlsprofiles.TLS_PROFILES["Modern"])


@pytest.mark.parametrize(
    ("mode", "settings", "present", "absent"),
    [
        pytest.param("httptls", INTERMEDIATE_TLS,
                     ["--metrics-tls-min-version=VersionTLS12", f"--metrics-tls-cipher-suites={INTERMEDIATE_TLS.cipher_suites}"],
                     [], id="intermediate"),
        # upstream's rte_test "cluster TLS profile on metrics"
        pytest.param("httptls", tlsprofiles.Settings("VersionTLS12", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
                     ["--metrics-tls-min-version=VersionTLS12",
                      "--metrics-tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"], [], id="upstream-case"),
        # TLS 1.3: no cipher list, so no flag (upstream deletes an empty one)
        pytest.param("httptls", MODERN_TLS, ["--metrics-tls-min-version=VersionTLS13"], ["--metrics-tls-cipher-suites"],
                     id="modern"),
        pytest.param("httptls", None, [], ["--metrics-tls-min-version", "--metrics-tls-cipher-suites"],
                     id="no-profile"),
        pytest.param("http", INTERMEDIATE_TLS, [], ["--metrics-tls-min-version", "--metrics-tls-cipher-suites"],
                     id="plain-http"),
    ],
)  # fmt: skip
def test_exporter_metrics_tls_args(
    mode: str, settings: tlsprofiles.Settings | None, present: list[str], absent: list[str]
) -> None:
    args = rtemanifests.exporter_args(cfg(), "Normal", mode, settings)
    assert set(present) <= set(args), args
    assert not any(a.startswith(prefix) for a in args for prefix in absent), args
    assert len([a for a in args if a.startswith("--metrics-tls-")]) == len(present)


def test_render_puts_the_tls_args_in_every_daemonset() -> None:
    groups = [nropspec.NodeGroup(pool, {}, cfg()) for pool in ("master", "worker")]
    objects = rtemanifests.render(NROP, groups, {}, "ns", "img", metrics_tls=MODERN_TLS)
    daemonsets = [o for o in objects if o["kind"] == "DaemonSet"]
    assert len(daemonsets) == 2
    for ds in daemonsets:
        args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--metrics-tls-min-version=VersionTLS13" in args


def test_the_operator_may_watch_apiservers() -> None:
    """Upstream's kubebuilder marker: config.openshift.io apiservers get;list;watch."""
    rules = [r for r in OPERATOR_RULES if "config.openshift.io" in r["apiGroups"]]
    assert any("apiservers" in r["resources"] and set(r["verbs"]) >= {"get", "list", "watch"} for r in rules)


def test_an_unreadable_kubeconfig_is_an_error_line_and_exit_1(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # main() keeps kopf from importing the official client; the test process gets it back after.
    monkeypatch.setitem(sys.modules, "kubernetes", sys.modules.get("kubernetes"))
    broken = tmp_path / "kubeconfig"
    broken.write_text("current-context: nowhere\n")
    assert main.main(["--kubeconfig", str(broken), "--leader-elect=false"]) == 1
    assert f'kubeconfig {broken}: current-context: context "nowhere" not found' in caplog.text
