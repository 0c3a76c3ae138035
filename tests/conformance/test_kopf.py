"""kopf, unmodified, reconciles custom resources against the embedded API server.

A small operator (written into ``tmp_path``) handles ``Widget`` objects of a CRD
with a status subresource: on create it writes status through its return value
and through ``patch``, posts an event and gets kopf's finalizer; on a change of
``spec.size`` it updates status; on delete its handler runs while the object
still exists, then the finalizer goes and the object disappears.  Outcomes are
checked through the official Python client, and kopf's own log must show no
rejected patch and no consistency wait.  A second test compacts the watch
history under a running kopf: kopf gets the in-stream 410, re-lists, and keeps
reconciling new objects.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import logging
import re
import ssl
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from kopf.testing import KopfRunner
from kubernetes import client

from nrop.suite.e2e.wait.polling import wait_for

GROUP = "kopftest.nrop.dev"
VERSION = "v1"
PLURAL = "widgets"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
SERVER_TIMEOUT = 3  # seconds: watch streams end (and resume) often

# Patch rejections (422 on a stale ``test`` op) and consistency waits that time out
# both mean the server broke one of kopf's assumptions.
BAD_LOG_MARKERS = ("Unprocessable", "inconsistencies", "consistency", "Traceback")

OPERATOR = f'''
from __future__ import annotations

import os
from pathlib import Path

import kopf

MARKS = Path(os.environ["NROP_KOPF_MARKS"])


@kopf.on.login()
def login(**kwargs):
    # The test's kubeconfig (KUBECONFIG): server, inline CA, bearer token.
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.create("{GROUP}", "{VERSION}", "{PLURAL}")
def created(body, spec, patch, name, **_):
    kopf.info(body, reason="Created", message=f"widget {{name}} has size {{spec.get('size')}}")
    patch.status["observedSize"] = spec.get("size")
    return {{"phase": "Ready"}}


@kopf.on.update("{GROUP}", "{VERSION}", "{PLURAL}", field="spec.size")
def resized(body, old, new, patch, **_):
    kopf.info(body, reason="Resized", message=f"size {{old}} -> {{new}}")
    patch.status["observedSize"] = new


@kopf.on.delete("{GROUP}", "{VERSION}", "{PLURAL}")
def deleted(body, meta, name, **_):
    kopf.info(body, reason="Deleting", message=f"cleaning up {{name}}")
    # What the handler saw: the object is still there, terminating, with our finalizer.
    seen = {{"deletionTimestamp": meta.get("deletionTimestamp"), "finalizers": list(meta.get("finalizers") or [])}}
    (MARKS / f"deleted-{{name}}.json").write_text(__import__("json").dumps(seen))
'''

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def _crd(api_client: client.ApiClient) -> Iterator[None]:
    ext = client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(CRD)
    wait_for(
        lambda: ext.read_custom_resource_definition(CRD["metadata"]["name"]).status.conditions or [],
        lambda conds: any(c.type == "Established" and c.status == "True" for c in conds),
        "the Widget CRD to be Established",
    )
    yield
    ext.delete_custom_resource_definition(CRD["metadata"]["name"])


@pytest.fixture
def operator_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubeconfig: Path) -> Path:
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("NROP_KOPF_MARKS", str(marks))
    # The operator's login handler reads this kubeconfig.
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    path = tmp_path / "operator.py"
    path.write_text(OPERATOR)
    return path


@pytest.fixture(autouse=True)
def _kopf_logs_reach_the_runner() -> Iterator[None]:
    """kopf's log is what these tests read: undo any level another test in this
    process set on the ``kopf`` loggers (the operator CLI quiets them to WARNING)."""
    loggers = [logging.getLogger(n) for n in logging.root.manager.loggerDict if n.split(".")[0] == "kopf"]
    loggers.append(logging.getLogger("kopf"))
    saved = [(lg, lg.level, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.NOTSET)
        lg.disabled = False
    yield
    for lg, level, disabled in saved:
        lg.setLevel(level)
        lg.disabled = disabled


def _settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.watching.server_timeout = SERVER_TIMEOUT
    settings.watching.client_timeout = 15
    settings.watching.connect_timeout = 5
    # If the watch never delivered the revision a PATCH returned, kopf would hold the next
    # change for this long: longer than any wait below, so such a stall fails the test.
    settings.persistence.consistency_timeout = 30
    settings.posting.level = logging.INFO  # kopf.info() events are posted
    return settings


def _runner(path: Path) -> KopfRunner:
    return KopfRunner(
        ["run", "-A", "--standalone", "--verbose", str(path)],
        timeout=60,
        settings=_settings(),
        registry=kopf.OperatorRegistry(),
    )


def _assert_clean(runner: KopfRunner) -> None:
    assert runner.exception is None, runner.output
    assert runner.exit_code == 0, runner.output
    for marker in BAD_LOG_MARKERS:
        assert marker not in runner.output, f"{marker!r} in kopf's output:\n{runner.output}"


def _widget(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


def _getter(
    objects: client.CustomObjectsApi, namespace: str, name: str
) -> Callable[[], dict[str, Any] | None]:
    def get() -> dict[str, Any] | None:
        try:
            return objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    return get


def _events(core: client.CoreV1Api, namespace: str, uid: str) -> list[client.CoreV1Event]:
    return [e for e in core.list_namespaced_event(namespace).items if e.involved_object.uid == uid]


def _reasons(core: client.CoreV1Api, namespace: str, uid: str) -> set[str]:
    return {e.reason for e in _events(core, namespace, uid)}


def _wait_reconciled(
    objects: client.CustomObjectsApi, namespace: str, name: str, size: int
) -> dict[str, Any]:
    obj = wait_for(
        _getter(objects, namespace, name),
        lambda o: o is not None and (o.get("status") or {}).get("observedSize") == size,
        f"widget {namespace}/{name} to have status.observedSize={size}",
    )
    assert obj is not None
    return obj


@pytest.mark.usefixtures("_crd")
def test_kopf_reconciles_a_custom_resource_through_its_lifecycle(
    api_client: client.ApiClient, namespace: str, operator_path: Path, kubeconfig: Path
) -> None:
    objects = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    name = "w1"
    get = _getter(objects, namespace, name)
    with _runner(operator_path) as runner:
        objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _widget(name, 3))
        obj = _wait_reconciled(objects, namespace, name, 3)
        obj = wait_for(
            get,
            lambda o: o is not None and (o.get("status") or {}).get("created") == {"phase": "Ready"},
            f"widget {namespace}/{name} to carry the create handler's result in status",
        )
        assert obj is not None
        assert FINALIZER in obj["metadata"].get("finalizers", [])
        uid = obj["metadata"]["uid"]

        wait_for(lambda: _reasons(core, namespace, uid), lambda r: "Created" in r, "a Created event")
        event = next(e for e in _events(core, namespace, uid) if e.reason == "Created")
        involved = event.involved_object
        assert (involved.kind, involved.name, involved.namespace, involved.api_version) == (
            "Widget",
            name,
            namespace,
            f"{GROUP}/{VERSION}",
        )
        assert event.message == f"widget {name} has size 3"
        # kopf posts isoformat() times; they come back as RFC 3339 (MicroTime keeps microseconds).
        raw = _raw_get(kubeconfig, f"/api/v1/namespaces/{namespace}/events/{event.metadata.name}")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", raw["firstTimestamp"]), raw
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", raw["eventTime"]), raw
        assert (raw["reportingComponent"], raw["source"]) == ("kopf", {"component": "kopf"})

        objects.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name, {"spec": {"size": 5}})
        obj = _wait_reconciled(objects, namespace, name, 5)
        wait_for(lambda: _reasons(core, namespace, uid), lambda r: "Resized" in r, "a Resized event")
        assert FINALIZER in obj["metadata"].get("finalizers", [])

        objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        wait_for(get, lambda o: o is None, f"widget {namespace}/{name} to be gone")
        wait_for(lambda: _reasons(core, namespace, uid), lambda r: "Deleting" in r, "a Deleting event")

    seen = json.loads((operator_path.parent / "marks" / f"deleted-{name}.json").read_text())
    assert seen["deletionTimestamp"], "the delete handler ran on an object that was not terminating"
    assert FINALIZER in seen["finalizers"], "the delete handler ran after kopf's finalizer was removed"
    _assert_clean(runner)


def _admin_connection(kubeconfig: Path) -> tuple[http.client.HTTPSConnection, dict[str, str]]:
    """A raw HTTPS connection trusting the kubeconfig's CA, and its bearer-token header."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    token = config["users"][0]["user"]["token"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode("ascii")
    )
    host, port = cluster["server"].removeprefix("https://").rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
    return conn, {"Authorization": f"Bearer {token}"}


def _admin_post(kubeconfig: Path, path: str) -> tuple[int, dict[str, Any]]:
    """A raw authenticated POST (no client library in the way)."""
    conn, headers = _admin_connection(kubeconfig)
    try:
        conn.request("POST", path, body=b"", headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def _raw_get(kubeconfig: Path, path: str) -> dict[str, Any]:
    conn, headers = _admin_connection(kubeconfig)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body: dict[str, Any] = json.loads(response.read())
        assert response.status == 200, body
        return body
    finally:
        conn.close()


@pytest.mark.usefixtures("_crd")
def test_compaction_ends_open_watches_with_in_stream_410(namespace: str, kubeconfig: Path) -> None:
    # What kopf relies on below: its open stream (bookmarks keep its revision fresh, so a
    # resume alone would never be refused) gets HTTP 200 then one ERROR 410, and ends.
    conn, headers = _admin_connection(kubeconfig)
    try:
        conn.request(
            "GET",
            f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}?watch=true&allowWatchBookmarks=true",
            headers=headers,
        )
        response = conn.getresponse()
        assert response.status == 200
        status, body = _admin_post(kubeconfig, "/debug/nrop/compact")
        assert status == 200, body
        lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
    finally:
        conn.close()
    errors = [e["object"] for e in lines if e["type"] == "ERROR"]
    assert len(errors) == 1 and lines[-1]["type"] == "ERROR", lines
    assert (errors[0]["kind"], errors[0]["code"], errors[0]["reason"]) == ("Status", 410, "Expired")
    assert errors[0]["message"].startswith("too old resource version: ")


@pytest.mark.usefixtures("_crd")
def test_kopf_relists_after_the_watch_history_is_compacted(
    api_client: client.ApiClient, namespace: str, operator_path: Path, kubeconfig: Path
) -> None:
    objects = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    with _runner(operator_path) as runner:
        objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _widget("before", 1))
        _wait_reconciled(objects, namespace, "before", 1)

        # Writes kopf's watch has not seen, then history gone: resuming from kopf's
        # last revision must fail with an in-stream 410.
        core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"bump-{uuid.uuid4().hex[:6]}"))
        )
        status, body = _admin_post(kubeconfig, "/debug/nrop/compact")
        assert status == 200, body
        assert int(body["compactedResourceVersion"]) > 0

        # Let every watch stream of kopf end (server_timeout) and resume from its old revision.
        time.sleep(SERVER_TIMEOUT + 1)

        objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _widget("after", 2))
        _wait_reconciled(objects, namespace, "after", 2)

        # Still reconciling changes after the re-list.
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "after", {"spec": {"size": 7}}
        )
        _wait_reconciled(objects, namespace, "after", 7)
        for name in ("before", "after"):
            objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
            wait_for(
                _getter(objects, namespace, name),
                lambda o: o is None,
                f"widget {namespace}/{name} to be gone",
            )
    assert "Restarting the watch-stream" in runner.output, "kopf never got the in-stream 410"
    _assert_clean(runner)


LATE_GROUP = "late.kopftest.nrop.dev"
LATE_OPERATOR = f'''
import kopf


@kopf.on.login()
def login(**kwargs):
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.create("{LATE_GROUP}", "v1", "gadgets")
def created(**_):
    return {{"seen": True}}
'''


def test_kopf_serves_a_crd_created_after_it_started(
    api_client: client.ApiClient, namespace: str, operator_path: Path
) -> None:
    # kopf watches CRDs and re-runs discovery on each new one: the group must already be
    # served when the CRD's watch event arrives.
    operator_path.write_text(LATE_OPERATOR)
    ext = client.ApiextensionsV1Api(api_client)
    objects = client.CustomObjectsApi(api_client)
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = f"gadgets.{LATE_GROUP}"
    crd["spec"]["group"] = LATE_GROUP
    crd["spec"]["names"] = {
        "plural": "gadgets",
        "singular": "gadget",
        "kind": "Gadget",
        "listKind": "GadgetList",
    }
    with _runner(operator_path) as runner:
        time.sleep(1)  # kopf is up and has scanned without the group
        ext.create_custom_resource_definition(crd)
        try:
            body = {
                "apiVersion": f"{LATE_GROUP}/v1",
                "kind": "Gadget",
                "metadata": {"name": "g1"},
                "spec": {},
            }
            objects.create_namespaced_custom_object(LATE_GROUP, "v1", namespace, "gadgets", body)
            wait_for(
                lambda: objects.get_namespaced_custom_object(LATE_GROUP, "v1", namespace, "gadgets", "g1"),
                lambda o: (o.get("status") or {}).get("created") == {"seen": True},
                f"gadget {namespace}/g1 to be handled by kopf",
            )
        finally:
            ext.delete_custom_resource_definition(crd["metadata"]["name"])
            wait_for(
                lambda: [c.metadata.name for c in ext.list_custom_resource_definition().items],
                lambda names: crd["metadata"]["name"] not in names,
                "the Gadget CRD to be gone",
            )
        time.sleep(1)  # kopf sees the CRD go and stops that watcher
    _assert_clean(runner)
