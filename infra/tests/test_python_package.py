"""The project's Python is one package, imported by name: no search-path edits anywhere,
every module of iopipe/ imports, and none of them imports test code."""
import ast
import importlib
import subprocess
import sys

import pytest

from iopipe.paths import REPO

PACKAGE = REPO / "iopipe"
MODULES = sorted(".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                 for path in PACKAGE.rglob("*.py"))
TEST_FOLDERS = ("integration-tests", "testkit", "schema/tests", "dashboards/tests", "infra/tests", "infra/vector/tests")


def tracked_python():
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / name for name in listed.stdout.split()]


def test_no_python_file_edits_the_module_search_path():
    path_edits = ("sys." + "path", "PYTHON" + "PATH")  # spelled apart, or this file would find itself
    edits = [f"{path.relative_to(REPO)}:{n}" for path in tracked_python()
             for n, line in enumerate(path.read_text().splitlines(), 1) if any(e in line for e in path_edits)]
    assert not edits, "import by name from the package (python3 -m iopipe.X) instead of editing the path: " + ", ".join(edits)


def test_test_code_is_not_in_the_package():
    test_modules = {path.stem for folder in TEST_FOLDERS for path in (REPO / folder).glob("*.py")} | {"testkit", "pytest"}
    imports = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            imports += [(path.relative_to(REPO), name) for name in names if name.split(".")[0] in test_modules]
    assert not imports, f"the product imports test code: {imports}"


@pytest.mark.parametrize("module", MODULES)
def test_every_module_imports(module):
    importlib.import_module(module)


def test_the_package_runs_from_the_root_without_installing():
    run = subprocess.run([sys.executable, "-m", "iopipe.cookbook", "tickets", "resolved_hours=24"], cwd=REPO,
                         capture_output=True, text=True)
    assert run.returncode == 0 and "iopipe.health" in run.stdout, run.stderr
