"""``CapsuleClassifier``: the functional model every application returns, with an optional label-masked reconstruction decoder that trains with plain ``fit``."""

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
    """The model every application constructor returns: a functional model, with an optional reconstruction decoder.

    It is a functional ``keras.Model`` (``model.layers``, ``get_layer``, ``inputs``/``outputs`` and
    ``keras.Model(model.inputs, ...)`` work as for any Keras Application), built from
    ``inputs`` and ``outputs``: the class scores (output layer ``"predictions"``) or, for
    ``include_top=False``, the features. ``model(x)`` / ``predict`` return those outputs.

    With a ``decoder``, the label-masked reconstruction regulariser lives in the loss, so
    ``fit(images, labels)`` works: in training (``model(x, training=True)``) the model returns
    ``(scores, class_poses)`` (the poses are the first output of layer ``class_capsules``) and
    :meth:`compute_loss` adds ``reconstruction_weight * error(x, decoder(mask(class_poses, y)))`` to
    the compiled loss (the decoder sees the true class only, as in the papers). :meth:`reconstruct`
    gives reconstructions at inference. Validation losses from ``evaluate`` are the compiled loss
    only. The decoder is listed in ``model.layers`` (after the graph's layers).

    Args:
        inputs, outputs: as for a functional ``keras.Model``.
        decoder: ``None`` or a layer mapping ``(batch, classes * capsule_dim)`` to images shaped like the input.
        class_capsules: name of the layer whose first output is the class poses
            ``(batch, classes, capsule_dim)`` that the decoder reads.
        reconstruction_weight: weight of the reconstruction term (0.0005 with ``"sum"``; 0.392 with ``"mean"``).
        pixel_reduction: ``"sum"`` or ``"mean"`` over pixels.
        mask_top_k: capsules kept by :meth:`reconstruct` without labels (2 for MultiMNIST).
        name: model name.
    """

    def __init__(
        self, *args, decoder=None, class_capsules="class_caps", reconstruction_weight=0.0005, pixel_reduction="sum", mask_top_k=1, **kwargs
    ):
        super().__init__(*args, **kwargs)
        errors.check_one_of(self, "pixel_reduction", pixel_reduction, ("sum", "mean"))
        if isinstance(decoder, dict):
            decoder = keras.saving.deserialize_keras_object(decoder)
        if decoder is not None and not isinstance(decoder, keras.layers.Layer):
            errors.fail(self, "decoder", "None or a Keras layer", type(decoder).__name__, TypeError)
        self.class_capsules = class_capsules
        self.reconstruction_weight = float(reconstruction_weight)
        self.pixel_reduction = pixel_reduction
        self.mask_top_k = mask_top_k
        self.class_mask = Mask(top_k=mask_top_k, name="mask")
        self.reconstruction = ReconstructionLoss(reconstruction_weight, pixel_reduction)
        self.decoder = decoder
        self.scores_and_poses = None
        if decoder is not None:
            layer_names = [layer.name for layer in super().layers]
            if class_capsules not in layer_names:
                errors.fail(self, "class_capsules", f"the name of a layer of the model ({layer_names})", class_capsules)
            poses = keras.tree.flatten(self.get_layer(class_capsules).output)[0]
            if len(poses.shape) != 3:
                errors.fail(self, "class_capsules", "a layer whose first output is class poses (batch, classes, capsule_dim)", class_capsules)
            # A second view of the same graph (shared layers, no new weights): scores and class poses in one pass.
            self.scores_and_poses = keras.Function(self.input, [keras.tree.flatten(self.outputs)[0], poses], name=f"{self.name}_with_poses")
            if not decoder.built:
                decoder.build((None, poses.shape[1] * poses.shape[2]))

    @property
    def layers(self):
        layers = super().layers
        decoder = getattr(self, "decoder", None)
        return layers + [decoder] if decoder is not None else layers

    def call(self, inputs, training=None, mask=None):
        if training and self.decoder is not None:
            scores, poses = self.scores_and_poses(inputs)
            return scores, poses
        return super().call(inputs, training=training, mask=mask)

    def reconstruct(self, images, labels=None):
        """Reconstructions ``(batch, *image_shape)``, masked by ``labels`` or else by the ``mask_top_k`` highest scores.

        Selecting by score (not pose length) also works for routers whose poses are normalised.

        Raises:
            ValueError: the model has no decoder.
        """
        if self.decoder is None:
            errors.fail(self, "decoder", "a decoder for reconstruct() (build the model with reconstruction=True)", None)
        scores, poses = self.scores_and_poses(ops.convert_to_tensor(images))
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
        config = super().get_config()
        config.update(
            {
                "decoder": None if self.decoder is None else keras.saving.serialize_keras_object(self.decoder),
                "class_capsules": self.class_capsules,
                "reconstruction_weight": self.reconstruction_weight,
                "pixel_reduction": self.pixel_reduction,
                "mask_top_k": self.mask_top_k,
            }
        )
        return config
