"""Figures of the shipped presets quoted on the application and REM pages (the registry's records)."""

import re

from figures import records
from figures.numbers import hours, percent, points


def capsnet_accuracy():
    record = records.preset("CapsNet", "mnist")
    return (
        f'`CapsNet(weights="mnist")` reaches {percent(record["test_accuracy"])} on the full MNIST test set; its card, under\n'
        "[Pretrained weights](#pretrained-weights) below, says how it was trained."
    )


def rem_preset():
    record = records.preset("EffCapsNet", "mnist_rem")
    return (
        f"`mnist_rem` is REM's x0.99 schedule run for {record['epochs']} epochs from scratch under the validation protocol "
        f"(the schedule fixed before the run, the last epoch shipped, the test set read once at the end): "
        f"{percent(record['test_accuracy'])} on the full {record['test_examples']:,}-image test set with its routers' "
        f"couplings quantised to {record['kwargs']['router']['quantize_levels']} levels (REM's +Q, as the preset routes), "
        f"and sparsity: {record['metrics']['sparsity']}. Its [card](applications/eff_capsnet.md) adds the routing entropy "
        f"and parse trees, and its training log (`{record['log']}`) the history of the run, with the earlier files and "
        "the sparsity and accuracy of both 100-epoch schedules."
    )


GLOM_PAPER = 0.949  # AgreementGLOM's Fashion-MNIST accuracy in its paper (200 + 200 epochs)


def glom_schedules():
    record = records.preset("AgreementGLOM", "fashion_mnist")
    stages = dict(re.findall(r"(\w+)=(\d+)", record["command"]))
    curve = ", ".join(f"{100 * value:.2f}" for value in record["validation_curve"])
    return (
        f"Run C ({stages['pretrain']} contrastive + {stages['classifier']} classifier epochs, batch 256) ships as "
        f'`AgreementGLOM(weights="fashion_mnist")`: validation accuracy {curve} % after its classifier epochs '
        f"({record['validation']['examples']:,} held-out training images), **{percent(record['test_accuracy'])}** on the full "
        f"test set with the shipped float16 file (read once, at the end; {points(GLOM_PAPER - record['test_accuracy'])} points below "
        f"the paper's {percent(GLOM_PAPER)}), {hours(record['train_seconds'])} of training on {record['hardware']}."
    )
