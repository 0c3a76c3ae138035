"""The options a write or a delete carries into the REST verbs.

``httpio`` parses them from a request's query and body; controllers, the kubelet
and the lifecycle loops build them directly (usually with their field manager
only).  They are plain data: what each option means is up to the verb that reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


@dataclass
class WriteOptions:
    """Options common to write requests (query parameters)."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"
    warnings: list[str] = field(default_factory=list)
    #: Checks the object about to be written against the stored one (``None`` on create) before
    #: anything else; the HTTP layer sets RBAC's escalation check here (``rbac.write_guard``).
    guard: Callable[[Obj, Obj | None], None] | None = None


@dataclass
class DeleteOptions:
    grace_period: int | None = None
    propagation: str | None = None
    preconditions: dict[str, str] = field(default_factory=dict)
    dry_run: bool = False
