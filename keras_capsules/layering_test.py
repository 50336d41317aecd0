"""The package's layering: lower packages never import higher ones, not even inside functions."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).parent
#: (importing package or module, packages it must not import).
FORBIDDEN = [
    ("ops", ("layers", "routing", "applications", "interpret", "training", "metrics", "losses")),
    ("routing", ("layers", "applications", "interpret", "training")),
    ("layers", ("applications", "interpret", "training", "metrics")),
    ("metrics.py", ("interpret", "training", "applications")),
    ("interpret", ("training",)),
    ("evaluation", ("interpret", "recipes", "tuning", "export", "cli")),
]


def _imports(path):
    """Every ``keras_capsules.<package>`` a module imports, module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("keras_capsules."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "keras_capsules":
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[1] for alias in node.names if alias.name.startswith("keras_capsules."))
    return found


@pytest.mark.parametrize("source, banned", FORBIDDEN, ids=[source for source, _ in FORBIDDEN])
def test_lower_layers_do_not_import_higher_ones(source, banned):
    path = ROOT / source
    modules = [path] if path.is_file() else [p for p in path.rglob("*.py") if not p.name.endswith("_test.py")]
    offenders = sorted(f"{module.relative_to(ROOT)} imports {name}" for module in modules for name in _imports(module) & set(banned))
    assert not offenders, offenders


def test_only_the_command_line_imports_evaluation():
    modules = [p for p in ROOT.rglob("*.py") if not p.name.endswith("_test.py") and "evaluation" not in p.relative_to(ROOT).parts]
    importers = sorted(str(m.relative_to(ROOT)) for m in modules if "evaluation" in _imports(m) and not m.name.startswith("cli"))
    assert not importers, importers


def test_the_checker_sees_lazy_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from keras_capsules.layers.conv_caps import patch_indices\n    import keras_capsules.training.train\n")
    assert _imports(module) == {"layers", "training"}
