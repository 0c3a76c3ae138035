"""Bad input: the embedded API server answers malformed or invalid requests the way upstream does.

Every case is one raw HTTPS request (``http.client`` with the kubeconfig's CA and token, no client
library in the way) checked for the status code, the ``Status`` reason and a fragment of the
message (as apimachinery's ``pkg/api/errors`` builds them), followed by a request proving the
server still serves.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiClient

GROUP = "badinput.nrop.io"
CRD_NAME = f"gadgets.{GROUP}"
MAX_BODY = 3 * 1024 * 1024
NOT_FOUND_PATH = "the server could not find the requested resource"
SMP_ON_CR = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)
RFC1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)

# -- raw HTTPS ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    context: ssl.SSLContext
    token: str


@dataclass(frozen=True)
class Reply:
    status: int
    headers: http.client.HTTPMessage
    raw: bytes

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.raw)


def send(
    endpoint: Endpoint,
    method: str,
    path: str,
    body: bytes | None = None,
    content_type: str | None = None,
    *,
    token: str | None = None,
) -> Reply:
    conn = http.client.HTTPSConnection(endpoint.host, endpoint.port, context=endpoint.context, timeout=30)
    try:
        headers = {"Accept": "application/json"}
        bearer = endpoint.token if token is None else token
        if bearer:
            headers["Authorization"] = f"Bearer {bearer}"
        if content_type:
            headers["Content-Type"] = content_type
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        conn.close()


@pytest.fixture(scope="module")
def endpoint(kubeconfig: Path) -> Endpoint:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    url = urlsplit(cluster["server"])
    assert url.hostname and url.port
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode("ascii")
    )
    return Endpoint(url.hostname, url.port, context, config["users"][0]["user"]["token"])


@pytest.fixture(scope="module")
def ns(api_client: ApiClient) -> Iterator[str]:
    """One namespace for the whole table, holding the objects the update and patch cases target."""
    core = client.CoreV1Api(api_client)
    name = f"t-bad-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_config_map(
        name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="existing"), data={"k": "v"})
    )
    yield name
    core.delete_namespace(name)


@pytest.fixture(scope="module")
def gadgets(api_client: ApiClient, ns: str) -> Iterator[str]:
    """A CRD with a schema to violate, and one gadget to patch."""
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
            }
        },
    }
    ext.create_custom_resource_definition(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": CRD_NAME},
            "spec": {
                "group": GROUP,
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
                ],
            },
        }
    )
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, "v1", ns, "gadgets", gadget("existing")
    )
    yield CRD_NAME
    ext.delete_custom_resource_definition(CRD_NAME)


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"size": 1, **spec},
    }


def configmap(name: str | None = None, **meta: Any) -> dict[str, Any]:
    metadata = {"name": name, **meta} if name is not None else dict(meta)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


def pod_with_unknown_field(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "pause:3.9"}], "foo": "bar"},
    }


def pod(name: str, **resources: dict[str, str]) -> dict[str, Any]:
    """A pod whose one container asks for ``resources`` (``limits=...``, ``requests=...``)."""
    container = {"name": "c", "image": "pause:3.9", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


# -- the table --------------------------------------------------------------------------------------

CMS = "/api/v1/namespaces/{ns}/configmaps"
PODS = "/api/v1/namespaces/{ns}/pods"
GADGETS = f"/apis/{GROUP}/v1/namespaces/{{ns}}/gadgets"
JSON = "application/json"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # "{ns}" is the module's namespace
    status: int
    reason: str  # the Status reason; "" when the request succeeds
    fragment: str  # in the Status message (or, for a success, in the Warning header)
    body: Any = None  # bytes are sent as they are, anything else as JSON
    content_type: str | None = JSON
    cause_field: str | None = None
    token: str | None = None


CASES = [
    # -- decoding ------------------------------------------------------------------------------
    pytest.param(
        Case("POST", CMS, 400, "BadRequest", "json parse error", body=b'{"metadata": {"name": '),
        id="malformed-json",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            400,
            "BadRequest",
            "the API version in the data (apps/v1) does not match the expected API version (v1)",
            body={**configmap("wrong-version"), "apiVersion": "apps/v1"},
        ),
        id="body-apiversion-mismatch",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            400,
            "BadRequest",
            "does not match the expected kind",
            body={**configmap("wrong-kind"), "kind": "Secret"},
        ),
        id="body-kind-mismatch",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
            body=configmap("elsewhere", namespace="default"),
        ),
        id="body-namespace-mismatch",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            400,
            "BadRequest",
            "the API version in the data (apps/v1) does not match the expected API version (v1)",
            body=b"k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment",
            content_type="application/vnd.kubernetes.protobuf",
        ),
        id="protobuf-body-of-another-kind",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            400,
            "BadRequest",
            'Gadget in version "v1" cannot be handled as a ConfigMap: no kind "Gadget" is registered '
            'for version "badinput.nrop.io/v1"',
            body=b"k8s\x00\n\x1d\n\x13badinput.nrop.io/v1\x12\x06Gadget",
            content_type="application/vnd.kubernetes.protobuf",
        ),
        id="protobuf-body-of-an-unknown-kind",
    ),
    pytest.param(
        Case(
            "POST",
            GADGETS,
            400,
            "BadRequest",
            'Gadget in version "v1" cannot be handled as a Gadget: object *unstructured.Unstructured '
            "does not implement the protobuf marshalling interface and cannot be encoded to a protobuf "
            "message",
            body=b"k8s\x00\n\x1d\n\x13badinput.nrop.io/v1\x12\x06Gadget",
            content_type="application/vnd.kubernetes.protobuf",
        ),
        id="protobuf-body-of-a-custom-resource",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            422,
            "Invalid",
            "metadata.name: Required value: name or generateName is required",
            body=b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap",
            content_type="application/vnd.kubernetes.protobuf",
        ),
        id="protobuf-configmap-without-a-name",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            413,
            "RequestEntityTooLarge",
            f"Request entity too large: limit is {MAX_BODY}",
            body=b'{"data": {"k": "' + b"x" * MAX_BODY + b'"}}',
        ),
        id="oversized-body",
    ),
    # -- create validation -----------------------------------------------------------------------
    pytest.param(
        Case(
            "POST",
            CMS,
            422,
            "Invalid",
            'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
            body=configmap(),
            cause_field="metadata.name",
        ),
        id="missing-name",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            422,
            "Invalid",
            f'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": {RFC1123_SUBDOMAIN}',
            body=configmap("Bad_Name"),
            cause_field="metadata.name",
        ),
        id="invalid-name",
    ),
    pytest.param(
        Case(
            "POST",
            CMS,
            400,
            "BadRequest",
            "resourceVersion should not be set on objects to be created",
            body=configmap("with-rv", resourceVersion="12"),
        ),
        id="resource-version-on-create",
    ),
    pytest.param(
        Case(
            "POST",
            GADGETS,
            422,
            "Invalid",
            "spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0",
            body=gadget("negative", size=-1),
            cause_field="spec.size",
        ),
        id="cr-schema-minimum",
    ),
    pytest.param(
        Case(
            "POST",
            GADGETS,
            422,
            "Invalid",
            'spec.size in body must be of type integer: "string"',
            body=gadget("stringly", size="big"),
            cause_field="spec.size",
        ),
        id="cr-schema-type",
    ),
    pytest.param(
        Case(
            "POST",
            GADGETS,
            422,
            "Invalid",
            # past int64 the JSON number decodes as a float64, an integer only within ±(2^53 - 1)
            'spec.size in body must be of type integer: "number"',
            body=gadget("huge", size=2**70),
            cause_field="spec.size",
        ),
        id="cr-integer-past-int64",
    ),
    pytest.param(
        Case(
            "POST",
            GADGETS,
            422,
            "Invalid",
            'spec.color: Unsupported value: "green": supported values: "red", "blue"',
            body=gadget("greenish", color="green"),
            cause_field="spec.color",
        ),
        id="cr-schema-enum",
    ),
    pytest.param(
        Case(
            "POST",
            GADGETS,
            422,
            "Invalid",
            "spec.size: Required value",
            body={**gadget("sizeless"), "spec": {}},
            cause_field="spec.size",
        ),
        id="cr-schema-required",
    ),
    pytest.param(
        Case(
            "POST",
            PODS + "?fieldValidation=Strict",
            400,
            "BadRequest",
            'strict decoding error: unknown field "spec.foo"',
            body=pod_with_unknown_field("strict"),
        ),
        id="unknown-field-strict",
    ),
    pytest.param(
        Case(
            "POST",
            GADGETS + "?fieldValidation=Strict",
            400,
            "BadRequest",
            'strict decoding error: unknown field "spec.foo"',
            body=gadget("strict", foo="bar"),
        ),
        id="cr-unknown-field-strict",
    ),
    pytest.param(
        Case(
            "POST",
            PODS + "?fieldValidation=Warn",
            201,
            "",
            'unknown field "spec.foo"',
            body=pod_with_unknown_field("warned"),
        ),
        id="unknown-field-warn",
    ),
    pytest.param(
        Case(
            "POST",
            CMS + "?dryRun=bogus",
            400,
            "BadRequest",
            'Unsupported value: "bogus"',
            body=configmap("dry"),
        ),
        id="dry-run-bogus",
    ),
    pytest.param(
        Case(
            "POST",
            CMS + "?fieldValidation=Loose",
            400,
            "BadRequest",
            'fieldValidation: Unsupported value: "Loose"',
            body=configmap("loose"),
        ),
        id="field-validation-bogus",
    ),
    pytest.param(
        Case(
            "POST",
            CMS + "/existing",
            405,
            "MethodNotAllowed",
            "create is not supported",
            body=configmap("existing"),
        ),
        id="post-to-named-resource",
    ),
    # -- update and patch ----------------------------------------------------------------------
    pytest.param(
        Case(
            "PUT",
            CMS + "/existing",
            400,
            "BadRequest",
            "the name of the object (other) does not match the name on the URL (existing)",
            body=configmap("other"),
        ),
        id="put-name-mismatch",
    ),
    pytest.param(
        Case(
            "PUT",
            CMS + "/missing",
            404,
            "NotFound",
            'configmaps "missing" not found',
            body=configmap("missing"),
        ),
        id="put-missing-object",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/existing",
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            body=[{"op": "test", "path": "/data/k", "value": "not-v"}],
            content_type=JSON_PATCH,
        ),
        id="json-patch-test-fails",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/existing",
            400,
            "BadRequest",
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
            body={"op": "add", "path": "/data/x", "value": "y"},
            content_type=JSON_PATCH,
        ),
        id="json-patch-not-a-list",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/existing",
            400,
            "BadRequest",
            "unexpected kind: frobnicate",
            body=[{"op": "frobnicate", "path": "/data/x"}],
            content_type=JSON_PATCH,
        ),
        id="json-patch-unknown-op",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/existing",
            400,
            "BadRequest",
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
            body=[{"data": {}}],
            content_type=MERGE_PATCH,
        ),
        id="merge-patch-not-an-object",
    ),
    pytest.param(
        Case(
            "PATCH",
            GADGETS + "/existing",
            415,
            "UnsupportedMediaType",
            SMP_ON_CR,
            body={"spec": {"size": 2}},
            content_type="application/strategic-merge-patch+json",
        ),
        id="strategic-merge-patch-on-cr",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/existing",
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format",
            body=b"data: {}",
            content_type="text/plain",
        ),
        id="unknown-patch-content-type-with-undecodable-body",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/existing",
            422,
            "Invalid",
            "fieldManager: Required value: is required for apply patch",
            body=configmap("existing"),
            content_type="application/apply-patch+yaml",
        ),
        id="apply-without-field-manager",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/existing?force=true",
            422,
            "Invalid",
            "force: Forbidden: may not be specified for non-apply patch",
            body={"data": {}},
            content_type=MERGE_PATCH,
            cause_field="force",
        ),
        id="force-on-a-non-apply-patch",
    ),
    pytest.param(
        Case(
            "PATCH",
            CMS + "/missing",
            404,
            "NotFound",
            'configmaps "missing" not found',
            body={"data": {}},
            content_type=MERGE_PATCH,
        ),
        id="patch-missing-object",
    ),
    # -- delete --------------------------------------------------------------------------------
    pytest.param(
        Case(
            "DELETE",
            CMS + "/existing?propagationPolicy=Sideways",
            422,
            "Invalid",
            'propagationPolicy: Unsupported value: "Sideways"',
            content_type=None,
        ),
        id="delete-bad-propagation-policy",
    ),
    # -- paths ---------------------------------------------------------------------------------
    pytest.param(
        Case("GET", "/api/v1/namespaces/{ns}/widgetz", 404, "NotFound", NOT_FOUND_PATH), id="unknown-resource"
    ),
    pytest.param(
        Case("GET", "/apis/nope.example.com/v1/things", 404, "NotFound", NOT_FOUND_PATH), id="unknown-group"
    ),
    pytest.param(
        Case("GET", "/apis/apps/v9/deployments", 404, "NotFound", NOT_FOUND_PATH), id="unknown-version"
    ),
    pytest.param(
        Case("GET", CMS + "/absent", 404, "NotFound", 'configmaps "absent" not found'), id="missing-object"
    ),
    # -- list and watch parameters ---------------------------------------------------------------
    pytest.param(
        Case(
            "GET",
            CMS + "?labelSelector=" + quote("app in (a"),
            400,
            "BadRequest",
            "unable to parse requirement",
        ),
        id="bad-label-selector",
    ),
    pytest.param(
        Case(
            "GET", CMS + "?labelSelector=" + quote("-app=x"), 400, "BadRequest", "name part must consist of"
        ),
        id="bad-label-key",
    ),
    pytest.param(
        Case(
            "GET",
            CMS + "?fieldSelector=metadata.name",
            400,
            "BadRequest",
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
        ),
        id="bad-field-selector",
    ),
    pytest.param(
        Case(
            "GET", CMS + "?fieldSelector=data.k%3Dv", 400, "BadRequest", "field label not supported: data.k"
        ),
        id="unsupported-field-selector",
    ),
    pytest.param(Case("GET", CMS + "?limit=abc", 400, "BadRequest", '"abc"'), id="limit-not-an-integer"),
    pytest.param(
        Case("GET", CMS + "?limit=1&continue=garbage!!", 400, "BadRequest", "continue key is not valid"),
        id="bad-continue-token",
    ),
    pytest.param(
        Case("GET", CMS + "?resourceVersion=99999999", 504, "Timeout", "Too large resource version"),
        id="list-resource-version-too-new",
    ),
    pytest.param(
        Case("GET", CMS + "?resourceVersion=abc&resourceVersionMatch=Exact", 400, "BadRequest", '"abc"'),
        id="list-resource-version-not-a-number",
    ),
    pytest.param(
        Case("GET", CMS + "?watch=true&sendInitialEvents=true", 422, "Invalid", "sendInitialEvents"),
        id="send-initial-events-without-rv-match",
    ),
    pytest.param(
        Case("GET", CMS + "?watch=true&timeoutSeconds=soon", 400, "BadRequest", "timeoutSeconds"),
        id="watch-timeout-not-a-number",
    ),
    pytest.param(
        Case(
            "GET", CMS + "?watch=true&resourceVersion=99999999&timeoutSeconds=1", 504, "Timeout", "Too large"
        ),
        id="watch-resource-version-too-new",
        marks=pytest.mark.skip(
            reason="the too-large resourceVersion answer (504) is documented for lists only; "
            "for a watch the embedded server streams changes after its current revision, and there is "
            "no documented upstream answer to assert against"
        ),
    ),
    # -- container resources (requests vs limits, as ValidateContainerResourceRequirements) -----
    pytest.param(
        Case(
            "POST",
            PODS,
            422,
            "Invalid",
            'spec.containers[0].resources.requests: Invalid value: "0": must be equal to kni.node/numacell00 '
            "limit of 1",
            body=pod(
                "pad",
                limits={"cpu": "1", "kni.node/numacell00": "1"},
                requests={"cpu": "1", "kni.node/numacell00": "0"},
            ),
            cause_field="spec.containers[0].resources.requests",
        ),
        id="extended-request-below-limit",
    ),
    pytest.param(
        Case(
            "POST",
            PODS,
            422,
            "Invalid",
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
            body=pod("greedy", limits={"cpu": "1"}, requests={"cpu": "2"}),
        ),
        id="cpu-request-above-limit",
    ),
    pytest.param(
        Case(
            "POST",
            PODS,
            422,
            "Invalid",
            "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
            body=pod("nolimit", requests={"example.com/deviceA": "1"}),
        ),
        id="extended-request-without-limit",
    ),
    pytest.param(
        Case(
            "POST",
            PODS,
            422,
            "Invalid",
            'spec.containers[0].resources.limits[example.com/deviceA]: Invalid value: "500m": must be an integer',
            body=pod("half", limits={"example.com/deviceA": "500m"}),
        ),
        id="extended-not-integer",
    ),
    # -- authentication ------------------------------------------------------------------------
    pytest.param(
        Case("GET", CMS, 401, "Unauthorized", "Unauthorized", token="not-a-valid-token"), id="invalid-token"
    ),
    pytest.param(Case("GET", CMS, 401, "Unauthorized", "Unauthorized", token=""), id="anonymous"),
]


@pytest.mark.parametrize("case", CASES)
def test_bad_input(endpoint: Endpoint, ns: str, gadgets: str, case: Case) -> None:
    path = case.path.format(ns=ns)
    body = case.body if isinstance(case.body, bytes | None) else json.dumps(case.body).encode()
    reply = send(endpoint, case.method, path, body, case.content_type, token=case.token)

    assert reply.status == case.status, reply.raw[:2000]
    assert reply.headers.get_content_type() == "application/json"
    if case.reason:
        status = reply.body
        assert (status["kind"], status["apiVersion"], status["status"]) == ("Status", "v1", "Failure")
        assert (status["code"], status["reason"]) == (case.status, case.reason)
        assert case.fragment in status["message"], status["message"]
        if case.cause_field is not None:
            fields = [c.get("field") for c in status.get("details", {}).get("causes", ())]
            assert case.cause_field in fields, status
    else:
        # RFC 7234 warn-value: code, agent "-", and the text as a quoted-string.
        warning = reply.headers.get("Warning") or ""
        assert warning.startswith('299 - "'), warning
        assert case.fragment in warning.replace('\\"', '"'), warning

    # The server keeps serving, on a fresh connection.
    after = send(endpoint, "GET", f"/api/v1/namespaces/{ns}/configmaps/existing")
    assert after.status == 200, after.raw
    assert after.body["data"] == {"k": "v"}


def test_rejected_writes_persist_nothing(endpoint: Endpoint, ns: str, gadgets: str) -> None:
    """After the table ran (module order), only the objects the successful cases created exist."""
    names = [
        i["metadata"]["name"]
        for i in send(endpoint, "GET", f"/api/v1/namespaces/{ns}/configmaps").body["items"]
    ]
    assert names == ["existing"]
    gadget_names = [i["metadata"]["name"] for i in send(endpoint, "GET", GADGETS.format(ns=ns)).body["items"]]
    assert gadget_names == ["existing"]
    existing = send(endpoint, "GET", f"/api/v1/namespaces/{ns}/configmaps/existing").body
    assert existing["metadata"].get("deletionTimestamp") is None


def test_health_endpoints_need_no_token(endpoint: Endpoint) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        reply = send(endpoint, "GET", path, token="")
        assert (reply.status, reply.raw) == (200, b"ok")


def test_kubeconfig_ca_is_required(endpoint: Endpoint) -> None:
    """The TLS side of bad input: a client that does not trust the cluster CA is refused."""
    untrusting = ssl.create_default_context()
    conn = http.client.HTTPSConnection(endpoint.host, endpoint.port, context=untrusting, timeout=10)
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.request("GET", "/healthz")
    conn.close()


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "PUT", "OPTIONS"])
def test_plain_http_gets_gos_answer(endpoint: Endpoint, method: str) -> None:
    """kube-apiserver is Go's net/http: plain HTTP on its TLS port gets a 400 and a sentence, then the close."""
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=10)
    conn.request(method, "/healthz")
    response = conn.getresponse()
    assert (response.status, response.version, dict(response.headers)) == (400, 10, {})
    assert response.read() == (
        b"" if method == "HEAD" else b"Client sent an HTTP request to an HTTPS server.\n"
    )
    conn.close()
    assert send(endpoint, "GET", "/healthz", token="").status == 200


def test_plain_http_with_curl_succeeds(endpoint: Endpoint) -> None:
    """What upstream's network-policy specs run: curl prints Go's answer and exits 0."""
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "nrop-curl"),
            "--connect-timeout",
            "5",
            f"http://{endpoint.host}:{endpoint.port}",
        ],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        b"Client sent an HTTP request to an HTTPS server.\n",
        b"",
    )


def test_a_client_that_says_nothing_does_not_hold_the_port(endpoint: Endpoint) -> None:
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as silent:
        assert send(endpoint, "GET", "/healthz", token="").status == 200
        silent.sendall(b"\x16")  # a TLS record begins: the server waits for the rest of the hello
        assert send(endpoint, "GET", "/healthz", token="").status == 200
