"""Model cards render every registry field a user needs, and the docs pages and README carry the current ones."""

import os
import re

import pytest

from keras_capsules import applications, markdown, presets
from keras_capsules.presets import cards

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_card_of_a_registered_preset():
    preset = presets.Preset(
        model="EffCapsNet",
        name="card-test",
        dataset="fashion_mnist",
        kwargs={"variant": "mnist", "input_shape": [28, 28, 1]},
        file="none.npz",
        sha256="ab" * 32,
        test_accuracy=0.93174,
        test_examples=10000,
        subset_accuracy=0.938,
        subset={"dataset": "fashion_mnist", "split": "test", "limit": 1000},
        parameters=1573744,
        recipe=("EffCapsNet", "fashion_mnist", "default"),
        command="keras-capsules train EffCapsNet --dataset fashion_mnist --epochs 50",
        epochs=50,
        train_seconds=7200.0,
        hardware="AMD EPYC, 2 CPU cores",
        library_version="0.1.0",
        date="2026-11-23",
        description="A test model.",
        limitations="Only for this test.",
        procedure="Fifty epochs.",
        log="tools/presets/logs/x.md",
        validation={"examples": 5000, "seed": 0, "selection": "uniform draw"},
        test_informed=True,
        decisions="the schedule was extended after a test score.",
        citation="@article{key,\n  title={T}\n}",
        notes="Paper: 94.0 %.",
        metrics={"routing_entropy": 2.6},
        validation_curve=tuple(0.5 + i / 100 for i in range(1, 51)),
    )
    presets.register_preset(preset)
    try:
        card = presets.model_card("EffCapsNet", "card-test")
    finally:
        presets.unregister_preset("EffCapsNet", "card-test")
    sections = [
        "A test model.",
        "**Intended use and limitations.** Only for this test.",
        "**Training data.**",
        "**Training procedure.** Fifty epochs.",
        "**Evaluation.**",
        "**How to use.**",
        "**License.**",
        "**Citation.**",
    ]
    positions = [card.index(section) for section in sections]
    assert positions == sorted(positions)  # the sections of a Hugging Face / Kaggle model card, in that order
    assert "Training log: `tools/presets/logs/x.md`" in card
    assert "**93.17 %** top-1 accuracy (9,317 of 10,000) on the full official fashion_mnist test set" in card
    assert "93.80 % on the first 1,000 images of `fashion_mnist` / `test`" in card
    assert "Validation hold-out: 5,000 training images (uniform draw, seed 0)." in card
    assert "Paper: 94.0 %. Test-informed decisions: yes — the schedule was extended after a test score." in card
    assert 'model = applications.EffCapsNet(weights="card-test")  # (batch, 28, 28, 1) images in [0, 1]' in card
    assert 'presets.decode_predictions(model.predict(images), "EffCapsNet/card-test", top=3)' in card
    assert '| classes | "T-shirt/top", "Trouser", "Pullover"' in card and '"Ankle boot" |' in card
    assert "1,573,744" in card and "50 epochs, 2.0 h on AMD EPYC, 2 CPU cores" in card
    assert "`keras-capsules train EffCapsNet --dataset fashion_mnist --epochs 50`" in card
    assert (
        "**Validation curve.** Accuracy on the validation hold-out after each epoch (epochs 1, 5, 10, ... and the last shown"
        in card
    )
    assert "| epoch | 1 | 5 | 10 | 15 | 20 | 25 | 30 | 35 | 40 | 45 | 50 |" in card
    assert (
        "| validation accuracy (%) | 51.00 | 55.00 | 60.00 | 65.00 | 70.00 | 75.00 | 80.00 | 85.00 | 90.00 | 95.00 | 100.00 |"
        in card
    )
    assert "| routing entropy | 2.6 |" in card and card.rstrip().endswith(
        "```bibtex\n@article{key,\n  title={T}\n}\n```"
    )


def test_validation_curve_of_a_two_stage_run_names_its_stage():
    shipped = presets.get("AgreementGLOM", "fashion_mnist")
    preset = presets.Preset(**dict(vars(shipped), name="curve-test", epochs=8, validation_curve=(0.801, 0.8125, 0.9)))
    presets.register_preset(preset)
    try:
        card = presets.model_card("AgreementGLOM", "curve-test")
    finally:
        presets.unregister_preset("AgreementGLOM", "curve-test")
    assert "after each of the last 3 of the 8 epochs (the final stage):" in card
    assert "| epoch | 1 | 2 | 3 |\n|---|---:|---:|---:|\n| validation accuracy (%) | 80.10 | 81.25 | 90.00 |" in card


@pytest.mark.parametrize("key", presets.available())
def test_every_shipped_card_states_its_validation_and_test_decisions(key):
    preset = presets.get(*key.split("/", 1))
    assert preset.test_informed in (True, False) and preset.decisions and preset.citation.lstrip().startswith("@")
    card = presets.model_card(preset.model, preset.name)
    answer = "yes" if preset.test_informed else "no"
    assert f"Test-informed decisions: {answer} — {preset.decisions}" in card
    assert ("Validation hold-out: none." in card) == (preset.validation is None)
    curve = preset.validation_curve
    assert len(curve) <= preset.epochs and all(0 <= a <= 1 for a in curve) and (not curve or preset.validation)
    assert ("**Validation curve.**" in card) == bool(curve)
    assert os.path.isfile(os.path.join(ROOT, preset.log)), f"{key}: training log {preset.log} missing"


@pytest.mark.parametrize("model", ["AgreementGLOM", "CapsNet", "EffCapsNet", "FMCapsNet"])
def test_docs_pages_carry_the_current_cards(model):
    module = getattr(applications, model).__module__.rsplit(".", 1)[-1]
    page = open(os.path.join(ROOT, "docs", "applications", f"{module}.md")).read()
    assert markdown.block(cards.BLOCK, cards.docs_section(model)) in page, (
        f"run python tools/presets/write_cards.py to refresh docs/applications/{module}.md"
    )


def test_readme_table_is_current():
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert markdown.block(cards.BLOCK, cards.presets_table()) in readme, (
        "run python tools/presets/write_cards.py to refresh README.md"
    )
    for key in presets.available():
        model, name = key.split("/", 1)
        assert (
            re.search(rf"`{model}\(weights=\\\"{re.escape(name)}\\\"\)`", readme)
            or f'`{model}(weights="{name}")`' in readme
        )


def test_card_of_a_preset_folder_reports_the_run():
    config = {
        "format": "keras_capsules.preset",
        "format_version": 1,
        "constructor": "EffCapsNet",
        "arguments": {"classes": 3, "variant": "mnist"},
    }
    metrics = {
        "model": "EffCapsNet",
        "dataset": "shoes",
        "variant": "default",
        "epochs_completed": 11,
        "train_seconds": 5400.0,
        "stages": [{"name": "pretrain", "epochs": 8}, {"name": "classifier", "epochs": 3}],
        "recipe": {
            "optimizer": "adamw",
            "learning_rate": 0.012,
            "lr_schedule": "onecycle",
            "batch_size": 256,
            "loss": "margin",
            "augmentation": None,
        },
        "validation": {"examples": 30, "seed": 0, "selection": "uniform draw"},
        "validation_accuracy": 0.9,
        "evaluations": {"test": {"accuracy": 0.875, "loss": 0.2}},
        "arguments": {"limit": 300, "eval_limit": 40, "seed": 0},
        "replicas": 1,
        "strategy": "default",
        "folder": {
            "class_names": ["sandal", "boot"],
            "images_per_class": {"train": {"sandal": 150, "boot": 180}, "test": {"sandal": 20, "boot": 20}},
        },
    }
    metadata = {
        "keras_capsules_version": "9.9.9",
        "keras_version": "3.0.0",
        "backend": "tensorflow",
        "date_saved": "2026-01-01 00:00:00 UTC",
        "parameters": 147952,
        "weights": {"file": "model.weights.npz", "sha256": "ab" * 32, "storage_dtype": "float32"},
        "class_names": ["sandal", "boot"],
        "preprocessing": {"input_shape": [28, 28, 1], "input_range": [0, 1]},
        "metrics": metrics,
    }
    card = cards.folder_card(config, metadata, "Shoes from the shop's catalogue.", title="shoes")
    sections = [
        "# shoes",
        "Shoes from the shop's catalogue.",
        "**Intended use and limitations.** Sorts 28x28x1 images with values in [0, 1] into its 2 classes",
        "**Training data.**",
        "**Training procedure.**",
        "**Evaluation.**",
        "**How to use.**",
        "| classes |",
    ]
    positions = [card.index(section) for section in sections]
    assert positions == sorted(positions)
    assert (
        "Dataset `shoes`: the first 300 images of its training split minus a validation hold-out of 30 images (uniform draw)."
        in card
    )
    assert "| class | train | test |\n|---|---:|---:|\n| sandal | 150 | 20 |\n| boot | 180 | 20 |" in card
    assert (
        "Recipe `EffCapsNet / shoes / default`; 11 epochs (pretrain 8, classifier 3); optimizer adamw at learning rate 0.012 (onecycle schedule), "
        "batch size 256, loss margin, augmentation none; 1.50 h of training"
    ) in card
    assert (
        "**90.00 %** on the validation hold-out (30 images) after the last epoch; **87.50 %** on the first 40 images of `test`"
        in card
    )
    assert "model = presets.load(folder)  # or applications.EffCapsNet(weights=folder)" in card
    assert "| constructor | `EffCapsNet(classes=3, variant='mnist')` |" in card and "| parameters | 147,952 |" in card
    assert (
        f"SHA-256 `{'ab' * 32}`" in card
        and "| saved with | keras-capsules 9.9.9, Keras 3.0.0 (tensorflow), 2026-01-01 00:00:00 UTC |" in card
    )
    # A folder of images: its --limit and --eval-limit images were drawn class by class.
    folder = cards.folder_card(config, dict(metadata, metrics=dict(metrics, dataset="folder:/shop/shoes")))
    assert "Dataset `folder:/shop/shoes`: 300 (drawn class by class) images of its training split minus" in folder
    assert "**87.50 %** on 40 (drawn class by class) images of `test`" in folder
    # Without a run record the card says that nothing is known about the data or the accuracy.
    bare = cards.folder_card({"keras_config": {}}, dict(metadata, metrics=None, class_names=None))
    assert "No training run is recorded with this folder" in bare and "**Evaluation.**" not in bare
    assert "| constructor | none recorded: built from its Keras config |" in bare and "| classes | not named |" in bare


def test_replace_section_rewrites_the_block_or_appends_it():
    page = "# Page\n\n<!-- presets:start -->\nold\n<!-- presets:end -->\n\nMore.\n"
    assert cards.replace_section(page, "new", "docs/x.md") == (
        "# Page\n\n<!-- presets:start -->\nnew\n<!-- presets:end -->\n\nMore.\n"
    )
    assert cards.replace_section("# Page\n", "new", "docs/x.md") == (
        "# Page\n\n<!-- presets:start -->\nnew\n<!-- presets:end -->\n"
    )
    with pytest.raises(ValueError, match="docs/x.md must hold <!-- presets:start --> ... <!-- presets:end --> once"):
        cards.replace_section(page + "<!-- presets:end -->", "new", "docs/x.md")
