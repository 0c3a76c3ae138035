"""Which containers run as real processes, and what they execute.

Owns the mapping "image + command -> a real entry point of this distribution, or the
simulator" that the emulated container runtime applies to every container:

* a container whose image matches one of the **own-image patterns** (shell-style
  ``fnmatch`` patterns, tried on the image as written and as containerd normalises it;
  default :data:`DEFAULT_OWN_IMAGES`, ``*numaresources-operator-tests*``) is the project's
  own image: it runs as a process; its ``command[0]`` (any directory part is ignored:
  ``/usr/bin/resource-topology-exporter`` is ``resource-topology-exporter``) must be a
  console script of this distribution (``nrop-cluster``, ``resource-topology-exporter``,
  ``numainfo-exporter``, ``nrop-scheduler``, ...) or ``python`` / ``python3``;
* a container of an image of :data:`.knownimages.KNOWN_IMAGES` whose programs run as
  processes (upstream's numacell, exporter and scheduler images) runs as a process too: its
  command (or the image's entrypoint, :func:`.knownimages.container_argv`) names one of the
  image's executables, which is the console script the table maps it to;
* both also have what their base image brings that the suite execs
  (:data:`.knownimages.BASE_TOOLS`: ``sh``, the machine's ``/bin/sh``, and ``curl``, the
  project's ``nrop-curl``), except images known to have none (distroless);
* the program is resolved in the bin directory of the Python environment the cluster runs
  in (an absolute path in the table is a program of the machine); ``args`` follow. Anything
  else in such an image fails to start like a missing executable does on a real node
  (``StartError``, exit code 128) with a message listing what the image has;
* every other image is simulated (:mod:`.simulation`).

:func:`image_executables` lists what a ``PATH`` lookup in a container of the image finds (the
kubelet puts them in a directory of the container that starts its ``PATH``), so ``sh -c
"curl ..."`` runs the image's programs as an exec of them does.

Pure: the configuration (patterns, bin directory, script names, image table) is passed in;
:func:`RuntimeConfig.for_this_environment` is where it is read from the installation.
"""

from __future__ import annotations

import fnmatch
import posixpath
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from nrop.localcluster.kubelet.decisions.podruntime import normalize_image
from nrop.localcluster.kubelet.knownimages import BASE_TOOLS, KNOWN_IMAGES, KnownImage, known_image

__all__ = [
    "DEFAULT_OWN_IMAGES",
    "DISTRIBUTION",
    "INTERPRETERS",
    "EntryPoint",
    "NotAnEntryPoint",
    "RuntimeConfig",
    "entry_point",
    "image_executables",
    "image_programs",
    "is_own_image",
    "program_path",
]

#: The project's own image, by default: any registry, any tag.
DEFAULT_OWN_IMAGES: tuple[str, ...] = ("*numaresources-operator-tests*",)
DISTRIBUTION = "numaresources-operator-tests"
#: Interpreters of the environment a command may name besides the console scripts.
INTERPRETERS: frozenset[str] = frozenset({"python", "python3"})


@dataclass(frozen=True)
class RuntimeConfig:
    """How the emulated container runtime decides and starts real processes."""

    own_images: tuple[str, ...] = DEFAULT_OWN_IMAGES
    #: Where console scripts and the interpreter live (the venv's ``bin``).
    bin_dir: Path = Path(sys.executable).parent
    #: The console scripts of the distribution.
    scripts: frozenset[str] = frozenset()
    #: The other images the runtime knows (:mod:`.knownimages`).
    images: tuple[KnownImage, ...] = KNOWN_IMAGES

    @classmethod
    def for_this_environment(cls, own_images: Sequence[str] = DEFAULT_OWN_IMAGES) -> RuntimeConfig:
        """Patterns as given; scripts from the installed distribution's ``console_scripts``."""
        try:
            dist = metadata.distribution(DISTRIBUTION)
            scripts = frozenset(ep.name for ep in dist.entry_points if ep.group == "console_scripts")
        except metadata.PackageNotFoundError:
            scripts = frozenset()
        return cls(own_images=tuple(own_images), bin_dir=Path(sys.executable).parent, scripts=scripts)


@dataclass(frozen=True)
class EntryPoint:
    """What a process container executes: the resolved program and its arguments."""

    argv: tuple[str, ...]
    #: The console script (or interpreter) it runs.
    program: str


@dataclass(frozen=True)
class NotAnEntryPoint:
    """A process container whose command the image does not have (fails with ``StartError``)."""

    message: str


def is_own_image(image: str, patterns: Iterable[str]) -> bool:
    """Whether ``image`` (as written, or as containerd normalises it) matches an own-image pattern."""
    if not image:
        return False
    candidates = (image, normalize_image(image))
    return any(fnmatch.fnmatchcase(c, p) for p in patterns for c in candidates)


def image_programs(image: str, config: RuntimeConfig) -> Mapping[str, str] | None:
    """What runs as a process in ``image`` (executable base name -> program in the bin directory,
    or an absolute path on the machine), or ``None`` when its containers are simulated."""
    if is_own_image(image, config.own_images):
        return {**BASE_TOOLS, **{name: name for name in config.scripts | INTERPRETERS}}
    known = known_image(image, config.images)
    if known is not None and known.runs_processes:
        return known.executables
    return None


def program_path(program: str, config: RuntimeConfig) -> Path:
    """Where a program of :func:`image_programs` is: the machine's when absolute, else the environment's."""
    return Path(program) if posixpath.isabs(program) else config.bin_dir / program


def image_executables(image: str, config: RuntimeConfig) -> Mapping[str, Path] | None:
    """What a ``PATH`` lookup in a container of ``image`` finds (name -> program), or ``None``
    when its containers are simulated."""
    programs = image_programs(image, config)
    if programs is None:
        return None
    return {name: program_path(program, config) for name, program in programs.items()}


def entry_point(
    image: str, command: Sequence[str], args: Sequence[str], config: RuntimeConfig
) -> EntryPoint | NotAnEntryPoint:
    """Resolve the (already expanded) ``command`` and ``args`` of a container of ``image``, an
    image that runs processes (:func:`image_programs`)."""
    programs = image_programs(image, config) or {}
    available = ", ".join(sorted(programs))
    if not command:
        return NotAnEntryPoint(
            f"the image has no default entrypoint in the emulated runtime: set command to one of {available}"
        )
    program = programs.get(posixpath.basename(command[0]))
    if program is None:
        return NotAnEntryPoint(
            f'exec: "{command[0]}": executable file not found in $PATH (the image provides {available})'
        )
    return EntryPoint((str(program_path(program, config)), *command[1:], *args), program)
