"""The environment of a container, as the kubelet computes it (``makeEnvironmentVariables``).

Owns:

* ``envFrom`` (ConfigMaps and Secrets, with ``prefix`` and ``optional``), then ``env`` in
  order, each ``value`` expanded with ``$(VAR)`` against the variables defined before it;
* the downward API: ``fieldRef`` (``metadata.name``, ``metadata.namespace``,
  ``metadata.uid``, ``metadata.labels['k']``, ``metadata.annotations['k']``,
  ``spec.nodeName``, ``spec.serviceAccountName``, ``status.hostIP(s)``,
  ``status.podIP(s)``) and ``resourceFieldRef`` (``limits.*`` / ``requests.*`` of cpu,
  memory, ephemeral-storage and hugepages, rounded up by the ``divisor``; a missing limit
  is the node's allocatable);
* ``$(VAR)`` expansion of ``command`` and ``args`` with the final environment.

A reference that cannot be resolved raises :class:`ConfigError` with the kubelet's
message (``configmap "x" not found``, ``couldn't find key k in ConfigMap ns/x``), which
the container shows as ``CreateContainerConfigError``.  The variables the image and the
kubelet add (``PATH``, ``HOME``, the ``default/kubernetes`` Service's ``KUBERNETES_SERVICE_HOST``
and ``KUBERNETES_PORT*``, and ``KUBECONFIG`` only where containers get no mount namespace)
are the pod worker's (:mod:`.podworker`).

Pure: ConfigMaps and Secrets come from the lookups passed in.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from nrop.api.quantity import QuantityError, parse

__all__ = [
    "ConfigError",
    "DownwardFacts",
    "container_env",
    "expand",
    "expand_command",
    "field_value",
    "resource_value",
]

Obj = Mapping[str, Any]
#: ``name -> object`` (``None`` when it does not exist).
Lookup = Callable[[str], Obj | None]


class ConfigError(Exception):
    """A container whose configuration cannot be built (``CreateContainerConfigError``)."""

    reason = "CreateContainerConfigError"


@dataclass(frozen=True)
class DownwardFacts:
    """What the downward API exposes beyond the pod object."""

    pod_ip: str
    host_ip: str
    #: The node's allocatable, e.g. ``{"cpu": "30", "memory": "31Gi"}``: limits of containers without one.
    allocatable: Mapping[str, str]


# -- $(VAR) expansion ---------------------------------------------------------------------------


def expand(text: str, variables: Mapping[str, str]) -> str:
    """``$(VAR)`` -> its value when defined (else left as is); ``$$`` -> ``$``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append(text[i:])
                break
            name = text[i + 2 : close]
            out.append(variables.get(name, f"$({name})"))
            i = close + 1
        else:
            out.append(char + following)
            i += 2
    return "".join(out)


# -- downward API ---------------------------------------------------------------------------------

_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(path: str, pod: Obj, facts: DownwardFacts) -> str:
    """A ``fieldRef.fieldPath`` of the pod, as a string."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": facts.host_ip,
        "status.hostIPs": facts.host_ip,
        "status.podIP": facts.pod_ip,
        "status.podIPs": facts.pod_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    match = _SUBSCRIPT.fullmatch(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    raise ConfigError(f'unsupported fieldPath: "{path}"')


def _quantity(text: Any, what: str) -> Fraction:
    try:
        return parse(str(text)).fraction
    except QuantityError as exc:
        raise ConfigError(f"{what}: {exc}") from None


def resource_value(selector: Obj, container: Obj, facts: DownwardFacts) -> str:
    """A ``resourceFieldRef`` of ``container``: the value divided by the divisor, rounded up."""
    resource = str(selector.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or not (
        name in ("cpu", "memory", "ephemeral-storage") or name.startswith("hugepages-")
    ):
        raise ConfigError(f"unsupported container resource: {resource}")
    resources = container.get("resources") or {}
    values = resources.get(kind) or {}
    if name in values:
        amount = _quantity(values[name], resource)
    elif kind == "limits" and name in facts.allocatable:
        amount = _quantity(facts.allocatable[name], f"node allocatable {name}")
    else:
        amount = Fraction(0)
    divisor = _quantity(selector.get("divisor") or "1", f"divisor of {resource}")
    if divisor <= 0:
        raise ConfigError(f"divisor of {resource} must be positive")
    if name == "cpu":
        # convertResourceCPUToString: millicores (rounded up) over the divisor's millicores, rounded up
        return str(math.ceil(Fraction(math.ceil(amount * 1000), math.ceil(divisor * 1000))))
    return str(math.ceil(Fraction(math.ceil(amount), math.ceil(divisor))))


# -- the whole environment --------------------------------------------------------------------


def _data(obj: Obj, secret: bool) -> dict[str, str]:
    if secret:
        out = {k: base64.b64decode(v).decode(errors="replace") for k, v in (obj.get("data") or {}).items()}
        out.update({k: str(v) for k, v in (obj.get("stringData") or {}).items()})
        return out
    out = {k: str(v) for k, v in (obj.get("data") or {}).items()}
    out.update(
        {k: base64.b64decode(v).decode(errors="replace") for k, v in (obj.get("binaryData") or {}).items()}
    )
    return out


def _source(ref: Obj, lookup: Lookup, kind: str) -> dict[str, str] | None:
    name = str(ref.get("name", ""))
    obj = lookup(name)
    if obj is None:
        if ref.get("optional"):
            return None
        raise ConfigError(f'{kind.lower()} "{name}" not found')
    return _data(obj, kind == "Secret")


def _key(ref: Obj, lookup: Lookup, kind: str, namespace: str) -> str | None:
    data = _source(ref, lookup, kind)
    if data is None:
        return None
    key = str(ref.get("key", ""))
    if key not in data:
        if ref.get("optional"):
            return None
        raise ConfigError(f"couldn't find key {key} in {kind} {namespace}/{ref.get('name', '')}")
    return data[key]


def container_env(
    container: Obj,
    pod: Obj,
    facts: DownwardFacts,
    config_maps: Lookup,
    secrets: Lookup,
) -> dict[str, str]:
    """Every variable of ``container``'s environment, in definition order."""
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    env: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        prefix = str(source.get("prefix") or "")
        if source.get("configMapRef") is not None:
            data = _source(source["configMapRef"], config_maps, "ConfigMap")
        elif source.get("secretRef") is not None:
            data = _source(source["secretRef"], secrets, "Secret")
        else:
            continue
        for key, value in (data or {}).items():
            if "=" not in prefix + key:
                env[prefix + key] = value
    for var in container.get("env") or ():
        name = str(var.get("name", ""))
        ref = var.get("valueFrom")
        if ref is None:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        value: str | None
        if ref.get("fieldRef") is not None:
            value = field_value(str(ref["fieldRef"].get("fieldPath", "")), pod, facts)
        elif ref.get("resourceFieldRef") is not None:
            value = resource_value(
                ref["resourceFieldRef"], _named(pod, ref["resourceFieldRef"], container), facts
            )
        elif ref.get("configMapKeyRef") is not None:
            value = _key(ref["configMapKeyRef"], config_maps, "ConfigMap", namespace)
        elif ref.get("secretKeyRef") is not None:
            value = _key(ref["secretKeyRef"], secrets, "Secret", namespace)
        else:
            raise ConfigError(f"env {name}: unsupported valueFrom {sorted(ref)}")
        if value is not None:
            env[name] = value
    return env


def _named(pod: Obj, selector: Obj, default: Obj) -> Obj:
    """The container a ``resourceFieldRef`` names (``containerName``), else ``default``."""
    wanted = selector.get("containerName")
    if not wanted:
        return default
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        if container.get("name") == wanted:
            return container
    raise ConfigError(f'container "{wanted}" not found in the pod')


def expand_command(words: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``command`` or ``args`` with ``$(VAR)`` replaced from the container's environment."""
    return [expand(word, env) for word in words]
