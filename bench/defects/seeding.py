"""Seeded defects: the catalog, the staleness check and the patch, shared by the hook and the runner.

A defect (``catalog.yaml``) replaces one function of the stack, ``target`` (``module:qualname``),
with what a factory of this directory builds from the original (``replacement``,
``seeded_<component>:<factory>``). It is applied by :mod:`sitecustomize` at interpreter start in the
processes whose program (the console script, ``sys.argv[0]``'s base name) hosts its component,
before the program imports anything, so even ``from module import name`` sees the replacement.
Nothing of the product is edited and no product module knows about defects.

A defect is *stale* when its target no longer exists or the target's source no longer hashes to
``sha256`` (the first :data:`HASH_CHARS` hex digits of the SHA-256 of ``inspect.getsource``): the
defect was written against code that has changed, and applying it could test nothing. A stale
defect is never applied silently: the process prints why on stderr, records it in the defect log and
exits with :data:`STALE_EXIT`; ``bench/defects.py`` checks the same before it runs and reports
"defect stale".

Standard library and PyYAML only: it runs inside every process of the stack.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CATALOG = HERE / "catalog.yaml"
#: the environment of a defect run: which defect, and the file each process records its outcome in
ENV_DEFECT = "NROP_DEFECT"
ENV_LOG = "NROP_DEFECT_LOG"
#: exit code of a process whose defect is stale or unknown
STALE_EXIT = 3
HASH_CHARS = 12
#: the programs that run containers: there, every defect run also wraps the runtime (``runtime`` in the catalog)
RUNTIME_PROGRAMS = ("nrop-cluster",)
#: the product's package: the modules where other names of a replaced function are rebound
PRODUCT_PACKAGE = "nrop."


class StaleDefectError(Exception):
    """The defect cannot be applied as written (unknown id, target gone, target's source changed)."""


@dataclass(frozen=True)
class Component:
    name: str
    #: the console scripts whose processes host the component
    programs: tuple[str, ...]
    #: strings whose presence in a failure text points at the component
    pointers: tuple[str, ...]


@dataclass(frozen=True)
class Defect:
    id: str
    component: str
    description: str
    source: str
    target: str  # module:qualname
    sha256: str
    replacement: str  # module of this directory:factory


@dataclass(frozen=True)
class Catalog:
    components: Mapping[str, Component]
    defects: tuple[Defect, ...]
    #: not a defect: how a defect run reaches the containers (:mod:`seeded_runtime`), checked the same way
    runtime: Defect

    def defect(self, defect_id: str) -> Defect:
        for defect in self.defects:
            if defect.id == defect_id:
                return defect
        raise StaleDefectError(f"unknown defect {defect_id!r} (not in {CATALOG.name})")


def parse_catalog(data: Mapping[str, Any]) -> Catalog:
    """The catalog from its YAML document; ``ValueError`` on a defect naming an unknown component."""
    components = {
        name: Component(name, tuple(c["programs"]), tuple(c["pointers"]))
        for name, c in data["components"].items()
    }
    defects = tuple(Defect(**d) for d in data["defects"])
    for defect in defects:
        if defect.component not in components:
            raise ValueError(f"defect {defect.id}: unknown component {defect.component!r}")
    ids = [d.id for d in defects]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate defect ids: {', '.join(duplicates)}")
    return Catalog(components, defects, Defect(id="runtime", component="", **data["runtime"]))


def load_catalog(path: Path = CATALOG) -> Catalog:
    return parse_catalog(yaml.safe_load(path.read_text(encoding="utf-8")))


def source_hash(obj: Any) -> str:
    """The first :data:`HASH_CHARS` hex digits of the SHA-256 of ``obj``'s source."""
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:HASH_CHARS]


def resolve(target: str) -> tuple[Any, str, Any]:
    """``(owner, attribute, original)`` of ``module:qualname``; :class:`StaleDefectError` if it is gone."""
    module_name, _, qualname = target.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise StaleDefectError(f"target module {module_name} cannot be imported: {exc}") from None
    *path, attribute = qualname.split(".")
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            raise StaleDefectError(f"target {target} no longer exists ({part} is gone)")
    original = inspect.getattr_static(owner, attribute, None)
    if original is None or not callable(original):
        raise StaleDefectError(f"target {target} no longer exists")
    return owner, attribute, original


def check(defect: Defect) -> Any:
    """The original function of ``defect``, after checking that it is as the defect was written against."""
    _, _, original = resolve(defect.target)
    found = source_hash(original)
    if found != defect.sha256:
        raise StaleDefectError(
            f"target {defect.target} changed since defect {defect.id} was written "
            f"(source hash {found}, defect written against {defect.sha256}): review the defect, then update its sha256"
        )
    return original


def _factory(replacement: str) -> Callable[[Any], Any]:
    module_name, _, name = replacement.partition(":")
    return getattr(importlib.import_module(module_name), name)


def apply(defect: Defect) -> list[str]:
    """Replace the defect's target with its replacement, built from the original; returns the
    other names rebound.

    A module-level function may already be bound under other names when the defect is applied:
    importing the target's module runs its package's ``__init__``, which may import a module that
    did ``from target_module import function``. Every such name in the product's loaded modules
    is rebound too, so the defect reaches each caller (else it would be recorded as applied and
    have no effect there).
    """
    original = check(defect)
    owner, attribute, _ = resolve(defect.target)
    replacement = _factory(defect.replacement)(original)
    setattr(owner, attribute, replacement)
    if not inspect.ismodule(owner):
        return []
    rebound = []
    for module_name, module in list(sys.modules.items()):
        if module is owner or module is None or not module_name.startswith(PRODUCT_PACKAGE):
            continue
        for name, value in list(vars(module).items()):
            if value is original:
                setattr(module, name, replacement)
                rebound.append(f"{module_name}.{name}")
    return rebound


def hosts(catalog: Catalog, defect: Defect, program: str) -> bool:
    """Whether a process running ``program`` hosts the defect's component."""
    return program in catalog.components[defect.component].programs


def record(environ: Mapping[str, str], outcome: str, program: str, detail: str = "") -> None:
    """One JSON line in the defect log (when the run names one): what happened in this process."""
    path = environ.get(ENV_LOG)
    if not path:
        return
    line = {"defect": environ.get(ENV_DEFECT, ""), "outcome": outcome, "program": program, "pid": os.getpid()}
    if detail:
        line["detail"] = detail
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def read_log(path: Path) -> list[dict[str, Any]]:
    """The lines of a defect log ([] when no process wrote one)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def program_of(argv: Sequence[str]) -> str:
    return os.path.basename(argv[0]) if argv else ""
