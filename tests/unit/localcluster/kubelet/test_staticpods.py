"""Static pods: manifest decoding, naming, hash and mirror pods as the kubelet's file source does them."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import yaml

from nrop.api.qos import pod_qos_class
from nrop.localcluster.apiserver import errors
from nrop.localcluster.apiserver.decisions.admission import admit_pod
from nrop.localcluster.kubelet.staticpods import (
    CONFIG_HASH,
    CONFIG_MIRROR,
    CONFIG_SEEN,
    CONFIG_SOURCE,
    ManifestError,
    decode_manifest,
    is_manifest_name,
    is_mirror_of,
    is_mirror_pod,
    is_static_pod,
    mirror_pod,
    static_pod_name,
    static_pod_uid,
    with_config_annotations,
)

NODE = "worker-0"
SOURCE = "/r/etc/kubernetes/manifests/web.yaml"

GUARANTEED = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: busybox
    resources:
      limits: {cpu: 2, memory: 1Gi}
      requests: {cpu: 2, memory: 1Gi}
"""

#: kubernetes#110944: ``limits``/``requests`` indented as ``resources``' siblings.
MIS_INDENTED = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: busybox
    resources:
    limits: {cpu: 2, memory: 1Gi}
    requests: {cpu: 2, memory: 1Gi}
"""


def decoded(text: str = GUARANTEED, source: str = SOURCE, node: str = NODE) -> dict[str, Any]:
    return decode_manifest(text, source, node)


@pytest.mark.parametrize(
    ("name", "read"),
    [
        pytest.param("web.yaml", True, id="yaml"),
        pytest.param("web.yml", True, id="yml"),
        pytest.param("web.json", True, id="json"),
        pytest.param(".web.yaml", False, id="dot-file"),
        pytest.param(".web.yaml.swp", False, id="editor-swap"),
        pytest.param("web.yaml~", False, id="backup"),
        pytest.param("README.md", False, id="other-suffix"),
    ],
)
def test_which_files_are_manifests(name: str, read: bool) -> None:
    assert is_manifest_name(name) is read


@pytest.mark.parametrize(
    ("name", "node", "full"),
    [
        pytest.param("web", "worker-0", "web-worker-0", id="plain"),
        pytest.param("etcd", "Master-A", "etcd-master-a", id="node-lowercased"),
    ],
)
def test_static_pod_name(name: str, node: str, full: str) -> None:
    assert static_pod_name(name, node) == full


def test_decoded_pod_has_the_file_source_defaults() -> None:
    pod = decoded()
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == "web-worker-0"
    assert meta["namespace"] == "default"
    assert len(meta["uid"]) == 32 and meta["annotations"] == {CONFIG_HASH: meta["uid"]}
    assert spec["nodeName"] == NODE
    assert spec["tolerations"] == [{"operator": "Exists", "effect": "NoExecute"}]
    assert spec["restartPolicy"] == "Always" and spec["terminationGracePeriodSeconds"] == 30
    assert "serviceAccountName" not in spec
    assert pod["status"] == {"phase": "Pending"}
    assert pod_qos_class(spec) == "Guaranteed"


@pytest.mark.parametrize(
    ("text", "resources", "qos"),
    [
        pytest.param(GUARANTEED, {"limits", "requests"}, "Guaranteed", id="well-formed"),
        pytest.param(MIS_INDENTED, set(), "BestEffort", id="kubernetes-110944-mis-indented"),
        pytest.param(
            GUARANTEED.replace("      requests: {cpu: 2, memory: 1Gi}\n", ""),
            {"limits", "requests"},
            "Guaranteed",
            id="requests-defaulted-from-limits",
        ),
    ],
)
def test_unknown_fields_are_dropped_not_refused(text: str, resources: set[str], qos: str) -> None:
    (container,) = decoded(text)["spec"]["containers"]
    assert set(container.get("resources") or {}) == resources
    assert "limits" not in container and "requests" not in container
    assert pod_qos_class(decoded(text)["spec"]) == qos


def test_numeric_quantities_become_strings_as_go_encodes_them() -> None:
    text = GUARANTEED.replace("{cpu: 2, memory: 1Gi}", "{cpu: 0.5, memory: 1073741824}")
    (container,) = decoded(text)["spec"]["containers"]
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "1073741824"}


def test_json_manifest_and_namespace_and_uid_kept() -> None:
    doc = yaml.safe_load(GUARANTEED)
    doc["metadata"].update(namespace="kube-system", uid="fixed-uid")
    pod = decoded(json.dumps(doc))
    assert pod["metadata"]["namespace"] == "kube-system"
    assert pod["metadata"]["uid"] == "fixed-uid" == pod["metadata"]["annotations"][CONFIG_HASH]


def test_own_no_execute_toleration_is_replaced_not_doubled() -> None:
    text = GUARANTEED.replace(
        "spec:\n",
        "spec:\n  tolerations:\n  - {operator: Exists, effect: NoExecute}\n  - {key: a, operator: Exists}\n",
    )
    assert decoded(text)["spec"]["tolerations"] == [
        {"key": "a", "operator": "Exists"},
        {"operator": "Exists", "effect": "NoExecute"},
    ]


@pytest.mark.parametrize(
    ("changed", "same"),
    [
        pytest.param({"text": GUARANTEED}, True, id="same-everything"),
        pytest.param({"text": GUARANTEED + "  hostNetwork: true\n"}, False, id="content"),
        pytest.param({"text": MIS_INDENTED}, False, id="content-pruned-differently"),
        pytest.param({"node": "worker-1"}, False, id="node"),
        pytest.param({"source": "/r/etc/kubernetes/manifests/other.yaml"}, False, id="file"),
    ],
)
def test_uid_is_the_hash_of_pod_node_and_file(changed: dict[str, str], same: bool) -> None:
    base = decoded()["metadata"]["uid"]
    other = decoded(**changed)["metadata"]["uid"]
    assert (other == base) is same


def test_uid_ignores_formatting_and_unknown_fields() -> None:
    reformatted = GUARANTEED.replace("{cpu: 2, memory: 1Gi}", "{memory: 1Gi, cpu: 2}")
    assert decoded(reformatted)["metadata"]["uid"] == decoded()["metadata"]["uid"]
    with_unknown = GUARANTEED.replace("    image: busybox\n", "    image: busybox\n    imagee: x\n")
    assert decoded(with_unknown)["metadata"]["uid"] == decoded()["metadata"]["uid"]


def test_static_pod_uid_is_md5_hex() -> None:
    uid = static_pod_uid({"spec": {}}, NODE, SOURCE)
    assert uid == static_pod_uid({"spec": {}}, NODE, SOURCE) and int(uid, 16) >= 0 and len(uid) == 32


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a: [1, 2", "couldn't parse as pod", id="yaml-syntax"),
        pytest.param("- 1\n- 2\n", "couldn't parse as pod", id="not-an-object"),
        pytest.param("apiVersion: v1\nmetadata: {name: x}\n", "Object 'Kind' is missing", id="no-kind"),
        pytest.param("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n", "kind Service", id="wrong-kind"),
        pytest.param(GUARANTEED.replace("  name: web\n", "  labels: {}\n"), "name is needed", id="no-name"),
        pytest.param(
            GUARANTEED.replace("- name: c\n", "- nam: c\n"), "spec.containers[0].name", id="no-container-name"
        ),
        pytest.param(
            GUARANTEED.replace("image: busybox", "image: [1]"), "spec.containers[0].image", id="mistyped"
        ),
    ],
)
def test_undecodable_manifests_say_why_and_where(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        decoded(text)
    assert message in str(caught.value) and SOURCE in str(caught.value)


def test_config_annotations_and_mirror_pod() -> None:
    static = with_config_annotations(decoded(), "2026-01-01T00:00:00.000000Z")
    uid = static["metadata"]["uid"]
    assert static["metadata"]["annotations"] == {
        CONFIG_HASH: uid,
        CONFIG_SOURCE: "file",
        CONFIG_SEEN: "2026-01-01T00:00:00.000000Z",
    }
    assert is_static_pod(static) and not is_mirror_pod(static)
    mirror = mirror_pod(static, NODE, "node-uid")
    assert is_mirror_pod(mirror) and not is_static_pod(mirror)
    assert mirror["metadata"]["annotations"][CONFIG_MIRROR] == uid
    assert mirror["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "node-uid", "controller": True}
    ]
    assert "uid" not in mirror["metadata"] and "status" not in mirror
    assert mirror["spec"] == static["spec"]
    assert is_mirror_of(mirror, static)
    edited = with_config_annotations(decoded(GUARANTEED + "  hostNetwork: true\n"), "later")
    assert not is_mirror_of(mirror, edited)


def lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    return {"metadata": {"name": name, "uid": "sa"}} if plural == "serviceaccounts" else None


def test_mirror_pod_passes_admission_unchanged_but_for_default_tolerations() -> None:
    mirror = mirror_pod(with_config_annotations(decoded(), "now"), NODE, "node-uid")
    admitted = json.loads(json.dumps(mirror))
    admit_pod(admitted, lookup, rng=random.Random(1))
    assert "volumes" not in admitted["spec"] and "serviceAccountName" not in admitted["spec"]
    assert admitted["spec"]["containers"] == mirror["spec"]["containers"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"serviceAccountName": "default"}, "may not reference service accounts", id="service-account"
        ),
        pytest.param(
            {"volumes": [{"name": "s", "secret": {"secretName": "x"}}]},
            "may not reference secrets",
            id="secret-volume",
        ),
        pytest.param({"imagePullSecrets": [{"name": "x"}]}, "may not reference secrets", id="pull-secret"),
        pytest.param(
            {
                "containers": [
                    {
                        "name": "c",
                        "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}}],
                    }
                ]
            },
            "may not reference secrets",
            id="env-secret",
        ),
        pytest.param(
            {
                "volumes": [
                    {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
                ]
            },
            "may not use ServiceAccountToken volume projections",
            id="token-projection",
        ),
    ],
)
def test_mirror_pods_referencing_credentials_are_refused(spec: dict[str, Any], message: str) -> None:
    mirror = mirror_pod(with_config_annotations(decoded(), "now"), NODE, "node-uid")
    mirror["spec"].update(spec)
    with pytest.raises(errors.Forbidden) as caught:
        admit_pod(mirror, lookup, rng=random.Random(1))
    assert message in str(caught.value)
