"""The epoch's time, estimated after a few steady steps of the first epoch (:class:`EpochTimeEstimate`)."""

import time

import keras

from keras_capsules import errors


def format_seconds(seconds: float) -> str:
    """``"2 h 05 min"``, ``"12 min 30 s"``, ``"45.2 s"``."""
    if seconds >= 3600:
        hours, rest = divmod(round(seconds / 60), 60)
        return f"{hours} h {rest:02d} min"
    if seconds >= 60:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    return f"{seconds:.1f} s"


class EpochTimeEstimate(keras.callbacks.Callback):
    """Prints the estimated time of an epoch once the first epoch's steps settle.

    The first ``warmup`` steps (tracing, first-call costs) are left out; the next ``steps`` are timed
    from the end of one to the end of the next (the input pipeline included), and their mean times
    the steps per epoch is printed once, and kept in :attr:`epoch_seconds`. Steps are the batches
    Keras reports (with ``steps_per_execution > 1``, executions).

    Args:
        steps_per_epoch: steps per epoch (default: what ``fit`` reports, ``params["steps"]``).
        warmup: steps left out, at least 1.
        steps: steps timed, at least 1.
        print_fn: where the line goes.
        clock: seconds now (``time.perf_counter``).
    """

    def __init__(self, steps_per_epoch=None, warmup=3, steps=5, print_fn=print, clock=time.perf_counter):
        super().__init__()
        self.steps_per_epoch = (
            None if steps_per_epoch is None else errors.check_positive_int(self, "steps_per_epoch", steps_per_epoch)
        )
        self.warmup = errors.check_positive_int(self, "warmup", warmup)
        self.steps = errors.check_positive_int(self, "steps", steps)
        self.print_fn, self.clock = print_fn, clock
        self.ends, self.epoch_seconds, self.step_seconds = [], None, None

    def on_epoch_begin(self, epoch, logs=None):
        self.ends = []

    def on_train_batch_end(self, batch, logs=None):
        if self.step_seconds is not None:
            return
        self.ends.append(self.clock())
        if len(self.ends) < self.warmup + self.steps:
            return
        start = self.ends[self.warmup - 1]
        self.step_seconds = (self.ends[-1] - start) / self.steps
        steps = self.steps_per_epoch or (self.params or {}).get("steps")
        timed = f"mean step {self.step_seconds:.3g} s over steps {self.warmup + 1}-{self.warmup + self.steps}"
        if steps:
            self.epoch_seconds = self.step_seconds * steps
            self.print_fn(
                f"Estimated epoch time: {format_seconds(self.epoch_seconds)} ({timed}, {steps:,} steps per epoch)"
            )
        else:
            self.print_fn(f"Estimated step time: {self.step_seconds:.3g} s ({timed}; steps per epoch unknown)")
