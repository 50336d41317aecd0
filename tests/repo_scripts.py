"""Loads a repository script (``tools/*.py``, ``tools/presets/*.py``) as a module, for the tests of its functions
(the benchmarks are a package: their tests import ``benchmarks.NAME``)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_script(relative_path):
    """The module of the script at ``relative_path`` from the repository root, executed once per call.

    As when Python runs a script, the script's folder comes first on ``sys.path`` while it executes, so it
    imports the modules beside it (``tools/docs_figures.py`` imports ``tools/figures/``); those stay in
    ``sys.modules`` afterwards.
    """
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module
