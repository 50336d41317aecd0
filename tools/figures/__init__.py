"""The figure blocks of the user pages, written from committed run records by ``tools/docs_figures.py``.

One module a subject: :mod:`figures.records` reads the records; :mod:`figures.numbers` writes figures and
refuses a sentence its records no longer support; :mod:`figures.main_job`, :mod:`figures.robustness`,
:mod:`figures.affnist`, :mod:`figures.presets`, :mod:`figures.training_cost`, :mod:`figures.fine_tune`,
:mod:`figures.larger_inputs` and :mod:`figures.why_slow` write the blocks. Tables and markers are
:mod:`keras_capsules.markdown`'s.
"""
