"""The embedded API server as the official Python client sees it: typed APIs, Watch, DynamicClient, raw REST.

Each test states one upstream behaviour of kube-apiserver and drives it only through
``kubernetes`` 37.x, so the same assertions would hold against a real cluster.  The one
local-only hook is ``POST /debug/nrop/compact``, which forgets the watch history so the 410
paths can be exercised.
"""

from __future__ import annotations

import copy
import functools
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client import ApiClient, ApiException

from nrop.suite.e2e.wait.polling import wait_for as wait_for_state

GROUP = "conformance.nrop.io"
VERSION = "v1"
PLURAL = "widgets"
KIND = "Widget"
CRD_NAME = f"{PLURAL}.{GROUP}"
HOLD = "conformance.nrop.io/hold"
NAME_CHARS = set("bcdfghjklmnpqrstvwxz2456789")
CONFLICT_TAIL = "the object has been modified; please apply your changes to the latest version and try again"
SMP_ON_CR = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)
# How long a background controller (GC, namespace deletion) may take in the embedded cluster.
SETTLE = 10.0

Obj = dict[str, Any]


# -- helpers ------------------------------------------------------------------------------------


#: every wait here gives the server SETTLE seconds
wait_for = functools.partial(wait_for_state, timeout=SETTLE)


def gone(read: Callable[[], Any]) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            read()
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    return probe


def status_body(exc: ApiException) -> Obj:
    body = json.loads(exc.body)
    assert body["kind"] == "Status", body
    return body


def events(func: Callable[..., Any], *args: Any, **kwargs: Any) -> list[tuple[str, Any]]:
    """Every event of one bounded watch (``timeout_seconds`` must be given) as (type, object)."""
    assert "timeout_seconds" in kwargs
    return [(e["type"], e["object"]) for e in watch.Watch().stream(func, *args, **kwargs)]


def names(evs: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for etype, obj in evs:
        if etype == "BOOKMARK":
            continue
        name = obj["metadata"]["name"] if isinstance(obj, dict) else obj.metadata.name
        out.append((etype, name))
    return out


def auth_header(api: ApiClient) -> dict[str, str]:
    return {"Authorization": api.configuration.auth_settings()["BearerToken"]["value"]}


def raw(
    api: ApiClient, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> Any:
    """One request through the client's REST layer; returns the urllib3-backed RESTResponse."""
    hdrs = {"Accept": "application/json", **auth_header(api), **(headers or {})}
    return api.call_api(method, api.configuration.host + path, header_params=hdrs, body=body)


def compact(api: ApiClient) -> int:
    response = raw(api, "POST", "/debug/nrop/compact")
    assert response.status == 200
    return int(json.loads(response.read())["compactedResourceVersion"])


def cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, **meta), data=data or {"k": "v"})


def pod(name: str, labels: dict[str, str] | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="pause:3.9")]),
    )


def widget(name: str, size: int = 1, **extra: Any) -> Obj:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {"size": size},
        **extra,
    }


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def core(api_client: ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def apps(api_client: ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture(scope="module")
def custom(api_client: ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture(scope="module")
def widgets_crd(api_client: ApiClient) -> Iterator[str]:
    """A namespaced CRD with a status subresource and a small structural schema."""
    ext = client.ApiextensionsV1Api(api_client)
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 0},
                    "color": {"type": "string", "enum": ["red", "blue"]},
                },
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "widget", "kind": KIND, "listKind": f"{KIND}List"},
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }
    ext.create_custom_resource_definition(body)
    wait_for(
        lambda: ext.read_custom_resource_definition(CRD_NAME),
        lambda crd: any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or ()),
        f"CRD {CRD_NAME} to be Established",
    )
    yield CRD_NAME
    ext.delete_custom_resource_definition(CRD_NAME)


@pytest.fixture
def scratch_namespace(core: client.CoreV1Api) -> Iterator[str]:
    """A namespace the test itself deletes (the ``namespace`` fixture's teardown would 404 noisily)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


# -- CRUD ---------------------------------------------------------------------------------------


def test_configmap_crud_round_trip(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, cm("c1", {"a": "1"}))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.generation is None  # ConfigMaps have no generation

    read = core.read_namespaced_config_map("c1", namespace)
    assert read.data == {"a": "1"}
    read.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("c1", namespace, read)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert replaced.metadata.uid == created.metadata.uid

    listed = core.list_namespaced_config_map(namespace)
    assert [i.metadata.name for i in listed.items] == ["c1"]

    status = core.delete_namespaced_config_map("c1", namespace)
    # delete_* is typed ``object``: the Status arrives as a dict.
    assert status["status"] == "Success"
    assert (status["details"]["name"], status["details"]["kind"]) == ("c1", "configmaps")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("c1", namespace)
    assert err.value.status == 404
    assert status_body(err.value)["message"] == 'configmaps "c1" not found'


def test_duplicate_create_is_already_exists(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, cm("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, cm("dup"))
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'configmaps "dup" already exists'


def test_pod_create_applies_defaults_and_pending_phase(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_pod(namespace, pod("p1"))
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"
    assert created.spec.termination_grace_period_seconds == 30
    assert created.spec.dns_policy == "ClusterFirst"
    assert created.spec.node_name is None


def test_pod_priority_comes_from_its_priority_class(
    api_client: ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    # Creation defaults must leave spec.priority to the Priority admission plugin: a pod naming a
    # PriorityClass gets that class's value (a defaulted 0 would be refused as "must not be provided").
    scheduling = client.SchedulingV1Api(api_client)
    name = f"prio-{uuid.uuid4().hex[:6]}"
    scheduling.create_priority_class(
        client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=1000)
    )
    try:
        body = pod("p-prio")
        body.spec.priority_class_name = name
        created = core.create_namespaced_pod(namespace, body)
        assert (created.spec.priority_class_name, created.spec.priority) == (name, 1000)
        assert core.create_namespaced_pod(namespace, pod("p-none")).spec.priority == 0
    finally:
        scheduling.delete_priority_class(name)


def test_deployment_generation_follows_spec_not_labels(apps: client.AppsV1Api, namespace: str) -> None:
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d1"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "d1"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "d1"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="pause:3.9")]),
            ),
        ),
    )
    created = apps.create_namespaced_deployment(namespace, body)
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment("d1", namespace, {"metadata": {"labels": {"x": "y"}}})
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("d1", namespace, {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    assert scaled.spec.replicas == 3
    # Status goes through /status only and never bumps generation.
    status = apps.patch_namespaced_deployment_status("d1", namespace, {"status": {"observedGeneration": 2}})
    assert status.metadata.generation == 2 and status.status.observed_generation == 2


def test_custom_resource_status_subresource_semantics(
    custom: client.CustomObjectsApi, widgets_crd: str, namespace: str
) -> None:
    args = (GROUP, VERSION, namespace, PLURAL)
    created = custom.create_namespaced_custom_object(*args, widget("w1", status={"phase": "Ignored"}))
    assert created["metadata"]["generation"] == 1
    assert "status" not in created, "create drops status when the status subresource exists"

    # /status writes change status only; spec and label changes sent there are dropped.
    sent = copy.deepcopy(created)
    sent["status"] = {"phase": "Ready"}
    sent["spec"]["size"] = 9
    sent["metadata"]["labels"] = {"sneaky": "yes"}
    after_status = custom.replace_namespaced_custom_object_status(*args, "w1", sent)
    assert after_status["status"] == {"phase": "Ready"}
    assert after_status["spec"]["size"] == 1
    assert "labels" not in after_status["metadata"]
    assert after_status["metadata"]["generation"] == 1

    # Main-endpoint writes keep the stored status; only spec changes bump generation.
    sent = copy.deepcopy(after_status)
    sent["status"] = {"phase": "Overwritten"}
    sent["metadata"]["labels"] = {"tier": "a"}
    relabelled = custom.replace_namespaced_custom_object(*args, "w1", sent)
    assert relabelled["status"] == {"phase": "Ready"}
    assert relabelled["metadata"]["labels"] == {"tier": "a"}
    assert relabelled["metadata"]["generation"] == 1
    resized = custom.patch_namespaced_custom_object(*args, "w1", {"spec": {"size": 2}})
    assert resized["metadata"]["generation"] == 2
    assert resized["status"] == {"phase": "Ready"}

    # GET .../status returns the whole object.
    whole = custom.get_namespaced_custom_object_status(*args, "w1")
    assert whole["spec"]["size"] == 2 and whole["status"]["phase"] == "Ready"

    listed = custom.list_namespaced_custom_object(*args)
    assert listed["kind"] == f"{KIND}List"
    assert [(i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [(KIND, "w1")]
    custom.delete_namespaced_custom_object(*args, "w1")
    assert wait_for(gone(lambda: custom.get_namespaced_custom_object(*args, "w1")), bool, "w1 to be gone")


# -- optimistic concurrency -----------------------------------------------------------------------


def test_stale_resource_version_is_conflict(core: client.CoreV1Api, namespace: str) -> None:
    first = core.create_namespaced_config_map(namespace, cm("occ"))
    core.patch_namespaced_config_map("occ", namespace, {"data": {"k": "v2"}})
    first.data = {"k": "stale"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("occ", namespace, first)
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (409, "Conflict")
    assert body["message"] == f'Operation cannot be fulfilled on configmaps "occ": {CONFLICT_TAIL}'
    assert body["details"] == {"name": "occ", "kind": "configmaps"}
    # A patch carrying a stale resourceVersion is a precondition too.
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map(
            "occ", namespace, {"metadata": {"resourceVersion": first.metadata.resource_version}}
        )
    assert err.value.status == 409
    # Without resourceVersion, a built-in update is unconditional.
    first.metadata.resource_version = None
    assert core.replace_namespaced_config_map("occ", namespace, first).data == {"k": "stale"}


def test_custom_resource_update_without_resource_version_is_invalid(
    custom: client.CustomObjectsApi, widgets_crd: str, namespace: str
) -> None:
    args = (GROUP, VERSION, namespace, PLURAL)
    custom.create_namespaced_custom_object(*args, widget("w-norv"))
    with pytest.raises(ApiException) as err:
        custom.replace_namespaced_custom_object(*args, "w-norv", widget("w-norv", size=2))
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        f'{KIND}.{GROUP} "w-norv" is invalid: metadata.resourceVersion: '
        "Invalid value: 0x0: must be specified for an update"
    )
    assert body["details"]["causes"][0]["field"] == "metadata.resourceVersion"


def test_noop_patch_keeps_resource_version_and_emits_no_event(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, cm("noop", {"a": "1"}, labels={"l": "1"}))
    rv = created.metadata.resource_version
    same = core.patch_namespaced_config_map(
        "noop", namespace, {"data": {"a": "1"}, "metadata": {"labels": {"l": "1"}}}
    )
    assert same.metadata.resource_version == rv
    same = core.patch_namespaced_config_map(
        "noop", namespace, [{"op": "replace", "path": "/data/a", "value": "1"}]
    )
    assert same.metadata.resource_version == rv
    changed = core.patch_namespaced_config_map("noop", namespace, {"data": {"a": "2"}})
    assert changed.metadata.resource_version != rv
    seen = events(core.list_namespaced_config_map, namespace, resource_version=rv, timeout_seconds=1)
    assert [(t, o.metadata.resource_version) for t, o in seen] == [
        ("MODIFIED", changed.metadata.resource_version)
    ]


# -- patch types ------------------------------------------------------------------------------------


def test_patch_types_on_typed_api(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, cm("pt", {"a": "1", "b": "2"}))
    # A dict body is sent as strategic merge patch: maps merge.
    smp = core.patch_namespaced_config_map("pt", namespace, {"data": {"c": "3"}})
    assert smp.data == {"a": "1", "b": "2", "c": "3"}
    # A list body is a JSON patch.
    jp = core.patch_namespaced_config_map(
        "pt", namespace, [{"op": "remove", "path": "/data/a"}, {"op": "add", "path": "/data/d", "value": "4"}]
    )
    assert jp.data == {"b": "2", "c": "3", "d": "4"}
    # Merge patch: null deletes a key.
    mp = core.patch_namespaced_config_map(
        "pt", namespace, {"data": {"b": None}}, _content_type="application/merge-patch+json"
    )
    assert mp.data == {"c": "3", "d": "4"}


def test_strategic_merge_patch_merges_containers_by_name(core: client.CoreV1Api, namespace: str) -> None:
    body = pod("smp")
    body.spec.containers.append(client.V1Container(name="side", image="pause:3.9"))
    core.create_namespaced_pod(namespace, body)
    patched = core.patch_namespaced_pod(
        "smp", namespace, {"spec": {"containers": [{"name": "side", "image": "pause:3.10"}]}}
    )
    assert [(c.name, c.image) for c in patched.spec.containers] == [
        ("c", "pause:3.9"),
        ("side", "pause:3.10"),
    ]


def test_dynamic_client_default_patch_on_custom_resource_is_415(
    api_client: ApiClient, widgets_crd: str, namespace: str, tmp_path: Any
) -> None:
    dyn = dynamic.DynamicClient(api_client, cache_file=str(tmp_path / "discovery.json"))
    widgets = dyn.resources.get(api_version=f"{GROUP}/{VERSION}", kind=KIND)
    widgets.create(body=widget("dyn"), namespace=namespace)
    with pytest.raises(ApiException) as err:
        widgets.patch(name="dyn", namespace=namespace, body={"spec": {"size": 5}})
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (415, "UnsupportedMediaType")
    assert body["message"] == SMP_ON_CR
    patched = widgets.patch(
        name="dyn",
        namespace=namespace,
        body={"spec": {"size": 5}},
        content_type="application/merge-patch+json",
    )
    assert patched.spec.size == 5
    assert patched.metadata.generation == 2


# -- create options -------------------------------------------------------------------------------


def test_generate_name(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))
    )
    name = created.metadata.name
    assert name.startswith("gen-") and len(name) == len("gen-") + 5
    assert set(name[4:]) <= NAME_CHARS
    assert created.metadata.generate_name == "gen-"


def test_dry_run_all_persists_nothing(core: client.CoreV1Api, namespace: str) -> None:
    before = core.list_namespaced_config_map(namespace).metadata.resource_version
    dry = core.create_namespaced_config_map(namespace, cm("dry"), dry_run="All")
    assert dry.metadata.name == "dry" and dry.metadata.uid
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("dry", namespace)
    assert err.value.status == 404

    core.create_namespaced_config_map(namespace, cm("real", {"a": "1"}))
    patched = core.patch_namespaced_config_map("real", namespace, {"data": {"a": "2"}}, dry_run="All")
    assert patched.data == {"a": "2"}
    core.delete_namespaced_config_map("real", namespace, dry_run="All")
    assert core.read_namespaced_config_map("real", namespace).data == {"a": "1"}
    # Only the real create moved the global revision.
    seen = events(core.list_namespaced_config_map, namespace, resource_version=before, timeout_seconds=1)
    assert names(seen) == [("ADDED", "real")]


# -- selectors ------------------------------------------------------------------------------------

LABELLED = {
    "a": {"app": "web", "tier": "front"},
    "b": {"app": "web", "tier": "back"},
    "c": {"app": "db"},
    "d": {},
}


@pytest.fixture(scope="module")
def labelled_namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = f"t-sel-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    for cm_name, labels in LABELLED.items():
        core.create_namespaced_config_map(name, cm(cm_name, labels=labels or None))
    yield name
    core.delete_namespace(name)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("app=web", ["a", "b"], id="equality"),
        pytest.param("app==web,tier=back", ["b"], id="double-equals-and"),
        pytest.param("tier!=front", ["b", "c", "d"], id="not-equal-matches-missing-key"),
        pytest.param("app in (db, web)", ["a", "b", "c"], id="in"),
        pytest.param("app notin (web)", ["c", "d"], id="notin-matches-missing-key"),
        pytest.param("tier", ["a", "b"], id="exists"),
        pytest.param("!tier", ["c", "d"], id="does-not-exist"),
        pytest.param(" app = web , !tier ", [], id="whitespace"),
    ],
)
def test_label_selectors(
    core: client.CoreV1Api, labelled_namespace: str, selector: str, expected: list[str]
) -> None:
    listed = core.list_namespaced_config_map(labelled_namespace, label_selector=selector)
    assert [i.metadata.name for i in listed.items if i.metadata.name in LABELLED] == expected


def test_field_selectors(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("fa"))
    core.create_namespaced_pod(namespace, pod("fb"))
    core.patch_namespaced_pod_status("fb", namespace, {"status": {"phase": "Running"}})

    def listed(selector: str) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod(namespace, field_selector=selector).items]

    assert listed("metadata.name=fa") == ["fa"]
    assert listed("status.phase=Running") == ["fb"]
    assert listed("status.phase!=Running") == ["fa"]
    assert listed(f"metadata.namespace={namespace},metadata.name!=fa") == ["fb"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod(namespace, field_selector="spec.bogus=x")
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (400, "BadRequest")
    assert "spec.bogus" in body["message"]


# -- lists ---------------------------------------------------------------------------------------


def test_pagination_serves_pages_from_one_snapshot(core: client.CoreV1Api, namespace: str) -> None:
    for i in range(5):
        core.create_namespaced_config_map(namespace, cm(f"p{i}"))
    first = core.list_namespaced_config_map(namespace, limit=2)
    assert [i.metadata.name for i in first.items] == ["p0", "p1"]
    assert first.metadata.remaining_item_count == 3
    assert first.metadata._continue

    # Changes between pages are not visible: the pages come from the first page's snapshot.
    core.create_namespaced_config_map(namespace, cm("p2a"))
    core.delete_namespaced_config_map("p4", namespace)
    second = core.list_namespaced_config_map(namespace, limit=2, _continue=first.metadata._continue)
    assert [i.metadata.name for i in second.items] == ["p2", "p3"]
    assert second.metadata.resource_version == first.metadata.resource_version
    assert second.metadata.remaining_item_count == 1
    third = core.list_namespaced_config_map(namespace, limit=2, _continue=second.metadata._continue)
    assert [i.metadata.name for i in third.items] == ["p4"]
    assert not third.metadata._continue
    assert third.metadata.remaining_item_count is None

    fresh = core.list_namespaced_config_map(namespace)
    assert [i.metadata.name for i in fresh.items] == ["p0", "p1", "p2", "p2a", "p3"]


def test_list_resource_version_is_the_global_revision(core: client.CoreV1Api, namespace: str) -> None:
    mine = core.create_namespaced_config_map(namespace, cm("mine"))
    other = core.create_namespaced_secret(
        namespace, client.V1Secret(metadata=client.V1ObjectMeta(name="elsewhere"), string_data={"a": "b"})
    )
    listed = core.list_namespaced_config_map(namespace)
    assert int(listed.metadata.resource_version) >= int(other.metadata.resource_version)
    assert int(listed.metadata.resource_version) > int(mine.metadata.resource_version)
    assert listed.kind == "ConfigMapList" and listed.api_version == "v1"


def test_continue_token_expires_with_compaction(
    api_client: ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    for i in range(3):
        core.create_namespaced_config_map(namespace, cm(f"x{i}"))
    first = core.list_namespaced_config_map(namespace, limit=1)
    # A later write, then compaction past the token's snapshot revision: the snapshot is gone.
    core.create_namespaced_config_map(namespace, cm("x9"))
    compact(api_client)
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map(namespace, limit=1, _continue=first.metadata._continue)
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (410, "Expired")
    assert body["message"].startswith("The provided continue parameter is too old")


# -- watch ----------------------------------------------------------------------------------------


def test_watch_starts_with_added_events_and_ends_on_timeout(core: client.CoreV1Api, namespace: str) -> None:
    for name in ("w1", "w2"):
        core.create_namespaced_config_map(namespace, cm(name))
    started = time.monotonic()
    seen = events(core.list_namespaced_config_map, namespace, timeout_seconds=1)
    elapsed = time.monotonic() - started
    assert names(seen) == [("ADDED", "w1"), ("ADDED", "w2")]
    assert 0.8 <= elapsed < 5, f"timeout_seconds=1 ended the stream after {elapsed:.2f}s"


def test_watch_resumes_from_resource_version_without_gaps_or_duplicates(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, cm("r0"))
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    a = core.create_namespaced_config_map(namespace, cm("r1"))
    b = core.patch_namespaced_config_map("r0", namespace, {"data": {"k": "x"}})
    c = core.delete_namespaced_config_map("r1", namespace)
    assert c["status"] == "Success"
    seen = events(core.list_namespaced_config_map, namespace, resource_version=rv, timeout_seconds=1)
    assert names(seen) == [("ADDED", "r1"), ("MODIFIED", "r0"), ("DELETED", "r1")]
    rvs = [int(o.metadata.resource_version) for _, o in seen]
    assert rvs == sorted(set(rvs))
    assert rvs[:2] == [int(a.metadata.resource_version), int(b.metadata.resource_version)]
    # Resuming from the middle gives exactly the tail.
    tail = events(core.list_namespaced_config_map, namespace, resource_version=str(rvs[0]), timeout_seconds=1)
    assert names(tail) == [("MODIFIED", "r0"), ("DELETED", "r1")]


def test_watch_sends_bookmarks(core: client.CoreV1Api, namespace: str) -> None:
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    seen = events(
        core.list_namespaced_config_map,
        namespace,
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=2,
    )
    bookmarks = [o for t, o in seen if t == "BOOKMARK"]
    assert bookmarks, f"no BOOKMARK in {seen}"
    for mark in bookmarks:
        assert mark["kind"] == "ConfigMap" and mark["apiVersion"] == "v1"
        assert int(mark["metadata"]["resourceVersion"]) >= int(rv)


def test_watch_selector_transitions(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, cm("st", labels={"app": "x"}))
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.patch_namespaced_config_map("st", namespace, {"data": {"k": "still-x"}})
    left = core.patch_namespaced_config_map("st", namespace, {"metadata": {"labels": {"app": "y"}}})
    core.patch_namespaced_config_map("st", namespace, {"data": {"k": "unseen"}})
    back = core.patch_namespaced_config_map("st", namespace, {"metadata": {"labels": {"app": "x"}}})
    seen = events(
        core.list_namespaced_config_map,
        namespace,
        label_selector="app=x",
        resource_version=rv,
        timeout_seconds=1,
    )
    assert names(seen) == [("MODIFIED", "st"), ("DELETED", "st"), ("ADDED", "st")]
    assert seen[1][1].metadata.resource_version == left.metadata.resource_version
    assert seen[2][1].metadata.resource_version == back.metadata.resource_version


def test_watch_from_compacted_revision_gets_410(
    api_client: ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    old = core.create_namespaced_config_map(namespace, cm("old")).metadata.resource_version
    core.patch_namespaced_config_map("old", namespace, {"data": {"k": "newer"}})
    floor = compact(api_client)
    # The raw stream: HTTP 200, then one in-stream ERROR with the Status.
    response = raw(
        api_client, "GET", f"/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion={old}"
    )
    assert response.status == 200
    lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    assert [e["type"] for e in lines] == ["ERROR"]
    status = lines[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"] == f"too old resource version: {old} ({floor})"
    # The client reconnects once on 410 with the same revision, then raises.
    with pytest.raises(ApiException) as err:
        events(core.list_namespaced_config_map, namespace, resource_version=old, timeout_seconds=2)
    assert err.value.status == 410
    assert "too old resource version" in err.value.reason


def test_watch_list_ends_initial_events_with_annotated_bookmark(
    api_client: ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    for name in ("i1", "i2"):
        core.create_namespaced_config_map(namespace, cm(name))
    response = raw(
        api_client,
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps?watch=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1",
    )
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("application/json")
    lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in lines[:3]] == [
        ("ADDED", "i1"),
        ("ADDED", "i2"),
        ("BOOKMARK", None),
    ]
    assert {(e["object"]["kind"], e["object"]["apiVersion"]) for e in lines} == {("ConfigMap", "v1")}
    marker = lines[2]["object"]
    assert marker["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(marker["metadata"]["resourceVersion"]) >= max(
        int(e["object"]["metadata"]["resourceVersion"]) for e in lines[:2]
    )


# -- deletion -----------------------------------------------------------------------------------


def test_deletion_with_finalizer(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, cm("fin", finalizers=[HOLD]))
    rv = created.metadata.resource_version
    terminating = core.delete_namespaced_config_map("fin", namespace)
    assert terminating["kind"] == "ConfigMap"  # the object itself comes back, not a Status
    assert terminating["metadata"]["deletionTimestamp"]
    held = core.read_namespaced_config_map("fin", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == [HOLD]
    # A repeated DELETE changes nothing.
    core.delete_namespaced_config_map("fin", namespace)
    assert (
        core.read_namespaced_config_map("fin", namespace).metadata.resource_version
        == held.metadata.resource_version
    )
    # New finalizers are refused once deletion started.
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("fin", namespace, {"metadata": {"finalizers": [HOLD, "x.io/more"]}})
    assert err.value.status == 422
    assert (
        "no new finalizers can be added if the object is being deleted" in status_body(err.value)["message"]
    )
    core.patch_namespaced_config_map("fin", namespace, [{"op": "remove", "path": "/metadata/finalizers"}])
    assert gone(lambda: core.read_namespaced_config_map("fin", namespace))()
    seen = events(core.list_namespaced_config_map, namespace, resource_version=rv, timeout_seconds=1)
    assert [t for t, _ in seen] == ["MODIFIED", "DELETED"]
    assert seen[0][1].metadata.deletion_timestamp is not None
    assert seen[1][1].metadata.finalizers is None


def test_delete_precondition_uid_mismatch_is_conflict(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, cm("pre"))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map(
            "pre", namespace, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-it"))
        )
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        f"Precondition failed: UID in precondition: not-it, UID in object meta: {created.metadata.uid}"
    )
    core.delete_namespaced_config_map(
        "pre",
        namespace,
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=created.metadata.uid)),
    )
    assert gone(lambda: core.read_namespaced_config_map("pre", namespace))()


def _owned(
    core: client.CoreV1Api, namespace: str, owner: client.V1ConfigMap, name: str, **extra: Any
) -> None:
    ref = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name=owner.metadata.name, uid=owner.metadata.uid, **extra
    )
    core.create_namespaced_config_map(namespace, cm(name, owner_references=[ref]))


def test_garbage_collection_background(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, cm("owner"))
    _owned(core, namespace, owner, "dep1")
    _owned(core, namespace, owner, "dep2")
    core.delete_namespaced_config_map("owner", namespace)
    for dep in ("dep1", "dep2"):
        wait_for(
            gone(lambda dep=dep: core.read_namespaced_config_map(dep, namespace)),  # type: ignore[misc]
            bool,
            f"dependent {dep} to be collected",
        )


def test_garbage_collection_orphan(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, cm("owner"))
    _owned(core, namespace, owner, "kept")
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Orphan")
    wait_for(gone(lambda: core.read_namespaced_config_map("owner", namespace)), bool, "owner to be gone")
    kept = core.read_namespaced_config_map("kept", namespace)
    assert kept.metadata.owner_references is None
    assert kept.metadata.deletion_timestamp is None


def test_garbage_collection_foreground(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, cm("owner"))
    ref = client.V1OwnerReference(
        api_version="v1",
        kind="ConfigMap",
        name="owner",
        uid=owner.metadata.uid,
        block_owner_deletion=True,
    )
    core.create_namespaced_config_map(namespace, cm("blocker", owner_references=[ref], finalizers=[HOLD]))
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")
    held = core.read_namespaced_config_map("owner", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert "foregroundDeletion" in held.metadata.finalizers
    wait_for(
        lambda: core.read_namespaced_config_map("blocker", namespace),
        lambda b: b.metadata.deletion_timestamp is not None,
        "the blocking dependent to be deleted in the foreground",
    )
    time.sleep(1.0)  # a few GC passes: the owner must still be held by the blocking dependent
    assert core.read_namespaced_config_map("owner", namespace).metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("blocker", namespace, [{"op": "remove", "path": "/metadata/finalizers"}])
    wait_for(gone(lambda: core.read_namespaced_config_map("owner", namespace)), bool, "owner to be deleted")


def test_namespace_deletion(core: client.CoreV1Api, scratch_namespace: str) -> None:
    ns = scratch_namespace
    created = core.read_namespace(ns)
    assert created.status.phase == "Active"
    assert created.spec.finalizers == ["kubernetes"]
    assert created.metadata.labels["kubernetes.io/metadata.name"] == ns
    core.create_namespaced_config_map(ns, cm("held", finalizers=[HOLD]))
    core.create_namespaced_config_map(ns, cm("plain"))

    core.delete_namespace(ns)
    terminating = wait_for(
        lambda: core.read_namespace(ns),
        lambda n: any(
            c.type == "NamespaceFinalizersRemaining" and c.status == "True" for c in n.status.conditions or ()
        ),
        f"namespace {ns} to report the remaining finalizer",
    )
    assert terminating.status.phase == "Terminating"
    assert terminating.metadata.deletion_timestamp is not None
    conditions = {c.type: c for c in terminating.status.conditions}
    assert HOLD in conditions["NamespaceFinalizersRemaining"].message
    assert conditions["NamespaceContentRemaining"].status == "True"

    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, cm("late"))
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == (
        f'configmaps "late" is forbidden: unable to create new content in namespace {ns} because it is being terminated'
    )
    wait_for(
        gone(lambda: core.read_namespaced_config_map("plain", ns)), bool, "plain configmap to be removed"
    )

    core.patch_namespaced_config_map("held", ns, [{"op": "remove", "path": "/metadata/finalizers"}])
    wait_for(gone(lambda: core.read_namespace(ns)), bool, f"namespace {ns} to be gone")


# -- pod subresources ---------------------------------------------------------------------------


def test_pod_binding(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("bound"))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="bound", annotations={"scheduled-by": "test"}),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name="node-a"),
    )
    # The answer is a Status, which the typed return model (V1Binding) cannot hold: read it raw.
    response = core.create_namespaced_pod_binding("bound", namespace, binding, _preload_content=False)
    assert response.status == 201
    assert json.loads(response.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    bound = core.read_namespaced_pod("bound", namespace)
    assert bound.spec.node_name == "node-a"
    assert bound.metadata.annotations["scheduled-by"] == "test"
    scheduled = [c for c in bound.status.conditions if c.type == "PodScheduled"]
    assert [c.status for c in scheduled] == ["True"]

    binding.target.name = "node-b"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_binding("bound", namespace, binding)
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        'Operation cannot be fulfilled on pods/binding "bound": pod bound is already assigned to node "node-a"'
    )


def test_pod_eviction(core: client.CoreV1Api, namespace: str, api_client: ApiClient) -> None:
    core.create_namespaced_pod(namespace, pod("evicted", labels={"app": "ev"}))
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="evicted", namespace=namespace))
    core.create_namespaced_pod_eviction("evicted", namespace, eviction)
    wait_for(gone(lambda: core.read_namespaced_pod("evicted", namespace)), bool, "evicted pod to be gone")

    # A PodDisruptionBudget that allows no disruption blocks the eviction with 429.
    core.create_namespaced_pod(namespace, pod("protected", labels={"app": "pdb"}))
    client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        namespace,
        client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name="pdb"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=1, selector=client.V1LabelSelector(match_labels={"app": "pdb"})
            ),
        ),
    )
    eviction.metadata.name = "protected"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_eviction("protected", namespace, eviction)
    body = status_body(err.value)
    assert (err.value.status, body["reason"]) == (429, "TooManyRequests")
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert core.read_namespaced_pod("protected", namespace).metadata.deletion_timestamp is None


def test_bound_pod_deletion_is_graceful(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("graceful"))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="graceful"),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name="node-a"),
    )
    core.create_namespaced_pod_binding("graceful", namespace, binding, _preload_content=False)
    returned = core.delete_namespaced_pod("graceful", namespace)
    assert returned.metadata.deletion_grace_period_seconds == 30  # spec.terminationGracePeriodSeconds
    held = core.read_namespaced_pod("graceful", namespace)
    assert held.metadata.deletion_timestamp is not None
    # The kubelet's final word: grace 0 removes it.
    core.delete_namespaced_pod("graceful", namespace, grace_period_seconds=0)
    assert gone(lambda: core.read_namespaced_pod("graceful", namespace))()
    # An unbound pod goes at once.
    core.create_namespaced_pod(namespace, pod("unbound"))
    core.delete_namespaced_pod("unbound", namespace)
    assert gone(lambda: core.read_namespaced_pod("unbound", namespace))()


def test_deployment_scale_subresource(apps: client.AppsV1Api, namespace: str) -> None:
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="scaled"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "scaled"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "scaled"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="pause:3.9")]),
            ),
        ),
    )
    apps.create_namespaced_deployment(namespace, body)
    scale = apps.read_namespaced_deployment_scale("scaled", namespace)
    assert (scale.kind, scale.api_version, scale.spec.replicas) == ("Scale", "autoscaling/v1", 1)
    assert scale.status.selector == "app=scaled"
    patched = apps.patch_namespaced_deployment_scale("scaled", namespace, {"spec": {"replicas": 4}})
    assert patched.spec.replicas == 4
    after = apps.read_namespaced_deployment("scaled", namespace)
    assert (after.spec.replicas, after.metadata.generation) == (4, 2)


def test_dynamic_client_watch_by_name(
    api_client: ApiClient, core: client.CoreV1Api, namespace: str, tmp_path: Any
) -> None:
    dyn = dynamic.DynamicClient(api_client, cache_file=str(tmp_path / "discovery.json"))
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    for name in ("one", "two"):
        core.create_namespaced_config_map(namespace, cm(name))
    seen = [
        (e["type"], e["object"].metadata.name)
        for e in configmaps.watch(namespace=namespace, name="two", timeout=1)
    ]
    assert seen == [("ADDED", "two")]


# -- identity -------------------------------------------------------------------------------------


def _client_with_token(api_client: ApiClient, token: str | None) -> ApiClient:
    configuration = copy.deepcopy(api_client.configuration)
    # load_kube_config stores the whole header value, prefix included, and installs a hook that
    # would restore the admin token before every request.
    configuration.refresh_api_key_hook = None
    configuration.api_key = {"BearerToken": f"Bearer {token}"} if token else {}
    return ApiClient(configuration)


def test_service_account_token_and_rbac(
    api_client: ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="reader"))
    )
    issued = core.create_namespaced_service_account_token(
        "reader",
        namespace,
        client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=["https://kubernetes.default.svc.cluster.local"])
        ),
    )
    assert issued.status.token and issued.status.expiration_timestamp is not None
    assert issued.spec.expiration_seconds == 3600

    with _client_with_token(api_client, issued.status.token) as as_reader:
        reader = client.CoreV1Api(as_reader)
        with pytest.raises(ApiException) as err:
            reader.list_namespaced_config_map(namespace)
        body = status_body(err.value)
        assert (err.value.status, body["reason"]) == (403, "Forbidden")
        assert body["message"] == (
            f'configmaps is forbidden: User "system:serviceaccount:{namespace}:reader" cannot list resource '
            f'"configmaps" in API group "" in the namespace "{namespace}"'
        )
        assert body["details"] == {"kind": "configmaps"}

        rbac_api = client.RbacAuthorizationV1Api(api_client)
        rbac_api.create_namespaced_role(
            namespace,
            client.V1Role(
                metadata=client.V1ObjectMeta(name="cm-reader"),
                rules=[client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get", "list"])],
            ),
        )
        rbac_api.create_namespaced_role_binding(
            namespace,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="cm-reader"),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="Role", name="cm-reader"
                ),
                subjects=[client.RbacV1Subject(kind="ServiceAccount", name="reader", namespace=namespace)],
            ),
        )
        assert reader.list_namespaced_config_map(namespace).items == []
        # The binding grants reads only.
        with pytest.raises(ApiException) as err:
            reader.create_namespaced_config_map(namespace, cm("nope"))
        assert err.value.status == 403

    with _client_with_token(api_client, None) as anonymous:
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(anonymous).list_namespaced_config_map(namespace)
        body = status_body(err.value)
        assert (err.value.status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")

    # Deleting the service account invalidates its tokens.
    core.delete_namespaced_service_account("reader", namespace)
    with _client_with_token(api_client, issued.status.token) as stale:
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(stale).list_namespaced_config_map(namespace)
        assert err.value.status == 401


# -- CEL validation rules ---------------------------------------------------------------------------

SINGLETON_MESSAGE = "This is a singleton resource and the object name must be 'numaresourcesoperator'."


@pytest.fixture(scope="module")
def singleton_crd(api_client: ApiClient) -> Iterator[str]:
    """A cluster-scoped CRD with NROP's root singleton rule and a field rule with a messageExpression."""
    ext = client.ApiextensionsV1Api(api_client)
    name = f"singletons.{GROUP}"
    schema = {
        "type": "object",
        "x-kubernetes-validations": [
            {
                "rule": "has(self.metadata.name) && self.metadata.name == 'numaresourcesoperator'",
                "message": SINGLETON_MESSAGE,
            }
        ],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": {
                        "type": "integer",
                        "x-kubernetes-validations": [
                            {
                                "rule": "self <= 3",
                                "messageExpression": "'at most 3 replicas, not ' + string(self)",
                            }
                        ],
                    },
                    "mode": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
                },
            }
        },
    }
    ext.create_custom_resource_definition(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": GROUP,
                "scope": "Cluster",
                "names": {"plural": "singletons", "singular": "singleton", "kind": "Singleton"},
                "versions": [
                    {"name": VERSION, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
                ],
            },
        }
    )
    wait_for(
        lambda: ext.read_custom_resource_definition(name),
        lambda crd: any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or ()),
        f"CRD {name} to be Established",
    )
    yield name
    ext.delete_custom_resource_definition(name)


def test_cel_rules_of_the_schema_are_enforced(custom: client.CustomObjectsApi, singleton_crd: str) -> None:
    def create(name: str, spec: dict[str, Any]) -> Any:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Singleton",
            "metadata": {"name": name},
            "spec": spec,
        }
        return custom.create_cluster_custom_object(GROUP, VERSION, "singletons", body)

    with pytest.raises(ApiException) as refused:
        create("other", {"replicas": 1})
    status = json.loads(refused.value.body)
    assert (refused.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        f'Singleton.{GROUP} "other" is invalid: <nil>: Invalid value: "object": {SINGLETON_MESSAGE}'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "object": {SINGLETON_MESSAGE}',
            "field": "<nil>",
        }
    ]
    with pytest.raises(ApiException) as refused:
        create("numaresourcesoperator", {"replicas": 5})
    assert json.loads(refused.value.body)["message"] == (
        f'Singleton.{GROUP} "numaresourcesoperator" is invalid: spec.replicas: '
        'Invalid value: "integer": at most 3 replicas, not 5'
    )
    created = create("numaresourcesoperator", {"replicas": 2, "mode": "a"})
    try:
        created["spec"]["mode"] = "b"  # a transition rule: mode is immutable once set
        with pytest.raises(ApiException) as refused:
            custom.replace_cluster_custom_object(
                GROUP, VERSION, "singletons", "numaresourcesoperator", created
            )
        assert json.loads(refused.value.body)["message"] == (
            f'Singleton.{GROUP} "numaresourcesoperator" is invalid: spec.mode: '
            'Invalid value: "string": failed rule: self == oldSelf'
        )
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "singletons", "numaresourcesoperator")


def test_version_answers_the_python_clients_path(api_client: client.ApiClient) -> None:
    """``VersionApi`` asks ``/version/`` (with the slash); kubectl asks ``/version``."""
    info = client.VersionApi(api_client).get_code()
    assert info.major and info.git_version.startswith("v")


def test_discovery_lists_pods_exec(api_client: client.ApiClient) -> None:
    """``pods/exec`` works (own-image containers), so discovery names it as upstream does."""
    resources = {r.name: r for r in client.CoreV1Api(api_client).get_api_resources().resources}
    assert resources["pods/exec"].kind == "PodExecOptions"
    assert sorted(resources["pods/exec"].verbs) == ["create", "get"]
