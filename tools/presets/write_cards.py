"""Writes the preset model cards into docs/applications/<model>.md and the preset table into README.md and docs/presets.md.

    python tools/presets/write_cards.py [--check]

Both are generated from keras_capsules/presets/registry.json (keras_capsules.presets.cards) between the
markers ``<!-- presets:start -->`` and ``<!-- presets:end -->``; keras_capsules/presets/cards_test.py
checks that they are up to date.
"""

import os
import sys

from keras_capsules import applications, presets
from keras_capsules.presets import cards

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def targets():
    """``[(path, the content of its generated block), ...]``."""
    pages = []
    for model in sorted({key.split("/")[0] for key in presets.available()}):  # every application with a preset
        module = getattr(applications, model).__module__.rsplit(".", 1)[-1]
        pages.append((os.path.join(ROOT, "docs", "applications", f"{module}.md"), cards.docs_section(model)))
    pages += [
        (os.path.join(ROOT, page), cards.presets_table()) for page in ("README.md", os.path.join("docs", "presets.md"))
    ]
    return pages


def main(check=False):
    stale = []
    for path, section in targets():
        text = open(path).read()
        new = cards.replace_section(text, section, os.path.relpath(path, ROOT))
        if new != text:
            stale.append(os.path.relpath(path, ROOT))
            if not check:
                with open(path, "w") as handle:
                    handle.write(new)
    return stale


if __name__ == "__main__":
    changed = main(check="--check" in sys.argv)
    print(
        "stale: " if "--check" in sys.argv and changed else "updated: " if changed else "up to date", ", ".join(changed)
    )
    sys.exit(1 if "--check" in sys.argv and changed else 0)
