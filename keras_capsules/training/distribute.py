"""Distribution strategies (TensorFlow backend): ``"default"``, ``"mirrored"`` and ``"multi_worker"``.

- ``"mirrored"``: ``tf.distribute.MirroredStrategy`` over the local GPUs (or, with none, every logical
  CPU device, reduced on one device), trained with Keras ``fit``.
- ``"multi_worker"``: ``tf.distribute.MultiWorkerMirroredStrategy`` across processes or machines, set
  up from ``TF_CONFIG``; trained with :func:`~keras_capsules.training.custom_loop.fit_custom_loop`,
  because Keras 3's ``fit`` fails under it (keras-team/keras#20585). See ``docs/distributed.md``.

Typical use::

    strategy = get_strategy("mirrored")
    with strategy.scope():
        model = EffCapsNet(); model.compile(optimizer="adam", loss=MarginLoss(), metrics=["accuracy"])
    distributed_fit(model, dataset, epochs=3)   # model.fit, or the custom loop under multi_worker
"""

import json
import os

import tensorflow as tf

from keras_capsules import errors
from keras_capsules.training.custom_loop import evaluate_custom_loop, fit_custom_loop

STRATEGIES = ("default", "mirrored", "multi_worker")


def _check_tf_config():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None
    try:
        config = json.loads(raw)
        cluster, task = config["cluster"], config["task"]
        task_type, index = task["type"], int(task["index"])
        members = cluster[task_type]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            "get_strategy: environment variable `TF_CONFIG` expected JSON like "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}, '
            f"received {raw!r} ({error})."
        ) from None
    if not 0 <= index < len(members):
        raise ValueError(
            f"get_strategy: TF_CONFIG task index {index} is outside the {len(members)} {task_type!r} addresses {members}."
        )
    return config


def get_strategy(name="default", devices=None):
    """A ``tf.distribute.Strategy`` by name (a strategy instance passes through).

    Args:
        name: ``"default"``, ``"mirrored"`` or ``"multi_worker"``.
        devices: ``"mirrored"`` only: device names (default: all GPUs, else all logical CPUs).

    Raises:
        ValueError: an unknown name, or a malformed ``TF_CONFIG`` for ``"multi_worker"``.
    """
    if isinstance(name, tf.distribute.Strategy):
        return name
    errors.check_one_of("get_strategy", "name", name, STRATEGIES)
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        if devices is None:
            devices = [d.name for d in tf.config.list_logical_devices("GPU")] or [
                d.name for d in tf.config.list_logical_devices("CPU")
            ]
        if all("GPU" not in str(d).upper() for d in devices):
            # On CPUs the default collective all-reduce keys its ops by device group, so two MirroredStrategy
            # objects in one process collide ("Shape mismatch in the collective instance 100"); reducing on
            # one device has no such shared state.
            return tf.distribute.MirroredStrategy(devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
        return tf.distribute.MirroredStrategy(devices)
    _check_tf_config()  # without TF_CONFIG: a single local worker
    return tf.distribute.MultiWorkerMirroredStrategy()


def is_multi_worker(strategy):
    """Whether ``strategy`` is a ``MultiWorkerMirroredStrategy`` (trained with the custom loop)."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def worker_index(strategy):
    """``(task_id, is_chief)`` of this process: ``(0, True)`` outside multi-worker training.

    The chief is the ``"chief"`` task, or worker 0 when the cluster has no chief.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if not is_multi_worker(strategy) or resolver is None or not resolver.task_type:
        return 0, True
    task_type, task_id = resolver.task_type, int(resolver.task_id or 0)
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_id, task_type == "chief" or (task_type == "worker" and task_id == 0 and not has_chief)


def distributed_fit(
    model,
    dataset,
    epochs=1,
    strategy=None,
    steps_per_epoch=None,
    initial_epoch=0,
    callbacks=None,
    verbose="auto",
    validation_data=None,
):
    """Trains ``model`` under its strategy: Keras ``fit``, or the custom loop under ``MultiWorkerMirroredStrategy``.

    The model must have been built and compiled inside ``strategy.scope()``; ``dataset`` yields global
    batches; ``validation_data`` (optional, finite) is evaluated after every epoch (``val_*`` logs).
    Returns the ``History``.
    """
    strategy = strategy or model.distribute_strategy
    if is_multi_worker(strategy):
        verbose = 1 if verbose == "auto" else verbose
        return fit_custom_loop(
            model, dataset, epochs, strategy, steps_per_epoch, initial_epoch, callbacks, verbose, validation_data
        )
    return model.fit(
        dataset,
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        initial_epoch=initial_epoch,
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,
        validation_data=validation_data,
    )


def distributed_evaluate(model, dataset, strategy=None, verbose="auto"):
    """Compiled loss and metrics of ``model`` on ``dataset`` as a dict (``evaluate``, or a distributed loop under multi-worker).

    The multi-worker loop visits every global batch once (the last one may be partial), so all
    workers see the same numbers.
    """
    strategy = strategy or model.distribute_strategy
    if not is_multi_worker(strategy):
        return {k: float(v) for k, v in model.evaluate(dataset, return_dict=True, verbose=verbose).items()}
    return evaluate_custom_loop(model, dataset, strategy)
