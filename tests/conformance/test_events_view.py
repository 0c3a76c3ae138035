"""events.k8s.io/v1 Events are the core/v1 Events, served in their own shape."""

from __future__ import annotations

import datetime

from kubernetes import client


def test_core_event_is_served_in_events_k8s_io_shape_and_back(api_client, namespace: str, kubectl) -> None:
    core = client.CoreV1Api(api_client)
    events = client.EventsV1Api(api_client)
    core.create_namespaced_event(
        namespace,
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="e1"),
            involved_object=client.V1ObjectReference(kind="Pod", name="p1", namespace=namespace),
            reason="Tested",
            message="from core",
            type="Normal",
            source=client.V1EventSource(component="tester"),
            # events.k8s.io requires eventTime; the Python client refuses objects without it.
            event_time=datetime.datetime.now(datetime.UTC),
            reporting_component="tester",
            reporting_instance="tester-1",
            action="Testing",
        ),
    )
    viewed = events.read_namespaced_event("e1", namespace)
    assert viewed.regarding.name == "p1"
    assert viewed.note == "from core"
    assert viewed.deprecated_source.component == "tester"

    events.patch_namespaced_event("e1", namespace, {"note": "from events.k8s.io"})
    assert core.read_namespaced_event("e1", namespace).message == "from events.k8s.io"

    listed = kubectl("get", "events.v1.events.k8s.io", "-n", namespace).stdout
    assert "Tested" in listed and "from events.k8s.io" in listed
    by_field = core.list_namespaced_event(namespace, field_selector="involvedObject.name=p1").items
    assert [e.metadata.name for e in by_field] == ["e1"]
