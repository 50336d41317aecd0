"""A custom training loop for ``tf.distribute.MultiWorkerMirroredStrategy`` (TensorFlow backend).

Keras 3's ``fit`` fails under ``MultiWorkerMirroredStrategy`` (keras-team/keras#20585: ``strategy.reduce``
on ``PerReplica`` batches in ``_maybe_symbolic_build``, then ``Invalid reduction dimension 0`` on scalar
losses). :func:`fit_custom_loop` trains with the model's own compiled loss and metrics instead: every
step runs ``model.compute_loss`` (so :class:`~keras_capsules.applications.CapsuleClassifier` adds its
reconstruction term, and ``model.losses`` regularisers count) and ``model.compute_metrics`` inside
``strategy.run``; the optimizer all-reduces the gradients. Keras callbacks (checkpoints, the spread
margin schedule, progress bars) receive the usual events.

Loss scaling: under a strategy Keras' ``compute_loss`` already divides the per-replica mean loss by
the number of replicas, so the summed gradients are those of the global-batch mean.

Non-trainable state: Keras updates BatchNormalization moving statistics on each replica from its
own batch without synchronisation, so workers would drift apart. After every epoch the loop
replaces every floating-point non-trainable variable by its mean over all replicas
(:func:`non_trainable_synchronizer`), so all workers hold bit-identical weights at every checkpoint.
"""

import keras
import tensorflow as tf

from keras_capsules import errors


def _steps(dataset, steps_per_epoch, what):
    if steps_per_epoch is not None:
        return errors.check_positive_int(what, "steps_per_epoch", steps_per_epoch)
    steps = int(dataset.cardinality())
    if steps <= 0:
        errors.fail(
            what, "steps_per_epoch", "a positive integer for a dataset of unknown or infinite length", steps_per_epoch
        )
    return steps


def distribute(dataset, strategy):
    """An infinite distributed iterator over ``dataset`` (batched at the global batch size), sharded by data."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return iter(strategy.experimental_distribute_dataset(dataset.with_options(options).repeat()))


def non_trainable_synchronizer(model, strategy):
    """A function that sets every floating-point non-trainable variable of ``model`` to its mean over all replicas."""
    variables = [v for v in model.non_trainable_variables if v.dtype in ("float16", "bfloat16", "float32", "float64")]
    if not variables or strategy.num_replicas_in_sync == 1:
        return lambda: None

    def average():
        context = tf.distribute.get_replica_context()
        means = context.all_reduce(tf.distribute.ReduceOp.MEAN, [tf.identity(v.value) for v in variables])
        for variable, mean in zip(variables, means):
            variable.assign(mean)

    return tf.function(lambda: strategy.run(average))


def evaluate_custom_loop(model, dataset, strategy):
    """Compiled loss and metrics of ``model`` on ``dataset`` under ``strategy`` as a dict (every global batch once).

    The last batch may be partial, so all workers see the same numbers.
    """
    steps = int(dataset.cardinality())
    if steps <= 0:
        errors.fail("evaluate_custom_loop", "dataset", "a finite dataset of known length", f"cardinality {steps}")
    with strategy.scope():
        loss_tracker = keras.metrics.Mean(name="loss")
    iterator = distribute(dataset, strategy)

    def step(data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        y_pred = model(x, training=False)
        loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)
        model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)
        replicas = tf.cast(tf.distribute.get_strategy().num_replicas_in_sync, loss.dtype)
        loss_tracker.update_state(loss * replicas, sample_weight=tf.shape(tf.nest.flatten(x)[0])[0])

    @tf.function
    def test_step():
        strategy.run(step, args=(next(iterator),))

    model.reset_metrics()
    for _ in range(steps):
        test_step()
    results = {name: float(value) for name, value in model.get_metrics_result().items() if name != "loss"}
    return {"loss": float(loss_tracker.result()), **results}


def fit_custom_loop(
    model,
    dataset,
    epochs=1,
    strategy=None,
    steps_per_epoch=None,
    initial_epoch=0,
    callbacks=None,
    verbose=1,
    validation_data=None,
):
    """Trains a compiled ``model`` on ``dataset`` under ``strategy`` with a custom loop.

    Build and compile the model inside ``strategy.scope()``. Every worker must run the same call with
    the same ``dataset`` pipeline (batched at the global batch size; each step consumes one global
    batch, split over all replicas of all workers).

    Args:
        model: a compiled Keras model.
        dataset: a ``tf.data.Dataset`` of ``(x, y)`` or ``(x, y, sample_weight)`` batches.
        epochs: index of the last epoch (as in ``fit``).
        strategy: the ``tf.distribute`` strategy (default: the model's).
        steps_per_epoch: steps per epoch (default: the dataset's cardinality; every worker runs the
            same number of steps, so collective operations never wait for a worker that stopped).
        initial_epoch: epoch to start from (resumed training).
        callbacks: Keras callbacks.
        verbose: 0 silent, 1 progress bar, 2 one line per epoch.
        validation_data: a finite ``tf.data.Dataset`` evaluated after every epoch (``val_*`` logs), or ``None``.

    Returns:
        The ``keras.callbacks.History`` of the run.
    """
    strategy = strategy or model.distribute_strategy
    if getattr(model, "optimizer", None) is None or not model.compiled:
        errors.fail("fit_custom_loop", "model", "a compiled model", model.name)
    steps = _steps(dataset, steps_per_epoch, "fit_custom_loop")
    with strategy.scope():
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        loss_tracker = keras.metrics.Mean(name="loss")
    iterator = distribute(dataset, strategy)
    variables = model.trainable_variables
    synchronize = non_trainable_synchronizer(model, strategy)

    def step(data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
            scaled = model.optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled, variables)
        model.optimizer.apply_gradients(zip(gradients, variables))
        model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)
        # compute_loss divided by the replica count; the tracker averages the per-replica means.
        replicas = tf.cast(tf.distribute.get_strategy().num_replicas_in_sync, loss.dtype)
        loss_tracker.update_state(loss * replicas, sample_weight=tf.shape(tf.nest.flatten(x)[0])[0])

    @tf.function
    def train_step():
        strategy.run(step, args=(next(iterator),))

    def results():
        logs = {name: value for name, value in model.get_metrics_result().items() if name != "loss"}
        return {"loss": float(loss_tracker.result()), **{k: float(v) for k, v in logs.items()}}

    callback_list = keras.callbacks.CallbackList(
        callbacks, add_history=True, add_progbar=verbose != 0, model=model, verbose=verbose, epochs=epochs, steps=steps
    )
    model.stop_training = False
    callback_list.on_train_begin()
    logs = {}
    for epoch in range(initial_epoch, epochs):
        model.reset_metrics()
        loss_tracker.reset_state()
        callback_list.on_epoch_begin(epoch)
        for batch in range(steps):
            callback_list.on_train_batch_begin(batch)
            train_step()
            callback_list.on_train_batch_end(batch, results() if verbose == 1 else None)
        synchronize()
        logs = results()
        if validation_data is not None:
            logs.update(
                {f"val_{name}": value for name, value in evaluate_custom_loop(model, validation_data, strategy).items()}
            )
        callback_list.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    callback_list.on_train_end(logs)
    return model.history
