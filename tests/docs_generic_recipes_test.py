"""Each application page's "Generic recipe (your own images)" table states what ``recipes.generic.generic`` returns."""

import ast
import os
import re

import pytest

from keras_capsules.recipes import generic as generic_recipes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
HEADING = "## Generic recipe (your own images)"
#: Application -> its page under docs/applications/.
PAGES = {
    "EffCapsNet": "eff_capsnet",
    "CapsNet": "capsnet",
    "FMCapsNet": "fm_capsnet",
    "MatrixCapsNet": "matrix_capsnet",
    "ConsensusCapsNet": "consensus_capsnet",
    "InvertedAttentionCapsNet": "inverted_attention_capsnet",
    "AgreementGLOM": "agreement_glom",
    "BaselineCNN": "baseline_cnn",
    "EffConvCapsNet": "eff_conv_capsnet",
    "HeinsenCapsNet": "heinsen_capsnet",
    "VBCapsNet": "vb_capsnet",
    "SRCapsNet": "sr_capsnet",
}
OPTIMIZERS = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD"}
LOSSES = {
    "margin": "margin",
    "spread": "spread",
    "crossentropy": "cross-entropy",
    "log_odds_crossentropy": "cross-entropy on log-odds",
    "SupervisedContrastiveLoss": "supervised contrastive",
}


def page_row(model):
    """``{column: cell}`` of the one-row table under the page's generic-recipe heading."""
    with open(os.path.join(ROOT, "docs", "applications", PAGES[model] + ".md"), encoding="utf-8") as handle:
        text = handle.read()
    assert text.count(HEADING) == 1, f"docs/applications/{PAGES[model]}.md needs one {HEADING!r} section"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert len(table) == 3, f"{model}: expected a header, a rule and one row, found {table}"
    cells = lambda line: [cell.strip() for cell in line.strip("|").split("|")]  # noqa: E731
    return dict(zip(cells(table[0]), cells(table[2])))


def number(text):
    """``"5e-4"`` -> 0.0005, ``"×0.97"`` -> 0.97."""
    return float(text.lstrip("×"))


def test_every_application_with_a_generic_recipe_has_a_page():
    assert set(PAGES) == set(generic_recipes.HOME) | set(generic_recipes.STANDALONE)


@pytest.mark.parametrize("model", sorted(PAGES))
def test_page_states_the_generic_recipe(model):
    recipe = generic_recipes.generic(model, "x")
    row = page_row(model)
    optimizer, *options = [part.strip() for part in row["optimizer"].split(",")]
    assert optimizer == OPTIMIZERS[recipe.optimizer]
    if recipe.weight_decay:
        assert (
            options == [f"weight decay {options[0].split()[-1]}"]
            and number(options[0].split()[-1]) == recipe.weight_decay
        )
    else:
        assert options == []
    assert number(row["learning rate"]) == recipe.learning_rate
    decay = row["decay"]
    if recipe.lr_schedule == "onecycle":
        assert decay == "one-cycle"
    else:
        assert recipe.lr_schedule == "exponential" and recipe.lr_decay_steps is None
        found = re.fullmatch(r"×([\d.]+) per epoch(?:, floor ([\de.-]+))?", decay)
        assert found, decay
        assert number(found.group(1)) == recipe.lr_decay
        assert (number(found.group(2)) if found.group(2) else 0.0) == recipe.lr_floor
    assert int(row["batch"]) == recipe.batch_size
    stages = recipe.stage_recipes()
    assert row["loss"].split(", then ") == [LOSSES[stage_recipe.loss] for _, stage_recipe in stages]
    assert row["augmentation"] == f"`{recipe.augmentation}`"
    assert [int(epochs) for epochs in row["epochs"].split(" + ")] == [stage_recipe.epochs for _, stage_recipe in stages]
    arguments = row["model arguments"]
    stated = (
        {} if arguments == "—" else ast.literal_eval("{" + re.sub(r"(\w+)=", r"'\1': ", arguments.strip("`")) + "}")
    )
    assert stated == recipe.model_kwargs
