"""Generated protobuf messages (regenerate.py)."""

__all__ = [
    "apps",
    "authentication",
    "authorization",
    "autoscaling",
    "batch",
    "coordination",
    "core",
    "events",
    "node",
    "policy",
    "rbac",
    "scheduling",
]
