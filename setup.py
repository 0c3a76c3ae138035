"""Map each top-level folder to the subpackage ``nrop.<folder>``.

``operator`` is a standard-library module name, so nothing is importable as a
bare top-level name; this keeps editable and normal installs identical.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
FOLDERS = ["api", "localcluster", "rte", "sched", "operator", "numacell", "curl", "suite"]

package_dir: dict[str, str] = {}
packages: list[str] = []
for folder in FOLDERS:
    if not (HERE / folder / "__init__.py").exists():
        continue
    top = f"nrop.{folder}"
    package_dir[top] = folder
    packages.append(top)
    packages.extend(f"{top}.{sub}" for sub in find_packages(where=folder))

setup(
    package_dir=package_dir,
    packages=packages,
    package_data={
        pkg: ["*.yaml", "*.json", "*.proto", "**/*.yaml", "**/*.json", "**/*.proto"] for pkg in packages
    },
    include_package_data=True,
)
