"""FGSM and PGD against NumPy references on linear models: gradients, projection, random start, arguments.

The README's JAX and PyTorch test tiers run the ``numpy`` tests here: the attack gradients on every backend."""

import keras
import numpy as np
import pytest

from keras_capsules.evaluation import adversarial_accuracy, adversarial_examples
from keras_capsules.ops.compile import compiled_reading as real_compiled_reading

RNG = np.random.default_rng(3)
X = RNG.uniform(0, 1, size=(6, 2, 3, 1)).astype("float32")
X[0, 0, 0, 0], X[1, 1, 2, 0] = 0.0, 1.0  # pixels on the range's edges: clipping to [0, 1] matters
Y = np.array([0, 1, 2, 0, 1, 2])
W = RNG.normal(size=(6, 3)).astype("float32")
B = RNG.normal(size=(3,)).astype("float32")


def _linear(activation, compile_loss=None):
    """``activation(flatten(x) W + b)``: a 6-pixel, 3-class linear model with fixed weights."""
    model = keras.Sequential([keras.Input((2, 3, 1)), keras.layers.Flatten(), keras.layers.Dense(3, activation)])
    model.layers[-1].set_weights([W, B])
    if compile_loss is not None:
        model.compile(loss=compile_loss)
    return model


def _softmax_cross_entropy_gradient(x):
    """d/dx of -log softmax(x W + b)[y], per image (NumPy, float64)."""
    logits = x.reshape(len(x), -1).astype("float64") @ W + B
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return ((p - np.eye(3)[Y]) @ W.T).reshape(x.shape)


def _sigmoid_margin_gradient(x):
    """d/dx of the margin loss (m+ 0.9, m- 0.1, lambda 0.5) on sigmoid(x W + b), per image (NumPy, float64)."""
    v = 1 / (1 + np.exp(-(x.reshape(len(x), -1).astype("float64") @ W + B)))
    t = np.eye(3)[Y]
    dv = -2 * t * np.maximum(0.9 - v, 0) + 2 * 0.5 * (1 - t) * np.maximum(v - 0.1, 0)
    return ((dv * v * (1 - v)) @ W.T).reshape(x.shape)


def test_fgsm_is_the_sign_of_the_numpy_cross_entropy_gradient_of_a_linear_softmax_model():
    epsilon = 0.1
    expected = np.clip(X + epsilon * np.sign(_softmax_cross_entropy_gradient(X)), 0, 1)
    result = adversarial_examples(_linear("softmax", "sparse_categorical_crossentropy"), X, Y, epsilon=epsilon)
    np.testing.assert_allclose(result.images, expected, atol=1e-6)
    assert (result.loss, result.loss_source, result.steps, result.step_size) == (
        "sparse_categorical_crossentropy",
        "compiled model",
        1,
        epsilon,
    )
    assert result.input_scale == 1.0 and result.zero_gradient == 0.0 and not result.random_start
    # The same through loss="cross_entropy" on the uncompiled model (which ends in a softmax: probabilities).
    named = adversarial_examples(_linear("softmax"), X, Y, epsilon=epsilon, loss="cross_entropy", batch_size=4)
    np.testing.assert_allclose(named.images, expected, atol=1e-6)
    assert (named.loss, named.loss_source) == ("cross_entropy (from probabilities)", "argument")


def test_cross_entropy_takes_sigmoid_outputs_as_logits_as_they_are_like_its_numpy_gradient():
    # On TensorFlow, Keras would swap in the sigmoid's input (cached as ``_keras_logits``) for the outputs.
    v = 1 / (1 + np.exp(-(X.reshape(len(X), -1).astype("float64") @ W + B)))
    p = np.exp(v) / np.exp(v).sum(axis=1, keepdims=True)
    gradient = (((p - np.eye(3)[Y]) * v * (1 - v)) @ W.T).reshape(X.shape)
    result = adversarial_examples(_linear("sigmoid"), X, Y, epsilon=0.1, loss="cross_entropy")
    np.testing.assert_allclose(result.images, np.clip(X + 0.1 * np.sign(gradient), 0, 1), atol=1e-6)
    assert result.loss == "cross_entropy (from logits)"


def test_fgsm_with_the_margin_loss_follows_its_numpy_gradient_on_sigmoid_scores():
    expected = np.clip(X + 0.05 * np.sign(_sigmoid_margin_gradient(X)), 0, 1)
    result = adversarial_examples(_linear("sigmoid"), X, Y, epsilon=0.05, loss="margin")
    np.testing.assert_allclose(result.images, expected, atol=1e-6)
    assert result.loss == "margin"


def test_every_pgd_step_stays_in_the_epsilon_ball_and_in_the_image_range():
    model, epsilon = _linear("softmax", "sparse_categorical_crossentropy"), 0.3
    previous = None
    for steps in range(1, 6):  # PGD with k steps is the path's k-th point (same seed, same start)
        images = adversarial_examples(model, X, Y, "pgd", epsilon, steps=steps, step_size=0.2, seed=5).images
        assert np.all(np.abs(images - X) <= epsilon + 1e-6) and images.min() >= 0 and images.max() <= 1
        if previous is not None:  # one step of 0.2 at most from the last point, per pixel
            assert np.all(np.abs(images - previous) <= 0.2 + 1e-6)
        previous = images


def test_pgd_of_one_step_of_epsilon_without_random_start_is_fgsm():
    model = _linear("softmax", "sparse_categorical_crossentropy")
    pgd = adversarial_examples(model, X, Y, "pgd", 0.07, steps=1, step_size=0.07, random_start=False)
    fgsm = adversarial_examples(model, X, Y, "fgsm", 0.07)
    np.testing.assert_array_equal(pgd.images, fgsm.images)


def test_the_random_start_is_a_seeded_draw_inside_the_ball():
    # A zero kernel and bias give every image the same scores: zero gradient, so PGD stays at its start.
    model = _linear("softmax", "sparse_categorical_crossentropy")
    model.layers[-1].set_weights([np.zeros_like(W), np.zeros_like(B)])
    x = np.full((40, 2, 3, 1), 0.5, "float32")
    y = np.zeros(40, "int64")
    start = adversarial_examples(model, x, y, "pgd", 0.2, steps=2, seed=1)
    delta = start.images - x
    assert start.zero_gradient == 1.0 and np.all(np.abs(delta) <= 0.2 + 1e-6)
    # uniform in [-0.2, 0.2]: 240 pixels spread over the interval, mean |delta| near 0.1
    assert delta.min() < -0.15 and delta.max() > 0.15 and 0.08 < np.abs(delta).mean() < 0.12
    again = adversarial_examples(model, x, y, "pgd", 0.2, steps=2, seed=1, batch_size=7)
    np.testing.assert_array_equal(again.images, start.images)  # the seed fixes it, whatever the batches
    other = adversarial_examples(model, x, y, "pgd", 0.2, steps=2, seed=2)
    assert not np.array_equal(other.images, start.images)


def test_a_model_that_rescales_0_255_inputs_is_attacked_in_the_0_1_range():
    scaled = keras.Sequential(
        [keras.Input((2, 3, 1)), keras.layers.Rescaling(1 / 255), keras.layers.Flatten(), keras.layers.Dense(3)]
    )
    scaled.layers[-1].set_weights([W, B])
    result = adversarial_examples(scaled, X, Y, epsilon=0.1, loss="cross_entropy")
    expected = np.clip(X + 0.1 * np.sign(_softmax_cross_entropy_gradient(X)), 0, 1)
    np.testing.assert_allclose(result.images, expected, atol=1e-6)
    assert result.input_scale == 255.0 and result.loss == "cross_entropy (from logits)"


def _two_class_images(count, seed):
    """Bright top or bottom halves (class 0 or 1) with noise, ``(count, 4, 4, 1)`` in [0, 1]."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, count)
    images = rng.uniform(0, 0.3, size=(count, 4, 4, 1))
    images[labels == 0, :2] += 0.5
    images[labels == 1, 2:] += 0.5
    return images.astype("float32"), labels


def test_the_attacks_lower_a_trained_models_accuracy_to_the_linear_models_worst_case():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4, 4, 1)), keras.layers.Flatten(), keras.layers.Dense(2, "softmax")])
    model.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy")
    model.fit(*_two_class_images(256, 0), epochs=10, batch_size=64, verbose=0)
    x, y = _two_class_images(64, 1)
    epsilons = [0.0, 0.2, 0.25, 0.3]
    fgsm = adversarial_accuracy(model, x, y, "fgsm", epsilons=epsilons)
    pgd = adversarial_accuracy(model, x, y, "pgd", epsilons=epsilons)
    # Two classes, linear logits: the logit margin d = x (w_y - w_o) + b_y - b_o falls by at most
    # epsilon |w_y - w_o|_1 in the ball, exactly at the corner the gradient's (constant) sign points to.
    kernel, bias = model.layers[-1].get_weights()
    flat = x.reshape(len(x), -1).astype("float64")
    sign = np.where(y == 0, 1.0, -1.0)
    margin = sign * (flat @ (kernel[:, 0] - kernel[:, 1]) + bias[0] - bias[1])
    # The corner may leave [0, 1]; clipped pixels move less, so count them pixel by pixel.
    direction = -sign[:, None] * np.sign(kernel[:, 0] - kernel[:, 1])[None, :]
    for (epsilon, accuracy), (_, pgd_accuracy) in zip(fgsm.table, pgd.table):
        moved = np.clip(flat + epsilon * direction, 0, 1) - flat
        worst = margin + sign * (moved @ (kernel[:, 0] - kernel[:, 1]))
        assert accuracy == pgd_accuracy == np.mean(worst > 0), epsilon
    assert fgsm.accuracy == fgsm.table[0][1] == 1.0 and fgsm.table[-1][1] < 0.5
    # The accuracy is the model's on adversarial_examples' images.
    images = adversarial_examples(model, x, y, "pgd", 0.25).images
    assert pgd.table[2][1] == np.mean(np.argmax(model.predict(images, verbose=0), axis=1) == y)
    assert (pgd.loss, pgd.steps, pgd.step_size, pgd.random_start) == ("sparse_categorical_crossentropy", 10, None, True)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (
            {"attack": "cw"},
            r"adversarial_examples: argument `attack` expected one of \['fgsm', 'pgd'\], received 'cw'\.",
        ),
        (
            {"epsilon": -0.1},
            r"adversarial_examples: argument `epsilon` expected a non-negative number .*, received -0\.1\.",
        ),
        (
            {"attack": "pgd", "steps": 0},
            r"adversarial_examples: argument `steps` expected a positive integer, received 0\.",
        ),
        ({"steps": 5}, r"adversarial_examples: FGSM takes one step .* received steps=5, step_size=None"),
        (
            {"attack": "pgd", "step_size": -1.0},
            r"adversarial_examples: argument `step_size` expected None .* or a positive number, received -1\.0\.",
        ),
        (
            {"batch_size": 0},
            r"adversarial_examples: argument `batch_size` expected None \(planned from memory\) or a positive integer, received 0\.",
        ),
        ({"loss": "hinge"}, r"adversarial_examples: argument `loss` expected None .*, received 'hinge'\."),
    ],
)
def test_bad_arguments_name_the_function_argument_expected_and_received_values(arguments, message):
    with pytest.raises(ValueError, match=message):
        adversarial_examples(_linear("softmax", "sparse_categorical_crossentropy"), X, Y, **arguments)


def test_bad_data_and_an_unreadable_loss_are_refused():
    model = _linear("softmax", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"argument `x` expected images scaled to \[0, 1\].*values in \[0, 255\]"):
        adversarial_examples(model, X * 255, Y)
    with pytest.raises(
        ValueError, match=r"argument `y` expected class indices of shape \(6,\), received 'shape \(5,\)'"
    ):
        adversarial_examples(model, X, Y[:5])
    with pytest.raises(
        ValueError, match=r"adversarial_examples: argument `loss` expected .* training loss cannot be read"
    ):
        adversarial_examples(_linear("softmax"), X, Y)
    with pytest.raises(ValueError, match=r"adversarial_accuracy: argument `epsilons` expected at least one"):
        adversarial_accuracy(model, X, Y, epsilons=[])


def test_describe_loss_names_the_loss_and_its_settings():
    from keras_capsules.evaluation.adversarial import describe_loss
    from keras_capsules.losses import MarginLoss, ScoresCrossentropy, SpreadLoss

    assert describe_loss(MarginLoss()) == "margin"
    assert describe_loss(SpreadLoss(0.35)) == "spread (margin 0.35)"
    assert describe_loss(keras.losses.SparseCategoricalCrossentropy(from_logits=True)) == "cross_entropy (from logits)"
    assert describe_loss(keras.losses.CategoricalCrossentropy()) == "cross_entropy (from probabilities)"
    assert describe_loss(ScoresCrossentropy(from_logits=True, log_odds=True)) == "cross_entropy (from log-odds)"
    assert describe_loss(keras.losses.MeanSquaredError()) == "MeanSquaredError"


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="router compilation is TensorFlow's (jit_compile)")
def test_a_routed_models_attack_gradient_is_compiled_and_equals_the_plain_one(monkeypatch):
    """The attack's gradient runs the dynamic router through XLA (compiled_inference), as training does; the
    gradient equals the one traced without it, to float32 rounding."""
    import tensorflow as tf

    from keras_capsules import layers
    from keras_capsules.evaluation import adversarial
    from keras_capsules.routing import base

    keras.utils.set_random_seed(0)
    images = keras.Input((4, 4, 1))
    primary = keras.layers.Reshape((32, 2))(keras.layers.Conv2D(4, 3, padding="same")(images))
    poses, lengths = layers.FcCaps(3, 4, router="dynamic", name="class_caps")(primary)
    model = keras.Model(images, lengths)
    x = np.random.default_rng(1).uniform(size=(5, 4, 4, 1)).astype("float32")
    y = np.array([0, 1, 2, 0, 1])
    compiled = []
    monkeypatch.setattr(base, "compiled_reading", lambda f, w: compiled.append(1) or real_compiled_reading(f, w))
    per_example = keras.losses.SparseCategoricalCrossentropy(reduction=None)
    gradient = adversarial._loss_gradient("test", model, lambda t, s: per_example(t, s), 1.0, None)[0](x, y)
    assert compiled  # the router went through compiled_reading at inference

    with tf.GradientTape() as tape:  # eager, outside the scope: the plain router
        inputs = tf.constant(x)
        tape.watch(inputs)
        plain = tape.gradient(tf.reduce_sum(per_example(y, model(inputs, training=False))), inputs).numpy()
    np.testing.assert_allclose(gradient, plain, rtol=1e-4, atol=1e-6 * np.max(np.abs(plain)))


def _counting_gradients(monkeypatch):
    """Patches the attacks' gradient builder to count the gradients computed; returns the counter."""
    from keras_capsules.evaluation import adversarial

    calls, build = [0], adversarial._loss_gradient

    def counted(*args):
        gradient, graph_function = build(*args)

        def run(images, labels):
            calls[0] += 1
            return gradient(images, labels)

        return run, graph_function

    monkeypatch.setattr(adversarial, "_loss_gradient", counted)
    return calls


def test_without_a_random_start_every_epsilon_shares_the_first_gradient(monkeypatch):
    calls = _counting_gradients(monkeypatch)
    model, epsilons = _linear("softmax", "sparse_categorical_crossentropy"), [0.05, 0.1, 0.2]
    fgsm = adversarial_accuracy(model, X, Y, "fgsm", epsilons=epsilons, batch_size=4)
    assert calls[0] == 2  # 6 images in batches of 4: one gradient per batch, not one per batch and epsilon
    gradient = _softmax_cross_entropy_gradient(X)
    for epsilon, accuracy in fgsm.table:  # NumPy: the linear model's classes of the FGSM images
        attacked = np.clip(X + epsilon * np.sign(gradient), 0, 1).reshape(len(X), -1).astype("float64")
        assert accuracy == np.mean(np.argmax(attacked @ W + B, axis=1) == Y), epsilon
    calls[0] = 0
    pgd = adversarial_accuracy(model, X, Y, "pgd", epsilons=epsilons, steps=3, random_start=False, batch_size=4)
    assert calls[0] == 2 * (1 + 3 * 2)  # per batch: the shared first gradient, then 2 more steps per epsilon
    for epsilon, accuracy in pgd.table:  # the same as each epsilon attacked alone
        images = adversarial_examples(model, X, Y, "pgd", epsilon, steps=3, random_start=False).images
        assert accuracy == np.mean(np.argmax(model.predict(images, verbose=0), axis=1) == Y), epsilon


def test_every_gradient_call_has_the_batch_size_and_the_padding_keeps_the_numpy_gradient(monkeypatch):
    from keras_capsules.evaluation import adversarial

    shapes, build = [], adversarial._loss_gradient

    def recorded(*args):
        gradient, graph_function = build(*args)
        return (lambda images, labels: shapes.append(images.shape) or gradient(images, labels)), graph_function

    monkeypatch.setattr(adversarial, "_loss_gradient", recorded)
    model = _linear("softmax", "sparse_categorical_crossentropy")
    result = adversarial_examples(model, X, Y, "fgsm", 0.1, batch_size=4)  # 6 images: 4, then 2 padded to 4
    assert shapes == [(4, 2, 3, 1), (4, 2, 3, 1)]  # one shape: TensorFlow traces the gradient once
    expected = np.clip(X + 0.1 * np.sign(_softmax_cross_entropy_gradient(X)), 0, 1)
    np.testing.assert_allclose(result.images, expected, atol=1e-6)


@pytest.mark.parametrize("images, planned, expected", [(1000, 65, 63), (6, 4, 3), (130, 65, 65), (5, 256, 5)])
def test_a_planned_batch_is_evened_out_over_the_batches_it_makes(monkeypatch, images, planned, expected):
    from keras_capsules.evaluation import adversarial

    monkeypatch.setattr(adversarial._Attack, "planned_batch_size", lambda self, shape, count: min(planned, count))
    x = np.resize(X, (images, 2, 3, 1))
    result = adversarial_examples(_linear("softmax"), x, np.resize(Y, images), loss="cross_entropy")
    assert result.batch_size == expected  # ceil(images / ceil(images / planned)): as few batches, none much smaller


def _out_of_memory_errors():
    """Each backend's out-of-memory error as raised (the installed ones), with a backend-neutral XLA one."""
    errors = [RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.76GiB.")]  # XLA (JAX)
    try:
        import tensorflow as tf

        errors.append(tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[250,...]"))
    except ImportError:
        pass
    try:
        import torch

        errors.append(torch.OutOfMemoryError("CUDA out of memory."))
        try:  # what PyTorch's CPU allocator raises for a tensor larger than the machine
            torch.empty(2**45)
        except RuntimeError as error:
            errors.append(error)
    except (ImportError, AttributeError):
        pass
    return errors


def _gradients_raising(monkeypatch, error):
    """Every attack's loss gradient raises ``error``."""
    from keras_capsules.evaluation import adversarial

    def gradient(images, labels):
        raise error

    monkeypatch.setattr(adversarial, "_loss_gradient", lambda *arguments: (gradient, None))


@pytest.mark.parametrize("error", _out_of_memory_errors(), ids=lambda error: type(error).__name__)
def test_running_out_of_memory_is_an_error_naming_batch_size(monkeypatch, error):
    _gradients_raising(monkeypatch, error)
    model = _linear("softmax", "sparse_categorical_crossentropy")
    with pytest.raises(
        MemoryError, match=r"adversarial_examples: out of memory .* 4 images .*`batch_size`.*received 4\."
    ) as raised:
        adversarial_examples(model, X, Y, "pgd", 0.1, batch_size=4)
    assert raised.value.__cause__ is error
    with pytest.raises(MemoryError, match="adversarial_accuracy: .*received 5"):
        adversarial_accuracy(model, X, Y, "fgsm", batch_size=5)
    with pytest.raises(MemoryError, match=r"received 6 \(planned from the memory available: pass a smaller one\)\.$"):
        adversarial_accuracy(model, X, Y, "fgsm")  # planned: all 6 images (no traced graph to read here)


def test_an_error_other_than_memory_passes_through_the_attack(monkeypatch):
    _gradients_raising(monkeypatch, RuntimeError("INVALID_ARGUMENT: something else"))
    with pytest.raises(RuntimeError, match="INVALID_ARGUMENT: something else"):
        adversarial_examples(_linear("softmax", "sparse_categorical_crossentropy"), X, Y, batch_size=4)


def _periodic_model():
    """Logits ``(cos(pi s), -cos(pi s))`` of the pixel sum ``s``: an attack can flip the class and, at a larger
    epsilon, flip it back, so the accuracy per epsilon on its own need not fall as epsilon grows."""
    model = keras.Sequential(
        [
            keras.Input((2, 3, 1)),
            keras.layers.Flatten(),
            keras.layers.Dense(1, use_bias=False, kernel_initializer="ones"),
            keras.layers.Lambda(
                lambda s: keras.ops.concatenate([keras.ops.cos(np.pi * s), -keras.ops.cos(np.pi * s)], -1)
            ),
        ]
    )
    return model


def _periodic_fgsm_correct(x, y, epsilon):
    """NumPy: whether the periodic model still classifies each FGSM image correctly. The cross-entropy's gradient
    with respect to every pixel is d/ds, whose sign is sign(sin(pi s)) for class 0 and the opposite for class 1."""
    s = x.reshape(len(x), -1).astype("float64").sum(axis=1)
    direction = np.sign(np.sin(np.pi * s)) * np.where(y == 0, 1.0, -1.0)
    attacked = np.clip(x + epsilon * direction[:, None, None, None], 0, 1).reshape(len(x), -1).sum(axis=1)
    return np.where(np.cos(np.pi * attacked) > 0, 0, 1) == y


def test_cumulative_accuracy_counts_an_image_only_while_every_smaller_epsilon_failed_as_numpy_says(monkeypatch):
    rng = np.random.default_rng(7)
    x = rng.uniform(0.2, 0.8, size=(12, 2, 3, 1)).astype("float32")
    s = x.reshape(len(x), -1).astype("float64").sum(axis=1)
    y = np.where(np.cos(np.pi * s) > 0, 0, 1)
    y[0] = 1 - y[0]  # one image misclassified clean: it counts at no epsilon
    epsilons = [0.2, 0.05, 0.1, 0.3]  # any order: the table keeps it, the attack goes from the smallest up
    model, calls = _periodic_model(), _counting_gradients(monkeypatch)
    alone = adversarial_accuracy(model, x, y, "fgsm", epsilons=epsilons, loss="cross_entropy", batch_size=2)
    assert calls[0] == 6  # one shared first gradient per batch of 2
    calls[0] = 0
    cumulative = adversarial_accuracy(
        model, x, y, "fgsm", epsilons=epsilons, loss="cross_entropy", batch_size=2, cumulative=True
    )
    clean = np.where(np.cos(np.pi * s) > 0, 0, 1) == y
    assert calls[0] == int(np.ceil(clean.sum() / 2))  # each standing image's first gradient, computed once
    standing, expected = clean.copy(), {}
    for epsilon in sorted(epsilons):
        standing &= _periodic_fgsm_correct(x, y, epsilon)
        expected[epsilon] = standing.mean()
    assert [a for _, a in cumulative.table] == [expected[e] for e in epsilons]
    assert [a for _, a in alone.table] == [np.mean(_periodic_fgsm_correct(x, y, e)) for e in epsilons]
    assert any(a > c for (_, a), (_, c) in zip(alone.table, cumulative.table))  # the case cumulative exists for
    assert cumulative.cumulative and not alone.cumulative and "cumulative" in cumulative.describe_attack()


def test_cumulative_pgd_repeats_each_images_own_attack_and_attacks_only_the_standing_ones(monkeypatch):
    rng = np.random.default_rng(8)
    x = rng.uniform(0.2, 0.8, size=(10, 2, 3, 1)).astype("float32")
    y = np.where(np.cos(np.pi * x.reshape(len(x), -1).sum(axis=1)) > 0, 0, 1)
    model, epsilons, calls = _periodic_model(), [0.05, 0.1, 0.2], _counting_gradients(monkeypatch)
    result = adversarial_accuracy(
        model, x, y, "pgd", epsilons=epsilons, steps=3, loss="cross_entropy", batch_size=1, seed=4, cumulative=True
    )
    gradients, standing, attacked = calls[0], np.ones(len(x), bool), 0
    for epsilon, accuracy in result.table:  # each epsilon alone, the same seeded start per image
        attacked += int(standing.sum())
        images = adversarial_examples(model, x, y, "pgd", epsilon, steps=3, loss="cross_entropy", seed=4).images
        sums = images.reshape(len(x), -1).astype("float64").sum(axis=1)
        standing &= np.where(np.cos(np.pi * sums) > 0, 0, 1) == y
        assert accuracy == standing.mean(), epsilon
    assert (
        attacked < len(x) * len(epsilons) and gradients == 3 * attacked
    )  # 3 steps for each image standing at each epsilon, none for the others


def test_a_model_attacked_again_with_the_same_loss_reuses_its_traced_gradient_and_memory_line(monkeypatch):
    from keras_capsules.evaluation import adversarial, attack_memory

    builds, traces, build, trace = [], [], adversarial._loss_gradient, attack_memory.estimated_peak_bytes
    monkeypatch.setattr(adversarial, "_loss_gradient", lambda *a: builds.append(a[3:]) or build(*a))
    monkeypatch.setattr(attack_memory, "estimated_peak_bytes", lambda *a: traces.append(a[-1]) or trace(*a))
    model = _linear("softmax")
    first = adversarial_accuracy(model, X, Y, "fgsm", epsilons=[0.1], loss="cross_entropy")
    again = adversarial_accuracy(model, X[:4], Y[:4], "pgd", epsilons=[0.1], loss="cross_entropy", steps=2)
    assert len(builds) == 1  # one traced gradient for both attacks (the slices of a test set, FGSM then PGD)
    if keras.backend.backend() == "tensorflow":
        assert traces == [4, 8]  # the memory line traced once, at its two probe batches
    assert (first.batch_size, again.batch_size) == (6, 4)  # planned for each call's images from the one line
    adversarial_accuracy(model, X, Y, "fgsm", epsilons=[0.1], loss="margin")
    assert len(builds) == 2  # another loss: its own gradient
    other = _linear("softmax")
    adversarial_accuracy(other, X, Y, "fgsm", epsilons=[0.1], loss="cross_entropy")
    assert len(builds) == 3  # another model: its own
    np.testing.assert_allclose(  # and the reused gradient is the NumPy one
        adversarial_examples(model, X, Y, epsilon=0.1, loss="cross_entropy").images,
        np.clip(X + 0.1 * np.sign(_softmax_cross_entropy_gradient(X)), 0, 1),
        atol=1e-6,
    )
    assert len(builds) == 3
