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
    # What LOBSTER prunes (kernels of the capsule layers): below metrics (sparsity), interpret and training, which read it.
    ("pruning_scope.py", ("metrics", "interpret", "training", "applications")),
    ("interpret", ("training",)),
    ("evaluation", ("interpret", "recipes", "tuning", "export", "cli")),
    # Model files sit below the applications; export knows a model through Keras only.
    (
        "saving",
        ("applications", "presets", "recipes", "training", "evaluation", "export", "tuning", "interpret", "cli"),
    ),
    ("export", ("applications", "presets", "recipes", "training", "evaluation", "tuning", "interpret", "cli")),
    # presets < applications (constructors take `weights=` through `presets.with_presets`) < recipes < training.
    ("presets", ("applications", "training", "recipes", "tuning", "evaluation", "export", "interpret", "cli")),
    ("applications", ("training", "recipes", "tuning", "evaluation", "export", "interpret", "cli")),
    ("recipes", ("training", "tuning", "evaluation", "export", "interpret", "cli")),
]
#: Where the private Keras and TensorFlow APIs (``keras.src``, ``tensorflow.python``) may be imported: one small module.
PRIVATE_API_MODULE = "export/_private_api.py"


def _imports(path, lazy_only=False):
    """Every ``keras_capsules.<package>`` a module imports, module level or inside functions (``lazy_only``: inside functions only).

    A top-level module counts as a package of its own (``losses``).
    """
    tree = ast.parse(path.read_text())
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found = set()
    for node in {inner for function in functions for inner in ast.walk(function)} if lazy_only else ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("keras_capsules."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "keras_capsules":
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[1] for alias in node.names if alias.name.startswith("keras_capsules."))
    return found


def _modules():
    return [p for p in ROOT.rglob("*.py") if not p.name.endswith("_test.py")]


def _package(module):
    """The package ``module`` belongs to (a top-level module is one of its own)."""
    parts = module.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else module.stem


def _private_imports(path):
    """The private Keras and TensorFlow modules (``keras.src...``, ``tensorflow.python...``) ``path`` imports."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [
        name for name in names if any(name == p or name.startswith(p + ".") for p in ("keras.src", "tensorflow.python"))
    ]


@pytest.mark.parametrize("source, banned", FORBIDDEN, ids=[source for source, _ in FORBIDDEN])
def test_lower_layers_do_not_import_higher_ones(source, banned):
    path = ROOT / source
    modules = [path] if path.is_file() else [p for p in _modules() if path in p.parents]
    offenders = sorted(
        f"{module.relative_to(ROOT)} imports {name}"
        for module in modules
        for name in _imports(module)
        if name in banned
    )
    assert not offenders, offenders


def test_no_lazy_import_stands_in_for_a_cycle():
    """An import inside a function never names a package that imports, directly or not, the importing one."""
    graph = {}
    for module in _modules():
        graph.setdefault(_package(module), set()).update(_imports(module))

    def reaches(start, goal):
        seen, todo = set(), [start]
        while todo:
            package = todo.pop()
            if package == goal:
                return True
            if package not in seen:
                seen.add(package)
                todo.extend(graph.get(package, ()))
        return False

    cycles = sorted(
        f"{module.relative_to(ROOT)} imports {name} inside a function, and {name} imports {_package(module)} (directly or not)"
        for module in _modules()
        for name in _imports(module, lazy_only=True) - {_package(module)}
        if reaches(name, _package(module))
    )
    assert not cycles, cycles


def test_private_keras_and_tensorflow_apis_are_imported_in_one_small_module():
    users = {
        str(module.relative_to(ROOT)): _private_imports(module) for module in _modules() if _private_imports(module)
    }
    assert list(users) == [PRIVATE_API_MODULE], users
    assert len((ROOT / PRIVATE_API_MODULE).read_text().splitlines()) <= 60


def test_only_the_command_line_imports_evaluation():
    modules = [p for p in _modules() if "evaluation" not in p.relative_to(ROOT).parts]
    importers = sorted(
        str(m.relative_to(ROOT)) for m in modules if "evaluation" in _imports(m) and _package(m) != "cli"
    )
    assert not importers, importers


def test_the_checker_sees_lazy_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    from keras_capsules.layers.conv_caps import patch_indices\n    import keras_capsules.training.train\n"
    )
    assert _imports(module) == {"layers", "training"}
    module.write_text(
        "import keras_capsules.saving\n\ndef f():\n    from keras_capsules.cli import predict\n    from keras.src import tree\n"
    )
    assert _imports(module) == {"saving", "cli"} and _imports(module, lazy_only=True) == {"cli"}
    assert _private_imports(module) == ["keras.src.tree"]
