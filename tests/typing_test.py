"""mypy on the modules of the typed public API (``[tool.mypy]`` in pyproject.toml): the constructors of
``applications``, every public layer's ``__init__``, ``datasets.load``, ``training.train`` and ``presets``."""

import importlib
import inspect
import os
import subprocess
import sys

import pytest

from keras_capsules.testing.tiers import large

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.xdist_group("packaging")

TYPED_MODULES = [
    "keras_capsules/applications/agreement_glom.py",
    "keras_capsules/applications/builder.py",
    "keras_capsules/applications/capsnet.py",
    "keras_capsules/applications/classifier.py",
    "keras_capsules/applications/consensus_capsnet.py",
    "keras_capsules/applications/eff_capsnet.py",
    "keras_capsules/applications/eff_conv_capsnet.py",
    "keras_capsules/applications/fm_capsnet.py",
    "keras_capsules/applications/inverted_attention_capsnet.py",
    "keras_capsules/applications/io.py",
    "keras_capsules/applications/matrix_capsnet.py",
    "keras_capsules/applications/registry.py",
    "keras_capsules/datasets/loaders.py",
    "keras_capsules/hashing.py",
    "keras_capsules/layers/concurrent_routing.py",
    "keras_capsules/layers/conv_caps.py",
    "keras_capsules/layers/conv_decoders.py",
    "keras_capsules/layers/decoder.py",
    "keras_capsules/layers/fc_caps.py",
    "keras_capsules/layers/glom/column_mlp.py",
    "keras_capsules/layers/glom/columns.py",
    "keras_capsules/layers/glom/consensus_attention.py",
    "keras_capsules/layers/glom/contrastive_agreement.py",
    "keras_capsules/layers/glom/heads.py",
    "keras_capsules/layers/glom/tokenizer.py",
    "keras_capsules/layers/glom/window_head.py",
    "keras_capsules/layers/heads.py",
    "keras_capsules/layers/initializers.py",
    "keras_capsules/layers/primary_caps.py",
    "keras_capsules/layers/vector_routing.py",
    "keras_capsules/layers/votes.py",
    "keras_capsules/presets/cards.py",
    "keras_capsules/presets/constructor.py",
    "keras_capsules/presets/models.py",
    "keras_capsules/presets/predictions.py",
    "keras_capsules/presets/registry.py",
    "keras_capsules/presets/weights_file.py",
    "keras_capsules/training/train.py",
]


@large
def test_public_api_type_checks(tmp_path):
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache"), *TYPED_MODULES]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, f"mypy found problems in the typed public API:\n{result.stdout}{result.stderr}"


def test_public_signatures_carry_hints():
    """Every argument of the typed public API (``self`` and ``**kwargs`` aside) and its return carry a hint."""
    from keras_capsules import applications, datasets, layers, presets

    train = importlib.import_module("keras_capsules.training.train").train
    functions = {"datasets.load": datasets.load, "training.train": train}
    for package in (applications, layers, presets):
        for name in package.__all__:
            value = getattr(package, name)
            if inspect.isclass(value) and "__init__" in vars(value):
                functions[f"{package.__name__}.{name}.__init__"] = value.__init__
            elif inspect.isfunction(value):
                functions[f"{package.__name__}.{name}"] = value
    missing = []
    for where, function in functions.items():
        signature = inspect.signature(inspect.unwrap(function))
        for parameter in signature.parameters.values():
            if parameter.name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            if parameter.annotation is inspect.Parameter.empty:
                missing.append(f"{where}({parameter.name})")
        if signature.return_annotation is inspect.Signature.empty:
            missing.append(f"{where} -> ?")
    assert not missing, f"public functions without type hints: {missing}"
