"""Capsule-network losses (backend-agnostic ``keras.ops``)."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.heads import class_mask
from keras_capsules.serialization import register


@register
class MarginLoss(keras.losses.Loss):
    """Margin loss of Sabour et al. (2017), summed over classes, averaged over the batch.

    ``L_k = T_k max(0, m+ - |v_k|)^2 + lambda (1 - T_k) max(0, |v_k| - m-)^2``.

    ``y_true`` is class indices ``(batch,)``/``(batch, 1)`` or one-/multi-hot ``(batch, classes)``;
    ``y_pred`` is the class-capsule lengths ``(batch, classes)``.

    The official TF code (Sarasra) computes **half** of this (``0.5 * [...]``, written with
    logits - 0.5 and margin 0.4); pass ``scale=0.5`` for that. EscVM, XifengGuo and REM use the
    paper form (``scale=1``, the default).

    Args:
        m_plus: ``m+`` (0.9). m_minus: ``m-`` (0.1). lambda_: down-weighting of absent classes (0.5).
        scale: overall factor (1.0; the official code's value is 0.5).
    """

    def __init__(self, m_plus=0.9, m_minus=0.1, lambda_=0.5, scale=1.0, name="margin_loss", reduction="sum_over_batch_size", **kwargs):
        super().__init__(name=name, reduction=reduction, **kwargs)
        self.m_plus = float(m_plus)
        self.m_minus = float(m_minus)
        self.lambda_ = float(lambda_)
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        y_pred = ops.cast(y_pred, "float32")
        targets = class_mask(y_true, y_pred.shape[-1], "float32")
        present = targets * ops.square(ops.relu(self.m_plus - y_pred))
        absent = self.lambda_ * (1.0 - targets) * ops.square(ops.relu(y_pred - self.m_minus))
        return self.scale * ops.sum(present + absent, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update({"m_plus": self.m_plus, "m_minus": self.m_minus, "lambda_": self.lambda_, "scale": self.scale})
        return config


def reconstruction_loss(images, reconstructions, pixel_reduction="sum"):
    """Per-example squared reconstruction error.

    Args:
        images: ``(batch, *image_shape)`` targets in [0, 1].
        reconstructions: same shape.
        pixel_reduction: ``"sum"`` (Sabour: sum of squared errors) or ``"mean"`` (EscVM, XifengGuo: MSE).

    Returns:
        ``(batch,)`` float32. The paper weight is 0.0005 on the sum (= 0.392 on the mean for 784 pixels).
    """
    errors.check_one_of("reconstruction_loss", "pixel_reduction", pixel_reduction, ("sum", "mean"))
    diff = ops.square(ops.cast(images, "float32") - ops.cast(reconstructions, "float32"))
    axes = tuple(range(1, len(diff.shape)))
    return ops.sum(diff, axis=axes) if pixel_reduction == "sum" else ops.mean(diff, axis=axes)
