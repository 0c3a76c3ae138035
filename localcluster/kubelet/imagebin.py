"""A process container's ``bin`` directory: its image's executables, first on its ``PATH``.

A real image's ``/bin`` holds its programs, so ``sh -c "curl ..."`` in a container finds the
image's curl. The emulated runtime runs containers on the machine's filesystem (in a mount
namespace of their own at most, never an image root), so the kubelet gives each process
container ``<container dir>/bin`` with one entry per executable of its image
(:func:`.decisions.entrypoints.image_executables`) and starts the container's ``PATH`` with it,
with or without mount namespaces (the directory is on the machine, which the container sees
around its mounts). A program of the machine (``/bin/sh``) is a symbolic link; a program of the
Python environment is a two-line ``exec`` script, because a link to the environment's
``python`` would start the interpreter outside its environment (Python finds a venv from the
path it was started by).

Written at every start of the container, so it holds exactly the image's executables.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

__all__ = ["populate", "wrapper"]


def wrapper(program: Path) -> str:
    """The script that runs ``program`` with the arguments it is given."""
    return f'#!/bin/sh\nexec {shlex.quote(str(program))} "$@"\n'


def populate(directory: Path, executables: Mapping[str, Path], environment_bin: Path) -> None:
    """Make ``directory`` hold ``executables`` (name -> program): ``exec`` scripts for the programs
    in ``environment_bin`` (the Python environment's), links to the others; anything else there
    is removed."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in set(os.listdir(directory)) - set(executables):
        (directory / stale).unlink(missing_ok=True)
    for name, program in executables.items():
        path = directory / name
        staged = directory / f".{name}.new"
        staged.unlink(missing_ok=True)
        if program.parent == environment_bin:
            staged.write_text(wrapper(program))
            staged.chmod(0o755)
        else:
            staged.symlink_to(program)
        os.replace(staged, path)
