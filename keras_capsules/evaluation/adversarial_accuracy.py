"""Accuracy under FGSM or PGD per epsilon: :func:`adversarial_accuracy` and its :class:`AdversarialResult`.

The attacks themselves are in :mod:`keras_capsules.evaluation.adversarial`; every epsilon of one result
attacks the same images with the same loss, and PGD's random start is the same unit draw (from ``seed``)
scaled by each epsilon. With ``cumulative=True`` an image counts as correct at an epsilon only while every
attack up to it failed, and each epsilon attacks only the images still standing (see :func:`adversarial_accuracy`).
"""

import dataclasses
import json
import os
import sys
from typing import Optional

import numpy as np

from keras_capsules.evaluation.adversarial import STEP_SIZE_FACTOR, _setup

#: The epsilons of the default table (units of the [0, 1] image range).
EPSILONS = (0.05, 0.1, 0.2, 0.3)


@dataclasses.dataclass
class AdversarialResult:
    """Accuracy of one model under one attack, per epsilon.

    Attributes:
        model: the model's name (preset key, file name, or Keras name).
        attack: ``"fgsm"`` or ``"pgd"``.
        examples: how many images (the first ones of the split, or of ``x``).
        accuracy: on the clean images.
        table: ``[(epsilon, accuracy), ...]``, accuracies in [0, 1].
        zero_gradient: per row, the fraction of images whose loss gradient was zero at the first step (with
            ``cumulative``: of the images attacked at that epsilon, counted over all images).
        steps: gradient steps per image (1 for FGSM).
        step_size: the step, or ``None`` for PGD's ``2.5 epsilon / steps`` (FGSM: epsilon).
        random_start: whether each attack started from a uniform draw in the epsilon-ball.
        seed: seed of that draw.
        loss: the loss attacked; loss_source: where it came from.
        input_scale: the factor the [0, 1] images were multiplied by before the model.
        dataset, split: where the images came from (``None`` for arrays passed in).
        seconds: wall time of the attacks and predictions.
        batch_size: images per gradient call, as given or planned (``None`` in records written before it was kept).
        cumulative: whether an image counted as correct at an epsilon only while it withstood the attack at every
            smaller epsilon of the table and was classified correctly clean (``False`` in records written before).
    """

    model: str
    attack: str
    examples: int
    accuracy: float
    table: list
    zero_gradient: list
    steps: int
    step_size: Optional[float]
    random_start: bool
    seed: int
    loss: str
    loss_source: str
    input_scale: float
    dataset: Optional[str] = None
    split: Optional[str] = None
    seconds: Optional[float] = None
    batch_size: Optional[int] = None
    cumulative: bool = False

    def describe_attack(self):
        """``"PGD, 10 steps of 2.5 epsilon / 10, random start (seed 0)"``-style summary."""
        if self.attack == "fgsm":
            text = "FGSM, one step of epsilon"
        else:
            size = f"{STEP_SIZE_FACTOR:g} epsilon / {self.steps}" if self.step_size is None else f"{self.step_size:g}"
            text = f"PGD, {self.steps} steps of {size}"
        text += f", random start (seed {self.seed})" if self.random_start else ", no random start"
        return text + (", cumulative over epsilons" if self.cumulative else "")

    def to_text(self):
        """The table as aligned text (what ``keras-capsules robustness --attack`` prints)."""
        where = f" on {self.dataset} {self.split}" if self.dataset else ""
        lines = [
            f"{self.model}{where}: {self.examples:,d} images; {self.describe_attack()}"
            + ("" if self.batch_size is None else f"; {self.batch_size} images per gradient call"),
            f"loss attacked: {self.loss} ({self.loss_source}); images in [0, 1] x {self.input_scale:g} into the model",
            f"clean accuracy: {100 * self.accuracy:.2f} %",
            f"{'epsilon':>8}{'accuracy':>12}{'zero gradient':>16}  loss",
        ]
        for (epsilon, accuracy), stuck in zip(self.table, self.zero_gradient):
            lines.append(f"{epsilon:>8g}{f'{100 * accuracy:.2f} %':>12}{f'{100 * stuck:.1f} %':>16}  {self.loss}")
        return "\n".join(lines)

    def to_dict(self):
        """A JSON-serialisable dict; :meth:`from_dict` reads it back."""
        record = dataclasses.asdict(self)
        record["table"] = [[float(e), float(a)] for e, a in self.table]
        return record

    @classmethod
    def from_dict(cls, record):
        """The result :meth:`to_dict` wrote."""
        record = dict(record)
        record["table"] = [(float(e), float(a)) for e, a in record["table"]]
        return cls(**record)


def adversarial_accuracy(
    model,
    x,
    y,
    attack="fgsm",
    epsilons=EPSILONS,
    steps=None,
    step_size=None,
    random_start=None,
    loss=None,
    batch_size=None,
    seed=0,
    input_scale=None,
    cumulative=False,
):
    """Accuracy of ``model`` on adversarial copies of ``(x, y)``, one per epsilon.

    Arguments as :func:`~keras_capsules.evaluation.adversarial_examples` (``batch_size=None``: planned from
    memory), with ``epsilons`` a list of radii, and:

    cumulative: ``False``: every epsilon attacks every image on its own (as attacks are usually reported; a
        weak attack can then score lower at a smaller epsilon). ``True``: an image counts as correct at an
        epsilon only if it was classified correctly clean and withstood the attack at that epsilon and at every
        smaller one in ``epsilons``: an adversarial image found inside a smaller ball lies in every larger one.
        Each epsilon then attacks only the images still standing, from the same random start as without
        ``cumulative``, so each accuracy is the share of images whose per-epsilon attacks all failed, it never
        rises with epsilon, and the attack costs fewer gradients (PGD: ``steps`` per standing image per epsilon).

    Returns an :class:`AdversarialResult` (the loss attacked and its source recorded).
    """
    import time

    function = "adversarial_accuracy"
    epsilons = [epsilons] if np.ndim(epsilons) == 0 else list(epsilons)
    if not epsilons:
        raise ValueError(f"{function}: argument `epsilons` expected at least one epsilon, received none.")
    started = time.perf_counter()
    prepared, x, labels, noise = _setup(
        function, model, x, y, attack, epsilons, steps, step_size, random_start, loss, batch_size, seed, input_scale
    )
    size = prepared.batch_size
    standing = np.concatenate(
        [prepared.predict(x[s : s + size]) == labels[s : s + size] for s in range(0, len(x), size)]
    )
    counts = _cumulative_counts if cumulative else _independent_counts
    correct, stuck = counts(prepared, x, labels, noise, epsilons, standing)
    table = [(float(epsilon), int(c) / len(x)) for epsilon, c in zip(epsilons, correct)]
    zero_gradient = [int(z) / len(x) for z in stuck]
    return AdversarialResult(
        model=prepared.name,
        attack=attack,
        examples=len(x),
        accuracy=int(np.sum(standing)) / len(x),
        table=table,
        zero_gradient=zero_gradient,
        steps=prepared.steps,
        step_size=None if prepared.step_size is None else float(prepared.step_size),
        random_start=prepared.random_start,
        seed=int(seed),
        loss=prepared.loss,
        loss_source=prepared.loss_source,
        input_scale=prepared.scale,
        seconds=round(time.perf_counter() - started, 2),
        batch_size=size,
        cumulative=bool(cumulative),
    )


def _independent_counts(prepared, x, labels, noise, epsilons, standing):
    """``(correct, zero-gradient)`` image counts per epsilon, every epsilon attacking every image."""
    correct, stuck = np.zeros(len(epsilons), int), np.zeros(len(epsilons), int)
    size = prepared.batch_size
    for s in range(0, len(x), size):
        images, batch_labels = x[s : s + size], labels[s : s + size]
        # Without a random start every epsilon's first step starts at the images: one gradient serves them all
        # (FGSM: the only one).
        first = None if noise is not None else prepared.gradient(images, prepared.targets(batch_labels))
        for i, epsilon in enumerate(epsilons):
            batch_noise = None if noise is None else noise[s : s + size]
            adversarial, flat = prepared.run(images, batch_labels, float(epsilon), batch_noise, first_gradient=first)
            correct[i] += int(np.sum(prepared.predict(adversarial) == batch_labels))
            stuck[i] += int(np.sum(flat))
    return correct, stuck


def _cumulative_counts(prepared, x, labels, noise, epsilons, standing):
    """``(correct, zero-gradient)`` image counts per epsilon, from the smallest epsilon up, each attacking only the
    images ``standing`` (``(N,)`` bool: correct clean, then under every smaller epsilon). Without a random start
    each image's first gradient is computed once and serves every epsilon."""
    standing, counts = standing.copy(), {}
    first = None if noise is not None else np.zeros_like(x)  # the loss gradient at each image, once computed
    computed = np.zeros(len(x), bool)
    for epsilon in sorted(set(float(e) for e in epsilons)):
        attacked, flat = np.flatnonzero(standing), 0
        for s in range(0, len(attacked), prepared.batch_size):
            chosen = attacked[s : s + prepared.batch_size]
            images, batch_labels = x[chosen], labels[chosen]
            if first is not None and not computed[chosen].all():
                first[chosen], computed[chosen] = prepared.gradient(images, prepared.targets(batch_labels)), True
            adversarial, zero = prepared.run(
                images,
                batch_labels,
                epsilon,
                None if noise is None else noise[chosen],
                first_gradient=None if first is None else first[chosen],
            )
            standing[chosen] = prepared.predict(adversarial) == batch_labels
            flat += int(np.sum(zero))
        counts[epsilon] = (int(np.sum(standing)), flat)
    return [counts[float(e)][0] for e in epsilons], [counts[float(e)][1] for e in epsilons]


def report(
    model,
    dataset="mnist",
    split="test",
    attack="fgsm",
    epsilons=EPSILONS,
    limit=None,
    json_path=None,
    stream=None,
    data_dir=None,
    download=False,
    loss_source=None,
    **options,
):
    """What ``keras-capsules robustness --attack`` runs: the first ``limit`` images of ``dataset``'s ``split``
    through :func:`adversarial_accuracy` (``options``: its keyword arguments), the table printed to ``stream``
    (stdout) and the result written to ``json_path`` when given; ``loss_source`` says where a ``loss`` passed
    in came from (e.g. ``"recipe EffCapsNet/mnist/default"``). Returns the result."""
    from keras_capsules.evaluation.robustness import _load_images

    images, labels = _load_images(dataset, split, limit, data_dir, download)
    result = adversarial_accuracy(model, images, labels, attack, epsilons, **options)
    result = dataclasses.replace(result, dataset=dataset, split=split, loss_source=loss_source or result.loss_source)
    print(result.to_text(), file=stream or sys.stdout)
    if json_path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as handle:
            json.dump(result.to_dict(), handle, indent=2)
    return result
