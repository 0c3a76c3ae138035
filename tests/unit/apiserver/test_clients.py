"""``apiserver/clients.py``: the API server satisfies, member by member, the Protocols its in-process
clients (kubelets, controllers) are typed against; a member renamed on either side fails here."""

from __future__ import annotations

import inspect

import pytest

from nrop.localcluster.apiserver import clients
from nrop.localcluster.apiserver.server import APIServer


def members(protocol: type) -> list[str]:
    return sorted(name for name in vars(protocol) if not name.startswith("_"))


def parameters(fn: object) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]  # type: ignore[arg-type]


def test_the_api_server_has_every_member_of_the_in_process_api() -> None:
    server = APIServer()
    missing = [name for name in members(clients.InProcessAPI) if not hasattr(server, name)]
    assert not missing


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
