"""Public interfaces of packages: code outside a package imports only what its ``__init__`` exports.

The rule (issue #16): an import of ``nrop.a.b.c`` (``import nrop.a.b.c`` or ``from nrop.a.b import c``)
is checked against every package that contains its target but not the importing code. For each such
package P, the next component of the target below P (a submodule, a subpackage or a name the
``__init__`` binds) must be listed in P's ``__all__``; a package without ``__all__`` exports nothing.
Code inside P may import anything of P's own modules, but its subpackages are checked in turn. A unit
test of one package (``tests/unit/<package path>``, see :func:`unit_tests_of`) stands inside that package and
every package below it: unit tests test internals, and one folder holds the tests of a whole subtree
(``tests/unit/localcluster/kubelet`` tests ``nrop.localcluster.kubelet.cm`` too).

The rule itself is :func:`violations`, a pure function over :class:`ImportRecord`; two runners feed it:

* :class:`PublicInterfacesContract`, an import-linter contract type, checks the modules of the
  ``nrop`` packages (``lint-imports``, configured in ``pyproject.toml``);
* ``python hack/publicinterfaces.py FOLDER...`` checks the code outside them (``serial``, ``bench``,
  ``tests``), which is no package import-linter can see.

The contract also checks every ``__all__`` itself (:func:`stale_exports`): each listed name must be a
submodule of the package or bound by its ``__init__`` (ruff's F822 skips ``__init__`` files); an
``__all__`` must be a literal list of strings, assigned once.
Imports are read from the source with :mod:`ast`, nothing is imported: every import statement counts,
also inside functions and ``if TYPE_CHECKING:`` blocks. Imports by string (``importlib``, pytest
plugin names) are not seen.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from importlinter import Contract, ContractCheck, output

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ImportRecord:
    """One imported path: ``position`` is where the importing code stands (a module name, the
    package a unit test belongs to, or a file path for code outside every package); with
    ``subtree`` it stands in every package below ``position`` too (a package's unit tests)."""

    position: str
    path: str
    line: int
    target: str
    subtree: bool = False


@dataclass(frozen=True)
class Package:
    """A package's ``__all__`` (``None``: the ``__init__`` has none) and what it can export."""

    name: str
    init: str
    exports: frozenset[str] | None
    all_line: int = 0
    submodules: frozenset[str] = frozenset()
    bound: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Violation:
    """``record`` reaches ``name`` of ``package``, which the package does not export."""

    record: ImportRecord
    package: Package
    name: str

    def __str__(self) -> str:
        pkg = self.package
        where = (
            f"{pkg.init} has no __all__"
            if pkg.exports is None
            else f"not in __all__ of {pkg.init}:{pkg.all_line}"
        )
        return f"{self.record.path}:{self.record.line}: {pkg.name}.{self.name} is private to {pkg.name} ({where})"


@dataclass(frozen=True)
class StaleExport:
    """``name`` is in ``package``'s ``__all__`` but is neither a submodule nor bound by the ``__init__``."""

    package: Package
    name: str

    def __str__(self) -> str:
        pkg = self.package
        return (
            f"{pkg.init}:{pkg.all_line}: __all__ lists {self.name!r}, "
            f"but {pkg.name} has no module {self.name!r} and its __init__ binds no such name"
        )


def is_inside(position: str, package: str) -> bool:
    """Whether code standing at ``position`` is part of ``package`` (the package itself or below it)."""
    return position == package or position.startswith(package + ".")


def stands_in(record: ImportRecord, package: str) -> bool:
    """Whether the importing code of ``record`` is part of ``package``."""
    return is_inside(record.position, package) or (record.subtree and is_inside(package, record.position))


def violations(records: Iterable[ImportRecord], packages: Mapping[str, Package]) -> list[Violation]:
    """The imports that reach into a package, from outside it, for a name it does not export.

    Every package on the target's path that does not contain the importing code is checked, the
    outermost first, so one import may break several packages' interfaces; a line importing several
    names through the same private name is reported once.
    """
    found: dict[tuple[str, int, str, str], Violation] = {}
    for record in records:
        parts = record.target.split(".")
        for depth in range(1, len(parts)):
            package = packages.get(".".join(parts[:depth]))
            if package is None or stands_in(record, package.name):
                continue
            name = parts[depth]
            if package.exports is None or name not in package.exports:
                found.setdefault(
                    (record.path, record.line, package.name, name), Violation(record, package, name)
                )
    return list(found.values())


def stale_exports(packages: Iterable[Package]) -> list[StaleExport]:
    """The ``__all__`` entries that name nothing the package has."""
    return [
        StaleExport(package, name)
        for package in packages
        for name in sorted(package.exports or ())
        if name not in package.submodules and name not in package.bound
    ]


def imports_in(
    source: str, path: str, module: str, position: str, *, subtree: bool = False
) -> list[ImportRecord]:
    """Every import in ``source`` as records; ``module`` (the importer's own dotted name, ``""`` for
    files outside the packages) resolves relative imports, the other arguments are copied."""
    tree = ast.parse(source, filename=path)
    is_package = Path(path).name == "__init__.py"
    records = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            records += [ImportRecord(position, path, node.lineno, a.name, subtree) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, module, is_package)
            if base is None:
                continue
            records += [
                ImportRecord(
                    position, path, node.lineno, base if a.name == "*" else f"{base}.{a.name}", subtree
                )
                for a in node.names
            ]
    return records


def _absolute(name: str, level: int, module: str, is_package: bool) -> str | None:
    """The absolute module of ``from <level dots><name> import``, None where it cannot be resolved."""
    if level == 0:
        return name
    parts = module.split(".") if module else []
    keep = len(parts) - (level - 1 if is_package else level)
    if not parts or keep < 1:
        return None
    return ".".join([*parts[:keep], *([name] if name else [])])


def read_package(name: str, init: Path, root: Path = ROOT) -> Package:
    """The package ``name`` as its ``__init__`` file and folder say."""
    shown = _shown(init, root)
    tree = ast.parse(init.read_text(encoding="utf-8"), filename=str(init))
    exports, line = _dunder_all(tree, shown)
    folder = init.parent
    submodules = frozenset(
        entry.stem if entry.suffix == ".py" else entry.name
        for entry in folder.iterdir()
        if (entry.suffix == ".py" and entry.stem != "__init__") or (entry / "__init__.py").is_file()
    )
    return Package(
        name=name,
        init=shown,
        exports=exports,
        all_line=line,
        submodules=submodules,
        bound=frozenset(_bound_names(tree)),
    )


class ExportsError(ValueError):
    """A package the checker cannot read: not installed, or its ``__all__`` is no literal list of strings."""


def _dunder_all(tree: ast.Module, init: str) -> tuple[frozenset[str] | None, int]:
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = node.value
        if isinstance(value, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
        ):
            return frozenset(e.value for e in value.elts), node.lineno  # type: ignore[attr-defined]
        raise ExportsError(f"{init}:{node.lineno}: __all__ must be a literal list of strings")
    return None, 0


def _bound_names(tree: ast.Module) -> Iterator[str]:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                yield alias.asname or alias.name.split(".")[0]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


@dataclass(frozen=True)
class Layout:
    """The modules of the checked packages: dotted name -> source file, and the packages."""

    modules: Mapping[str, Path]
    packages: Mapping[str, Package]


def discover(roots: Iterable[str], root: Path = ROOT) -> Layout:
    """Every module and package below the installed ``roots`` (found, not imported)."""
    modules: dict[str, Path] = {}
    packages: dict[str, Package] = {}
    for top in roots:
        spec = importlib.util.find_spec(top)
        if spec is None or not spec.submodule_search_locations:
            raise ExportsError(f"{top} is not an installed package (run `make install`)")
        base = Path(next(iter(spec.submodule_search_locations)))
        for init in sorted(base.rglob("__init__.py")):
            rel = init.parent.relative_to(base).parts
            if "__pycache__" in rel:
                continue
            name = ".".join([top, *rel])
            packages[name] = read_package(name, init, root)
            modules[name] = init
            for source in sorted(init.parent.glob("*.py")):
                if source.stem != "__init__":
                    modules[f"{name}.{source.stem}"] = source
    return Layout(modules, packages)


def package_records(layout: Layout, names: Iterable[str], root: Path = ROOT) -> list[ImportRecord]:
    """The imports of the package modules ``names`` (each standing at its own name)."""
    records = []
    for name in sorted(names):
        path = layout.modules[name]
        records += imports_in(path.read_text(encoding="utf-8"), _shown(path, root), name, name)
    return records


def unit_tests_of(rel: Path, root: Path = ROOT) -> str | None:
    """The package whose unit tests the file ``rel`` (relative to the repository) is, if any.

    ``tests/unit`` mirrors the package tree: ``tests/unit/<a>/<b>/test_x.py`` tests ``nrop.<a>.<b>``,
    or the deepest package of that path the repository has (``<a>`` a top-level folder).
    """
    parts = rel.parts
    if len(parts) <= 3 or parts[:2] != ("tests", "unit"):
        return None
    folders = parts[2:-1]
    for depth in range(len(folders), 0, -1):
        if (root.joinpath(*folders[:depth]) / "__init__.py").is_file():
            return "nrop." + ".".join(folders[:depth])
    return None


def folder_records(folders: Iterable[Path], root: Path = ROOT) -> list[ImportRecord]:
    """The imports of every Python file below ``folders`` (given relative to ``root`` or absolute)."""
    records = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root)
            package = unit_tests_of(rel)
            source = path.read_text(encoding="utf-8")
            records += imports_in(
                source, rel.as_posix(), "", package or rel.as_posix(), subtree=package is not None
            )
    return records


def _checked_roots(session_options: Mapping[str, object]) -> list[str]:
    roots = session_options.get("root_packages") or [session_options.get("root_package")]
    return [str(r) for r in roots if r]  # type: ignore[union-attr]


class PublicInterfacesContract(Contract):
    """Modules of the root packages import other packages only through their ``__all__`` (no options)."""

    def check(self, graph, verbose: bool) -> ContractCheck:
        root = Path.cwd()  # lint-imports runs where its configuration is: paths are shown from there
        layout = discover(_checked_roots(self.session_options), root)
        names = [m for m in graph.modules if m in layout.modules]
        problems = [str(p) for p in stale_exports(layout.packages.values())]
        problems += [str(v) for v in violations(package_records(layout, names, root), layout.packages)]
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for problem in check.metadata["problems"]:
            output.print_error(problem, bold=False)
        output.new_line()
        output.print_error(_GUIDANCE, bold=False)


_GUIDANCE = (
    "Import the name through a route the package exports, or add it to that package's __all__ "
    "if other packages may use it (hack/publicinterfaces.py)."
)


def main(argv: list[str], root: Path = ROOT) -> int:
    """Check the files below the folders in ``argv`` against the root packages of import-linter's
    configuration in ``root/pyproject.toml``; 1 when an import breaks the rule, 2 on a bad ``__all__``."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    try:
        layout = discover(_checked_roots(config["tool"]["importlinter"]), root)
    except ExportsError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    problems = [str(v) for v in violations(folder_records((Path(a) for a in argv), root), layout.packages)]
    for problem in problems:
        sys.stderr.write(f"{problem}\n")
    if problems:
        sys.stderr.write(f"{_GUIDANCE}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
