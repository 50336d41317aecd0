"""``keras-capsules export``: the SavedModel of a train run's model serves its predictions."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import cli, datasets
from keras_capsules.saving import load_model
from keras_capsules.testing.tiers import large


@pytest.mark.xdist_group("cli_run")
@large
def test_export_serves_the_models_predictions(overrides_run, tmp_path):
    output, _ = overrides_run
    model_file = str(output / "model.keras")
    export_dir = str(tmp_path / "served")
    assert cli.main(["export", model_file, export_dir]) == 0
    images = datasets.load_arrays("mnist_sample", "test")[0][:5].astype("float32") / 255.0
    loaded = tf.saved_model.load(export_dir)  # keep a reference: its variables die with it
    served = loaded.serve(tf.constant(images)).numpy()
    np.testing.assert_allclose(served, load_model(model_file).predict(images, verbose=0), atol=1e-5)
