"""``apiserver/clients.py``: the API server satisfies, member by member, the Protocols its in-process
clients (kubelets, controllers) are typed against, and those its subresource handlers and lifecycle
are typed against (so that none of them imports ``server.py``); a member renamed on either side fails here."""

from __future__ import annotations

import inspect

import pytest

from nrop.localcluster.apiserver import clients, lifecycle, subresources
from nrop.localcluster.apiserver.server import APIServer


def members(protocol: type) -> list[str]:
    return sorted(name for name in vars(protocol) if not name.startswith("_"))


def parameters(fn: object) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "protocol",
    [
        pytest.param(clients.InProcessAPI, id="in-process-clients"),
        pytest.param(subresources.Front, id="subresources"),
        pytest.param(lifecycle.ServerState, id="lifecycle"),
    ],
)
def test_the_api_server_has_every_member_of(protocol: type) -> None:
    server = APIServer()
    missing = [name for name in members(protocol) if not hasattr(server, name)]
    assert not missing
    for name in members(protocol):
        if inspect.isfunction(getattr(protocol, name)):
            assert parameters(getattr(server, name)) == parameters(getattr(protocol, name)), name


@pytest.mark.parametrize(
    ("attribute", "protocol"),
    [
        pytest.param("store", clients.StoreReads, id="store"),
        pytest.param("rest", clients.RestVerbs, id="rest"),
        pytest.param("registry", clients.KindLookup, id="registry"),
        pytest.param("authn", clients.TokenIssuer, id="authn"),
    ],
)
def test_each_part_has_the_protocols_methods_with_their_parameters(attribute: str, protocol: type) -> None:
    part = getattr(APIServer(), attribute)
    for name in members(protocol):
        method = getattr(part, name)
        assert parameters(method) == parameters(getattr(protocol, name)), f"{attribute}.{name}"
