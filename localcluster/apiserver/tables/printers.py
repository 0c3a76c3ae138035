"""kube-apiserver's built-in Table printers: the cells of ``kubectl get``.

Owns, for each built-in ``(group, resource)`` this cluster serves, the row
function that fills upstream's column set (the sets themselves, as data, are
``printercolumns.BUILTIN_COLUMNS``; ``PRINTERS`` pairs the two), including the
pod ``STATUS``/``READY``/``RESTARTS`` logic of upstream ``printPod`` and the
``Completed`` row condition of finished pods.  Like upstream the priority-1
(``-o wide``) cells are always filled; kubectl drops them unless asked.
``tables.render_table`` picks these printers; resources without one get the
default table there.  Pure: objects and an injected ``now`` in, cells out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from nrop.localcluster.apiserver.tables.cells import (
    Cell,
    Obj,
    RowFn,
    format_age,
    get_field,
    list_field,
    object_age,
    object_name,
    parse_time,
    translate_timestamp,
)
from nrop.localcluster.apiserver.tables.columns import BUILTIN_COLUMNS

__all__ = [
    "BUILTIN_COLUMNS",
    "PRINTERS",
    "format_label_selector",
    "format_labels",
    "has_printer",
    "pod_conditions",
]

# --------------------------------------------------------------------------- helpers


def _replicas(spec: Obj) -> int:
    """``spec.replicas``, which the API server defaults to 1."""
    value = spec.get("replicas")
    return 1 if value is None else int(value)


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` pairs, ``<none>`` when empty."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _selector_string(selector: Any) -> str | None:
    """``LabelSelectorAsSelector(sel).String()``; ``None`` for an invalid selector."""
    if not isinstance(selector, dict):
        return ""
    reqs: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), sorted(expr.get("values") or [])
        if op in ("In", "NotIn"):
            reqs.append((key, f"{key} {op.lower()} ({','.join(values)})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
        else:
            return None
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: ``<none>`` when empty, ``<error>`` when invalid."""
    if selector is None:
        return "<none>"
    text = _selector_string(selector)
    if text is None:
        return "<error>"
    return text or "<none>"


def _containers(template_spec: Any) -> tuple[str, str]:
    containers = list_field(template_spec, "containers")
    return (
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
    )


def _true_condition(conditions: Iterable[Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions)


# --------------------------------------------------------------------------- pods


def _is_restartable_init(container: Any) -> bool:
    return isinstance(container, dict) and container.get("restartPolicy") == "Always"


def _later(current: datetime | None, terminated: Any) -> datetime | None:
    finished = parse_time(get_field(terminated, "finishedAt"))
    if finished is None or (current is not None and current >= finished):
        return current
    return finished


def _terminated_reason(term: Obj, prefix: str) -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _pod_status(pod: Obj) -> tuple[str, int, int, datetime | None]:
    """(status reason, ready containers, restarts, last restart) as upstream ``printPod``."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    conditions = list_field(status, "conditions")
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions):
        reason = "SchedulingGated"
    init_list = list_field(spec, "initContainers")
    init_specs = {c.get("name"): c for c in init_list}
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None
    initializing = False
    for index, cs in enumerate(list_field(status, "initContainerStatuses")):
        restarts += int(cs.get("restartCount") or 0)
        last_term = get_field(cs, "lastState", "terminated")
        last_restart = _later(last_restart, last_term)
        sidecar = _is_restartable_init(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            last_sidecar_restart = _later(last_sidecar_restart, last_term)
        term, waiting = get_field(cs, "state", "terminated"), get_field(cs, "state", "waiting")
        if isinstance(term, dict) and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if isinstance(term, dict):
            reason = _terminated_reason(term, "Init:")
        elif isinstance(waiting, dict) and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{index}/{len(init_list)}"
        initializing = True
        break
    if not initializing or _true_condition(conditions, "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(list_field(status, "containerStatuses")):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = _later(last_restart, get_field(cs, "lastState", "terminated"))
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(term, dict):
                reason = _terminated_reason(term, "")
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _true_condition(conditions, "Ready") else "NotReady"
    deleting = get_field(pod, "metadata", "deletionTimestamp") is not None
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return reason, ready, restarts, last_restart


def _pod_row(pod: Obj, now: datetime) -> list[Cell]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    reason, ready, restarts, last_restart = _pod_status(pod)
    total = len(list_field(spec, "containers")) + sum(
        1 for c in list_field(spec, "initContainers") if _is_restartable_init(c)
    )
    restarts_cell = str(restarts)
    if restarts and last_restart is not None:
        restarts_cell = f"{restarts} ({format_age(last_restart, now)} ago)"
    gates = list_field(spec, "readinessGates")
    gates_cell = "<none>"
    if gates:
        by_type: dict[Any, Any] = {}
        for cond in list_field(status, "conditions"):
            by_type.setdefault(cond.get("type"), cond.get("status"))
        true_gates = sum(1 for g in gates if by_type.get(g.get("conditionType")) == "True")
        gates_cell = f"{true_gates}/{len(gates)}"
    pod_ip = get_field(status, "podIPs", 0, "ip") or status.get("podIP")
    return [
        object_name(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        object_age(pod, now),
        pod_ip or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_cell,
    ]


def pod_conditions(pod: Obj) -> list[Obj] | None:
    phase = get_field(pod, "status", "phase")
    if phase == "Succeeded":
        message = "The pod has completed successfully."
    elif phase == "Failed":
        message = "The pod failed."
    else:
        return None
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


# --------------------------------------------------------------------------- other kinds


def _node_row(node: Obj, now: datetime) -> list[Cell]:
    ready = None
    for cond in list_field(node, "status", "conditions"):
        if cond.get("type") == "Ready":
            ready = cond
    status = ["Unknown"] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if get_field(node, "spec", "unschedulable"):
        status.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (get_field(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/") :]:
            roles.add(key[len("node-role.kubernetes.io/") :])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = get_field(node, "status", "nodeInfo") or {}
    addresses = list_field(node, "status", "addresses")

    def address(kind: str) -> str:
        return next((str(a.get("address")) for a in addresses if a.get("type") == kind), "<none>")

    return [
        object_name(node),
        ",".join(status),
        ",".join(sorted(roles)) or "<none>",
        object_age(node, now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _deployment_row(obj: Obj, now: datetime) -> list[Cell]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers(get_field(spec, "template", "spec"))
    selector = _selector_string(spec.get("selector"))
    return [
        object_name(obj),
        f"{int(status.get('readyReplicas') or 0)}/{_replicas(spec)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        object_age(obj, now),
        names,
        images,
        "<invalid>" if selector is None else selector,
    ]


def _replicaset_row(obj: Obj, now: datetime) -> list[Cell]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers(get_field(spec, "template", "spec"))
    return [
        object_name(obj),
        _replicas(spec),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        object_age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _statefulset_row(obj: Obj, now: datetime) -> list[Cell]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers(get_field(spec, "template", "spec"))
    ready = f"{int(status.get('readyReplicas') or 0)}/{_replicas(spec)}"
    return [object_name(obj), ready, object_age(obj, now), names, images]


def _daemonset_row(obj: Obj, now: datetime) -> list[Cell]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers(get_field(spec, "template", "spec"))
    counts = [
        int(status.get(key) or 0)
        for key in (
            "desiredNumberScheduled",
            "currentNumberScheduled",
            "numberReady",
            "updatedNumberScheduled",
            "numberAvailable",
        )
    ]
    node_selector = format_labels(get_field(spec, "template", "spec", "nodeSelector"))
    return [
        object_name(obj),
        *counts,
        node_selector,
        object_age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _job_row(obj: Obj, now: datetime) -> list[Cell]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    job_duration = "" if start is None else format_age(start, end if end is not None else now)
    conditions = list_field(status, "conditions")

    def has(type_: str) -> bool:  # upstream looks at the first condition of the type only
        first = next((c for c in conditions if c.get("type") == type_), None)
        return first is not None and first.get("status") == "True"

    if has("Complete"):
        job_status = "Complete"
    elif has("Failed"):
        job_status = "Failed"
    elif get_field(obj, "metadata", "deletionTimestamp") is not None:
        job_status = "Terminating"
    elif has("Suspended"):
        job_status = "Suspended"
    elif has("FailureTarget"):
        job_status = "FailureTarget"
    else:
        job_status = "Running"
    names, images = _containers(get_field(spec, "template", "spec"))
    selector = format_label_selector(spec.get("selector"))
    return [
        object_name(obj),
        job_status,
        completions,
        job_duration,
        object_age(obj, now),
        names,
        images,
        selector,
    ]


def _service_external_ip(svc: Obj) -> str:
    spec = svc.get("spec") or {}
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    svc_type = spec.get("type") or "ClusterIP"
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if svc_type == "LoadBalancer":
        ingress = {
            i.get("ip") or i.get("hostname") for i in list_field(svc, "status", "loadBalancer", "ingress")
        }
        lb_ips = sorted(x for x in ingress if x)
        if external:
            return ",".join(lb_ips + external)
        return ",".join(lb_ips) or "<pending>"
    if svc_type == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _service_row(obj: Obj, now: datetime) -> list[Cell]:
    spec = obj.get("spec") or {}
    ports = []
    for port in spec.get("ports") or []:
        proto = port.get("protocol") or "TCP"
        node_port = int(port.get("nodePort") or 0)
        ports.append(
            f"{port.get('port')}:{node_port}/{proto}" if node_port > 0 else f"{port.get('port')}/{proto}"
        )
    cluster_ip = get_field(spec, "clusterIPs", 0) or spec.get("clusterIP") or "<none>"
    return [
        object_name(obj),
        spec.get("type") or "ClusterIP",
        cluster_ip,
        _service_external_ip(obj),
        ",".join(ports) or "<none>",
        object_age(obj, now),
        format_labels(spec.get("selector")),
    ]


def _endpoints_cell(obj: Obj) -> str:
    shown: list[str] = []
    limit, count, more = 3, 0, False
    for subset in list_field(obj, "subsets"):
        addresses = list_field(subset, "addresses")
        ports = list_field(subset, "ports")
        targets = [(a, None) for a in addresses] if not ports else [(a, p) for p in ports for a in addresses]
        count += len(targets)
        for addr, port in targets:
            if len(shown) == limit:
                more = True
                break
            ip = str(addr.get("ip", ""))
            if port is None:
                shown.append(ip)
            else:
                host = f"[{ip}]" if ":" in ip else ip
                shown.append(f"{host}:{port.get('port')}")
    if not list_field(obj, "subsets"):
        return "<none>"
    text = ",".join(shown)
    return f"{text} + {count - limit} more..." if more else text


def _event_row(obj: Obj, now: datetime) -> list[Cell]:
    first_ts = obj.get("firstTimestamp")
    first = translate_timestamp(first_ts if parse_time(first_ts) else obj.get("eventTime"), now)
    last_ts = obj.get("lastTimestamp")
    last = translate_timestamp(last_ts, now) if parse_time(last_ts) else first
    count = int(obj.get("count") or 0)
    series = obj.get("series")
    if isinstance(series, dict):
        last = translate_timestamp(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = obj.get("source") or {}
    # Stored core/v1 Events name events.k8s.io's reportingController "reportingComponent".
    component = (
        source.get("component") or obj.get("reportingComponent") or obj.get("reportingController") or ""
    )
    instance = source.get("host") or obj.get("reportingInstance") or ""
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        str(obj.get("message") or "").strip(),
        first,
        count,
        object_name(obj),
    ]


def _subjects(obj: Obj) -> list[str]:
    users, groups, sas = [], [], []
    for subject in list_field(obj, "subjects"):
        kind, name = subject.get("kind"), str(subject.get("name", ""))
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            sas.append(f"{subject.get('namespace', '')}/{name}")
    return [", ".join(users), ", ".join(groups), ", ".join(sas)]


def _binding_row(obj: Obj, now: datetime) -> list[Cell]:
    ref = obj.get("roleRef") or {}
    return [
        object_name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        object_age(obj, now),
        *_subjects(obj),
    ]


def _simple(*cells: Callable[[Obj], Cell]) -> RowFn:
    """A row of ``Name``, the given cells, then ``Age``."""

    def row(obj: Obj, now: datetime) -> list[Cell]:
        return [object_name(obj), *(cell(obj) for cell in cells), object_age(obj, now)]

    return row


def _priorityclass_row(obj: Obj, now: datetime) -> list[Cell]:
    value, default = int(obj.get("value") or 0), bool(obj.get("globalDefault", False))
    return [object_name(obj), value, default, object_age(obj, now), obj.get("preemptionPolicy") or ""]


# --------------------------------------------------------------------------- registry

_ROWS: dict[tuple[str, str], RowFn] = {
    ("", "pods"): _pod_row,
    ("", "nodes"): _node_row,
    ("", "namespaces"): _simple(lambda o: str(get_field(o, "status", "phase") or "")),
    ("", "configmaps"): _simple(lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
    ("", "secrets"): _simple(lambda o: str(o.get("type") or ""), lambda o: len(o.get("data") or {})),
    ("", "serviceaccounts"): _simple(lambda o: len(o.get("secrets") or [])),
    ("", "services"): _service_row,
    ("", "endpoints"): _simple(_endpoints_cell),
    ("", "events"): _event_row,
    ("apps", "deployments"): _deployment_row,
    ("apps", "replicasets"): _replicaset_row,
    ("apps", "statefulsets"): _statefulset_row,
    ("apps", "daemonsets"): _daemonset_row,
    ("batch", "jobs"): _job_row,
    ("coordination.k8s.io", "leases"): _simple(lambda o: str(get_field(o, "spec", "holderIdentity") or "")),
    ("scheduling.k8s.io", "priorityclasses"): _priorityclass_row,
    ("node.k8s.io", "runtimeclasses"): _simple(lambda o: str(o.get("handler") or "")),
    ("rbac.authorization.k8s.io", "rolebindings"): _binding_row,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding_row,
}

PRINTERS: dict[tuple[str, str], tuple[list[Obj], RowFn]] = {
    key: (columns, _ROWS[key]) for key, columns in BUILTIN_COLUMNS.items()
}


def has_printer(group: str, resource: str) -> bool:
    """Whether ``(group, resource)`` has a built-in printer (else the default table applies)."""
    return (group, resource) in PRINTERS
