"""Shared timing helpers for the benchmarks (wall-clock medians; no assertions)."""

import functools
import importlib.util
import json
import os
import platform
import resource
import statistics
import time

import keras
import numpy as np


@functools.cache
def repository_host():
    """This repository's ``keras_capsules/host.py`` (:mod:`keras_capsules.host`), loaded from its file: a run with
    ``--before`` measures an earlier ``keras_capsules`` first on its path, which may have no host module, and the
    host is named the same way whichever package a run measures."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "keras_capsules", "host.py")
    spec = importlib.util.spec_from_file_location("_repository_host", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_description(cpuinfo):
    """The CPU's model from the text of ``/proc/cpuinfo`` (:func:`keras_capsules.host.cpu_name`), followed by
    ``without AVX-512`` where its flags lack ``avx512f``: TensorFlow's CPU kernels differ there (oneDNN
    stays off), so it is another kind of host."""
    host = repository_host()
    cpu, flags = host.cpu_name(cpuinfo), host.cpu_flags(cpuinfo)
    return cpu + " without AVX-512" if flags and "avx512f" not in flags else cpu


def cpu():
    """This machine's CPU: :func:`cpu_description` of ``/proc/cpuinfo``, or the platform's name where there is none."""
    return cpu_description(repository_host().cpuinfo())


def backend_framework():
    """The framework under Keras's backend and its version, e.g. ``"PyTorch 2.11.0"``."""
    backend = keras.backend.backend()
    name = {"jax": "JAX", "torch": "PyTorch", "tensorflow": "TensorFlow"}.get(backend, backend)
    return f"{name} {__import__(backend).__version__}"


def machine_description():
    """One line describing the machine the numbers come from: :func:`cpu`, cores and software (the backend's
    framework instead of TensorFlow where TensorFlow is not installed, as on the accelerator machines)."""
    try:
        import tensorflow as tf

        framework = f"TensorFlow {tf.__version__}{onednn_state()}"
    except ImportError:
        framework = f"{backend_framework()}, no TensorFlow"
    return (
        f"{cpu()}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, "
        f"{framework}, Keras {keras.__version__}, backend {keras.backend.backend()}"
    )


def onednn_state():
    """``" (oneDNN on)"`` or ``" (oneDNN off)"``: whether TensorFlow runs its oneDNN CPU kernels in this process
    (on by default on CPUs with AVX-512 VNNI/BF16 or AMX, off with ``TF_ENABLE_ONEDNN_OPTS=0``); ``""`` when it
    cannot tell (the flag is TensorFlow's private API)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:
        return ""
    return " (oneDNN on)" if _pywrap_util_port.IsMklEnabled() else " (oneDNN off)"


class _StepTimer(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.times = []

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter() - self._start)


class _RecipeStepTimer(_StepTimer):
    """Step times, and this process's resource usage when step ``skip`` begins."""

    def __init__(self, skip):
        super().__init__()
        self.skip, self.usage = skip, None

    def on_train_batch_begin(self, batch, logs=None):
        if batch == self.skip:
            self.usage = resource.getrusage(resource.RUSAGE_SELF)
        super().on_train_batch_begin(batch, logs)


def recipe_steps(model, dataset, variant, batch_size, steps, skip, data_dir=None, **train_kwargs):
    """Trains ``steps`` steps of ``model``'s ``variant`` recipe on ``dataset`` in this process
    (:func:`keras_capsules.training.train` with ``train_kwargs``: no validation hold-out, nothing saved or exported).

    Returns:
        Over the steps after the first ``skip`` (tracing and first calls): ``median_step_seconds``, and per step
        ``user_seconds`` and ``system_seconds`` of CPU time (both cores) and ``minor_faults``; ``steps`` timed, the
        process's ``peak_rss_mib`` and whether the step rematerialised (``recompute``, the run's record).
    """
    import tempfile

    from keras_capsules.training import train

    timer = _RecipeStepTimer(skip)
    arguments = {"memory_check": "off", **train_kwargs}  # no memory plan unless asked (recompute="auto" needs one)
    with tempfile.TemporaryDirectory() as output:
        metrics = train(model, dataset, epochs=1, batch_size=batch_size, limit=batch_size * steps, eval_limit=batch_size,
              output=output, data_dir=data_dir, verbose=0, export=False, variant=variant, validation_examples=0,
              callbacks=[timer], **arguments)  # fmt: skip
    usage, timed = resource.getrusage(resource.RUSAGE_SELF), len(timer.times) - skip
    return {
        "median_step_seconds": statistics.median(timer.times[skip:]),
        "user_seconds": (usage.ru_utime - timer.usage.ru_utime) / timed,
        "system_seconds": (usage.ru_stime - timer.usage.ru_stime) / timed,
        "minor_faults": (usage.ru_minflt - timer.usage.ru_minflt) / timed,
        "steps": timed,
        "peak_rss_mib": round(peak_rss_mib()),
        "recompute": metrics["recompute"],
    }


def time_fit_step(model, x, y, batch_size, steps=30, warmup=5):
    """Median seconds per ``model.fit`` training step (after ``warmup`` steps that include tracing)."""
    n = batch_size * (steps + warmup)
    reps = int(np.ceil(n / len(x)))
    xs, ys = np.concatenate([x] * reps)[:n], np.concatenate([y] * reps)[:n]
    timer = _StepTimer()
    model.fit(xs, ys, batch_size=batch_size, epochs=1, verbose=0, shuffle=False, callbacks=[timer])
    return statistics.median(timer.times[warmup:])


def train_on_batch_seconds(model, x, y, steps):
    """Wall-clock seconds of ``1 + steps`` calls of ``model.train_on_batch(x, y)``: the first (tracing) and ``steps``."""
    times = []
    for _ in range(1 + steps):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    return times


def median_call_seconds(call, repeats, warmup=0):
    """Median wall-clock seconds of ``call()`` over ``repeats`` calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_inference(model, x, batch_size, repeats=20, warmup=3):
    """Median seconds per inference batch through a compiled ``predict_on_batch``."""
    batch = x[:batch_size]
    return median_call_seconds(lambda: model.predict_on_batch(batch), repeats, warmup)


def peak_rss_mib():
    """Peak resident memory of this process so far, MiB: ``VmHWM`` (:func:`benchmarks.runs.status_kib`), ``ru_maxrss``
    where there is no ``/proc``. Not ``ru_maxrss`` on Linux: a child process's keeps its parent's resident size
    at the fork across ``exec`` (a child of a 2 GiB parent reports 2 GiB, its ``VmHWM`` 11 MiB)."""
    from benchmarks.runs import status_kib

    kib = status_kib("VmHWM")
    return (kib if kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def reset_live_peak():
    """Starts TensorFlow's count of the largest amount of memory its tensors held at once (CPU:0)."""
    import tensorflow as tf

    tf.config.experimental.reset_memory_stats("CPU:0")


def live_peak_mib():
    """Largest amount held by live tensors since :func:`reset_live_peak`, MiB (TensorFlow's allocator
    statistics: unlike the RSS, memory the allocator keeps cached after a tensor is freed is not counted)."""
    import tensorflow as tf

    return tf.config.experimental.get_memory_info("CPU:0")["peak"] / 2**20


def write_results(name, payload):
    """Writes ``benchmarks/results/<name>.json``."""
    folder = os.path.join(os.path.dirname(__file__), "results")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.json")
    with open(path, "w") as handle:
        json.dump(payload, handle, indent=2)
    return path
