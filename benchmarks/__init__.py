"""keras_capsules' benchmarks: what its models cost in time and memory, and short accuracy experiments.

Run from the repository root::

    python -m benchmarks --list                # every registered benchmark, with its one-line description
    python -m benchmarks NAME [options]        # runs one (``python -m benchmarks NAME --help``: its options)
    python -m benchmarks.NAME [options]        # the same

Each benchmark is a module of this package, registered below by kind; its docstring says what it measures
and how. The speed and memory benchmarks write run files under ``benchmarks/results/``, which
``python -m benchmarks report`` renders as ``BENCHMARKS.md`` and the pages of ``docs/benchmarks/``.
Shared code, not run on its own: :mod:`benchmarks.common` (timing and memory helpers),
:mod:`benchmarks.runs` (child processes, host and package records, the run file), :mod:`benchmarks.recipe_ab`
(an A/B of recipes' training steps in alternating processes) and
:mod:`benchmarks.op_counts` (counting a traced graph's operations). What a workload's rows show, its tables
and its targets, is declared in the module of :mod:`benchmarks.reporting` named after it.
"""

#: What a training step, an inference or a first step costs in time and memory, against a matched CNN, the
#: authors' code or an earlier package; and what a step counts.
SPEED_AND_MEMORY = (
    "scale",
    "scale_counts",
    "first_step",
    "first_step_backbone",
    "backends",
    "applications",
    "routers",
    "roofline",
    "memory",
    "memory_plan",
    "attack_memory",
    "predict_chunks",
    "profile_step",
    "training_step_cost",
    "votes",
    "concurrent_iterations",
    "eff_capsnet_vs_cnn",
    "eff_capsnet_inference_floor",
    "export_latency",
    "onednn_main_job",
    "cpu_allocator",
    "recompute",
    "side_by_side",
)
#: Accuracy and correctness: short training runs on real data, and the checks on an accelerator.
ACCURACY = (
    "router_fashion_mnist",
    "glom_fashion_mnist",
    "rem_dr_capsnet",
    "fine_tune_folder",
    "accelerator_check",
)
#: What renders and checks the committed run files.
TOOLS = ("report",)
#: Every registered benchmark, by kind: ``{kind: names}``; ``python -m benchmarks NAME`` runs ``benchmarks.NAME``.
WORKLOADS = {"speed and memory": SPEED_AND_MEMORY, "accuracy and correctness": ACCURACY, "tools": TOOLS}
