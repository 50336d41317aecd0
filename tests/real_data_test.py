"""Training on the real MNIST files reaches a stated accuracy on held-out images."""

import os

import keras
import numpy as np
import pytest

from keras_capsules import applications, losses
from keras_capsules.datasets import load_arrays
from keras_capsules.testing.tiers import large

DATA = os.environ.get("KERAS_CAPSULES_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
HAVE_MNIST = os.path.isfile(os.path.join(DATA, "mnist", "train-images-idx3-ubyte.gz"))


@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST files absent from {DATA} (set KERAS_CAPSULES_DATA)")
@large
def test_eff_capsnet_learns_mnist_in_a_few_hundred_steps():
    keras.utils.set_random_seed(0)
    x, y = load_arrays("mnist", "train", data_dir=DATA)
    xt, yt = load_arrays("mnist", "test", data_dir=DATA)
    x, y = x[:9600].astype("float32") / 255.0, y[:9600]
    xt, yt = xt[:2000].astype("float32") / 255.0, yt[:2000]
    model = applications.EffCapsNet()
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss=losses.MarginLoss(), metrics=["accuracy"])
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # 300 steps
    accuracy = float(np.mean(np.argmax(model.predict(xt, verbose=0), -1) == yt))
    assert accuracy >= 0.95, accuracy
