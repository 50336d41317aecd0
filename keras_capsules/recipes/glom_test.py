"""The two-stage GLOM recipe: plumbing on a tiny model (islands are tested in applications/agreement_glom_test.py)."""

import keras
import numpy as np
import pytest

from keras_capsules.applications import AgreementGLOM
from keras_capsules.recipes.glom import GlomRecipe, OneCycleSchedule, get_glom_recipe, make_augmentation, train_agreement_glom

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="the recipe uses tf.data (TensorFlow-specific)")


def test_two_stages_run_and_stage_two_trains_only_h2():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(16, 12, 12, 1)).astype("float32")  # padded to 16x16 by the recipe
    y = (np.arange(16) % 2).astype("int32")
    model = AgreementGLOM(input_shape=(16, 16, 1), classes=2, embedding_dim=4, projection_dim=8, window=2, levels=1, iterations=1)
    recipe = GlomRecipe("synthetic", batch_size=8, pad_to=(16, 16), crop_padding=1, flip=True, translation=0.1)
    first = train_agreement_glom(model, (x, y), recipe=recipe, pretrain_epochs=1, classifier_epochs=0, verbose=0)
    assert first["classifier"] is None and np.isfinite(first["pretrain"].history["loss"]).all()
    backbone = [w.numpy().copy() for w in model.get_layer("columns").weights]
    second = train_agreement_glom(model, (x, y), recipe=recipe, pretrain_epochs=0, classifier_epochs=1, verbose=0)
    assert second["pretrain"] is None and np.isfinite(second["classifier"].history["loss"]).all()
    assert {w.path.split("/")[0] for w in model.trainable_weights} == {"classification_head"}
    for before, after in zip(backbone, model.get_layer("columns").weights):
        np.testing.assert_array_equal(before, after.numpy())


def test_schedule_augmentation_and_recipes():
    schedule = OneCycleSchedule(0.012, 100)
    lrs = [float(schedule(s)) for s in (0, 29, 99)]
    np.testing.assert_allclose(lrs, [0.012 / 25, 0.012, 0.012 / 25 / 1e4], rtol=1e-3)
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule)).total_steps == 100
    views = make_augmentation((16, 16, 1), crop_padding=2, seed=1)(np.ones((2, 16, 16, 1), "float32"), training=True)
    assert tuple(views.shape) == (2, 16, 16, 1)
    assert get_glom_recipe("fashion_mnist").pad_to == (32, 32) and get_glom_recipe("cifar10").batch_size == 800
    with pytest.raises(ValueError, match="get_glom_recipe.*dataset"):
        get_glom_recipe("imagenet")
    model = AgreementGLOM(input_shape=(16, 16, 1), classes=2, embedding_dim=4, projection_dim=8, window=2, classifier_activation="sigmoid")
    with pytest.raises(ValueError, match="train_agreement_glom.*classifier_activation"):
        train_agreement_glom(model, (np.zeros((4, 16, 16, 1), "float32"), np.zeros(4, "int32")), pretrain_epochs=0, classifier_epochs=1)
