"""Loads a repository script (``tools/*.py``, ``tools/presets/*.py``) as a module, for the tests of its functions
(the benchmarks are a package: their tests import ``benchmarks.NAME``)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_script(relative_path):
    """The module of the script at ``relative_path`` from the repository root, executed once per call."""
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
