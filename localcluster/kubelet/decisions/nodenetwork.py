"""A node's loopback addresses: the node's own, its pods' range, and each pod's address.

Every node of the embedded cluster lives on the host's loopback: node ``i`` is ``127.0.1.<i+1>``
(its ``InternalIP``, and a ``hostNetwork`` pod's address) and its pods get addresses in
``127.<16+i>.0.0/16`` (``spec.podCIDR``), so that pods' servers (metrics, probes) listen on
addresses of their own, as on a real cluster.  Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["POD_ADDRESSES", "NodeNetwork"]

#: How many pod addresses a node's ``127.<n>.x.y`` range holds.
POD_ADDRESSES = 254 * 256


@dataclass(frozen=True)
class NodeNetwork:
    """A node's loopback addresses: ``127.0.1.<i+1>`` for the node, ``127.<16+i>.x.y`` for its pods."""

    address: str
    pod_prefix: str

    @classmethod
    def for_index(cls, index: int) -> NodeNetwork:
        if not 0 <= index < 200:
            raise ValueError(f"node index {index} out of range for loopback addressing")
        return cls(f"127.0.1.{index + 1}", f"127.{16 + index}")

    @property
    def pod_cidr(self) -> str:
        return f"{self.pod_prefix}.0.0/16"

    def pod_ip(self, serial: int) -> str:
        serial %= POD_ADDRESSES
        return f"{self.pod_prefix}.{serial // 254}.{serial % 254 + 1}"
