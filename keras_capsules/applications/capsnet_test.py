import keras
import numpy as np

from keras_capsules import losses
from keras_capsules.applications import CapsNet
from keras_capsules.datasets import load_arrays
from keras_capsules.testing.tiers import large


def test_class_layer_transforms_start_from_normal_with_std_0_1():
    # REM's reproduction draws W ~ N(0, 0.1); glorot_uniform would give std sqrt(2 / (11520 * 24)) = 0.0027.
    kernel = keras.ops.convert_to_numpy(CapsNet().get_layer("class_caps").weights[0])
    assert kernel.size == 1152 * 10 * 8 * 16
    assert abs(kernel.mean()) < 1e-3 and abs(kernel.std() - 0.1) < 1e-3


@large
def test_capsnet_with_its_decoder_learns_mnist_in_32_steps():
    # Regression: with glorot-initialised transforms the margin loss stayed at its untrained value,
    # 0.9^2 = 0.81 (every class length ~0), for a whole epoch of the preset's recipe.
    keras.utils.set_random_seed(0)
    x, y = load_arrays("mnist_sample", "train")
    xt, yt = load_arrays("mnist_sample", "test")
    x, y = x[:1024].astype("float32") / 255.0, y[:1024]
    xt, yt = xt[:300].astype("float32") / 255.0, yt[:300]
    model = CapsNet(reconstruction=True)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=losses.MarginLoss(), metrics=["accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # 32 steps
    assert history.history["loss"][0] < 0.81 - 0.2
    accuracy = float(np.mean(np.argmax(model.predict(xt, verbose=0), -1) == yt))
    assert accuracy >= 0.7, accuracy
