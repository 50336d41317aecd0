"""How the figure blocks write numbers, and the check that refuses a sentence its records no longer support."""

import math

TEST_IMAGES = {"mnist_sample": 2000, "mnist": 10000}  # the size of each test split the blocks quote


class StaleSentence(ValueError):
    """A record no longer supports a sentence a block states: the template needs rewriting."""


def percent(fraction, digits=2):
    """``0.991 -> "99.10 %"``."""
    return f"{100 * fraction:.{digits}f} %"


def points(difference):
    """An accuracy difference (a fraction) in percentage points, one decimal: ``0.0601 -> "6.0"``."""
    return f"{100 * difference:.1f}"


def standard_error(accuracy, images):
    """The standard error of an accuracy measured on ``images`` images (a fraction)."""
    return math.sqrt(accuracy * (1 - accuracy) / images)


def hours(seconds):
    """``5400 -> "1.5 h"``."""
    return f"{seconds / 3600:.1f} h"


def check(condition, sentence):
    """Raises :class:`StaleSentence` naming ``sentence`` unless ``condition`` holds."""
    if not condition:
        raise StaleSentence(
            f"docs_figures: the records no longer support {sentence!r}; rewrite that sentence in tools/figures/"
        )
