"""Loading the benchmarks under test: ``bench/`` is a directory of scripts, not a package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def load(name: str, path: Path) -> ModuleType:
    """The module at ``path`` under ``name`` (registered once, so dataclasses and pickles find it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module
