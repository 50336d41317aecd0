"""GLOM training heads (docs/reference/glom.md#heads-and-training): the contrastive projection head H1 and the classifier head H2."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.layers.glom import _utils
from keras_capsules.ops.norms import limit_magnitude
from keras_capsules.serialization import register


@register
class ContrastiveHead(keras.layers.Layer):
    """H1: tokens to an L2-normalised projection for the supervised contrastive loss.

    ``LN(d) -> Dropout -> flatten (n*d) -> LN -> Dropout -> Linear(n*d -> hidden) -> LN -> GELU -> LN
    -> Dropout -> Linear(hidden -> projection_dim) -> L2-normalise``, as in the code (``hidden`` is the
    flattened size ``n*d`` there: 512 after ``H_d``, 8,192 with the 64 tokens of the no-``H_d``
    baseline, which is why that model has 72M parameters). LayerNorm epsilon is PyTorch's 1e-5; GELU
    is the exact form.

    Input: tokens ``(batch, n, d)``. Output: ``(batch, projection_dim)`` with unit L2 norm.

    Parameters: ``2d + 2*(n*d) + 4*hidden + (n*d+1)*hidden + (hidden+1)*projection_dim``
    (528,640 for n = 4, d = 128, hidden = projection_dim = 512).

    Args:
        projection_dim: output size (code ``contr_dim``: 512).
        hidden_dim: hidden width; ``None`` is the flattened input size ``n*d`` (code).
        dropout: dropout rate (code: 0.3).
        normalize: L2-normalise the output (code: yes).
        epsilon: LayerNorm epsilon.
    """

    def __init__(
        self,
        projection_dim: int = 512,
        hidden_dim: int | None = None,
        dropout: float = 0.3,
        normalize: bool = True,
        epsilon: float = 1e-5,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.projection_dim = errors.check_positive_int(self, "projection_dim", projection_dim)
        self.hidden_dim = None if hidden_dim is None else errors.check_positive_int(self, "hidden_dim", hidden_dim)
        if not 0.0 <= float(dropout) < 1.0:
            errors.fail(self, "dropout", "a rate in [0, 1)", dropout)
        self.dropout = float(dropout)
        self.normalize = bool(normalize)
        self.epsilon = float(epsilon)
        ln = dict(epsilon=self.epsilon, dtype=self.dtype_policy)
        self.token_norm = keras.layers.LayerNormalization(name="token_norm", **ln)
        self.token_dropout = keras.layers.Dropout(self.dropout, name="token_dropout", dtype=self.dtype_policy)
        self.flatten = keras.layers.Flatten(name="flatten", dtype=self.dtype_policy)
        self.flat_norm = keras.layers.LayerNormalization(name="flat_norm", **ln)
        self.flat_dropout = keras.layers.Dropout(self.dropout, name="flat_dropout", dtype=self.dtype_policy)
        self.hidden_norm = keras.layers.LayerNormalization(name="hidden_norm", **ln)
        self.activation_norm = keras.layers.LayerNormalization(name="activation_norm", **ln)
        self.hidden_dropout = keras.layers.Dropout(self.dropout, name="hidden_dropout", dtype=self.dtype_policy)
        self.hidden = None
        self.projection = keras.layers.Dense(self.projection_dim, name="projection", dtype=self.dtype_policy)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 3, "(batch, tokens, d)")
        if input_shape[1] is None or input_shape[2] is None:
            errors.fail(self, "inputs", "tokens with known n and d", f"shape {tuple(input_shape)}")
        flat = input_shape[1] * input_shape[2]
        hidden = flat if self.hidden_dim is None else self.hidden_dim
        self.hidden = keras.layers.Dense(hidden, name="hidden", dtype=self.dtype_policy)
        self.token_norm.build(input_shape)
        self.flat_norm.build((None, flat))
        self.hidden.build((None, flat))
        self.hidden_norm.build((None, hidden))
        self.activation_norm.build((None, hidden))
        self.projection.build((None, hidden))

    def call(self, inputs, training=None):
        inputs = as_float(self, inputs)
        # LayerNorm is scale-invariant; Keras' overflows (returns 0) for tokens beyond ~1e19.
        x = self.token_dropout(self.token_norm(limit_magnitude(inputs)), training=training)
        x = self.flat_dropout(self.flat_norm(self.flatten(x)), training=training)
        x = ops.gelu(self.hidden_norm(self.hidden(x)), approximate=False)
        x = self.projection(self.hidden_dropout(self.activation_norm(x), training=training))
        if self.normalize:
            x = ops.cast(_utils.l2_normalize(x), inputs.dtype)
        return x

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.projection_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "projection_dim": self.projection_dim,
                "hidden_dim": self.hidden_dim,
                "dropout": self.dropout,
                "normalize": self.normalize,
                "epsilon": self.epsilon,
            }
        )
        return config


@register
class ClassifierHead(keras.layers.Layer):
    """H2: ``Linear(c -> hidden) -> GELU -> Linear(hidden -> classes)`` on the (frozen) projection.

    The code's ``classification_head_from_contr`` (the paper says "a linear layer"; ``hidden_dim=0``
    gives that single linear layer). Outputs logits.

    Input: ``(batch, c)``. Output: ``(batch, classes)``.

    Parameters: ``(c+1)*hidden + (hidden+1)*classes`` (267,786 for c = hidden = 512, 10 classes).

    Args:
        classes: number of classes.
        hidden_dim: hidden width; ``None`` is the input size (code); 0 for a single linear layer.
    """

    def __init__(self, classes: int, hidden_dim: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.classes = errors.check_positive_int(self, "classes", classes)
        self.hidden_dim = (
            None if hidden_dim is None else errors.check_positive_int(self, "hidden_dim", hidden_dim, minimum=0)
        )
        self.hidden = None
        self.logits = keras.layers.Dense(self.classes, name="logits", dtype=self.dtype_policy)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 2, "(batch, features)")
        hidden = input_shape[-1] if self.hidden_dim is None else self.hidden_dim
        shape = tuple(input_shape)
        if hidden:
            self.hidden = keras.layers.Dense(hidden, name="hidden", dtype=self.dtype_policy)
            self.hidden.build(shape)
            shape = (None, hidden)
        self.logits.build(shape)

    def call(self, inputs):
        x = inputs
        if self.hidden is not None:
            x = ops.gelu(self.hidden(x), approximate=False)
        return self.logits(x)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.classes)

    def get_config(self):
        config = super().get_config()
        config.update({"classes": self.classes, "hidden_dim": self.hidden_dim})
        return config
