"""``CapsuleClassifier``: a capsule network with a label-masked reconstruction decoder that trains with plain ``fit``."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.heads import Mask
from keras_capsules.losses import reconstruction_loss
from keras_capsules.serialization import register


@register
class ReconstructionLoss(keras.losses.Loss):
    """``weight * squared reconstruction error`` per example (``"sum"`` over pixels: Sabour; ``"mean"``: EscVM).

    ``y_true`` are images, ``y_pred`` reconstructions, both ``(batch, *image_shape)``.
    """

    def __init__(self, weight=0.0005, pixel_reduction="sum", name="reconstruction_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.weight = float(weight)
        self.pixel_reduction = pixel_reduction

    def call(self, y_true, y_pred):
        return self.weight * reconstruction_loss(y_true, y_pred, self.pixel_reduction)

    def get_config(self):
        config = super().get_config()
        config.update({"weight": self.weight, "pixel_reduction": self.pixel_reduction})
        return config


@register
class CapsuleClassifier(keras.Model):
    """Capsule classifier whose reconstruction regulariser lives in the loss, so ``fit(images, labels)`` works.

    ``model(x)`` / ``predict`` return the class scores ``(batch, classes)``. In training
    (``model(x, training=True)``) it returns ``(scores, class_poses)`` and :meth:`compute_loss` adds
    ``reconstruction_weight * error(x, decoder(mask(class_poses, y)))`` to the compiled loss (the
    decoder sees the true class only, as in the papers). :meth:`reconstruct` gives reconstructions
    at inference (masked by the longest capsule(s) unless labels are given). Validation losses from
    ``evaluate`` are the compiled loss only.

    Args:
        encoder: a model mapping images to ``(scores, class_poses)`` with class poses
            ``(batch, classes, capsule_dim)``.
        decoder: a layer mapping ``(batch, classes * capsule_dim)`` to images shaped like the input.
        reconstruction_weight: weight of the reconstruction term (0.0005 with ``"sum"``; 0.392 with ``"mean"``).
        pixel_reduction: ``"sum"`` or ``"mean"`` over pixels.
        mask_top_k: capsules kept by :meth:`reconstruct` without labels (2 for MultiMNIST).
    """

    def __init__(self, encoder, decoder, reconstruction_weight=0.0005, pixel_reduction="sum", mask_top_k=1, **kwargs):
        super().__init__(**kwargs)
        errors.check_one_of(self, "pixel_reduction", pixel_reduction, ("sum", "mean"))
        if len(encoder.outputs) != 2:
            errors.fail(self, "encoder", "a model with two outputs (scores, class_poses)", f"{len(encoder.outputs)} outputs")
        self.encoder = encoder
        self.decoder = decoder
        self.reconstruction_weight = float(reconstruction_weight)
        self.pixel_reduction = pixel_reduction
        self.mask_top_k = mask_top_k
        self.class_mask = Mask(top_k=mask_top_k, name="mask")
        self.reconstruction = ReconstructionLoss(reconstruction_weight, pixel_reduction)

    def build(self, input_shape):
        if not self.decoder.built:
            poses_shape = self.encoder.outputs[1].shape
            self.decoder.build((None, poses_shape[1] * poses_shape[2]))
        self.built = True

    def build_from_config(self, config):
        super().build_from_config(config)
        self.trace()

    def trace(self):
        """Calls the model once symbolically: ``model.export()`` requires a subclassed model to have been called."""
        self(keras.KerasTensor((None,) + tuple(self.encoder.inputs[0].shape[1:]), dtype=self.encoder.inputs[0].dtype))

    def call(self, inputs, training=None):
        scores, poses = self.encoder(inputs, training=training)
        if training:
            return scores, poses
        return scores

    def reconstruct(self, images, labels=None):
        """Reconstructions ``(batch, *image_shape)``, masked by ``labels`` or else by the ``mask_top_k`` highest scores.

        Selecting by score (not pose length) also works for routers whose poses are normalised.
        """
        scores, poses = self.encoder(images, training=False)
        if labels is None:
            _, top = ops.top_k(scores, k=self.mask_top_k)
            labels = ops.sum(ops.one_hot(top, scores.shape[-1], dtype=poses.dtype), axis=1)
        return self.decoder(self.class_mask(poses, labels), training=False)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        scores, poses = y_pred if isinstance(y_pred, (tuple, list)) else (y_pred, None)
        loss = super().compute_loss(x, y, scores, sample_weight, training=training)
        if poses is not None and y is not None and self.reconstruction_weight > 0:
            images = self.decoder(self.class_mask(poses, y), training=training)
            loss = loss + self.reconstruction(x, images, sample_weight)
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        scores = y_pred[0] if isinstance(y_pred, (tuple, list)) else y_pred
        return super().compute_metrics(x, y, scores, sample_weight)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "decoder": keras.saving.serialize_keras_object(self.decoder),
            "reconstruction_weight": self.reconstruction_weight,
            "pixel_reduction": self.pixel_reduction,
            "mask_top_k": self.mask_top_k,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        config["decoder"] = keras.saving.deserialize_keras_object(config["decoder"])
        return cls(**config)
