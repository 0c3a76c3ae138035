"""The scheduler's error hierarchy: configuration errors name the field they are about."""

from __future__ import annotations


class SchedulerError(Exception):
    """Base class of the scheduler's own errors."""


class ConfigError(SchedulerError):
    """An invalid ``KubeSchedulerConfiguration`` or plugin args; ``field`` is the JSON path at fault.

    The message reads like upstream's field errors: ``profiles[0].pluginConfig[1].args.scoringStrategy.type:
    Unsupported value: "Foo": supported values: ...``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.detail = message
