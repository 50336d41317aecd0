"""Recipes of matrix capsules with EM routing (Hinton, Sabour & Frosst 2018; docs/reference/models.md#matrixcapsnet)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = (
    "IBM train_val.py / config.py (quoting the authors): Adam 3e-3 decayed x0.96 every 20000 steps, batch 64, spread loss "
    "with the margin 0.2 + 0.79 sigmoid(min(10, step/50000 - 4)); smallNORB 48 -> random 32x32 crops, brightness and "
    "contrast; no epoch count is given (50 here)"
)

for _variant, _configuration, _split, _evals in (
    ("default", "MatrixCapsNet/smallnorb", "train", ("test",)),
    ("small", "MatrixCapsNet/smallnorb-small", "train", ("test",)),
    ("novel_azimuth", "MatrixCapsNet/smallnorb", "azimuth_train", ("azimuth_familiar", "azimuth_novel")),
    ("novel_elevation", "MatrixCapsNet/smallnorb", "elevation_train", ("elevation_familiar", "elevation_novel")),
):
    register_recipe(
        Recipe(
            model="MatrixCapsNet",
            dataset="smallnorb",
            variant=_variant,
            configuration=_configuration,
            train_split=_split,
            eval_on=_evals,
            optimizer="adam",
            learning_rate=3e-3,
            lr_decay=0.96,
            lr_decay_steps=20000,
            loss="spread",
            spread_schedule={"schedule": "ibm"},
            batch_size=64,
            epochs=50,
            augmentation="smallnorb_em",
            source=SOURCE
            + ("" if _split == "train" else f"; novel-viewpoint protocol ({_split} -> {', '.join(_evals)})"),
        )
    )
