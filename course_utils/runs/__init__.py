"""Recipes, seeded runs and shipped files: the one layer that owns them. Chapters 6-10.

The chapter-teaching modules (attention, norm, masks, positional, model, gpt, training, decoding,
evaluation, data, charlm, ...) hold only what a chapter teaches and never name a file in
``assets/``; everything that owns a recipe or a file lives here:

- :mod:`~course_utils.runs.core`: ``Recipe``, ``run(...) -> Run(model, history, recipe)``, the one
  checkpoint format (``save``, ``load``, ``read_checkpoint``), ``load_asset``, ``write_asset`` and
  ``machine_record`` (the one writer of shipped JSON results and the one record of where they were measured);
- :mod:`~course_utils.runs.reversal`: Chapter 6's and Chapter 8's reversal recipes, builders, loaders;
- :mod:`~course_utils.runs.charlm`: Chapter 8's character LM recipe, run and loader;
- :mod:`~course_utils.runs.length`: Chapter 9's schemes, their recipes, curves and shipped models;
- :mod:`~course_utils.runs.ablations`: Chapter 10's measured rows and shipped results;
- :mod:`~course_utils.runs.induction`: Chapter 8's induction run (recipe, runner, cached reference run);
- :mod:`~course_utils.runs.makers`: how each shipped checkpoint is made (``scripts/train_checkpoint.py``'s table);
- :mod:`~course_utils.runs.registry`: the freshness check, ``python -m course_utils.runs check``.
"""

from .core import (
           ASSETS,
           KINDS,
           Recipe,
           Run,
           asset_path,
           load,
           load_as,
           load_asset,
           machine_record,
           read_checkpoint,
           run,
           save,
           seeded,
           with_steps,
           write_asset,
)

__all__ = ["ASSETS", "KINDS", "Recipe", "Run", "asset_path", "load", "load_as", "load_asset", "machine_record",
           "read_checkpoint", "run", "save", "seeded", "with_steps", "write_asset"]
