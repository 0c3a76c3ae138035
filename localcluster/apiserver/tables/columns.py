"""kube-apiserver's built-in Table column sets, as data: the header of ``kubectl get``.

Owns, for each built-in ``(group, resource)`` with a printer, upstream's column
definitions in order (name, type, format, description, priority; priority 1 is
``-o wide``), written as short specs.  ``printers`` pairs each set with the row
function that fills it; keeping the tables apart keeps the upstream texts easy to
compare and the row logic short.
"""

from __future__ import annotations

from nrop.localcluster.apiserver.tables.cells import AGE_DESCRIPTION, NAME_DESCRIPTION, Obj, column_definition

__all__ = ["BUILTIN_COLUMNS"]

_WELL_KNOWN = {
    "Name": NAME_DESCRIPTION,
    "Age": AGE_DESCRIPTION,
    "Containers": "Names of each container in the template.",
    "Images": "Images referenced by each container in the template.",
}


def _cols(*specs: str | tuple[str, str]) -> list[Obj]:
    """Column definitions from ``"Name"`` or ``("Name[:type]", description)`` specs.

    A leading ``+`` marks a priority-1 (``-o wide``) column; a bare name takes
    its description from ``_WELL_KNOWN``; the ``Name`` column has format ``name``.
    """
    out = []
    for spec in specs:
        label, description = (spec, _WELL_KNOWN[spec.lstrip("+")]) if isinstance(spec, str) else spec
        priority = 1 if label.startswith("+") else 0
        name, _, type_ = label.lstrip("+").partition(":")
        fmt = "name" if name == "Name" else ""
        out.append(column_definition(name, description, type_=type_ or "string", priority=priority, fmt=fmt))
    return out


_SELECTOR = ("+Selector", "A label query over pods that are managed by this object.")
_BINDING_COLUMNS = _cols(
    "Name",
    ("Role", "RoleRef can reference a Role in the current namespace or a ClusterRole."),
    "Age",
    ("+Users", "Users in the binding"),
    ("+Groups", "Groups in the binding"),
    ("+ServiceAccounts", "ServiceAccounts in the binding"),
)

BUILTIN_COLUMNS: dict[tuple[str, str], list[Obj]] = {
    ("", "pods"): _cols(
        "Name",
        ("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        ("Status", "The aggregate status of the containers in this pod."),
        ("Restarts", "The number of times the containers in this pod have been restarted."),
        "Age",
        ("+IP", "IP address allocated to the pod."),
        ("+Node", "NodeName is the node this pod is scheduled onto."),
        ("+Nominated Node", "nominatedNodeName is set only when this pod preempts other pods."),
        ("+Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness."),
    ),
    ("", "nodes"): _cols(
        "Name",
        ("Status", "The status of the node"),
        ("Roles", "The roles of the node"),
        "Age",
        ("Version", "Kubelet Version reported by the node."),
        ("+Internal-IP", "List of addresses reachable to the node."),
        ("+External-IP", "List of addresses reachable to the node."),
        ("+OS-Image", "OS Image reported by the node from /etc/os-release."),
        ("+Kernel-Version", "Kernel Version reported by the node from 'uname -r'."),
        ("+Container-Runtime", "ContainerRuntime Version reported by the node."),
    ),
    ("", "namespaces"): _cols("Name", ("Status", "The status of the namespace"), "Age"),
    ("", "configmaps"): _cols("Name", ("Data", "Data contains the configuration data."), "Age"),
    ("", "secrets"): _cols(
        "Name",
        ("Type", "Used to facilitate programmatic handling of secret data."),
        ("Data", "Data contains the secret data."),
        "Age",
    ),
    ("", "serviceaccounts"): _cols(
        "Name", ("Secrets", "Secrets pods running as this ServiceAccount may use."), "Age"
    ),
    ("", "services"): _cols(
        "Name",
        ("Type", "type determines how the Service is exposed."),
        ("Cluster-IP", "clusterIP is the IP address of the service."),
        ("External-IP", "IP addresses on which nodes also accept traffic for this service."),
        ("Port(s)", "The list of ports that are exposed by this service."),
        "Age",
        ("+Selector", "Route service traffic to pods with labels matching this selector."),
    ),
    ("", "endpoints"): _cols(
        "Name", ("Endpoints", "The set of all endpoints is the union of all subsets."), "Age"
    ),
    ("", "events"): _cols(
        ("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
        ("Type", "Type of this event (Normal, Warning)."),
        ("Reason", "A short, machine understandable reason for the transition."),
        ("Object", "The object that this event is about."),
        ("+Subobject", "The field of the involved object the event is about."),
        ("+Source", "The component reporting this event."),
        ("Message", "A human-readable description of the status of this operation."),
        ("+First Seen", "The time at which the event was first recorded."),
        ("+Count", "The number of times this event has occurred."),
        "+Name",
    ),
    ("apps", "deployments"): _cols(
        "Name",
        ("Ready", "Number of the pod with ready state"),
        ("Up-to-date", "Total number of pods targeted by this deployment with the desired template."),
        ("Available", "Total number of available pods targeted by this deployment."),
        "Age",
        "+Containers",
        "+Images",
        _SELECTOR,
    ),
    ("apps", "replicasets"): _cols(
        "Name",
        ("Desired:integer", "Replicas is the number of desired pods."),
        ("Current:integer", "Replicas is the most recently observed number of pods."),
        ("Ready:integer", "The number of pods targeted by this ReplicaSet with a Ready Condition."),
        "Age",
        "+Containers",
        "+Images",
        _SELECTOR,
    ),
    ("apps", "statefulsets"): _cols(
        "Name", ("Ready", "Number of the pod with ready state"), "Age", "+Containers", "+Images"
    ),
    ("apps", "daemonsets"): _cols(
        "Name",
        ("Desired:integer", "The total number of nodes that should be running the daemon pod."),
        ("Current:integer", "The number of nodes running at least 1 daemon pod that should."),
        ("Ready:integer", "The number of nodes running a ready daemon pod that should."),
        ("Up-to-date:integer", "The total number of nodes that are running updated daemon pod"),
        ("Available:integer", "The number of nodes running an available daemon pod that should."),
        ("Node Selector", "NodeSelector must be true for the pod to fit on a node."),
        "Age",
        "+Containers",
        "+Images",
        _SELECTOR,
    ),
    ("batch", "jobs"): _cols(
        "Name",
        ("Status", "Status of the job."),
        ("Completions", "The number of pods which reached phase Succeeded."),
        ("Duration", "Time required to complete the job."),
        "Age",
        "+Containers",
        "+Images",
        _SELECTOR,
    ),
    ("coordination.k8s.io", "leases"): _cols(
        "Name",
        ("Holder", "holderIdentity contains the identity of the holder of a current lease."),
        "Age",
    ),
    ("scheduling.k8s.io", "priorityclasses"): _cols(
        "Name",
        ("Value:integer", "value represents the integer value of this priority class."),
        ("Global-Default:boolean", "globalDefault makes this the default priority for pods without one."),
        "Age",
        ("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with lower priority."),
    ),
    ("node.k8s.io", "runtimeclasses"): _cols(
        "Name", ("Handler", "handler names the underlying runtime and configuration."), "Age"
    ),
    ("rbac.authorization.k8s.io", "rolebindings"): _BINDING_COLUMNS,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _BINDING_COLUMNS,
}
