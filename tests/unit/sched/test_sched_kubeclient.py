"""The scheduler's client layer without a server: config loading and precedence, the token bucket, errors."""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import web

from nrop.api.clientconfig import (
    ClientConfig,
    ClientConfigError,
    TokenSource,
    load_in_cluster,
    load_kubeconfig,
    resolve_config,
)
from nrop.api.restapi import (
    EVENTS,
    NODES,
    NRTS,
    PODS,
    ApiConnectionError,
    ApiError,
    ConflictError,
    GoneError,
    NotFoundError,
    PatchType,
    error_from_response,
    error_from_status,
)
from nrop.localcluster.apiserver import tls
from nrop.sched.config.ratelimit import DEFAULT_SCHEDULER_RATE_LIMIT, RateLimit, TokenBucket
from nrop.sched.errors import ConfigError
from nrop.sched.kubeclient import KubeClient

CA_PEM = b"-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig_doc(
    *, cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None, current: str = "ctx"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": cluster if cluster is not None else {"server": "https://k:6443"}}
        ],
        "users": [{"name": "u", "user": user if user is not None else {"token": "t0k"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": "ns1"}}],
        "current-context": current,
    }


def write(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


# ------------------------------------------------------------------------------ kubeconfig


def test_kubeconfig_inline_fields(tmp_path: Path) -> None:
    doc = kubeconfig_doc(
        cluster={"server": "https://k:6443/", "certificate-authority-data": b64(CA_PEM)},
        user={"token": "abc", "client-certificate-data": b64(b"CERT"), "client-key-data": b64(b"KEY")},
    )
    config = load_kubeconfig(write(tmp_path / "config", doc))
    assert config.server == "https://k:6443"
    assert config.ca_data == CA_PEM
    assert config.token == "abc" and config.token_file is None
    assert (config.client_cert_data, config.client_key_data) == (b"CERT", b"KEY")
    assert config.namespace == "ns1"
    assert not config.insecure
    assert "context ctx" in config.source


def test_kubeconfig_files_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(CA_PEM)
    (tmp_path / "pki" / "tls.crt").write_bytes(b"CERT")
    (tmp_path / "pki" / "tls.key").write_bytes(b"KEY")
    (tmp_path / "token").write_text("from-file\n")
    doc = kubeconfig_doc(
        cluster={"server": "k:6443", "certificate-authority": "pki/ca.crt"},
        user={"tokenFile": "token", "client-certificate": "pki/tls.crt", "client-key": "pki/tls.key"},
    )
    config = load_kubeconfig(write(tmp_path / "config", doc))
    assert config.server == "https://k:6443"  # a server without a scheme is https
    assert config.ca_data == CA_PEM
    assert config.token == "from-file" and config.token_file == tmp_path / "token"
    assert (config.client_cert_data, config.client_key_data) == (b"CERT", b"KEY")


def test_kubeconfig_list_merges_first_wins(tmp_path: Path) -> None:
    first = {"current-context": "b", "users": [{"name": "u", "user": {"token": "first"}}]}
    second = kubeconfig_doc(current="ctx")
    second["contexts"].append({"name": "b", "context": {"cluster": "c", "user": "u"}})
    second["users"][0]["user"] = {"token": "second"}
    a, b = write(tmp_path / "a", first), write(tmp_path / "b", second)
    config = load_kubeconfig([tmp_path / "missing", a, b])
    assert config.token == "first"
    assert config.namespace == "default"
    assert "context b" in config.source


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(kubeconfig_doc(current=""), "current-context: Required value", id="no-current-context"),
        pytest.param(kubeconfig_doc(current="other"), 'context "other" not found', id="unknown-context"),
        pytest.param(
            kubeconfig_doc(cluster={"certificate-authority-data": b64(CA_PEM)}),
            "clusters[name=c].cluster.server: Required value",
            id="no-server",
        ),
        pytest.param(
            kubeconfig_doc(cluster={"server": "https://k", "certificate-authority-data": "!!not base64"}),
            "clusters[name=c].cluster.certificate-authority-data: invalid base64",
            id="bad-ca-data",
        ),
        pytest.param(
            kubeconfig_doc(
                cluster={
                    "server": "https://k",
                    "insecure-skip-tls-verify": True,
                    "certificate-authority-data": b64(CA_PEM),
                }
            ),
            "insecure-skip-tls-verify: specifying a root certificates file with the insecure flag is not allowed",
            id="insecure-with-ca",
        ),
        pytest.param(
            kubeconfig_doc(user={"exec": {"command": "aws"}}),
            "users[name=u].user.exec: credential plugins are not supported",
            id="exec-plugin",
        ),
        pytest.param(
            kubeconfig_doc(user={"client-certificate-data": b64(b"CERT")}),
            "users[name=u].user.client-key: Required value",
            id="cert-without-key",
        ),
        pytest.param(
            kubeconfig_doc(user={"tokenFile": "nowhere/token"}),
            "users[name=u].user.tokenFile: cannot read",
            id="missing-token-file",
        ),
        pytest.param(["not", "a", "mapping"], "must be a mapping", id="not-a-mapping"),
        pytest.param(
            {"current-context": "ctx", "clusters": {"c": 1}},
            "clusters: must be a list",
            id="clusters-not-list",
        ),
    ],
)
def test_kubeconfig_errors_name_the_field(tmp_path: Path, doc: Any, expected: str) -> None:
    path = write(tmp_path / "config", doc)
    with pytest.raises(ClientConfigError) as info:
        load_kubeconfig(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)


def test_kubeconfig_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ClientConfigError, match="cannot read"):
        load_kubeconfig(tmp_path / "absent")


def test_kubeconfig_insecure_builds_an_unverified_context(tmp_path: Path) -> None:
    doc = kubeconfig_doc(cluster={"server": "https://k", "insecure-skip-tls-verify": True})
    context = load_kubeconfig(write(tmp_path / "config", doc)).ssl_context()
    assert context is not None and not context.check_hostname
    assert context.verify_mode == ssl.CERT_NONE and context.get_ca_certs() == []  # no bundle read for nothing


def test_ssl_context_without_ca_data_trusts_the_system() -> None:
    context = ClientConfig(server="https://k").ssl_context()
    assert context is not None and context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED


def test_ssl_context_loads_ca_and_client_pair() -> None:
    ca = tls.generate_ca("test-ca")
    pair = tls.issue_server_cert(ca)
    config = ClientConfig(
        server="https://127.0.0.1:1",
        ca_data=ca.cert_pem,
        client_cert_data=pair.cert_pem,
        client_key_data=pair.key_pem,
    )
    context = config.ssl_context()
    assert context is not None and context.check_hostname
    assert len(context.get_ca_certs()) == 1
    assert ClientConfig(server="http://127.0.0.1:1").ssl_context() is None
    broken = ClientConfig(
        server="https://k", client_cert_data=pair.cert_pem, client_key_data=ca.key_pem, source="src"
    )
    with pytest.raises(ClientConfigError, match="src: client certificate and key do not load"):
        broken.ssl_context()


# ------------------------------------------------------------------------------ in-cluster and precedence


@pytest.fixture
def account_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "sa"
    directory.mkdir()
    (directory / "token").write_text("sa-token\n")
    (directory / "ca.crt").write_bytes(CA_PEM)
    (directory / "namespace").write_text("nrop-system")
    return directory


@pytest.mark.parametrize(
    ("host", "server"),
    [
        pytest.param("10.0.0.1", "https://10.0.0.1:443", id="ipv4"),
        pytest.param("fd00::1", "https://[fd00::1]:443", id="ipv6"),
    ],
)
def test_in_cluster(account_dir: Path, host: str, server: str) -> None:
    env = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "443"}
    config = load_in_cluster(env, account_dir)
    assert config.server == server
    assert (config.token, config.token_file, config.ca_data) == ("sa-token", account_dir / "token", CA_PEM)
    assert config.namespace == "nrop-system"


def test_in_cluster_without_token_names_the_file(account_dir: Path) -> None:
    (account_dir / "token").unlink()
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ClientConfigError, match=r"in-cluster: service account token: cannot read .*token"):
        load_in_cluster(env, account_dir)


IN_POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        pytest.param(
            "explicit", {"KUBECONFIG": "{dir}/env", **IN_POD}, "https://explicit", id="explicit-first"
        ),
        pytest.param(None, {"KUBECONFIG": "{dir}/env", **IN_POD}, "https://env", id="then-KUBECONFIG"),
        pytest.param(None, {"KUBECONFIG": "{dir}/absent:{dir}/env"}, "https://env", id="KUBECONFIG-list"),
        pytest.param(None, dict(IN_POD), "https://10.0.0.1:443", id="then-in-cluster"),
        pytest.param(None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, None, id="half-in-cluster-is-nothing"),
        pytest.param(None, {}, None, id="nothing"),
    ],
)
def test_precedence(
    tmp_path: Path, account_dir: Path, explicit: str | None, env: dict[str, str], expected: str | None
) -> None:
    for name in ("explicit", "env"):
        write(tmp_path / name, kubeconfig_doc(cluster={"server": f"https://{name}"}))
    environ = {k: v.format(dir=tmp_path) for k, v in env.items()}
    path = tmp_path / explicit if explicit else None
    if expected is None:
        with pytest.raises(ClientConfigError, match="pass --kubeconfig, set KUBECONFIG, or run in a pod"):
            resolve_config(path, environ, account_dir)
    else:
        assert resolve_config(path, environ, account_dir).server == expected


def test_token_file_is_reread_after_the_period(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("one")
    now = [0.0]
    source = TokenSource(
        ClientConfig(server="https://k", token="one", token_file=token_file), clock=lambda: now[0], period=60
    )
    token_file.write_text("two")
    now[0] = 59.0
    assert source.token() == "one"
    now[0] = 60.0
    assert source.token() == "two"
    token_file.unlink()
    now[0] = 200.0
    assert source.token() == "two"  # a vanished file keeps the last token


# ------------------------------------------------------------------------------ token bucket


@pytest.mark.parametrize(
    ("qps", "burst", "times", "delays"),
    [
        pytest.param(10, 3, [0, 0, 0], [0, 0, 0], id="burst-goes-at-once"),
        pytest.param(10, 3, [0, 0, 0, 0, 0], [0, 0, 0, 0.1, 0.2], id="then-one-per-1/qps-queued"),
        pytest.param(10, 3, [0, 0, 0, 0.05], [0, 0, 0, 0.05], id="partial-refill"),
        pytest.param(10, 3, [0, 0, 0, 0.1], [0, 0, 0, 0], id="one-token-back-after-1/qps"),
        pytest.param(10, 2, [0, 0, 100, 100, 100], [0, 0, 0, 0, 0.1], id="refill-capped-at-burst"),
        pytest.param(1, 1, [10, 5, 5], [0, 1, 2], id="clock-going-back-refills-nothing"),
        pytest.param(50, 100, [0] * 101, [0] * 100 + [0.02], id="scheduler-defaults"),
    ],
)
def test_token_bucket(qps: float, burst: int, times: list[float], delays: list[float]) -> None:
    bucket = TokenBucket(RateLimit(qps, burst), now=times[0])
    got = [bucket.reserve(t) for t in times]
    assert got == pytest.approx(delays)


def test_scheduler_defaults() -> None:
    assert (DEFAULT_SCHEDULER_RATE_LIMIT.qps, DEFAULT_SCHEDULER_RATE_LIMIT.burst) == (50.0, 100)


@pytest.mark.parametrize(
    ("qps", "burst", "field"),
    [
        pytest.param(0, 1, "qps", id="zero-qps"),
        pytest.param(-1, 1, "qps", id="negative-qps"),
        pytest.param(5, 0, "burst", id="no-burst"),
    ],
)
def test_rate_limit_rejects(qps: float, burst: int, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        RateLimit(qps, burst)
    assert info.value.field == field


def test_client_throttles_with_its_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def fake_sleep(delay: float) -> None:
        slept.append(delay)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    client = KubeClient(
        ClientConfig(server="http://127.0.0.1:1"), rate_limit=RateLimit(2, 2), clock=lambda: 0.0
    )
    sibling = client.with_rate_limit(RateLimit(1, 1))

    async def go() -> None:
        for _ in range(4):
            await client._throttle()
        await sibling._throttle()

    asyncio.run(go())
    assert slept == pytest.approx([0.5, 1.0])  # the sibling's first request is within its own burst


# ------------------------------------------------------------------------------ errors


def status_body(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if details:
        body["details"] = details
    return body


@pytest.mark.parametrize(
    ("status", "raw", "cls", "reason", "message"),
    [
        pytest.param(
            404,
            status_body(404, "NotFound", 'pods "p" not found', name="p", kind="pods"),
            NotFoundError,
            "NotFound",
            'pods "p" not found',
            id="not-found",
        ),
        pytest.param(
            409,
            status_body(409, "AlreadyExists", 'pods "p" already exists'),
            ConflictError,
            "AlreadyExists",
            'pods "p" already exists',
            id="already-exists",
        ),
        pytest.param(
            409,
            status_body(409, "Conflict", "the object has been modified"),
            ConflictError,
            "Conflict",
            "the object has been modified",
            id="conflict",
        ),
        pytest.param(
            410,
            status_body(410, "Expired", "too old resource version: 1 (5)"),
            GoneError,
            "Expired",
            "too old resource version: 1 (5)",
            id="gone",
        ),
        pytest.param(
            422,
            status_body(422, "Invalid", 'Pod "p" is invalid'),
            ApiError,
            "Invalid",
            'Pod "p" is invalid',
            id="invalid",
        ),
        pytest.param(
            403,
            status_body(403, "Forbidden", "forbidden: User cannot"),
            ApiError,
            "Forbidden",
            "forbidden: User cannot",
            id="forbidden",
        ),
        pytest.param(
            502,
            b"<html>bad gateway</html>",
            ApiError,
            "InternalError",
            'an error on the server ("<html>bad gateway</html>") has prevented the request from succeeding (get /x)',
            id="not-a-status",
        ),
        pytest.param(
            500,
            b"",
            ApiError,
            "InternalError",
            'an error on the server ("") has prevented the request from succeeding (get /x)',
            id="empty-body",
        ),
        pytest.param(
            404,
            b"404 page not found",
            NotFoundError,
            "NotFound",
            "the server could not find the requested resource (get /x)",
            id="plain-404",
        ),
    ],
)
def test_error_from_response(status: int, raw: Any, cls: type[ApiError], reason: str, message: str) -> None:
    data = orjson.dumps(raw) if isinstance(raw, dict) else raw
    error = error_from_response(status, data, "GET /x")
    assert type(error) is cls
    assert (error.status, error.reason, error.message) == (status, reason, message)
    if isinstance(raw, dict):
        assert error.body == raw
    else:  # client-go keeps a body that is not a Status as an UnexpectedServerResponse cause
        assert error.details["causes"] == [{"reason": "UnexpectedServerResponse", "message": raw.decode()}]


def test_error_properties() -> None:
    exists = error_from_status(status_body(409, "AlreadyExists", "x"))
    assert exists.already_exists and not exists.expired
    gone = error_from_status(status_body(410, "Expired", "too old resource version: 3 (9)"))
    assert isinstance(gone, GoneError) and gone.expired
    assert str(gone) == "410 Expired: too old resource version: 3 (9)"
    details = error_from_status(status_body(429, "TooManyRequests", "slow down", retryAfterSeconds=1))
    assert details.details == {"retryAfterSeconds": 1}
    assert ApiConnectionError("refused").status == 0


def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # The port is closed now: connecting is refused.

    async def go() -> None:
        async with KubeClient(ClientConfig(server=f"http://127.0.0.1:{port}"), rate_limit=None) as client:
            await client.get(PODS, "p", "ns")

    with pytest.raises(ApiConnectionError) as info:
        asyncio.run(go())
    assert info.value.status == 0 and "GET /api/v1/namespaces/ns/pods/p" in info.value.message


@pytest.mark.parametrize(
    ("resource", "args", "path"),
    [
        pytest.param(PODS, (None, None, None), "/api/v1/pods", id="pods-all-namespaces"),
        pytest.param(PODS, ("ns", "p", "binding"), "/api/v1/namespaces/ns/pods/p/binding", id="pod-binding"),
        pytest.param(NODES, ("ignored", "n1", None), "/api/v1/nodes/n1", id="cluster-scoped"),
        pytest.param(EVENTS, ("ns", None, None), "/apis/events.k8s.io/v1/namespaces/ns/events", id="group"),
        pytest.param(
            NRTS,
            (None, "n1", None),
            "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/n1",
            id="nrt",
        ),
    ],
)
def test_resource_paths(resource: Any, args: tuple[Any, Any, Any], path: str) -> None:
    assert resource.path(*args) == path


def test_namespaced_writes_need_a_namespace() -> None:
    client = KubeClient(ClientConfig(server="http://127.0.0.1:1"), rate_limit=None)
    with pytest.raises(ValueError, match="namespace: Required value"):
        asyncio.run(client.create(PODS, {"metadata": {"name": "p"}}))


# ------------------------------------------------------------------------------ against a scripted server


async def scripted(handler: Any) -> tuple[web.AppRunner, KubeClient]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    config = ClientConfig(server=f"http://127.0.0.1:{port}", token="s3cret")
    return runner, KubeClient(config, rate_limit=None, user_agent="test-agent")


def test_list_follows_continue_and_falls_back_when_it_expires() -> None:
    requests: list[dict[str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == "Bearer s3cret"
        assert request.headers["User-Agent"] == "test-agent"
        query = dict(request.query)
        requests.append(query)
        if "limit" not in query:
            items = [{"metadata": {"name": n}} for n in "abc"]
            return web.json_response({"metadata": {"resourceVersion": "9"}, "items": items})
        if query.get("continue") == "expired":
            gone = {
                "kind": "Status",
                "code": 410,
                "reason": "Expired",
                "message": "The provided continue parameter is too old",
            }
            return web.json_response(gone, status=410)
        if query.get("continue") == "page2":
            return web.json_response(
                {
                    "metadata": {"resourceVersion": "7", "continue": "expired"},
                    "items": [{"metadata": {"name": "b"}}],
                }
            )
        return web.json_response(
            {
                "metadata": {"resourceVersion": "7", "continue": "page2"},
                "items": [{"metadata": {"name": "a"}}],
            }
        )

    async def go() -> dict[str, Any]:
        runner, api = await scripted(handle)
        try:
            return await api.list(PODS, "ns", label_selector="app=x", page_size=1)
        finally:
            await api.close()
            await runner.cleanup()

    listed = asyncio.run(go())
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b", "c"]
    assert listed["metadata"] == {"resourceVersion": "9"}
    assert [(q.get("limit"), q.get("continue")) for q in requests] == [
        ("1", None),
        ("1", "page2"),
        ("1", "expired"),
        (None, None),
    ]
    assert all(q["labelSelector"] == "app=x" for q in requests)


def test_watch_yields_events_and_bookmarks_and_raises_error_events() -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        assert request.query["watch"] == "true" and request.query["allowWatchBookmarks"] == "true"
        assert request.query["resourceVersion"] == "5" and request.query["timeoutSeconds"] == "30"
        response = web.StreamResponse()
        await response.prepare(request)
        big = {"metadata": {"name": "big", "resourceVersion": "6"}, "data": {"x": "y" * 300_000}}
        lines = [
            {"type": "ADDED", "object": big},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "8"}}},
            {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "code": 410,
                    "reason": "Expired",
                    "message": "too old resource version: 5 (7)",
                },
            },
        ]
        payload = b"".join(orjson.dumps(line) + b"\n" for line in lines)
        for start in range(0, len(payload), 4096):  # lines split across chunks
            await response.write(payload[start : start + 4096])
        return response

    seen: list[tuple[str, str]] = []

    async def go() -> None:
        runner, api = await scripted(handle)
        try:
            async for kind, obj in api.watch(PODS, resource_version="5", timeout_seconds=30):
                seen.append((kind, obj["metadata"]["resourceVersion"]))
        finally:
            await api.close()
            await runner.cleanup()

    with pytest.raises(GoneError, match="too old resource version: 5"):
        asyncio.run(go())
    assert seen == [("ADDED", "6"), ("BOOKMARK", "8")]


@pytest.mark.parametrize(
    ("patch_type", "content_type"),
    [
        pytest.param("merge", "application/merge-patch+json", id="merge"),
        pytest.param(PatchType.STRATEGIC, "application/strategic-merge-patch+json", id="strategic"),
        pytest.param("json", "application/json-patch+json", id="json"),
        pytest.param("apply", "application/apply-patch+yaml", id="apply"),
    ],
)
def test_patch_content_types(patch_type: Any, content_type: str) -> None:
    got: list[tuple[str, str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        got.append((request.path, request.headers["Content-Type"], request.query.get("fieldManager", "")))
        return web.json_response({"ok": True})

    async def go() -> None:
        runner, api = await scripted(handle)
        try:
            if patch_type == "apply":
                await api.patch(PODS, "p", {}, "ns", patch_type=patch_type, field_manager="sched")
            else:
                await api.patch_status(PODS, "p", {"status": {}}, "ns", patch_type=patch_type)
        finally:
            await api.close()
            await runner.cleanup()

    asyncio.run(go())
    path = "/api/v1/namespaces/ns/pods/p" + ("" if patch_type == "apply" else "/status")
    assert got == [(path, content_type, "sched" if patch_type == "apply" else "")]


def test_patch_type_errors() -> None:
    api = KubeClient(ClientConfig(server="http://127.0.0.1:1"), rate_limit=None)
    with pytest.raises(ValueError, match="patch_type: Unsupported value: 'yaml'"):
        asyncio.run(api.patch(PODS, "p", {}, "ns", patch_type="yaml"))
    with pytest.raises(ValueError, match="field_manager: Required value"):
        asyncio.run(api.patch(PODS, "p", {}, "ns", patch_type="apply"))
