"""What rematerialisation costs a training step: the recipe's step with it, and as the memory plan chooses.

    python -m benchmarks recompute [--rounds 2] [--cases consensus-lstm,consensus-em] [--data-dir DIR]
        [--results DIR] [--host-name NAME]

Each case trains a few steps of a recipe (:mod:`benchmarks.recipe_ab`) in a fresh process with
``train(recompute=True)`` (``ConvCaps`` recomputes its votes and routing in the backward pass, and the kernel,
LSTM and EM routers their iterations: every step before 2026-12-04 trained so) and in another with
``recompute="auto"`` (the default since: without, when the memory plan finds that the step fits in three quarters
of the memory available, :func:`keras_capsules.training.memory_plan.plan_fastest`), alternately, ``--rounds``
times, with TensorFlow's BFC allocator and oneDNN off, as the command line sets them. Cases (:data:`CASES`):
ConsensusCapsNet's MNIST recipes with the LSTM and EM routers (batch 64; MNIST's IDX files under ``--data-dir``,
default ``$KERAS_CAPSULES_DATA``); the kernel router's step without recomputation is estimated at 18.5 GB, so
``auto`` keeps it there. Each row says whether the step rematerialised, its median step, kernel CPU seconds and
minor faults per step and the peak RSS; the run file
(``benchmarks/results/YYYY-MM-DD-HHMM-<host>-recompute.json``) holds them (:func:`rows_of`).
"""

#: ``{case: (model, dataset, recipe, batch size, steps, steps skipped before timing)}``.
CASES = {
    "consensus-lstm": ("ConsensusCapsNet", "mnist", "lstm", 64, 8, 3),
    "consensus-em": ("ConsensusCapsNet", "mnist", "em", 64, 8, 3),
}
_BFC = {"TF_CPU_ALLOCATOR_USE_BFC": "true"}
#: The settings (:mod:`benchmarks.recipe_ab`), always rematerialising the baseline.
SETTINGS = {
    "recompute=True (every step before 2026-12-04)": {"env": _BFC, "train": {"recompute": True}},
    "recompute='auto' (the memory plan's choice, the default)": {
        "env": _BFC,
        "train": {"recompute": "auto", "memory_check": "check"},
    },
}


def rows_of(figures):
    """The run file's rows (:func:`benchmarks.recipe_ab.rows_of`): on / auto on the auto rows."""
    from benchmarks import recipe_ab

    return recipe_ab.rows_of(figures, "recompute", "on_over_auto")


def main(argv=None):
    from benchmarks import recipe_ab

    measured = (
        "training steps of each case's recipe rematerialising and as the memory plan chooses, BFC allocator, oneDNN off"
    )
    return recipe_ab.main(argv, "recompute", __doc__, CASES, SETTINGS, rows_of, measured, "recompute")


if __name__ == "__main__":
    main()
