"""Subresources: status, scale, pods/binding, pods/eviction, pods/log, pods/proxy, nodes/proxy
(and other proxies registered in ``server.proxies``), namespaces/finalize,
serviceaccounts/token, and the access reviews.

Each follows its upstream REST storage: binding sets ``spec.nodeName`` and the
``PodScheduled`` condition and answers a ``Status`` 201; eviction honours
PodDisruptionBudgets with 429; log streams text; finalize edits
``spec.finalizers`` only; token mints a bound service-account token.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from nrop.api.metatime import rfc3339
from nrop.api.status import Cause
from nrop.localcluster.apiserver import errors, rbac
from nrop.localcluster.apiserver.clients import NO_NODE, LogQuery, LogSource
from nrop.localcluster.apiserver.decisions import patching
from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions
from nrop.localcluster.apiserver.decisions.selectors import label_selector_from_dict
from nrop.localcluster.apiserver.httpio import negotiated, read_body, respond, write_options
from nrop.localcluster.apiserver.lifecycle import maybe_remove_namespace
from nrop.localcluster.apiserver.podproxy import proxy_pod
from nrop.localcluster.apiserver.registry import Kind, Registry
from nrop.localcluster.apiserver.wire.negotiation import Endpoint

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.authn import Authenticator
    from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
    from nrop.localcluster.apiserver.rest import Rest
    from nrop.localcluster.apiserver.routing import ResourcePath
    from nrop.localcluster.apiserver.store import Store
    from nrop.localcluster.apiserver.wire.negotiation import Outcome
    from nrop.localcluster.clock import Clock

Obj = dict[str, Any]
#: Pod subresources that need connection upgrades (``kubectl exec|attach|port-forward|cp``).
STREAMING_SUBRESOURCES = ("exec", "attach", "portforward")
#: The upgrades ``exec`` is served over: kubectl 1.30+ (WebSocket) and client-go's SPDY executor.
STREAM_UPGRADES = frozenset({"websocket", "spdy/3.1"})
_SUB_VERBS = {"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create", "DELETE": "delete"}


class Front(Protocol):
    """What the subresource handlers use of the API server: its parts, the registrations of what
    it forwards (``proxies``, ``log_sources``), the policy, and the verbs' own rendering and PATCH."""

    @property
    def store(self) -> Store: ...

    @property
    def rest(self) -> Rest: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def authn(self) -> Authenticator: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def proxies(self) -> Mapping[str, Callable[..., Any]]: ...

    @property
    def log_sources(self) -> Mapping[str, LogSource]: ...

    def policy(self) -> rbac.Policy: ...

    def outcome(self, request: web.Request, kind: Kind) -> Outcome: ...

    def render(
        self,
        request: web.Request,
        kind: Kind,
        obj: Obj,
        status: int = 200,
        opts: WriteOptions | None = None,
        *,
        outcome: Outcome | None = None,
    ) -> web.Response: ...

    async def patch(
        self, request: web.Request, kind: Kind, namespace: str, name: str, *, subresource: str = ""
    ) -> web.StreamResponse: ...


async def handle(
    server: Front,
    request: web.Request,
    user: rbac.UserInfo,
    kind: Kind,
    namespace: str,
    name: str,
    parsed: ResourcePath,
) -> web.StreamResponse:
    sub = parsed.subresource
    if kind.storage == ("", "pods") and sub in STREAMING_SUBRESOURCES:
        streams = server.proxies.get(f"pods/{sub}")
        if streams is not None and request.headers.get("Upgrade", "").lower() in STREAM_UPGRADES:
            return await streams(request, namespace, name, "")
        raise errors.BadRequest(
            f"pods/{sub} is not supported by the embedded cluster (nrop-cluster) except `exec` over "
            "WebSocket or SPDY/3.1 into containers that run as processes. Read a container's output with "
            "`kubectl logs`; run a command as a pod (or Job) of its own"
        )
    if not kind.has(sub):
        raise errors.NotFound.unknown_path()
    method = request.method
    if sub == "status":
        if method == "GET":
            return server.render(request, kind, server.rest.get(kind, namespace, name))
        if method == "PUT":
            outcome = server.outcome(request, kind)
            body, _ = await read_body(request, kind=kind)
            opts = write_options(request)
            obj, _ = server.rest.update(kind, namespace, name, body, opts, subresource="status")
            return server.render(request, kind, obj, 200, opts, outcome=outcome)
        if method == "PATCH":
            return await server.patch(request, kind, namespace, name, subresource="status")
    elif sub == "scale":
        return await _scale(server, request, kind, namespace, name)
    elif sub == "binding" and method == "POST":
        outcome = negotiated(request)
        body, _ = await read_body(request)
        return respond(outcome, bind(server, namespace, name, body), 201)
    elif sub == "eviction" and method == "POST":
        outcome = negotiated(request)
        body, _ = await read_body(request)
        return respond(outcome, evict(server, namespace, name, body), 201)
    elif sub == "log" and method == "GET":
        return await _log(server, request, namespace, name)
    elif sub == "finalize" and method == "PUT":
        outcome = negotiated(request)
        body, _ = await read_body(request)
        return respond(outcome, finalize(server, kind, name, body))
    elif sub == "token" and method == "POST":
        outcome = negotiated(request)
        body, _ = await read_body(request)
        return respond(outcome, token(server, namespace, name, body), 201)
    elif sub == "proxy" and kind.plural == "pods" and not kind.group:
        return await proxy_pod(server.store, request, namespace, name, parsed.rest)
    elif sub == "proxy":
        handler = server.proxies.get(kind.plural)
        if handler is None:
            raise errors.ServiceUnavailable(f'no endpoints available for {kind.plural[:-1]} "{name}"')
        return await handler(request, namespace, name, parsed.rest)
    verb = _SUB_VERBS.get(method, method.lower())
    raise errors.MethodNotAllowed(f'{verb} is not supported on resources of kind "{kind.plural}/{sub}"')


# -- scale ------------------------------------------------------------------------------------


def _get_path(obj: Obj, path: str) -> Any:
    current: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(part)
    return current


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    current = obj
    for part in parts[:-1]:
        current = current.setdefault(part, {})
    current[parts[-1]] = value


def _scale_paths(kind: Kind) -> tuple[str, str, str | None]:
    if kind.custom:
        scale = (kind.crd_version.get("subresources") or {}).get("scale") or {}
        return scale["specReplicasPath"], scale["statusReplicasPath"], scale.get("labelSelectorPath")
    return ".spec.replicas", ".status.replicas", None


def _scale_of(kind: Kind, obj: Obj) -> Obj:
    spec_path, status_path, selector_path = _scale_paths(kind)
    selector = ""
    if selector_path:
        selector = _get_path(obj, selector_path) or ""
    elif isinstance(obj.get("spec", {}).get("selector"), dict):
        selector = str(label_selector_from_dict(obj["spec"]["selector"]))
    meta = obj["metadata"]
    status: Obj = {"replicas": _get_path(obj, status_path) or 0}
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": _get_path(obj, spec_path) or 0},
        "status": status,
    }


async def _scale(server: Front, request: web.Request, kind: Kind, namespace: str, name: str) -> web.Response:
    # A CR's Scale is autoscaling/v1's, read in any served type but written as the CR's are.
    outcome = negotiated(request, Endpoint.CUSTOM if kind.custom else Endpoint.BUILTIN)
    current = server.rest.get(kind, namespace, name)
    if request.method == "GET":
        return respond(outcome, _scale_of(kind, current))
    if request.method == "PUT":
        scale, _ = await read_body(request)
    elif request.method == "PATCH":
        # 415 for an unknown media type comes before any decoding error, as upstream.
        content_type = request.headers.get("Content-Type") or "application/json"
        patch_type = patching.patch_type_for(content_type.lower(), builtin=not kind.custom)
        patch, _ = await read_body(request, patch=True)
        base = _scale_of(kind, current)
        if patch_type == "json":
            scale = patching.apply_json_patch(base, patch)
        else:
            scale = patching.apply_merge_patch(base, patch)
    else:
        raise errors.MethodNotAllowed(f'{request.method} is not supported on "{kind.plural}/scale"')
    if not isinstance(scale, dict):
        raise errors.BadRequest("the body must be a Scale object")
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.Invalid.for_fields(
            "Scale",
            "autoscaling",
            name,
            [errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
        )
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    updated = copy.deepcopy(current)
    spec_path, _, _ = _scale_paths(kind)
    _set_path(updated, spec_path, replicas)
    updated["metadata"]["resourceVersion"] = rv or current["metadata"]["resourceVersion"]
    opts = write_options(request)
    stored = server.rest.commit_update(
        kind, updated, server.store.get(kind.storage, namespace, name) or current, opts
    )
    return respond(outcome, _scale_of(kind, stored))


# -- pods -------------------------------------------------------------------------------------


def bind(server: Front, namespace: str, name: str, body: Any) -> Obj:
    """Bind a pod to a node; the ``Status`` to answer (201)."""
    if not isinstance(body, dict):
        raise errors.BadRequest("the body must be a Binding object")
    target = body.get("target") or {}
    node = target.get("name", "")
    pods = server.registry.lookup("", "v1", "pods")
    assert pods is not None
    if not node:
        raise errors.Invalid.for_fields("Binding", "", name, [errors.required("target.name")])
    pod = server.store.get(("", "pods"), namespace, name)
    if pod is None:
        raise errors.NotFound.for_object("pods", "", name)
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.Conflict(
            f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is being deleted, '
            "cannot be assigned to a host",
            name=name,
            kind="pods/binding",
        )
    if pod["spec"].get("nodeName"):
        raise errors.Conflict(
            f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned '
            f'to node "{pod["spec"]["nodeName"]}"',
            name=name,
            kind="pods/binding",
        )
    updated = copy.deepcopy(pod)
    updated["spec"]["nodeName"] = node
    annotations = (body.get("metadata") or {}).get("annotations")
    if annotations:
        meta = updated["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    status = updated.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": server.rest.now(),
        }
    )
    status["conditions"] = conditions
    server.store.update(("", "pods"), updated, pod)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def evict(server: Front, namespace: str, name: str, body: Any) -> Obj:
    pods = server.registry.lookup("", "v1", "pods")
    assert pods is not None
    pod = server.store.get(("", "pods"), namespace, name)
    if pod is None:
        raise errors.NotFound.for_object("pods", "", name)
    options = (body or {}).get("deleteOptions") or {}
    terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    if not terminal:
        labels = pod["metadata"].get("labels") or {}
        for pdb in server.store.list(("policy", "poddisruptionbudgets"), namespace):
            selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
            if selector.matches(labels) and (pdb.get("status") or {}).get("disruptionsAllowed", 0) <= 0:
                raise errors.TooManyRequests(
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    causes=[
                        Cause(
                            "DisruptionBudget",
                            f"The disruption budget {pdb['metadata']['name']} needs "
                            f"{(pdb.get('status') or {}).get('desiredHealthy', 0)} healthy pods and has "
                            f"{(pdb.get('status') or {}).get('currentHealthy', 0)} currently",
                        )
                    ],
                    retry_after=10,
                )
    server.rest.delete(
        pods,
        namespace,
        name,
        DeleteOptions(
            grace_period=options.get("gracePeriodSeconds"),
            preconditions=dict(options.get("preconditions") or {}),
        ),
    )
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def log_source(sources: Mapping[str, LogSource], pod: Obj | None) -> LogSource:
    """The logs of the pod's node, as upstream's ``pods/log`` asks the node's kubelet; a pod with
    no node, or on a node no kubelet serves here, has the :data:`~.clients.NO_NODE` logs."""
    node = ((pod or {}).get("spec") or {}).get("nodeName") or NO_NODE
    source = sources.get(node)
    if source is None:
        source = sources.get(NO_NODE)
    if source is None:
        raise errors.ServiceUnavailable(f'no kubelet serves node "{node}"')
    return source


async def _log(server: Front, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
    pod = server.store.get(("", "pods"), namespace, name)
    if pod is None:
        raise errors.NotFound.for_object("pods", "", name)
    query = request.query
    names = [c["name"] for c in pod["spec"].get("containers") or ()]
    all_names = [c["name"] for c in pod["spec"].get("initContainers") or ()] + names
    container = query.get("container", "")
    if not container:
        if len(names) != 1:
            raise errors.BadRequest(
                f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
            )
        container = names[0]
    if container not in all_names:
        raise errors.BadRequest(f"container {container} is not valid for pod {name}")

    def number(key: str) -> int | None:
        if key not in query:
            return None
        try:
            return int(query[key])
        except ValueError:
            raise errors.BadRequest(f'{key}: Invalid value: "{query[key]}": must be an integer') from None

    previous = query.get("previous", "").lower() == "true"
    logs = log_source(server.log_sources, pod)
    if previous and not logs.has_previous(namespace, name, container):
        raise errors.BadRequest(f'previous terminated container "{container}" in pod "{name}" not found')
    spec = LogQuery(
        container=container,
        previous=previous,
        tail_lines=number("tailLines"),
        limit_bytes=number("limitBytes"),
        timestamps=query.get("timestamps", "").lower() == "true",
        since_seconds=number("sinceSeconds"),
    )
    if query.get("follow", "").lower() != "true":
        return web.Response(body=logs.read(namespace, name, spec), content_type="text/plain")
    response = web.StreamResponse()
    response.content_type = "text/plain"
    response.enable_chunked_encoding()
    await response.prepare(request)
    async for chunk in logs.follow(namespace, name, spec):
        await response.write(chunk)
    await response.write_eof()
    return response


# -- namespaces, service accounts, reviews -------------------------------------------------------


def finalize(server: Front, kind: Kind, name: str, body: Any) -> Obj:
    if not isinstance(body, dict):
        raise errors.BadRequest("the body must be a Namespace object")
    current = server.store.get(("", "namespaces"), "", name)
    if current is None:
        raise errors.NotFound.for_object("namespaces", "", name)
    finalizers = list((body.get("spec") or {}).get("finalizers") or [])
    updated = copy.deepcopy(current)
    updated["spec"] = {**(updated.get("spec") or {}), "finalizers": finalizers}
    if updated == current:
        return current
    stored = server.store.update(("", "namespaces"), updated, current)
    return maybe_remove_namespace(server, stored) or stored


def token(server: Front, namespace: str, name: str, body: Any) -> Obj:
    sa = server.store.get(("", "serviceaccounts"), namespace, name)
    if sa is None:
        raise errors.NotFound.for_object("serviceaccounts", "", name)
    spec = (body or {}).get("spec") or {}
    seconds = int(spec.get("expirationSeconds") or 3600)
    if seconds < 600:
        raise errors.Invalid.for_fields(
            "TokenRequest",
            "authentication.k8s.io",
            name,
            [
                errors.invalid(
                    "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"
                )
            ],
        )
    bound = spec.get("boundObjectRef")
    issued = server.authn.issue(
        namespace,
        name,
        sa["metadata"]["uid"],
        audiences=spec.get("audiences") or None,
        expiration_seconds=seconds,
        bound=bound,
        now=server.clock.now().timestamp(),
    )
    from datetime import UTC, datetime

    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
        "spec": {
            "audiences": spec.get("audiences") or ["https://kubernetes.default.svc.cluster.local"],
            "expirationSeconds": seconds,
            "boundObjectRef": bound,
        },
        "status": {
            "token": issued.token,
            "expirationTimestamp": rfc3339(datetime.fromtimestamp(issued.expires_at, UTC)),
        },
    }


def access_review(server: Front, user: rbac.UserInfo, kind: Kind, body: Any) -> Obj:
    if not isinstance(body, dict):
        raise errors.BadRequest(f"the body must be a {kind.kind} object")
    spec = body.get("spec") or {}
    subject = user
    if kind.plural == "subjectaccessreviews":
        subject = rbac.UserInfo(
            name=spec.get("user", ""), groups=tuple(spec.get("groups") or ()), uid=spec.get("uid", "")
        )
    resource_attrs = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if resource_attrs:
        attrs = rbac.Attributes(
            verb=resource_attrs.get("verb", ""),
            namespace=resource_attrs.get("namespace", ""),
            api_group=resource_attrs.get("group", ""),
            resource=resource_attrs.get("resource", ""),
            subresource=resource_attrs.get("subresource", ""),
            name=resource_attrs.get("name", ""),
            resource_request=True,
        )
    elif non_resource:
        attrs = rbac.Attributes(
            verb=non_resource.get("verb", ""), path=non_resource.get("path", ""), resource_request=False
        )
    else:
        raise errors.Invalid.for_fields(
            kind.kind,
            kind.group,
            "",
            [
                errors.invalid(
                    "spec.resourceAttributes",
                    None,
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )
            ],
        )
    decision = rbac.authorize(subject, attrs, server.policy())
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {
        "kind": kind.kind,
        "apiVersion": kind.group_version,
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }
