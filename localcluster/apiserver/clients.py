"""The API server as its in-process clients see it: the embedded kubelets and controllers.

Upstream, the kubelet and kube-controller-manager are processes of their own that reach the API
server through client-go; here they run in the API server's process and call it directly. This
module is the whole of what they may use, as :class:`InProcessAPI`: reads and subscriptions of
the store, the REST verbs (every write goes through validation, admission and the write checks,
as a client's would), kind lookup, the server's clock and address, token issuing for the
service-account tokens a kubelet mounts, and the two registrations through which the API server
asks a node for what only the node has: ``proxies`` (``nodes/proxy``, ``pods/exec``) and
``log_sources`` (``pods/log``: container logs live on the node, as upstream's kubelet keeps
them; :class:`LogSource`, queried with a :class:`LogQuery`).

:class:`~nrop.localcluster.apiserver.server.APIServer` satisfies :class:`InProcessAPI`
structurally; clients name the Protocol, never the server, so what they reach is visible here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nrop.localcluster.apiserver.authn import IssuedToken
    from nrop.localcluster.apiserver.decisions.requestoptions import DeleteOptions, WriteOptions
    from nrop.localcluster.apiserver.registry import Kind
    from nrop.localcluster.apiserver.store import Resource, Subscriber
    from nrop.localcluster.clock import Clock

__all__ = [
    "NO_NODE",
    "InProcessAPI",
    "KindLookup",
    "LogQuery",
    "LogSource",
    "RestVerbs",
    "StoreReads",
    "TokenIssuer",
]

Obj = dict[str, Any]

#: The ``log_sources`` key of the logs of pods that no registered node serves (a pod with no
#: node yet, or on a Node no kubelet runs): there is nothing to read but what a test appended.
NO_NODE = ""


@dataclass(frozen=True)
class LogQuery:
    """The options of one ``pods/log`` read (``PodLogOptions``, once the API server has parsed them)."""

    container: str
    previous: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    timestamps: bool = False
    since_seconds: int | None = None


class LogSource(Protocol):
    """The container logs one node keeps (registered in ``log_sources`` under the node's name)."""

    def has_previous(self, namespace: str, pod: str, container: str) -> bool: ...

    def read(self, namespace: str, pod: str, query: LogQuery) -> bytes: ...

    def follow(self, namespace: str, pod: str, query: LogQuery) -> AsyncIterator[bytes]: ...

    def append(self, namespace: str, pod: str, container: str, text: str) -> None:
        """What the ``/debug/nrop/logs`` hook writes, as if the container had printed it."""
        ...


class StoreReads(Protocol):
    """The store as clients read it: objects as stored (no version conversion) and every write's event."""

    def get(self, resource: Resource, namespace: str, name: str) -> Obj | None: ...

    def list(self, resource: Resource, namespace: str | None = None) -> list[Obj]: ...

    def subscribe(self, resource: Resource | None, callback: Subscriber) -> Callable[[], None]: ...


class RestVerbs(Protocol):
    """The verbs on one object, with the checks a client's request goes through."""

    def get(self, kind: Kind, namespace: str, name: str) -> Obj: ...

    def create(self, kind: Kind, namespace: str, body: Any, opts: WriteOptions) -> Obj: ...

    def update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        body: Any,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> tuple[Obj, bool]: ...

    def delete(self, kind: Kind, namespace: str, name: str, opts: DeleteOptions) -> tuple[Obj, bool]: ...


class KindLookup(Protocol):
    def lookup(self, group: str, version: str, plural: str) -> Kind | None: ...


class TokenIssuer(Protocol):
    def issue(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        audiences: list[str] | None = None,
        expiration_seconds: int = 3600,
        bound: dict[str, Any] | None = None,
        now: float | None = None,
    ) -> IssuedToken: ...


class InProcessAPI(Protocol):
    """What the embedded kubelets and controllers use of the API server, and nothing else."""

    @property
    def clock(self) -> Clock: ...

    @property
    def address(self) -> str:
        """``host:port`` the server listens on (set once it serves; containers get it)."""
        ...

    @property
    def store(self) -> StoreReads: ...

    @property
    def rest(self) -> RestVerbs: ...

    @property
    def registry(self) -> KindLookup: ...

    @property
    def authn(self) -> TokenIssuer: ...

    @property
    def proxies(self) -> MutableMapping[str, Callable[..., Any]]:
        """Handlers the API server forwards to: ``nodes`` (``nodes/proxy``), ``pods/exec``."""
        ...

    @property
    def log_sources(self) -> MutableMapping[str, LogSource]:
        """The container logs by node name (and :data:`NO_NODE`), which ``pods/log`` reads."""
        ...
