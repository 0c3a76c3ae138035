"""Tests of hack/publicinterfaces.py: the public-interface rule, its import reading, and both runners.

The rule and the readers are table-tested; the import-linter contract runs through the real
``lint-imports`` on a small project in a temporary folder, the script through its ``main``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("hack.publicinterfaces", ROOT / "hack" / "publicinterfaces.py")
assert _SPEC is not None and _SPEC.loader is not None
pi = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = pi
_SPEC.loader.exec_module(pi)

ImportRecord = pi.ImportRecord
Package = pi.Package


def pkg(name: str, exports: list[str] | None, *, modules: tuple[str, ...] = (), bound: tuple[str, ...] = ()):
    return Package(
        name=name,
        init=name.replace(".", "/") + "/__init__.py",
        exports=None if exports is None else frozenset(exports),
        all_line=0 if exports is None else 3,
        submodules=frozenset(modules),
        bound=frozenset(bound),
    )


PACKAGES = {
    p.name: p
    for p in (
        pkg("nrop.api", ["quantity", "grpc"]),
        pkg("nrop.api.grpc", ["podresources"]),
        pkg("nrop.api.grpc.podresources", []),
        pkg("nrop.sched", None),
        pkg("nrop.localcluster", ["kubelet"]),
        pkg("nrop.localcluster.kubelet", ["cm"]),
        pkg("nrop.localcluster.kubelet.cm", ["TopologyHint", "cpumanager"]),
    )
}


def rec(position: str, target: str, *, subtree: bool = False, line: int = 1) -> ImportRecord:
    return ImportRecord(position=position, path="x.py", line=line, target=target, subtree=subtree)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        # from outside every package
        (rec("tests/e2e/t.py", "nrop.api.quantity.Quantity"), []),
        (rec("tests/e2e/t.py", "nrop.api.images"), [("nrop.api", "images")]),
        (rec("tests/e2e/t.py", "nrop.api"), []),
        (rec("tests/e2e/t.py", "nrop.sched.framework"), [("nrop.sched", "framework")]),
        (rec("tests/e2e/t.py", "nrop.localcluster.kubelet.cm.TopologyHint"), []),
        (
            rec("tests/e2e/t.py", "nrop.localcluster.kubelet.cm.hints"),
            [("nrop.localcluster.kubelet.cm", "hints")],
        ),
        (
            rec("tests/e2e/t.py", "nrop.api.grpc.podresources.v1.api_pb2"),
            [("nrop.api.grpc.podresources", "v1")],
        ),
        (
            rec("tests/e2e/t.py", "nrop.localcluster.kubelet.fleet.Fleet"),
            [("nrop.localcluster.kubelet", "fleet")],
        ),
        # every package between the importer and the target is checked, outermost first
        (
            rec("tests/e2e/t.py", "nrop.localcluster.apiserver.store"),
            [("nrop.localcluster", "apiserver")],
        ),
        (rec("tests/e2e/t.py", "os.path"), []),
        # inside a package: its own modules are free, its subpackages are not
        (rec("nrop.sched.main", "nrop.sched.framework"), []),
        (rec("nrop.sched", "nrop.sched.framework"), []),
        (
            rec("nrop.localcluster.cluster", "nrop.localcluster.kubelet.machine"),
            [("nrop.localcluster.kubelet", "machine")],
        ),
        (
            rec("nrop.localcluster.kubelet.kubelet", "nrop.localcluster.kubelet.cm.hints"),
            [("nrop.localcluster.kubelet.cm", "hints")],
        ),
        (rec("nrop.localcluster.kubelet.cm.cpumanager", "nrop.localcluster.kubelet.cm.hints"), []),
        # a name that only starts like a package is not inside it
        (rec("nrop.apiextra.x", "nrop.api.images"), [("nrop.api", "images")]),
        # a package's unit tests stand in its whole subtree, and outside the others
        (rec("nrop.localcluster.kubelet", "nrop.localcluster.kubelet.cm.hints", subtree=True), []),
        (rec("nrop.localcluster.kubelet", "nrop.api.images", subtree=True), [("nrop.api", "images")]),
        (
            rec("nrop.localcluster.kubelet", "nrop.localcluster.kubelet.cm.hints"),
            [("nrop.localcluster.kubelet.cm", "hints")],
        ),
    ],
)
def test_violations(record: ImportRecord, expected: list[tuple[str, str]]) -> None:
    found = pi.violations([record], PACKAGES)
    assert [(v.package.name, v.name) for v in found] == expected


def test_one_line_is_reported_once_per_private_name() -> None:
    records = [rec("t.py", "nrop.sched.framework.Pod"), rec("t.py", "nrop.sched.framework.Node")]
    assert len(pi.violations(records, PACKAGES)) == 1
    assert len(pi.violations([*records, rec("t.py", "nrop.sched.framework.Pod", line=2)], PACKAGES)) == 2


def test_violation_names_importer_target_and_package() -> None:
    record = ImportRecord("tests/e2e/t.py", "tests/e2e/t.py", 12, "nrop.api.images.PAUSE_IMAGE")
    (missing,) = pi.violations([record], PACKAGES)
    assert str(missing) == (
        "tests/e2e/t.py:12: nrop.api.images is private to nrop.api (not in __all__ of nrop/api/__init__.py:3)"
    )
    (no_all,) = pi.violations([record.__class__("t", "t.py", 4, "nrop.sched.queue")], PACKAGES)
    assert (
        str(no_all)
        == "t.py:4: nrop.sched.queue is private to nrop.sched (nrop/sched/__init__.py has no __all__)"
    )


@pytest.mark.parametrize(
    ("source", "module", "path", "expected"),
    [
        ("import a.b.c\n", "", "t.py", [(1, "a.b.c")]),
        ("import a.b as x, os\n", "", "t.py", [(1, "a.b"), (1, "os")]),
        ("from a.b import (\n    c,\n    d as e,\n)\n", "", "t.py", [(1, "a.b.c"), (1, "a.b.d")]),
        ("from a.b import *\n", "", "t.py", [(1, "a.b")]),
        ("from . import x\n", "p.q.m", "p/q/m.py", [(1, "p.q.x")]),
        ("from .sib import z\n", "p.q.m", "p/q/m.py", [(1, "p.q.sib.z")]),
        ("from .. import y\n", "p.q.m", "p/q/m.py", [(1, "p.y")]),
        ("from .mod import n\n", "p.q", "p/q/__init__.py", [(1, "p.q.mod.n")]),
        ("from ..r import n\n", "p.q", "p/q/__init__.py", [(1, "p.r.n")]),
        # relative imports of files outside the packages, or above the top, cannot be resolved
        ("from . import x\n", "", "t.py", []),
        ("from ... import x\n", "p.m", "p/m.py", []),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a.t\n\ndef f():\n    from a import g\n",
            "",
            "t.py",
            [(1, "typing.TYPE_CHECKING"), (3, "a.t"), (6, "a.g")],
        ),
    ],
)
def test_imports_in(source: str, module: str, path: str, expected: list[tuple[int, str]]) -> None:
    records = pi.imports_in(source, path, module, "pos", subtree=True)
    assert sorted((r.line, r.target) for r in records) == sorted(expected)
    assert all(r.position == "pos" and r.subtree and r.path == path for r in records)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("tests/unit/localcluster/kubelet/test_cpumanager.py", "nrop.localcluster.kubelet"),
        ("tests/unit/localcluster/kubelet/cm/test_x.py", "nrop.localcluster.kubelet.cm"),
        ("tests/unit/localcluster/test_x.py", "nrop.localcluster"),
        ("tests/unit/api/test_quantity.py", "nrop.api"),
        ("tests/unit/suite/e2e/test_x.py", "nrop.suite.e2e"),
        ("tests/unit/suite/nosuchfolder/test_x.py", "nrop.suite"),
        ("tests/unit/test_public_interfaces.py", None),
        ("tests/unit/unknown/test_x.py", None),
        ("tests/e2e/test_x.py", None),
        ("serial/test_x.py", None),
    ],
)
def test_unit_tests_of(rel: str, expected: str | None) -> None:
    assert pi.unit_tests_of(Path(rel)) == expected


def test_stale_exports_are_names_the_package_does_not_have() -> None:
    package = pkg("p", ["mod", "Bound", "gone"], modules=("mod", "other"), bound=("Bound",))
    assert [(s.name, str(s)) for s in pi.stale_exports([package, pkg("q", None)])] == [
        (
            "gone",
            "p/__init__.py:3: __all__ lists 'gone', but p has no module 'gone' and its __init__ binds no such name",
        )
    ]


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_read_package(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "p/__init__.py": '''\
                """Doc."""
                from .a import A as Alias
                import os

                X: int = 1
                __all__ = ["a", "Alias", "sub"]

                def f(): ...
                ''',
            "p/a.py": "A = 1\n",
            "p/sub/__init__.py": "",
            "p/data/file.yaml": "",
        },
    )
    package = pi.read_package("p", tmp_path / "p" / "__init__.py", tmp_path)
    assert package == Package(
        name="p",
        init="p/__init__.py",
        exports=frozenset({"a", "Alias", "sub"}),
        all_line=6,
        submodules=frozenset({"a", "sub"}),
        bound=frozenset({"Alias", "os", "X", "__all__", "f"}),
    )
    assert pi.read_package("p.sub", tmp_path / "p" / "sub" / "__init__.py", tmp_path).exports is None


def test_read_package_refuses_a_computed_all(tmp_path: Path) -> None:
    write(tmp_path, {"p/__init__.py": "names = ['a']\n__all__ = sorted(names)\n"})
    with pytest.raises(
        pi.ExportsError, match=r"^p/__init__.py:2: __all__ must be a literal list of strings$"
    ):
        pi.read_package("p", tmp_path / "p" / "__init__.py", tmp_path)


PROJECT = {
    "pyproject.toml": """\
        [tool.importlinter]
        root_packages = ["ifacelib", "ifaceapp"]
        contract_types = ["public: hack.publicinterfaces.PublicInterfacesContract"]

        [[tool.importlinter.contracts]]
        name = "Public interfaces"
        type = "public"
        """,
    "ifacelib/__init__.py": '__all__ = ["api"]\n',
    "ifacelib/api.py": "def run(): ...\n",
    "ifacelib/internal.py": "def helper(): ...\n",
    "ifaceapp/__init__.py": "",
    "ifaceapp/main.py": "from ifacelib import api\nfrom ifacelib.internal import helper\n",
    "tests/unit/test_x.py": "import ifacelib.api\n\nfrom ifacelib import internal\n",
}


def test_contract_through_lint_imports(tmp_path: Path) -> None:
    write(tmp_path, PROJECT)
    # lint-imports finds contract types on its working directory (ROOT itself cannot go on the path:
    # its operator/ folder would shadow the standard library's operator module).
    (tmp_path / "hack").symlink_to(ROOT / "hack")
    lint = Path(sys.executable).parent / "lint-imports"

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(lint), "--no-cache"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    done = run()
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "ifaceapp/main.py:2: ifacelib.internal is private to ifacelib (not in __all__ of ifacelib/__init__.py:1)"
        in done.stdout
    )
    assert "ifaceapp/main.py:1" not in done.stdout
    assert "Traceback" not in done.stdout + done.stderr

    write(tmp_path, {"ifacelib/__init__.py": '__all__ = ["api", "internal", "gone"]\n'})
    done = run()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ifacelib/__init__.py:1: __all__ lists 'gone', but ifacelib has no module 'gone'" in done.stdout
    assert "ifaceapp/main.py" not in done.stdout


def test_script_checks_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    write(tmp_path, PROJECT)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pi.main(["tests"], root=tmp_path) == 1
    err = capsys.readouterr().err
    assert (
        "tests/unit/test_x.py:3: ifacelib.internal is private to ifacelib (not in __all__ of ifacelib/__init__.py:1)"
        in err
    )
    assert "test_x.py:1" not in err

    write(tmp_path, {"ifacelib/__init__.py": '__all__ = ["api", "internal"]\n'})
    assert pi.main(["tests"], root=tmp_path) == 0
    assert capsys.readouterr().err == ""

    write(tmp_path, {"ifacelib/__init__.py": "__all__ = list('ab')\n"})
    assert pi.main(["tests"], root=tmp_path) == 2
    assert capsys.readouterr().err == "ifacelib/__init__.py:1: __all__ must be a literal list of strings\n"
