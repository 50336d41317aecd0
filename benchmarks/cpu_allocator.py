"""What TensorFlow's pooling CPU allocator is worth: training steps with ``malloc`` and with the BFC allocator.

    python -m benchmarks cpu_allocator [--rounds 2] [--cases main-job,consensus-kernel,consensus-lstm]
        [--data-dir DIR] [--results DIR] [--host-name NAME]

Each case trains a few steps of a recipe (:mod:`benchmarks.recipe_ab`) in a fresh process with
``TF_CPU_ALLOCATOR_USE_BFC=false`` (TensorFlow allocates through ``malloc``) and in another with ``true`` (its
BFC allocator, which keeps freed blocks for the next step), alternately, ``--rounds`` times, with oneDNN off as
the command line sets it on TensorFlow 2.21 (with oneDNN on TensorFlow picks the BFC allocator itself), and with
rematerialisation on (as every step trained before the memory plan chose it; ``benchmarks/recompute.py``). Cases
(:data:`CASES`): the README's main job (EffCapsNet on the embedded MNIST sample, batch 16) and ConsensusCapsNet's
MNIST recipes with the kernel and LSTM routers (batch 64; MNIST's IDX files under ``--data-dir``, default
``$KERAS_CAPSULES_DATA``). Each process reports the median of its steps after the first few, the CPU seconds
spent in the kernel per step (``malloc`` maps every block above 32 MB afresh, and each page of it faults on
first touch) and its minor page faults per step. The run file
(``benchmarks/results/YYYY-MM-DD-HHMM-<host>-cpu-allocator.json``) holds each case's settings as rows
(:func:`rows_of`). Why it is measured: the command line asks for the BFC allocator
(``keras_capsules.cli.cpu_allocator``).
"""

#: ``{case: (model, dataset, recipe, batch size, steps, steps skipped before timing)}``.
CASES = {
    "main-job": ("EffCapsNet", "mnist_sample", "default", 16, 40, 10),
    "consensus-kernel": ("ConsensusCapsNet", "mnist", "default", 64, 8, 3),
    "consensus-lstm": ("ConsensusCapsNet", "mnist", "lstm", 64, 8, 3),
}
#: The settings (:mod:`benchmarks.recipe_ab`), ``malloc`` the baseline; both rematerialise, as before the plan chose.
SETTINGS = {
    "malloc (TF_CPU_ALLOCATOR_USE_BFC=false)": {
        "env": {"TF_CPU_ALLOCATOR_USE_BFC": "false"},
        "train": {"recompute": True},
    },
    "BFC (TF_CPU_ALLOCATOR_USE_BFC=true, the CLI's)": {
        "env": {"TF_CPU_ALLOCATOR_USE_BFC": "true"},
        "train": {"recompute": True},
    },
}


def rows_of(figures):
    """The run file's rows (:func:`benchmarks.recipe_ab.rows_of`): malloc / BFC on the BFC rows."""
    from benchmarks import recipe_ab

    return recipe_ab.rows_of(figures, "cpu-allocator", "malloc_over_bfc")


def main(argv=None):
    from benchmarks import recipe_ab

    measured = "training steps of each case's recipe with malloc and with TensorFlow's BFC allocator, oneDNN off"
    return recipe_ab.main(argv, "cpu_allocator", __doc__, CASES, SETTINGS, rows_of, measured, "cpu-allocator")


if __name__ == "__main__":
    main()
