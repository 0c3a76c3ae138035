"""Gomega's polls as the configuration-family specs write them.

``Eventually(...).Should(Succeed())`` and ``Consistently(...).Should(Succeed())`` over an
``attempt`` that returns None or what is still wrong, the poll interval a spec uses on its
target (upstream's, capped on the embedded cluster by :func:`nrop.suite.e2e.timeouts.spec_poll`),
and upstream's ``Eventually(Get; mutate; Update)`` retried object update. Thin layers on
:func:`nrop.suite.e2e.wait.polling.wait_for` and :func:`~nrop.suite.e2e.wait.polling.consistently`;
every other ``_*_helpers`` module of the configuration specs polls through these.
"""

from __future__ import annotations

from collections.abc import Callable

from nrop.suite import Kube, wait_for
from nrop.suite import consistently as polling_consistently
from nrop.suite.e2e.kube import ApiError, Kind, Manifest
from nrop.suite.e2e.timeouts import spec_poll


def poll(target: str, upstream_interval: float) -> float:
    """The poll interval to use on ``target`` (``SuiteConfig.target``): :func:`spec_poll`'s."""
    return spec_poll(upstream_interval, local=target == "embedded")


def eventually(attempt: Callable[[], str | None], description: str, timeout: float, interval: float) -> None:
    """Gomega ``Eventually(...).Should(Succeed())``: ``attempt`` returns None on success or what
    is still wrong; the last problem is in the failure message."""
    wait_for(attempt, lambda problem: problem is None, description, timeout, interval=interval)


def consistently(
    attempt: Callable[[], str | None],
    description: str,
    duration: float,
    interval: float,
    *,
    last_look: bool = False,
) -> None:
    """Gomega ``Consistently(...).Should(Succeed(), description)``: ``attempt`` must return None on
    every poll for ``duration``; the first problem fails with the description and that problem.
    ``last_look=True``: an upstream hand-written deadline loop instead (one more poll once the
    window has ended, :func:`~nrop.suite.e2e.wait.polling.consistently`)."""
    polling_consistently(
        attempt,
        lambda problem: problem is None,
        description,
        duration,
        interval=interval,
        last_look=last_look,
        failure=lambda problem: f"{description}: {problem}",
    )


def update_object(
    kube: Kube,
    kind: Kind,
    name: str,
    mutate: Callable[[Manifest], None],
    *,
    timeout: float,
    interval: float,
    namespace: str | None = None,
    description: str | None = None,
) -> Manifest:
    """``Eventually(Get; mutate; Update)``: a full-object update at the read resourceVersion,
    retried (conflicts, transient errors) until it succeeds; returns the stored object.
    ``description`` is the Eventually's failure message (default: what was to be updated)."""
    result: list[Manifest] = []

    def attempt() -> str | None:
        try:
            obj = kube.get(kind, name, namespace)
            mutate(obj)
            result[:] = [kube.replace(obj)]
        except ApiError as exc:
            return f"update failed: {exc}"
        return None

    eventually(attempt, description or f"{kind.kind} {name} to be updated", timeout, interval)
    return result[0]
