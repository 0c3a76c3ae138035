"""The embedded API server answers the official Python client and kubectl (smoke level)."""

from __future__ import annotations

from kubernetes import client


def test_python_client_lists_system_namespaces(api_client) -> None:
    names = {ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_kubectl_version_reports_the_emulated_minor(kubectl) -> None:
    out = kubectl("version", "-o", "json").stdout
    assert '"minor": "33"' in out
