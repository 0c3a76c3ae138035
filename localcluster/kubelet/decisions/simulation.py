"""What a simulated container does: the small set of commands the emulated runtime understands.

Containers that do not run as real processes (see :mod:`.entrypoints`) are simulated from
their ``command`` and ``args`` (completed by the image's entrypoint where the image is known,
:mod:`.knownimages`):

* ``pause`` (the pause image's ``/pause``) runs until the pod is stopped and exits 0 on SIGTERM;
* ``sleep N`` (GNU syntax: ``5``, ``2m``, ``infinity``), ``true``, ``false``, ``exit N``
  and ``echo ...`` run for the slept seconds and exit with the expected code (what ``echo``
  prints is the container's log);
* a ``sh -c`` (also ``bash``, ``ash``, ``dash``) script of such commands joined by ``;``
  or ``&&`` runs for the sum of its sleeps and exits with the script's code;
* anything else, or no command, is a program the runtime does not know: it behaves like
  ``pause`` (:data:`UNKNOWN`, which the kubelet reports once in a ``SimulatedImage`` event).

Pure: :func:`behaviour_of` maps a command line (:func:`behaviour`: a container spec's) to a
:class:`Behaviour`, which :class:`.podruntime.PodRun` plays out in time.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PAUSE", "PROCESS", "UNKNOWN", "Behaviour", "behaviour", "behaviour_of"]

_SHELLS = frozenset({"sh", "bash", "ash", "dash"})


@dataclass(frozen=True)
class Behaviour:
    """What a simulated container does: run ``seconds`` (``None``: until stopped), then exit."""

    seconds: float | None
    exit_code: int = 0
    #: No command the simulator understood: a ``pause``-like process that exits 0 on SIGTERM.
    pause: bool = False
    #: Not simulated: a real process, whose exit the kubelet reports.
    process: bool = False
    #: What the container writes to stdout (``echo``), logged when it starts.
    output: str = ""
    #: ``False``: the runtime does not know the program; it only stands in for it, as ``pause``.
    known: bool = True


PAUSE = Behaviour(None, 0, pause=True)
UNKNOWN = Behaviour(None, 0, pause=True, known=False)
PROCESS = Behaviour(None, process=True)

_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _sleep_seconds(word: str) -> float | None:
    """GNU ``sleep``'s argument: a number with an optional s/m/h/d suffix, or ``infinity``."""
    if word in ("infinity", "inf"):
        return None
    unit = word[-1] if word and word[-1] in "smhd" else ""
    number = word[: len(word) - len(unit)]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(word) from None
    if value < 0:
        raise ValueError(word)
    return value * _DURATION_UNITS[unit]


def _simple(words: list[str]) -> Behaviour | None:
    """One simple command, or ``None`` when the simulator does not know it."""
    program = posixpath.basename(words[0])
    args = words[1:]
    if program == "pause" and not args:
        return PAUSE
    if program == "sleep" and len(args) == 1:
        try:
            return Behaviour(_sleep_seconds(args[0]))
        except ValueError:
            return Behaviour(0.0, 1)
    if program == "true" and not args:
        return Behaviour(0.0)
    if program == "false" and not args:
        return Behaviour(0.0, 1)
    if program == "exit" and len(args) <= 1:
        try:
            return Behaviour(0.0, int(args[0]) % 256 if args else 0)
        except ValueError:
            return Behaviour(0.0, 2)
    if program == "echo":
        newline = not args or args[0] != "-n"
        text = " ".join(args if newline else args[1:])
        return Behaviour(0.0, output=text + ("\n" if newline else ""))
    return None


def _script(script: str) -> Behaviour:
    """A ``sh -c`` script of simple commands joined by ``;`` or ``&&``."""
    total = 0.0
    code = 0
    output = ""
    try:
        tokens = shlex.split(script.replace(";", " ; ").replace("&&", " && "))
    except ValueError:
        return UNKNOWN
    commands: list[tuple[str, list[str]]] = []
    current: list[str] = []
    for token in [*tokens, ";"]:
        if token in (";", "&&"):
            if current:
                commands.append((token, current))
            current = []
        else:
            current.append(token)
    for separator, words in commands:
        step = _simple(words)
        if step is None:
            return UNKNOWN
        output += step.output
        if step.seconds is None:
            return Behaviour(None, output=output)
        total += step.seconds
        code = step.exit_code
        if posixpath.basename(words[0]) == "exit" or (separator == "&&" and code != 0):
            break
    return Behaviour(total, code, output=output)


def behaviour_of(argv: Sequence[str]) -> Behaviour:
    """How the simulator runs the command line ``argv``."""
    if not argv:
        return UNKNOWN
    if posixpath.basename(argv[0]) in _SHELLS:
        if len(argv) >= 3 and argv[1] == "-c":
            return _script(argv[2])
        return UNKNOWN
    return _simple(list(argv)) or UNKNOWN


def behaviour(container: Mapping[str, Any]) -> Behaviour:
    """How the simulator runs ``container`` (its ``command`` followed by its ``args``)."""
    return behaviour_of(
        [str(a) for a in container.get("command") or ()] + [str(a) for a in container.get("args") or ()]
    )
