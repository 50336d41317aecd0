"""Model cards render every registry field a user needs, and the docs pages and README carry the current ones."""

import os
import re

import pytest

from keras_capsules import applications, presets
from keras_capsules.presets import cards

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_card_of_a_registered_preset():
    preset = presets.Preset(
        model="EffCapsNet", name="card-test", dataset="mnist", kwargs={"variant": "mnist"}, file="none.npz", sha256="ab" * 32,
        test_accuracy=0.99612, test_examples=10000, subset_accuracy=0.998, subset={"dataset": "mnist_sample", "split": "test", "limit": 1000},
        parameters=1573744, recipe=("EffCapsNet", "mnist", "default"), command="keras-capsules train EffCapsNet --dataset mnist --epochs 50",
        epochs=50, train_seconds=7200.0, hardware="AMD EPYC, 2 CPU cores", library_version="0.1.0", date="2026-11-23",
        notes="Shortened schedule.", metrics={"routing_entropy": 2.6},
    )
    presets.register_preset(preset)
    try:
        card = presets.model_card("EffCapsNet", "card-test")
    finally:
        presets.unregister_preset("EffCapsNet", "card-test")
    assert "**99.61 %** on the full mnist test set (10,000 images)" in card
    assert "99.80 % on the first 1,000 images of `mnist_sample` / `test`" in card
    assert "1,573,744" in card and "50 epochs, 2.0 h on AMD EPYC, 2 CPU cores" in card
    assert "`keras-capsules train EffCapsNet --dataset mnist --epochs 50`" in card
    assert "| routing entropy | 2.6 |" in card and card.rstrip().endswith("Shortened schedule.")


@pytest.mark.parametrize("model", ["AgreementGLOM", "CapsNet", "EffCapsNet", "FMCapsNet"])
def test_docs_pages_carry_the_current_cards(model):
    module = getattr(applications, model).__module__.rsplit(".", 1)[-1]
    page = open(os.path.join(ROOT, "docs", "applications", f"{module}.md")).read()
    assert cards.docs_section(model) in page, f"run python benchmarks/presets/write_cards.py to refresh docs/applications/{module}.md"


def test_readme_table_is_current():
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert cards.presets_table() in readme, "run python benchmarks/presets/write_cards.py to refresh README.md"
    for key in presets.available():
        model, name = key.split("/", 1)
        assert re.search(rf"`{model}\(weights=\\\"{re.escape(name)}\\\"\)`", readme) or f'`{model}(weights="{name}")`' in readme
