"""kubectl conformance: the real kubectl binary (1.33, chosen by the server's /version) against the embedded API server.

Every test drives the server through kubectl exactly as a user would and then
reads the outcome back (``kubectl get -o json|jsonpath`` or the official Python
client): apply create/update/no-op for built-ins and a custom resource, every
``get`` output flavour and selector, watches, describe, label/annotate, the
three patch types, replace, scale, deletion with finalizers and propagation
policies, ``wait`` (also on the WatchList path), impersonation through RBAC,
logs, discovery and explain.

The typed commands (``create deployment|job|role|configmap...``, ``auth can-i``, ``drain``)
send Kubernetes protobuf and read it back, as client-go does for built-in kinds.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from kubernetes import client

from nrop.localcluster.cluster import ClusterThread

pytestmark = pytest.mark.kubectl

Obj = dict[str, Any]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]

GROUP = "conformance.nrop.io"
CRD_NAME = f"widgets.{GROUP}"
WATCH_LIST = {"KUBE_FEATURE_WatchListClient": "true"}

WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
            "categories": ["all"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer", "default": 1, "minimum": 0},
                                    "color": {
                                        "type": "string",
                                        "default": "blue",
                                        "enum": ["blue", "red", "green"],
                                    },
                                    "replicas": {"type": "integer", "default": 1},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}, "replicas": {"type": "integer"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


# -- helpers ---------------------------------------------------------------------------------


def dump(*objs: Obj) -> str:
    return yaml.safe_dump_all(objs, sort_keys=False)


def apply(
    kubectl: Kubectl, namespace: str, *objs: Obj, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return kubectl("apply", "-n", namespace, "-f", "-", input=dump(*objs), check=check)


def get(kubectl: Kubectl, namespace: str, *ref: str) -> Obj:
    return json.loads(kubectl("get", "-n", namespace, *ref, "-o", "json").stdout)


def jsonpath(kubectl: Kubectl, namespace: str, ref: str, path: str) -> str:
    return kubectl("get", "-n", namespace, ref, "-o", f"jsonpath={path}").stdout


def table(text: str) -> list[list[str]]:
    """kubectl's aligned columns as lists of cells (split on runs of 2+ spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]


def eventually(predicate: Callable[[], bool], description: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {description} within {timeout}s")
        time.sleep(0.05)


def configmap(name: str, *, labels: dict[str, str] | None = None, **meta: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}, **meta},
    }


def pod(name: str, *containers: str, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "containers": [{"name": c, "image": f"registry.example/{c}:1"} for c in containers or ("main",)]
        },
    }


def deployment(name: str, replicas: int = 1) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "nginx:1"},
                        {"name": "side", "image": "busybox:1"},
                    ]
                },
            },
        },
    }


def widget(name: str, **spec: Any) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def owned_configmap(
    name: str, owner: Obj, *, block: bool = False, finalizers: list[str] | None = None
) -> Obj:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }
    obj = configmap(name, ownerReferences=[ref])
    if finalizers:
        obj["metadata"]["finalizers"] = finalizers
    return obj


@dataclass
class Background:
    """A kubectl process whose stdout lines are collected as they arrive (for ``get -w``)."""

    args: list[str]
    env: dict[str, str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.proc = subprocess.Popen(
            ["kubectl", *self.args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(
        self, predicate: Callable[[list[str]], bool], description: str, timeout: float = 5.0
    ) -> list[str]:
        deadline = time.monotonic() + timeout
        while not predicate(self.seen):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                raise AssertionError(f"expected {description}, got instead:\n" + "\n".join(self.seen))
            try:
                self.seen.append(self.lines.get(timeout=remaining))
            except queue.Empty:
                continue
        return self.seen

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        _, err = self.proc.communicate(timeout=5)
        return err


@pytest.fixture
def background(kube_env: dict[str, str]) -> Iterator[Callable[..., Background]]:
    started: list[Background] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Background:
        proc = Background(list(args), {**kube_env, **(env or {})})
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture(scope="module")
def widgets(kubectl: Kubectl) -> str:
    """The Widget CRD, applied with kubectl and waited for (Established)."""
    out = kubectl("apply", "-f", "-", input=dump(WIDGET_CRD)).stdout
    assert out == f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} created\n"
    waited = kubectl("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=10s").stdout
    assert waited == f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} condition met\n"
    return CRD_NAME


@pytest.fixture(scope="module")
def readonly(kubectl: Kubectl, api_client) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """One namespace of objects that tests only read (saves a namespace per selector and format case)."""
    name = f"t-ro-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api_client)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    apply(
        kubectl,
        name,
        configmap("a", labels={"app": "web", "tier": "front"}),
        configmap("b", labels={"app": "web"}),
        configmap("c", labels={"app": "db", "tier": "back"}),
        configmap("d", labels={}),
        {**configmap("web", labels={"app": "web", "role": "format"}), "data": {"k": "v"}},
    )
    yield name
    core.delete_namespace(name)


@pytest.fixture
def core(api_client) -> client.CoreV1Api:  # type: ignore[no-untyped-def]
    return client.CoreV1Api(api_client)


def append_log(kubectl: Kubectl, namespace: str, pod_name: str, container: str, text: str) -> None:
    kubectl("create", "--raw", f"/debug/nrop/logs/{namespace}/{pod_name}/{container}", "-f", "-", input=text)


# -- apply -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApplyCase:
    printed: str  # what kubectl prints for the object ("deployment.apps/web")
    manifest: Obj
    change: Callable[[Obj], None]
    path: str  # jsonpath read back after each step
    before: str
    after: str


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        target = obj
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


APPLY_CASES = {
    "pod": ApplyCase(
        "pod/app",
        pod("app"),
        _set(("spec", "containers", 0, "image"), "registry.example/main:2"),
        "{.spec.containers[0].image}",
        "registry.example/main:1",
        "registry.example/main:2",
    ),
    "configmap": ApplyCase(
        "configmap/app",
        {**configmap("app"), "data": {"a": "1"}},
        _set(("data",), {"a": "2", "b": "3"}),
        "{.data}",
        '{"a":"1"}',
        '{"a":"2","b":"3"}',
    ),
    "deployment": ApplyCase(
        "deployment.apps/app",
        deployment("app"),
        _set(("spec", "replicas"), 2),
        "{.spec.replicas} {.metadata.generation}",
        "1 1",
        "2 2",
    ),
    "service": ApplyCase(
        "service/app",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "app"},
            "spec": {"selector": {"app": "app"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
        _set(("spec", "ports", 0, "targetPort"), 9090),
        "{.spec.ports[0].port}/{.spec.ports[0].protocol}->{.spec.ports[0].targetPort}",
        "80/TCP->8080",
        "80/TCP->9090",
    ),
    "serviceaccount": ApplyCase(
        "serviceaccount/app",
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "app"},
            "automountServiceAccountToken": False,
        },
        _set(("automountServiceAccountToken",), True),
        "{.automountServiceAccountToken}",
        "false",
        "true",
    ),
    "role": ApplyCase(
        "role.rbac.authorization.k8s.io/app",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "app"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        },
        _set(("rules", 0, "verbs"), ["get", "list"]),
        "{.rules[0].verbs}",
        '["get"]',
        '["get","list"]',
    ),
    "rolebinding": ApplyCase(
        "rolebinding.rbac.authorization.k8s.io/app",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "app"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "app"},
            "subjects": [{"kind": "ServiceAccount", "name": "a"}],
        },
        _set(
            ("subjects",), [{"kind": "ServiceAccount", "name": "a"}, {"kind": "ServiceAccount", "name": "b"}]
        ),
        "{.subjects[*].name}",
        "a",
        "a b",
    ),
    "custom-resource": ApplyCase(
        f"widget.{GROUP}/app",
        widget("app", size=3),
        _set(("spec", "size"), 5),
        "{.spec.size} {.spec.color} {.spec.replicas} {.metadata.generation}",
        "3 blue 1 1",  # color and replicas come from the schema defaults
        "5 blue 1 2",
    ),
}


@pytest.mark.parametrize("case", APPLY_CASES.values(), ids=APPLY_CASES.keys())
def test_apply_creates_updates_and_leaves_unchanged(
    kubectl: Kubectl, namespace: str, widgets: str, case: ApplyCase
) -> None:
    ref = case.printed
    assert apply(kubectl, namespace, case.manifest).stdout == f"{ref} created\n"
    assert jsonpath(kubectl, namespace, ref, case.path) == case.before
    applied = get(kubectl, namespace, ref)
    assert "kubectl.kubernetes.io/last-applied-configuration" in applied["metadata"]["annotations"]

    assert apply(kubectl, namespace, case.manifest).stdout == f"{ref} unchanged\n"
    assert (
        get(kubectl, namespace, ref)["metadata"]["resourceVersion"] == applied["metadata"]["resourceVersion"]
    )

    changed = json.loads(json.dumps(case.manifest))
    case.change(changed)
    assert apply(kubectl, namespace, changed).stdout == f"{ref} configured\n"
    assert jsonpath(kubectl, namespace, ref, case.path) == case.after
    updated = get(kubectl, namespace, ref)
    assert int(updated["metadata"]["resourceVersion"]) > int(applied["metadata"]["resourceVersion"])
    assert updated["metadata"]["uid"] == applied["metadata"]["uid"]


def test_custom_resource_status_subresource_and_schema(
    kubectl: Kubectl, namespace: str, widgets: str
) -> None:
    """Status sent to the main endpoint is dropped; /status writes it; unknown fields are pruned."""
    body = widget("w", size=2)
    body["status"] = {"phase": "Ignored"}
    apply(kubectl, namespace, body)
    created = get(kubectl, namespace, "widget/w")
    assert "status" not in created
    assert created["spec"] == {"size": 2, "color": "blue", "replicas": 1}

    kubectl(
        "patch",
        "-n",
        namespace,
        "widget/w",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Ready"}}',
    )
    patched = get(kubectl, namespace, "widget/w")
    assert patched["status"] == {"phase": "Ready"}
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]

    bad = kubectl("apply", "-n", namespace, "-f", "-", input=dump(widget("bad", color="purple")), check=False)
    assert bad.returncode == 1
    assert 'Unsupported value: "purple"' in bad.stderr
    assert 'supported values: "blue", "red", "green"' in bad.stderr


def test_apply_reports_mistyped_builtin_field_without_internal_error(
    kubectl: Kubectl, namespace: str
) -> None:
    # YAML 1.1 reads an unquoted ``y`` as a boolean: kubectl sends ``"image": true``.
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: typo}\nspec: {containers: [{name: c, image: y}]}\n"
    )
    result = kubectl("apply", "-n", namespace, "-f", "-", input=manifest, check=False)
    assert result.returncode == 1
    assert "InternalError" not in result.stderr
    assert "spec.containers[0].image" in result.stderr
    assert "string" in result.stderr


def test_server_side_apply_dry_run_and_diff(kubectl: Kubectl, namespace: str, widgets: str) -> None:
    body = {**configmap("ssa"), "data": {"a": "1"}}
    ssa = ("apply", "--server-side", "-n", namespace, "-f", "-")
    assert kubectl(*ssa, input=dump(body)).stdout == "configmap/ssa serverside-applied\n"
    body["data"] = {"a": "2", "b": "3"}
    assert kubectl(*ssa, input=dump(body)).stdout == "configmap/ssa serverside-applied\n"
    live = get(kubectl, namespace, "configmap/ssa", "--show-managed-fields")
    assert live["data"] == {"a": "2", "b": "3"}
    assert "kubectl" in [entry["manager"] for entry in live["metadata"]["managedFields"]]

    dry = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", input=dump(widget("dry")))
    assert dry.stdout == f"widget.{GROUP}/dry created (server dry run)\n"
    assert kubectl("get", "-n", namespace, "widget/dry", check=False).stderr == (
        f'Error from server (NotFound): widgets.{GROUP} "dry" not found\n'
    )

    apply(kubectl, namespace, widget("w", size=1))
    diff = kubectl("diff", "-n", namespace, "-f", "-", input=dump(widget("w", size=9)), check=False)
    assert diff.returncode == 1  # differences found
    assert "-  size: 1\n" in diff.stdout
    assert "+  size: 9\n" in diff.stdout
    assert jsonpath(kubectl, namespace, "widget/w", "{.spec.size}") == "1"


def test_run_create_and_edit(kubectl: Kubectl, namespace: str) -> None:
    assert (
        kubectl("run", "r", "-n", namespace, "--image=nginx:1", "--labels=app=r").stdout == "pod/r created\n"
    )
    created = get(kubectl, namespace, "pod/r")
    assert [(c["name"], c["image"]) for c in created["spec"]["containers"]] == [("r", "nginx:1")]
    assert created["metadata"]["labels"] == {"app": "r"}

    body = dump({**configmap("c"), "data": {"k": "before"}})
    assert kubectl("create", "-n", namespace, "-f", "-", input=body).stdout == "configmap/c created\n"
    duplicate = kubectl("create", "-n", namespace, "-f", "-", input=body, check=False)
    assert duplicate.stderr == (
        'Error from server (AlreadyExists): error when creating "STDIN": configmaps "c" already exists\n'
    )

    edited = kubectl("edit", "-n", namespace, "configmap/c", env={"EDITOR": "sed -i s/before/after/"})
    assert edited.stdout == "configmap/c edited\n"
    assert jsonpath(kubectl, namespace, "configmap/c", "{.data.k}") == "after"


# -- get -----------------------------------------------------------------------------------------


def test_get_pods_table_wide_and_labels(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, pod("web", labels={"app": "web", "tier": "front"}))
    rows = table(kubectl("get", "-n", namespace, "pods").stdout)
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:4] == ["web", "0/1", "Pending", "0"]

    wide = table(kubectl("get", "-n", namespace, "pods", "-o", "wide").stdout)
    assert wide[0] == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ]
    assert wide[1][-4:] == ["<none>", "<none>", "<none>", "<none>"]

    labelled = table(kubectl("get", "-n", namespace, "pods", "--show-labels").stdout)
    assert labelled[0][-1] == "LABELS"
    assert labelled[1][-1] == "app=web,tier=front"


GET_TABLES = {
    "deployment": (
        deployment("web"),
        "deployments",
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["web", "0/1", "0", "0"],
    ),
    "configmap": (
        {**configmap("web"), "data": {"a": "1", "b": "2"}},
        "configmaps",
        ["NAME", "DATA", "AGE"],
        ["web", "2"],
    ),
    "serviceaccount": (
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web"}},
        "serviceaccounts",
        ["NAME", "SECRETS", "AGE"],
        ["web", "0"],
    ),
}


@pytest.mark.parametrize(
    ("manifest", "resource", "header", "row"), GET_TABLES.values(), ids=GET_TABLES.keys()
)
def test_get_builtin_table_columns(
    kubectl: Kubectl, namespace: str, manifest: Obj, resource: str, header: list[str], row: list[str]
) -> None:
    apply(kubectl, namespace, manifest)
    rows = table(kubectl("get", "-n", namespace, resource).stdout)
    assert rows[0] == header
    assert rows[1][: len(row)] == row


OUTPUTS: dict[str, tuple[list[str], Callable[[str], Any], Any]] = {
    "json": (
        ["-o", "json"],
        lambda out: json.loads(out)["metadata"]["labels"],
        {"app": "web", "role": "format"},
    ),
    "yaml": (["-o", "yaml"], lambda out: yaml.safe_load(out)["metadata"]["name"], "web"),
    "name": (["-o", "name"], str, "configmap/web\n"),
    "jsonpath": (["-o", "jsonpath={.kind}/{.metadata.labels.app}/{.data.k}"], str, "ConfigMap/web/v"),
    "custom-columns": (
        ["-o", "custom-columns=N:.metadata.name,K:.data.k"],
        table,
        [["N", "K"], ["web", "v"]],
    ),
    "go-template": (["-o", "go-template={{.metadata.name}}={{.data.k}}"], str, "web=v"),
}


@pytest.mark.parametrize(("args", "parse", "expected"), OUTPUTS.values(), ids=OUTPUTS.keys())
def test_get_output_formats(
    kubectl: Kubectl, readonly: str, args: list[str], parse: Callable[[str], Any], expected: Any
) -> None:
    assert parse(kubectl("get", "-n", readonly, "configmap", "web", *args).stdout) == expected


def test_get_list_as_json_and_all_namespaces(kubectl: Kubectl, namespace: str) -> None:
    other = f"{namespace}-b"
    # A letter first: a bare hex string such as "8e123456" is a float to kubectl's YAML decoder.
    run = f"r{uuid.uuid4().hex[:8]}"
    kubectl(
        "apply", "-f", "-", input=dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    )
    try:
        apply(kubectl, namespace, configmap("one", labels={"run": run}))
        apply(kubectl, other, configmap("two", labels={"run": run}))
        listed = json.loads(
            kubectl("get", "-n", namespace, "configmaps", "-l", f"run={run}", "-o", "json").stdout
        )
        assert listed["kind"] == "List"
        assert [i["metadata"]["name"] for i in listed["items"]] == ["one"]
        assert listed["items"][0]["kind"] == "ConfigMap"

        rows = table(kubectl("get", "configmaps", "-A", "-l", f"run={run}").stdout)
        assert rows[0] == ["NAMESPACE", "NAME", "DATA", "AGE"]
        assert sorted((r[0], r[1]) for r in rows[1:]) == [(namespace, "one"), (other, "two")]
    finally:
        kubectl("delete", "namespace", other, "--wait=false", check=False)


SELECTORS = {
    "equality": ("app=web", ["a", "b"]),
    "double-equals": ("app==db", ["c"]),
    "inequality": ("app!=web", ["c", "d"]),
    "in": ("app in (web,db)", ["a", "b", "c"]),
    "notin": ("app notin (web)", ["c", "d"]),
    "exists": ("tier", ["a", "c"]),
    "not-exists": ("!tier", ["b", "d"]),
    "and": ("app=web,tier=front", ["a"]),
    "set-and-equality": ("app in (web, db),!tier", ["b"]),
}


@pytest.mark.parametrize(("selector", "names"), SELECTORS.values(), ids=SELECTORS.keys())
def test_get_label_selectors(kubectl: Kubectl, readonly: str, selector: str, names: list[str]) -> None:
    out = kubectl("get", "-n", readonly, "configmaps", "-l", f"{selector},role!=format", "-o", "name").stdout
    assert out.split() == [f"configmap/{n}" for n in names]


def test_get_label_selector_parse_error(kubectl: Kubectl, readonly: str) -> None:
    result = kubectl("get", "-n", readonly, "configmaps", "-l", "app in web", check=False)
    assert result.returncode == 1
    assert "unable to parse requirement" in result.stderr


def test_get_field_selectors(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, pod("p1"), pod("p2"))
    names = kubectl(
        "get",
        "-n",
        namespace,
        "pods",
        "--field-selector",
        "status.phase=Pending,metadata.name!=p1",
        "-o",
        "name",
    )
    assert names.stdout == "pod/p2\n"
    assert kubectl("get", "-n", namespace, "pods", "--field-selector", "status.phase=Running").stderr == (
        f"No resources found in {namespace} namespace.\n"
    )
    bad = kubectl("get", "-n", namespace, "pods", "--field-selector", "spec.foo=x", check=False)
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error from server (BadRequest): ")
    assert "field label not supported: spec.foo" in bad.stderr


def test_get_custom_resource_printer_columns(kubectl: Kubectl, namespace: str, widgets: str) -> None:
    apply(kubectl, namespace, widget("w1", size=3, color="red"), widget("w2"))
    kubectl(
        "patch",
        "-n",
        namespace,
        "widget/w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Ready"}}',
    )
    rows = table(kubectl("get", "-n", namespace, "widgets").stdout)
    assert rows[0] == ["NAME", "SIZE", "COLOR", "PHASE", "AGE"]
    assert rows[1][:4] == ["w1", "3", "red", "Ready"]
    assert rows[2][:3] == ["w2", "1", "blue"]  # empty PHASE cell collapses in the split
    wide = table(kubectl("get", "-n", namespace, "wd", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "SIZE", "COLOR", "PHASE", "REPLICAS", "AGE"]
    # The short name and the "all" category resolve through discovery.
    assert "widget.conformance.nrop.io/w1" in kubectl("get", "-n", namespace, "all", "-o", "name").stdout


# -- watch ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [{}, WATCH_LIST], ids=["list-then-watch", "watch-list"])
def test_get_watch_prints_events(
    kubectl: Kubectl, namespace: str, background: Callable[..., Background], env: dict[str, str]
) -> None:
    apply(kubectl, namespace, configmap("before"))
    table_watch = background("get", "-n", namespace, "configmaps", "-w", "--output-watch-events", env=env)
    events = background(
        "get", "-n", namespace, "configmaps", "-w", "--output-watch-events",
        "-o", "jsonpath={.type} {.object.metadata.name}{\"\\n\"}", env=env,
    )  # fmt: skip
    events.expect(lambda seen: "ADDED before" in seen, "the initial ADDED event")
    table_watch.expect(lambda seen: len(seen) >= 2, "the table header and the initial row")

    apply(kubectl, namespace, configmap("after"))
    kubectl("label", "-n", namespace, "configmap/after", "x=y")
    kubectl("delete", "-n", namespace, "configmap/after")
    wanted = ["ADDED before", "ADDED after", "MODIFIED after", "DELETED after"]
    assert events.expect(lambda seen: len(seen) >= 4, "four events") == wanted

    rows = table("\n".join(table_watch.expect(lambda seen: len(seen) >= 5, "the table rows")))
    assert rows[0] == ["EVENT", "NAME", "DATA", "AGE"]
    assert [r[:2] for r in rows[1:]] == [w.split() for w in wanted]


def test_get_watch_follows_label_selector_transitions(
    kubectl: Kubectl, namespace: str, background: Callable[..., Background]
) -> None:
    """An object entering the selector arrives as ADDED, one leaving it as DELETED."""
    apply(kubectl, namespace, configmap("anchor", labels={"sel": "yes"}), configmap("c"))
    events = background(
        "get", "-n", namespace, "configmaps", "-l", "sel=yes", "-w", "--output-watch-events",
        "-o", "jsonpath={.type} {.object.metadata.name} {.object.metadata.labels.sel}{\"\\n\"}",
    )  # fmt: skip
    # Once the listed anchor is printed, the watch resumes from that list's resourceVersion.
    events.expect(lambda seen: seen == ["ADDED anchor yes"], "the listed anchor")
    kubectl("label", "-n", namespace, "configmap/c", "sel=yes")
    kubectl("label", "-n", namespace, "configmap/c", "other=1")
    kubectl("label", "-n", namespace, "configmap/c", "sel=no", "--overwrite")
    seen = events.expect(lambda seen: len(seen) >= 4, "three more events")
    assert seen[1:] == ["ADDED c yes", "MODIFIED c yes", "DELETED c yes"]


def test_watch_ends_when_kubectl_goes_away(
    cluster_thread: ClusterThread, kubectl: Kubectl, namespace: str, background: Callable[..., Background]
) -> None:
    """A killed ``get -w`` must not leave its watch subscribed (nor hold up the server's shutdown)."""
    store = cluster_thread.cluster.server.store

    def watchers() -> int:  # the store's subscriber list is private: read it on the cluster's loop
        return cluster_thread.call(lambda: len(store._subscribers.get(("", "configmaps"), [])))

    before = watchers()
    watch = background("get", "-n", namespace, "configmaps", "-w")
    eventually(lambda: watchers() == before + 1, "the watch to subscribe")
    watch.stop()
    eventually(lambda: watchers() == before, "the watch to unsubscribe once kubectl is gone")


def test_get_watch_ends_with_request_timeout(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, configmap("c"))
    started = time.monotonic()
    result = kubectl(
        "get", "-n", namespace, "configmaps", "-w", "-o", "name", "--request-timeout=1s", timeout=10
    )
    assert result.stdout == "configmap/c\n"
    assert time.monotonic() - started < 5


# -- describe ------------------------------------------------------------------------------------


def _event(involved: Obj, reason: str, message: str) -> client.CoreV1Event:
    meta = involved["metadata"]
    return client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=f"{meta['name']}.{uuid.uuid4().hex[:6]}"),
        involved_object=client.V1ObjectReference(
            api_version=involved["apiVersion"],
            kind=involved["kind"],
            name=meta["name"],
            namespace=meta["namespace"],
            uid=meta["uid"],
        ),
        reason=reason,
        message=message,
        type="Normal",
        source=client.V1EventSource(component="conformance-test"),
        first_timestamp=meta["creationTimestamp"],
        last_timestamp=meta["creationTimestamp"],
        count=1,
    )


def test_describe_pod_shows_its_events(kubectl: Kubectl, namespace: str, core: client.CoreV1Api) -> None:
    apply(kubectl, namespace, pod("web", "main", "side", labels={"app": "web"}))
    # The default not-ready/unreachable tolerations widen the Tolerations column, as on a real cluster.
    assert re.search(r"\nEvents: +<none>\n$", kubectl("describe", "-n", namespace, "pod", "web").stdout)
    live = get(kubectl, namespace, "pod/web")
    core.create_namespaced_event(
        namespace, _event(live, "Scheduled", f"Successfully assigned {namespace}/web to node-a")
    )
    # An event about another object must not show up.
    apply(kubectl, namespace, pod("other"))
    core.create_namespaced_event(
        namespace, _event(get(kubectl, namespace, "pod/other"), "Noise", "not about web")
    )

    out = kubectl("describe", "-n", namespace, "pod", "web").stdout
    assert "Name:             web" in out
    assert f"Namespace:        {namespace}" in out
    assert "Status:           Pending" in out
    assert "  main:\n    Image:        registry.example/main:1" in out
    assert "  side:\n" in out
    events = out.split("Events:", 1)[1]
    assert table(events)[0] == ["Type", "Reason", "Age", "From", "Message"]
    assert table(events)[2][0:2] == ["Normal", "Scheduled"]
    assert table(events)[2][-2:] == ["conformance-test", f"Successfully assigned {namespace}/web to node-a"]
    assert "Noise" not in out


def test_describe_custom_resource(
    kubectl: Kubectl, namespace: str, widgets: str, core: client.CoreV1Api
) -> None:
    apply(kubectl, namespace, widget("w", size=4))
    core.create_namespaced_event(
        namespace, _event(get(kubectl, namespace, "widget/w"), "Resized", "size is now 4")
    )
    out = kubectl("describe", "-n", namespace, "widget", "w").stdout
    assert "API Version:  conformance.nrop.io/v1" in out
    assert "Kind:         Widget" in out
    assert "Spec:\n  Color:     blue\n  Replicas:  1\n  Size:      4\n" in out
    assert "Resized" in out.split("Events:", 1)[1]
    assert "size is now 4" in out


# -- label, annotate, patch, replace, set, scale ---------------------------------------------------------


def test_label_and_annotate(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, configmap("c", labels={"app": "web"}))
    assert kubectl("label", "-n", namespace, "configmap/c", "env=dev").stdout == "configmap/c labeled\n"
    refused = kubectl("label", "-n", namespace, "configmap/c", "env=prod", check=False)
    assert refused.returncode == 1
    assert refused.stderr == "error: 'env' already has a value (dev), and --overwrite is false\n"
    kubectl("label", "-n", namespace, "configmap/c", "env=prod", "--overwrite")
    assert jsonpath(kubectl, namespace, "configmap/c", "{.metadata.labels}") == '{"app":"web","env":"prod"}'
    assert kubectl("label", "-n", namespace, "configmap/c", "env-").stdout == "configmap/c unlabeled\n"
    assert jsonpath(kubectl, namespace, "configmap/c", "{.metadata.labels}") == '{"app":"web"}'

    kubectl("annotate", "-n", namespace, "configmap/c", "note=hi", "other=x")
    refused = kubectl("annotate", "-n", namespace, "configmap/c", "note=ho", check=False)
    assert refused.returncode == 1
    assert "'note' already has a value (hi)" in refused.stderr
    kubectl("annotate", "-n", namespace, "configmap/c", "note=ho", "--overwrite")
    kubectl("annotate", "-n", namespace, "configmap/c", "other-")
    annotations = get(kubectl, namespace, "configmap/c")["metadata"]["annotations"]
    assert annotations["note"] == "ho"
    assert "other" not in annotations


def _containers(kubectl: Kubectl, namespace: str) -> list[tuple[str, str]]:
    spec = get(kubectl, namespace, "deployment/web")["spec"]["template"]["spec"]
    return [(c["name"], c["image"]) for c in spec["containers"]]


PATCHES = {
    "strategic-merges-containers-by-name": (
        [],
        '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox:2"}]}}}}',
        [("main", "nginx:1"), ("side", "busybox:2")],
    ),
    # Without $setElementOrder upstream's mergeSortedSlice puts patch-only items before the live ones.
    "strategic-new-container-goes-first": (
        ["--type=strategic"],
        '{"spec":{"template":{"spec":{"containers":[{"name":"extra","image":"x:1"}]}}}}',
        [("extra", "x:1"), ("main", "nginx:1"), ("side", "busybox:1")],
    ),
    "strategic-set-element-order": (
        [],
        '{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"main"}],'
        '"containers":[{"name":"main","image":"nginx:3"}]}}}}',
        [("side", "busybox:1"), ("main", "nginx:3")],
    ),
    "strategic-delete-directive": (
        [],
        '{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}',
        [("main", "nginx:1")],
    ),
    "merge-replaces-lists": (
        ["--type=merge"],
        '{"spec":{"template":{"spec":{"containers":[{"name":"only","image":"o:1"}]}}}}',
        [("only", "o:1")],
    ),
    "json": (
        ["--type=json"],
        '[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"busybox:9"},'
        '{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"tail","image":"t:1"}}]',
        [("main", "nginx:1"), ("side", "busybox:9"), ("tail", "t:1")],
    ),
}


@pytest.mark.parametrize(("args", "patch", "containers"), PATCHES.values(), ids=PATCHES.keys())
def test_patch_deployment(
    kubectl: Kubectl, namespace: str, args: list[str], patch: str, containers: list[tuple[str, str]]
) -> None:
    apply(kubectl, namespace, deployment("web"))
    assert (
        kubectl("patch", "-n", namespace, "deployment/web", *args, "-p", patch).stdout
        == "deployment.apps/web patched\n"
    )
    assert _containers(kubectl, namespace) == containers
    assert get(kubectl, namespace, "deployment/web")["metadata"]["generation"] == 2


def test_patch_without_change_and_failures(kubectl: Kubectl, namespace: str, widgets: str) -> None:
    apply(kubectl, namespace, deployment("web"), widget("w", size=1))
    same = kubectl(
        "patch", "-n", namespace, "deployment/web", "--type=merge", "-p", '{"spec":{"replicas":1}}'
    )
    assert same.stdout == "deployment.apps/web patched (no change)\n"

    failed_test = kubectl(
        "patch",
        "-n",
        namespace,
        "widget/w",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/size","value":9}]',
        check=False,
    )
    assert failed_test.returncode == 1
    assert "testing value /spec/size failed" in failed_test.stderr

    strategic_on_cr = kubectl("patch", "-n", namespace, "widget/w", "-p", '{"spec":{"size":2}}', check=False)
    assert strategic_on_cr.returncode == 1
    assert (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    ) in strategic_on_cr.stderr

    kubectl("patch", "-n", namespace, "widget/w", "--type=merge", "-p", '{"spec":{"size":2}}')
    assert jsonpath(kubectl, namespace, "widget/w", "{.spec.size}") == "2"
    missing = kubectl("patch", "-n", namespace, "configmap/nope", "-p", '{"data":{"a":"b"}}', check=False)
    assert missing.stderr == 'Error from server (NotFound): configmaps "nope" not found\n'


def test_replace_and_stale_replace(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, {**configmap("c"), "data": {"a": "1"}})
    live = get(kubectl, namespace, "configmap/c")
    first = {**live, "data": {"a": "2"}}
    assert (
        kubectl("replace", "-n", namespace, "-f", "-", input=json.dumps(first)).stdout
        == "configmap/c replaced\n"
    )
    assert jsonpath(kubectl, namespace, "configmap/c", "{.data.a}") == "2"

    stale = {**live, "data": {"a": "3"}}  # still carries the first resourceVersion
    result = kubectl("replace", "-n", namespace, "-f", "-", input=json.dumps(stale), check=False)
    assert result.returncode == 1
    assert result.stderr == (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on '
        'configmaps "c": the object has been modified; please apply your changes to the latest version and try again\n'
    )
    assert jsonpath(kubectl, namespace, "configmap/c", "{.data.a}") == "2"


def test_set_image(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, deployment("web"))
    assert kubectl("set", "image", "-n", namespace, "deployment/web", "side=busybox:2").stdout == (
        "deployment.apps/web image updated\n"
    )
    assert _containers(kubectl, namespace) == [("main", "nginx:1"), ("side", "busybox:2")]


def test_scale_deployment_and_custom_resource(kubectl: Kubectl, namespace: str, widgets: str) -> None:
    apply(kubectl, namespace, deployment("web"), widget("w"))
    assert (
        kubectl("scale", "-n", namespace, "deployment/web", "--replicas=3").stdout
        == "deployment.apps/web scaled\n"
    )
    assert jsonpath(kubectl, namespace, "deployment/web", "{.spec.replicas} {.metadata.generation}") == "3 2"
    assert (
        kubectl("scale", "-n", namespace, "widget/w", "--replicas=2").stdout == f"widget.{GROUP}/w scaled\n"
    )
    assert jsonpath(kubectl, namespace, "widget/w", "{.spec.replicas} {.metadata.generation}") == "2 2"
    # --current-replicas is a precondition kubectl checks against the scale subresource it read.
    refused = kubectl(
        "scale", "-n", namespace, "deployment/web", "--current-replicas=1", "--replicas=5", check=False
    )
    assert refused.stderr == "error: Expected replicas to be 1, was 3\n"


# -- delete ------------------------------------------------------------------------------------------


def test_delete_waits_for_removal(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, configmap("c"), pod("p"))
    assert (
        kubectl("delete", "-n", namespace, "configmap/c", "pod/p").stdout
        == 'configmap "c" deleted\npod "p" deleted\n'
    )
    gone = kubectl("get", "-n", namespace, "configmap/c", check=False)
    assert gone.stderr == 'Error from server (NotFound): configmaps "c" not found\n'
    again = kubectl("delete", "-n", namespace, "configmap/c", check=False)
    assert again.stderr == 'Error from server (NotFound): configmaps "c" not found\n'
    assert kubectl("delete", "-n", namespace, "configmap/c", "--ignore-not-found").returncode == 0


@pytest.mark.slow  # waits out a kubectl --timeout
def test_delete_with_finalizer_times_out_until_finalizer_removed(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, configmap("held", finalizers=["example.com/hold"]))
    started = time.monotonic()
    result = kubectl("delete", "-n", namespace, "configmap/held", "--timeout=2s", check=False)
    assert 1.5 < time.monotonic() - started < 10
    assert result.returncode == 1
    assert result.stdout == 'configmap "held" deleted\n'
    # kubectl's reflector may log its own "context deadline exceeded" line first (a client-side race).
    assert result.stderr.splitlines()[-1] == "error: timed out waiting for the condition on configmaps/held"
    held = get(kubectl, namespace, "configmap/held")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["example.com/hold"]

    kubectl(
        "patch",
        "-n",
        namespace,
        "configmap/held",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    gone = kubectl("get", "-n", namespace, "configmap/held", check=False)
    assert gone.stderr == 'Error from server (NotFound): configmaps "held" not found\n'


def test_delete_returns_once_finalizer_is_removed_concurrently(kubectl: Kubectl, namespace: str) -> None:
    apply(kubectl, namespace, configmap("held", finalizers=["example.com/hold"]))
    release = threading.Timer(
        1.0,
        lambda: kubectl(
            "patch",
            "-n",
            namespace,
            "configmap/held",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers/0"}]',
        ),
    )
    release.start()
    try:
        result = kubectl("delete", "-n", namespace, "configmap/held", "--timeout=10s")
    finally:
        release.join()
    assert result.stdout == 'configmap "held" deleted\n'


def test_delete_namespace_cascades(kubectl: Kubectl, namespace: str, widgets: str) -> None:
    apply(kubectl, namespace, configmap("c"), pod("p"), deployment("d"), widget("w"))
    assert (
        kubectl("delete", "namespace", namespace, "--timeout=20s").stdout
        == f'namespace "{namespace}" deleted\n'
    )
    assert kubectl("get", "namespace", namespace, check=False).stderr == (
        f'Error from server (NotFound): namespaces "{namespace}" not found\n'
    )
    for resource in ("configmaps", "pods", "deployments", "widgets"):
        assert (
            kubectl(
                "get", resource, "-A", "--field-selector", f"metadata.namespace={namespace}", "-o", "name"
            ).stdout
            == ""
        )


def _owner_and_dependent(kubectl: Kubectl, namespace: str, **dependent: Any) -> None:
    apply(kubectl, namespace, configmap("owner"))
    apply(
        kubectl,
        namespace,
        owned_configmap("dependent", get(kubectl, namespace, "configmap/owner"), **dependent),
    )


def test_delete_background_collects_dependents(kubectl: Kubectl, namespace: str) -> None:
    _owner_and_dependent(kubectl, namespace)
    kubectl("delete", "-n", namespace, "configmap/owner")
    result = kubectl(
        "wait", "-n", namespace, "--for=delete", "configmap/dependent", "--timeout=5s", check=False
    )
    assert result.returncode == 0, result.stderr


def test_delete_cascade_orphan_keeps_dependents(kubectl: Kubectl, namespace: str) -> None:
    _owner_and_dependent(kubectl, namespace)
    assert (
        kubectl("delete", "-n", namespace, "configmap/owner", "--cascade=orphan").stdout
        == 'configmap "owner" deleted\n'
    )
    assert kubectl("get", "-n", namespace, "configmap/owner", check=False).returncode == 1
    time.sleep(0.7)  # a garbage collection pass would have run by now
    dependent = get(kubectl, namespace, "configmap/dependent")
    assert "ownerReferences" not in dependent["metadata"]
    assert "deletionTimestamp" not in dependent["metadata"]


@pytest.mark.slow  # waits out a kubectl --timeout
def test_delete_cascade_foreground_waits_for_blocking_dependents(kubectl: Kubectl, namespace: str) -> None:
    _owner_and_dependent(kubectl, namespace, block=True, finalizers=["example.com/hold"])
    result = kubectl(
        "delete", "-n", namespace, "configmap/owner", "--cascade=foreground", "--timeout=1s", check=False
    )
    # (kubectl may also log a "very short watch" warning when its own 1s deadline cuts the watch)
    assert result.stderr.endswith("error: timed out waiting for the condition on configmaps/owner\n")
    owner = get(kubectl, namespace, "configmap/owner")
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert owner["metadata"]["deletionTimestamp"]
    assert get(kubectl, namespace, "configmap/dependent")["metadata"]["deletionTimestamp"]

    kubectl(
        "patch",
        "-n",
        namespace,
        "configmap/dependent",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    kubectl("wait", "-n", namespace, "--for=delete", "configmap/owner", "configmap/dependent", "--timeout=5s")


# -- wait ----------------------------------------------------------------------------------------


WAIT_MODES = {"list-then-watch": {}, "watch-list": WATCH_LIST}


@pytest.mark.slow  # waits out a kubectl --timeout
@pytest.mark.parametrize("env", WAIT_MODES.values(), ids=WAIT_MODES.keys())
def test_wait_for_condition_set_later(
    kubectl: Kubectl, namespace: str, core: client.CoreV1Api, env: dict[str, str]
) -> None:
    apply(kubectl, namespace, pod("p"))
    not_yet = kubectl(
        "wait", "-n", namespace, "--for=condition=Ready", "pod/p", "--timeout=1s", env=env, check=False
    )
    assert not_yet.returncode == 1
    assert not_yet.stderr.splitlines()[-1] == "error: timed out waiting for the condition on pods/p"

    ready = {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": None}]}}
    timer = threading.Timer(0.5, lambda: core.patch_namespaced_pod_status("p", namespace, ready))
    timer.start()
    try:
        result = kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/p", "--timeout=10s", env=env)
    finally:
        timer.join()
    assert result.stdout == "pod/p condition met\n"


@pytest.mark.parametrize("env", WAIT_MODES.values(), ids=WAIT_MODES.keys())
def test_wait_for_delete_and_jsonpath(
    kubectl: Kubectl, namespace: str, widgets: str, env: dict[str, str]
) -> None:
    apply(kubectl, namespace, configmap("c"), widget("w", size=1))
    timer = threading.Timer(0.5, lambda: kubectl("delete", "-n", namespace, "configmap/c", "--wait=false"))
    timer.start()
    try:
        result = kubectl("wait", "-n", namespace, "--for=delete", "configmap/c", "--timeout=10s", env=env)
    finally:
        timer.join()
    assert result.stdout == "configmap/c condition met\n"

    timer = threading.Timer(
        0.5,
        lambda: kubectl("patch", "-n", namespace, "widget/w", "--type=merge", "-p", '{"spec":{"size":7}}'),
    )
    timer.start()
    try:
        result = kubectl(
            "wait", "-n", namespace, "--for=jsonpath={.spec.size}=7", "widget/w", "--timeout=10s", env=env
        )
    finally:
        timer.join()
    assert result.stdout == f"widget.{GROUP}/w condition met\n"
    # Already satisfied: returns at once.
    kubectl("wait", "-n", namespace, "--for=jsonpath={.spec.color}=blue", "widget/w", "--timeout=2s", env=env)


def test_wait_for_established_crd(kubectl: Kubectl, widgets: str) -> None:
    out = kubectl("wait", "--for=condition=Established", f"crd/{widgets}", "--timeout=5s").stdout
    assert out == f"customresourcedefinition.apiextensions.k8s.io/{widgets} condition met\n"
    names = json.loads(kubectl("get", "crd", widgets, "-o", "jsonpath={.status.acceptedNames}").stdout)
    assert names["kind"] == "Widget"
    assert names["shortNames"] == ["wd"]


# -- RBAC and impersonation -------------------------------------------------------------------------


def test_impersonated_service_account_needs_a_role(kubectl: Kubectl, namespace: str) -> None:
    user = f"system:serviceaccount:{namespace}:reader"
    apply(
        kubectl,
        namespace,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}},
        pod("p"),
    )
    denied = kubectl("get", "-n", namespace, "pods", f"--as={user}", check=False)
    assert denied.returncode == 1
    assert denied.stderr == (
        f'Error from server (Forbidden): pods is forbidden: User "{user}" cannot list resource "pods" '
        f'in API group "" in the namespace "{namespace}"\n'
    )
    one = kubectl("get", "-n", namespace, "pod/p", f"--as={user}", check=False)
    assert one.stderr == (
        f'Error from server (Forbidden): pods "p" is forbidden: User "{user}" cannot get resource "pods" '
        f'in API group "" in the namespace "{namespace}"\n'
    )

    apply(
        kubectl,
        namespace,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "pod-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
        },
    )
    assert kubectl("get", "-n", namespace, "pods", f"--as={user}", "-o", "name").stdout == "pod/p\n"
    # The role grants reads only.
    delete = kubectl("delete", "-n", namespace, "pod/p", f"--as={user}", check=False)
    assert f'User "{user}" cannot delete resource "pods" in API group ""' in delete.stderr
    other_ns = kubectl("get", "-n", "default", "pods", f"--as={user}", check=False)
    assert 'in the namespace "default"' in other_ns.stderr


def test_auth_can_i_sends_protobuf_and_is_answered(kubectl: Kubectl, namespace: str, reader: str) -> None:
    assert kubectl("auth", "can-i", "list", "pods", "-n", namespace).stdout == "yes\n"
    user = f"system:serviceaccount:{namespace}:{reader}"
    assert kubectl("auth", "can-i", "list", "pods", "-n", namespace, f"--as={user}").stdout == "yes\n"
    denied = kubectl("auth", "can-i", "delete", "pods", "-n", namespace, f"--as={user}", check=False)
    assert (denied.returncode, denied.stdout) == (1, "no\n")


# -- create generators (protobuf bodies) ----------------------------------------------------------------


def test_create_generators_of_simple_kinds_send_protobuf_and_work(kubectl: Kubectl, namespace: str) -> None:
    assert kubectl("create", "configmap", "x", "-n", namespace, "--from-literal=a=b").stdout == (
        "configmap/x created\n"
    )
    assert jsonpath(kubectl, namespace, "configmap/x", "{.data}") == '{"a":"b"}'
    kubectl("create", "secret", "generic", "s", "-n", namespace, "--from-literal=x=y")
    assert jsonpath(kubectl, namespace, "secret/s", "{.type} {.data.x}") == "Opaque eQ=="
    kubectl("create", "serviceaccount", "robot", "-n", namespace)
    assert jsonpath(kubectl, namespace, "serviceaccount/robot", "{.metadata.name}") == "robot"
    other = f"{namespace}-made"
    assert kubectl("create", "namespace", other).stdout == f"namespace/{other} created\n"
    kubectl("delete", "namespace", other, "--wait=false")


def test_create_generators_of_workload_and_rbac_kinds_send_protobuf_and_work(
    kubectl: Kubectl, namespace: str
) -> None:
    created = kubectl(
        "create", "deployment", "d", "-n", namespace, "--image=registry.example/d:1", "--replicas=2"
    )
    assert created.stdout == "deployment.apps/d created\n"
    assert jsonpath(
        kubectl,
        namespace,
        "deployment/d",
        "{.spec.replicas} {.spec.selector.matchLabels.app} {.spec.template.spec.containers[0].image}",
    ) == ("2 d registry.example/d:1")
    created = kubectl("create", "job", "j", "-n", namespace, "--image=registry.example/j:1", "--", "true")
    assert created.stdout == "job.batch/j created\n"
    assert jsonpath(
        kubectl,
        namespace,
        "job/j",
        "{.spec.template.spec.restartPolicy} {.spec.template.spec.containers[0].command}",
    ) == ('Never ["true"]')
    created = kubectl(
        "create", "role", "r", "-n", namespace, "--verb=get,list", "--resource=pods,deployments.apps"
    )
    assert created.stdout == "role.rbac.authorization.k8s.io/r created\n"
    assert json.loads(jsonpath(kubectl, namespace, "role/r", "{.rules}")) == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
    ]


def test_drain_cordons_and_evicts_through_protobuf(kubectl: Kubectl, namespace: str) -> None:
    node = f"drain-{uuid.uuid4().hex[:8]}"
    kubectl("apply", "-f", "-", input=dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}))
    try:
        bound = pod("p", "c")
        bound["spec"].update(nodeName=node, terminationGracePeriodSeconds=0)
        apply(kubectl, namespace, bound)
        drained = kubectl("drain", node, "--force", "--timeout=20s")
        assert drained.stdout == (
            f"node/{node} cordoned\nevicting pod {namespace}/p\npod/p evicted\nnode/{node} drained\n"
        )
        assert f"Warning: deleting Pods that declare no controller: {namespace}/p" in drained.stderr
        assert kubectl("get", "node", node, "-o", "jsonpath={.spec.unschedulable}").stdout == "true"
        gone = kubectl("get", "-n", namespace, "pod/p", check=False)
        assert gone.stderr == 'Error from server (NotFound): pods "p" not found\n'
    finally:
        kubectl("delete", "node", node, "--wait=false")


# -- logs --------------------------------------------------------------------------------------------


def test_logs(kubectl: Kubectl, namespace: str, core: client.CoreV1Api) -> None:
    apply(kubectl, namespace, pod("one"), pod("two", "a", "b"))
    append_log(kubectl, namespace, "one", "main", "line1\nline2\nline3\n")
    assert kubectl("logs", "-n", namespace, "one").stdout == "line1\nline2\nline3\n"
    assert kubectl("logs", "-n", namespace, "pod/one", "--tail=1").stdout == "line3\n"
    assert kubectl("logs", "-n", namespace, "one", "-c", "main", "--limit-bytes=5").stdout == "line1"

    append_log(kubectl, namespace, "two", "b", "from b\n")
    assert kubectl("logs", "-n", namespace, "two", "-c", "b").stdout == "from b\n"
    defaulted = kubectl("logs", "-n", namespace, "two")  # kubectl picks the first container itself
    assert defaulted.stderr == 'Defaulted container "a" out of: a, b\n'
    assert (
        kubectl("logs", "-n", namespace, "two", "--all-containers", "--prefix").stdout
        == "[pod/two/b] from b\n"
    )
    wrong = kubectl("logs", "-n", namespace, "two", "-c", "nope", check=False)
    assert wrong.stderr == "error: container nope is not valid for pod two\n"

    # Without a container the server itself refuses a multi-container pod (kubectl never asks so).
    with pytest.raises(client.ApiException) as raised:
        core.read_namespaced_pod_log("two", namespace)
    assert raised.value.status == 400
    assert (
        json.loads(raised.value.body)["message"]
        == "a container name must be specified for pod two, choose one of: [a b]"
    )


# -- discovery and explain ------------------------------------------------------------------------------


def test_api_resources_and_versions(kubectl: Kubectl, widgets: str) -> None:
    rows = table(kubectl("api-resources").stdout)
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    by_name = {r[0]: r for r in rows[1:]}
    assert by_name["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert by_name["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name["widgets"] == ["widgets", "wd", f"{GROUP}/v1", "true", "Widget"]
    assert by_name["namespaces"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    namespaced = kubectl("api-resources", "--namespaced=false", "-o", "name").stdout.split()
    assert "namespaces" in namespaced and "pods" not in namespaced

    versions = kubectl("api-versions").stdout.split()
    for expected in (
        "v1",
        "apps/v1",
        "rbac.authorization.k8s.io/v1",
        "apiextensions.k8s.io/v1",
        f"{GROUP}/v1",
    ):
        assert expected in versions


def test_explain(kubectl: Kubectl, widgets: str) -> None:
    containers = kubectl("explain", "pod.spec.containers").stdout
    assert containers.startswith("KIND:       Pod\nVERSION:    v1\n\nFIELD: containers <[]Container>\n")
    assert "\n  image\t<string>\n" in containers
    assert "\n  name\t<string> -required-\n" in containers
    spec = kubectl("explain", "widgets.spec").stdout
    assert f"GROUP:      {GROUP}\nKIND:       Widget\n" in spec
    assert "\n  size\t<integer>\n" in spec
    missing = kubectl("explain", "pod.spec.nope", check=False)
    assert missing.returncode == 1
    assert 'field "nope" does not exist' in missing.stderr


def test_exec_into_a_pod_without_a_node(kubectl: Kubectl, namespace: str) -> None:
    """Over WebSocket and over kubectl's SPDY fallback alike: the API server's answer for an unbound pod."""
    apply(kubectl, namespace, pod("x"))
    result = kubectl("exec", "-n", namespace, "x", "--", "true", check=False)
    assert result.returncode == 1
    assert "pod x does not have a host assigned" in result.stderr, result.stderr
