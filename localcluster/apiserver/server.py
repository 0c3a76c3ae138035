"""The HTTP front of the API server: authentication, authorization, dispatch and the verbs' handlers.

One aiohttp catch-all handler parses the path, authenticates the bearer token
(and ``Impersonate-*`` headers), authorizes service accounts through RBAC,
decodes the body, and calls the REST verbs, the subresource handlers, the
watch streamer or discovery.  Every failure leaves as a ``kind: Status`` body
with the code and reason its ``StatusError`` carries.  Reading requests and
shaping responses (bodies, query options, ``Accept``) is ``httpio``'s, shared
with ``subresources``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from nrop.api.metatime import rfc3339_micro
from nrop.localcluster.apiserver import discovery, errors, httpio, rbac, routing, subresources, watching
from nrop.localcluster.apiserver.authn import Authenticator, impersonated
from nrop.localcluster.apiserver.clients import LogSource
from nrop.localcluster.apiserver.crd import conversion
from nrop.localcluster.apiserver.decisions import listing, patching
from nrop.localcluster.apiserver.decisions.requestoptions import WriteOptions
from nrop.localcluster.apiserver.openapi import documents as openapi
from nrop.localcluster.apiserver.openapi.definitions import load as load_definitions
from nrop.localcluster.apiserver.rbac.audit import DenialLog
from nrop.localcluster.apiserver.registry import Kind, Registry
from nrop.localcluster.apiserver.rest import Rest
from nrop.localcluster.apiserver.store import Store
from nrop.localcluster.apiserver.tables import output as tables
from nrop.localcluster.apiserver.wire import protobuf
from nrop.localcluster.apiserver.wire.negotiation import JSON, PROTOBUF, Endpoint, Outcome
from nrop.localcluster.clock import Clock, SystemClock

log = logging.getLogger(__name__)

Obj = dict[str, Any]
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
_WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class APIServer:
    """The embedded API server: state, verbs, and the aiohttp application serving them.

    The in-process kubelets and controllers see it as :class:`~.clients.InProcessAPI` (which it
    satisfies structurally), the subresource handlers as :class:`~.subresources.Front` and the
    lifecycle as :class:`~.lifecycle.ServerState`.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        history_size: int = 50_000,
        bookmark_interval: float = 60.0,
        admin_token: str | None = None,
    ) -> None:
        self.clock = clock or SystemClock()
        self.store = Store(history_size=history_size)
        self.registry = Registry.with_builtins()
        self.defs = load_definitions()
        self.rest = Rest(self.store, self.registry, self.defs, self.clock)
        self.authn = Authenticator(self._service_account_uid, admin_token)
        self.denials = DenialLog()
        self.bookmark_interval = bookmark_interval
        self.address = ""
        self.proxies: dict[str, Callable[..., Any]] = {}
        # Container logs are the nodes': pods/log reads the source of the pod's node (clients.py).
        self.log_sources: dict[str, LogSource] = {}
        self._openapi_cache: dict[tuple[str, str, int], tuple[Obj, str]] = {}
        self._rbac_cache: tuple[tuple[int, ...], rbac.Policy] | None = None
        # Requests being served; at shutdown only never-ending ones (watches, log follows) remain.
        self._in_flight: set[asyncio.Task[Any]] = set()
        # Open watch streams by their handler task (the drop-watches debug hook cuts them).
        self._watches: dict[asyncio.Task[Any], tuple[Obj, web.Request]] = {}
        self._watch_ids = itertools.count(1)

    # -- identity and policy ----------------------------------------------------------------

    def _service_account_uid(self, namespace: str, name: str) -> str | None:
        sa = self.store.get(("", "serviceaccounts"), namespace, name)
        return sa["metadata"]["uid"] if sa else None

    def policy(self) -> rbac.Policy:
        resources = [
            ("rbac.authorization.k8s.io", p)
            for p in ("roles", "clusterroles", "rolebindings", "clusterrolebindings")
        ]
        stamp = tuple(self.store.last_write(r) for r in resources)
        if self._rbac_cache is None or self._rbac_cache[0] != stamp:
            lists = [self.store.list(r) for r in resources]
            self._rbac_cache = (stamp, rbac.Policy(*lists))
        return self._rbac_cache[1]

    def authorize(self, user: rbac.UserInfo, attrs: rbac.Attributes) -> None:
        decision = rbac.authorize(user, attrs, self.policy())
        if not decision.allowed:
            self.denials.record(user, attrs, rfc3339_micro(self.clock.now()))
            raise rbac.forbidden_error(user, attrs)

    # -- application -------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=httpio.MAX_BODY + 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_shutdown.append(self._end_streams)
        return app

    async def _end_streams(self, app: web.Application) -> None:
        """End open watches and log follows at once, as kube-apiserver does when it stops.

        Without this, aiohttp waits its whole shutdown timeout for them, twice.
        """
        for task in list(self._in_flight):
            task.cancel()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._in_flight.add(task)
        try:
            return await self._handle(request)
        except errors.StatusError as err:
            return httpio.status_response(err, request)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("internal error serving %s %s", request.method, request.path)
            return httpio.status_response(errors.InternalError(f"Internal error occurred: {exc}"), request)
        finally:
            if task is not None:
                self._in_flight.discard(task)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path in PUBLIC_PATHS or path.startswith(tuple(p + "/" for p in PUBLIC_PATHS)):
            return web.Response(text="ok", content_type="text/plain")
        user = self.authn.authenticate(request.headers.get("Authorization"))
        as_user = request.headers.get("Impersonate-User")
        if as_user:
            for target in ("users", "groups", "serviceaccounts"):
                if target == "users" or request.headers.getall("Impersonate-Group", []):
                    self.authorize(
                        user,
                        rbac.Attributes(
                            verb="impersonate",
                            api_group="",
                            resource=target,
                            name=as_user,
                            resource_request=True,
                        ),
                    )
                    break
            user = impersonated(
                user,
                as_user,
                request.headers.getall("Impersonate-Group", []),
                request.headers.get("Impersonate-Uid", ""),
            )
        attrs = rbac.request_attributes(request.method, path, request.query)
        self.authorize(user, attrs)
        request[httpio.WRITE_GUARD] = rbac.write_guard(user, attrs, self.policy)
        if path.startswith("/debug/nrop/"):
            return await self._debug(request, path)
        parsed = routing.parse(path)
        if parsed is None:
            return self._non_resource(request, path)
        if isinstance(parsed, routing.DiscoveryPath):
            return self._discovery(request, parsed)
        kind = self.registry.lookup(parsed.group, parsed.version, parsed.plural)
        if kind is None:
            raise errors.NotFound.unknown_path()
        return await self._resource(request, user, kind, parsed)

    # -- non-resource paths ----------------------------------------------------------------

    def _non_resource(self, request: web.Request, path: str) -> web.StreamResponse:
        if request.method != "GET":
            raise errors.MethodNotAllowed(f"{request.method} is not supported on {path}")
        if path in ("/version", "/version/"):  # client-go asks /version, the Python client /version/
            return httpio.json_response(discovery.version_info())
        if path == "/openapi/v3":
            return httpio.json_response(self._openapi_root())
        if path.startswith("/openapi/v3/"):
            prefix = path[len("/openapi/v3/") :]
            parts = prefix.split("/")
            if parts[0] == "api" and len(parts) == 2:
                group, version = "", parts[1]
            elif parts[0] == "apis" and len(parts) == 3:
                group, version = parts[1], parts[2]
            else:
                raise errors.NotFound.unknown_path()
            doc, _ = self._openapi_doc(group, version)
            return httpio.json_response(doc)
        raise errors.NotFound.unknown_path()

    def _openapi_doc(self, group: str, version: str) -> tuple[Obj, str]:
        key = (group, version, self.registry.generation)
        cached = self._openapi_cache.get(key)
        if cached is None:
            kinds = [self._served_kind(k) for k in self.registry.in_group_version(group, version)]
            if not kinds:
                raise errors.NotFound.unknown_path()
            doc = openapi.openapi_document(group, version, kinds, self.defs)
            cached = (doc, openapi.document_hash(doc))
            self._openapi_cache[key] = cached
        return cached

    def _openapi_root(self) -> Obj:
        paths = {}
        for group, versions in sorted(self.registry.groups().items()):
            for version in versions:
                _, digest = self._openapi_doc(group, version)
                prefix = f"apis/{group}/{version}" if group else f"api/{version}"
                paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={digest}"}
        return {"paths": paths}

    @staticmethod
    def _served_kind(kind: Kind) -> openapi.ServedKind:
        schema = (kind.crd_version.get("schema") or {}).get("openAPIV3Schema") if kind.custom else None
        return openapi.ServedKind(
            group=kind.group,
            version=kind.version,
            kind=kind.kind,
            plural=kind.plural,
            namespaced=kind.namespaced,
            subresources=kind.subresources,
            schema=schema,
        )

    def _discovery(self, request: web.Request, parsed: routing.DiscoveryPath) -> web.StreamResponse:
        if request.method != "GET":
            raise errors.MethodNotAllowed(f"{request.method} is not supported on discovery")
        aggregated = discovery.wants_aggregated(request.headers.get("Accept", ""))
        if parsed.kind == "api":
            if aggregated:
                return self._aggregated(discovery.aggregated(self.registry, core=True))
            return httpio.json_response(discovery.api_versions(self.address))
        if parsed.kind == "apis":
            if aggregated:
                return self._aggregated(discovery.aggregated(self.registry, core=False))
            return httpio.json_response(discovery.api_group_list(self.registry))
        if parsed.kind == "group":
            doc = discovery.api_group(self.registry, parsed.group)
        else:
            doc = discovery.api_resource_list(self.registry, parsed.group, parsed.version)
        if doc is None:
            raise errors.NotFound.unknown_path()
        return httpio.json_response(doc)

    @staticmethod
    def _aggregated(doc: Obj) -> web.Response:
        response = web.Response(body=httpio.dumps(doc))
        response.headers["Content-Type"] = discovery.AGGREGATED_CONTENT_TYPE
        return response

    # -- resources -----------------------------------------------------------------------------

    async def _resource(
        self, request: web.Request, user: rbac.UserInfo, kind: Kind, parsed: routing.ResourcePath
    ) -> web.StreamResponse:
        method = request.method
        if parsed.namespaced_url and not kind.namespaced:
            raise errors.NotFound.unknown_path()
        if kind.namespaced and not parsed.namespaced_url and parsed.name and kind.plural != "namespaces":
            raise errors.NotFound.unknown_path()
        namespace = parsed.namespace if kind.namespaced else ""
        if kind.plural == "namespaces" and not kind.group:
            namespace = ""
        name = parsed.name if kind.plural != "namespaces" or kind.group else parsed.namespace or parsed.name
        if parsed.subresource:
            return await subresources.handle(self, request, user, kind, namespace, name, parsed)
        verb = _WRITE_VERBS.get(method, "get")
        if verb not in kind.verbs and not (verb == "get" and "list" in kind.verbs and not name):
            raise errors.MethodNotAllowed(
                f'{verb} is not supported on resources of kind "{kind.group_resource}"'
            )
        # Upstream negotiates the response before it reads the body: a 406 comes before a 400.
        outcome = self.outcome(request, kind)
        if (
            kind.storage == ("authorization.k8s.io", "selfsubjectaccessreviews")
            or kind.plural == "subjectaccessreviews"
        ):
            body, _ = await httpio.read_body(request, kind=kind)
            return httpio.respond(outcome, subresources.access_review(self, user, kind, body), 201)
        if kind.plural == "bindings":
            body, _ = await httpio.read_body(request, kind=kind)
            bound = subresources.bind(self, namespace, (body.get("metadata") or {}).get("name", ""), body)
            return httpio.respond(outcome, bound, 201)
        if method == "GET":
            if not name:
                if httpio.query_bool(request.query, "watch"):
                    return await self._watch(
                        request, user, kind, namespace if parsed.namespaced_url else None, outcome
                    )
                return self._list(request, kind, namespace if parsed.namespaced_url else None, outcome)
            obj = self.rest.get(kind, namespace, name)
            return self.render(request, kind, obj, outcome=outcome)
        if method == "POST":
            if name:
                raise errors.MethodNotAllowed(
                    f'create is not supported on a named resource of kind "{kind.group_resource}"'
                )
            body, _ = await httpio.read_body(request, kind=kind)
            opts = httpio.write_options(request)
            obj = self.rest.create(kind, namespace, body, opts)
            return self.render(request, kind, obj, 201, opts, outcome=outcome)
        if method == "PUT":
            body, _ = await httpio.read_body(request, kind=kind)
            opts = httpio.write_options(request)
            obj, created = self.rest.update(kind, namespace, name, body, opts)
            return self.render(request, kind, obj, 201 if created else 200, opts, outcome=outcome)
        if method == "PATCH":
            return await self.patch(request, kind, namespace, name)
        if method == "DELETE":
            if not name:
                return await self._delete_collection(
                    request, kind, namespace if parsed.namespaced_url else None, outcome
                )
            return await self._delete(request, kind, namespace, name, outcome)
        raise errors.MethodNotAllowed(f"{method} is not supported")

    async def patch(
        self, request: web.Request, kind: Kind, namespace: str, name: str, *, subresource: str = ""
    ) -> web.StreamResponse:
        outcome = self.outcome(request, kind)
        # The media type is checked before the body is decoded: upstream answers 415, not 400.
        content_type = request.headers.get("Content-Type") or JSON
        patch_type = patching.patch_type_for(content_type.lower(), builtin=not kind.custom)
        patch, _ = await httpio.read_body(request, patch=True)
        opts = httpio.write_options(request)
        if patch_type == "apply" and not opts.field_manager:
            raise errors.Invalid(
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
                causes=[errors.required("fieldManager", "is required for apply patch")],
            )
        if patch_type != "apply" and "force" in request.query:
            raise errors.Invalid(
                'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
                causes=[errors.forbidden("force", "may not be specified for non-apply patch")],
            )
        obj, created = self.rest.patch(
            kind,
            namespace,
            name,
            patch_type,
            patch,
            opts,
            subresource=subresource,
        )
        return self.render(request, kind, obj, 201 if created else 200, opts, outcome=outcome)

    @staticmethod
    def outcome(request: web.Request, kind: Kind) -> Outcome:
        """The negotiated response of a request on a kind (custom resources are JSON or YAML)."""
        return httpio.negotiated(request, Endpoint.CUSTOM if kind.custom else Endpoint.BUILTIN)

    def render(
        self,
        request: web.Request,
        kind: Kind,
        obj: Obj,
        status: int = 200,
        opts: WriteOptions | None = None,
        *,
        outcome: Outcome | None = None,
    ) -> web.Response:
        headers = {"Warning": ", ".join(opts.warnings)} if opts and opts.warnings else None
        outcome = outcome or self.outcome(request, kind)
        if outcome.convert == "Table" and request.method == "GET":
            return httpio.respond(outcome, self._table(request, kind, [obj]), status, headers)
        if outcome.convert.startswith("PartialObjectMetadata"):
            return httpio.respond(outcome, httpio.partial_metadata(obj), status, headers)
        return httpio.respond(outcome, obj, status, headers)

    def _table(
        self,
        request: web.Request,
        kind: Kind,
        objs: list[Obj],
        *,
        rv: str = "",
        cont: str = "",
        defs: bool = True,
    ) -> Obj:
        columns = None
        if kind.custom:
            from nrop.localcluster.apiserver.crd.schema import printer_columns

            columns = printer_columns(kind.crd, kind.version)
        group, plural = kind.group, kind.plural
        if kind.storage_plural:
            # A view (events.k8s.io) prints like the objects it shares storage with.
            group, plural = kind.storage
            objs = [conversion.stored(kind, o) for o in objs]
        return tables.render_table(
            group,
            plural,
            objs,
            now=self.clock.now(),
            columns=columns,
            include_object=request.query.get("includeObject", "Metadata"),
            resource_version=rv,
            continue_token=cont,
            include_column_definitions=defs,
        )

    def _list(
        self, request: web.Request, kind: Kind, namespace: str | None, outcome: Outcome
    ) -> web.Response:
        labels, fields = httpio.selectors(request)
        try:
            limit = int(request.query.get("limit", "0") or 0)
        except ValueError:
            raise errors.BadRequest(
                f'limit: Invalid value: "{request.query["limit"]}": must be an integer'
            ) from None
        result = listing.list_objects(
            self.store,
            kind,
            namespace,
            labels=labels,
            fields=fields,
            limit=max(0, limit),
            continue_token=request.query.get("continue", ""),
            resource_version=request.query.get("resourceVersion", ""),
            resource_version_match=request.query.get("resourceVersionMatch", ""),
        )
        if outcome.convert == "Table":
            return httpio.respond(
                outcome,
                self._table(
                    request, kind, result.items, rv=result.resource_version, cont=result.continue_token
                ),
            )
        meta: Obj = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
            meta["remainingItemCount"] = result.remaining
        if outcome.convert.startswith("PartialObjectMetadata"):
            return httpio.respond(
                outcome,
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta,
                    "items": [httpio.partial_metadata(o) for o in result.items],
                },
            )
        items = result.items
        if not kind.custom:
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
        return httpio.respond(
            outcome,
            {"kind": kind.list_kind, "apiVersion": kind.group_version, "metadata": meta, "items": items},
        )

    async def _watch(
        self,
        request: web.Request,
        user: rbac.UserInfo,
        kind: Kind,
        namespace: str | None,
        outcome: Outcome,
    ) -> web.StreamResponse:
        labels, fields = httpio.selectors(request)
        listing.check_fields(kind, fields)
        timeout_text = request.query.get("timeoutSeconds")
        try:
            timeout = float(timeout_text) if timeout_text else None
        except ValueError:
            raise errors.BadRequest(f'timeoutSeconds: Invalid value: "{timeout_text}"') from None
        req = watching.WatchRequest(
            resource=kind.storage,
            namespace=namespace,
            matches=lambda obj: listing.matches(kind, obj, labels, fields),
            resource_version=request.query.get("resourceVersion", ""),
            send_initial_events=httpio.query_bool(request.query, "sendInitialEvents"),
            allow_bookmarks=bool(httpio.query_bool(request.query, "allowWatchBookmarks")),
            timeout=timeout,
            bookmark_interval=self.bookmark_interval,
        )
        watching.validate(req, request.query.get("resourceVersionMatch", ""))
        # Protobuf events are length-prefixed WatchEvent messages; YAML has no stream form, so JSON lines.
        proto = outcome.media_type == PROTOBUF
        metadata = outcome.convert.startswith("PartialObjectMetadata")
        response = web.StreamResponse(status=200)
        response.headers["Content-Type"] = PROTOBUF + ";stream=watch" if proto else JSON
        response.enable_chunked_encoding()
        await response.prepare(request)
        task = asyncio.current_task()
        if task is not None:
            info = {"id": next(self._watch_ids), "user": user.name, "path": request.path_qs}
            self._watches[task] = (info, request)
        first_table = True

        def bookmark(rv: int, initial_end: bool) -> Obj:
            meta: Obj = {"resourceVersion": str(rv)}
            if initial_end:
                meta["annotations"] = {watching.INITIAL_EVENTS_END: "true"}
            return {"kind": kind.kind, "apiVersion": kind.group_version, "metadata": meta}

        def encoded(event_type: str, obj: Obj) -> bytes:
            if proto:
                return protobuf.watch_frame(event_type, obj)
            return httpio.dumps({"type": event_type, "object": obj}) + b"\n"

        try:
            async for frame in watching.stream(self.store, req, bookmark):
                if frame.type == "ERROR" or (frame.type == "BOOKMARK" and not metadata):
                    data = encoded(frame.type, frame.obj)
                elif outcome.convert == "Table":
                    table = self._table(request, kind, [frame.obj], defs=first_table)
                    first_table = False
                    data = encoded(frame.type, table)
                elif metadata:
                    data = encoded(frame.type, httpio.partial_metadata(frame.obj))
                else:
                    cache_key = (frame.type, kind.group, kind.version, proto)
                    data = frame.source.rendered.get(cache_key) if frame.source is not None else None
                    if data is None:
                        data = encoded(frame.type, conversion.served(kind, frame.obj))
                        if frame.source is not None:
                            frame.source.rendered[cache_key] = data
                await response.write(data)
        except (ConnectionResetError, asyncio.CancelledError):
            return response
        finally:
            if task is not None:
                self._watches.pop(task, None)
        await response.write_eof()
        return response

    async def _delete(
        self, request: web.Request, kind: Kind, namespace: str, name: str, outcome: Outcome
    ) -> web.Response:
        opts = await httpio.delete_options(request)
        obj, gone = self.rest.delete(kind, namespace, name, opts)
        if not gone or kind.return_deleted_object:
            return httpio.respond(outcome, obj)
        details = {"name": name, "kind": kind.plural, "uid": obj["metadata"].get("uid", "")}
        if kind.group:
            details["group"] = kind.group
        return httpio.respond(
            outcome,
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details},
        )

    async def _delete_collection(
        self, request: web.Request, kind: Kind, namespace: str | None, outcome: Outcome
    ) -> web.Response:
        if "deletecollection" not in kind.verbs:
            raise errors.MethodNotAllowed(
                f'deletecollection is not supported on resources of kind "{kind.group_resource}"'
            )
        opts = await httpio.delete_options(request)
        labels, fields = httpio.selectors(request)
        result = listing.list_objects(self.store, kind, namespace, labels=labels, fields=fields)
        deleted = []
        for obj in result.items:
            meta = obj["metadata"]
            try:
                done, _ = self.rest.delete(kind, meta.get("namespace", ""), meta["name"], opts)
            except errors.NotFound:
                continue
            deleted.append(done)
        return httpio.respond(
            outcome,
            {
                "kind": kind.list_kind,
                "apiVersion": kind.group_version,
                "metadata": {"resourceVersion": str(self.store.rv)},
                "items": deleted,
            },
        )

    # -- debug hooks (admin only: RBAC grants nothing under /debug to service accounts) ----------

    async def _debug(self, request: web.Request, path: str) -> web.Response:
        if request.method == "GET" and path == "/debug/nrop/denials":
            try:
                since = int(request.query.get("since", "0") or 0)
            except ValueError:
                raise errors.BadRequest(f'since: Invalid value: "{request.query["since"]}"') from None
            return httpio.json_response(self.denials.document(since))
        if request.method == "POST" and path == "/debug/nrop/compact":
            return httpio.json_response({"compactedResourceVersion": str(self.store.compact())})
        if request.method == "GET" and path == "/debug/nrop/watches":
            return httpio.json_response({"items": [info for info, _ in self._watches.values()]})
        if request.method == "POST" and path == "/debug/nrop/drop-watches":
            return httpio.json_response({"dropped": self._drop_watches()})
        if request.method == "POST" and path.startswith("/debug/nrop/logs/"):
            parts = path[len("/debug/nrop/logs/") :].split("/")
            if len(parts) != 3:
                raise errors.NotFound.unknown_path()
            namespace, pod, container = parts
            text = (await request.read()).decode()
            target = self.store.get(("", "pods"), namespace, pod)
            subresources.log_source(self.log_sources, target).append(namespace, pod, container, text)
            return httpio.json_response({"appended": len(text)})
        raise errors.NotFound.unknown_path()

    def _drop_watches(self) -> list[Obj]:
        """Cut every open watch as a network failure would: the connection closes with no
        final event and no end of the chunked body (a test hook for clients' reconnects)."""
        dropped = []
        for task, (info, request) in list(self._watches.items()):
            if request.transport is not None:
                request.transport.abort()
            task.cancel()
            self._watches.pop(task, None)
            dropped.append(info)
        return dropped
