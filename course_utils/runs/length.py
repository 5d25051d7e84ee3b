"""Length generalisation of string reversal: one model and budget, many positional schemes. Chapter 9.

Every scheme is Chapter 6's fast recipe (same model size, batch, learning rate, seed) trained for
``STEPS`` steps, with one change: ``TransformerConfig.positional`` and, for the last schemes, how
the integer positions are chosen (counted from the end of the source, sampled at random in
training). ``benchmarks/length_generalisation.py`` trains them all and writes
``length_generalisation.json``; ``python scripts/train_checkpoint.py --run length`` writes the two
checkpoints Chapter 9 loads.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from ..data import random_batch
from ..evaluation import Predictor, evaluate_by_length
from ..model import Transformer
from ..training import TrainHistory, masked_cross_entropy
from ..validate import check_positive_int
from .core import Recipe, asset_path, load_as
from .reversal import DECODER_ONLY_RECIPE, FAST_RECIPE, run_reversal

RESULTS_FILE = "length_generalisation.json"
RESULTS_PATH = asset_path(RESULTS_FILE)
MAX_POSITION = 64  # the range randomized positions are drawn from: longer than any test string (40 + EOS)
TEST_LENGTHS = range(3, 41)
STEPS = 400  # the training budget of every scheme (Chapter 6's fast recipe itself uses 350)
N_PER_LENGTH = 100  # test strings per length in the benchmark

# name -> model overrides on top of FAST_RECIPE["model"]; same size and budget for all
SCHEMES: dict[str, dict[str, Any]] = {
    "none": {"positional": "none"},  # NoPE: no positional information at all
    "sinusoidal": {"positional": "sinusoidal"},  # the paper's, added to the embeddings
    "learned": {"positional": "learned"},  # a trained table, added to the embeddings
    "rope": {"positional": "rope"},  # rotary, in every attention (Su et al., 2021)
    "alibi": {"positional": "alibi"},  # linear distance penalty (Press et al., 2021)
    "t5": {"positional": "t5"},  # learned bias per bucket of offsets (Raffel et al., 2019)
    "randomized": {"positional": "sinusoidal", "random_positions": MAX_POSITION},  # Ruoss et al. (2023)
    "rope-end": {"positional": "rope", "source_positions": "end"},  # source counted from its end
    "rope-end-randomized": {"positional": "rope", "source_positions": "end", "random_positions": MAX_POSITION},
    # the same, with random positions for half or a quarter of the examples only: the others train
    # the plain positions 0, 1, 2, ... (gaps of 1) that evaluation uses
    "rope-end-half-randomized": {"positional": "rope", "source_positions": "end", "random_positions": MAX_POSITION,
                                 "random_fraction": 0.5},
    "rope-end-quarter-randomized": {"positional": "rope", "source_positions": "end",
                                    "random_positions": MAX_POSITION, "random_fraction": 0.25},
}
# name -> overrides on top of Chapter 8's decoder-only recipe (reversal as one causal sequence)
CAUSAL_D_FF = 128  # Chapter 8's decoder-only FFN width when these results were measured
CAUSAL_SCHEMES: dict[str, dict[str, Any]] = {
    "nope-causal": {"positional": "none"},  # NoPE where it can work: the causal mask alone orders tokens
}
WINNER, LOSER = "rope-end-quarter-randomized", "sinusoidal"
WINNER_STEPS = 800  # the shipped winner is trained twice as long as the experiment's budget (Chapter 9 says why)

# the benchmark's two other parts
VARIANT_LENGTHS = (1, 4)  # train on lengths <= 4 ...
VARIANT_TEST = (1, 2, 3, 4, 12)  # ... and test on 12
VARIANT_STEPS = 200  # short strings are learned in fewer steps
LONG_FACTOR, SLOW_BELOW = 4, 90.0  # schemes below 90 % somewhere in 3-10 at the budget get 4x the steps


def scheme_recipe(name: str, min_len: int = 3, max_len: int = 10, steps: int | None = None) -> Recipe:
    """The recipe of scheme ``name`` (in SCHEMES or CAUSAL_SCHEMES), lengths min_len..max_len, STEPS steps. Chapter 9.

    SCHEMES start from Chapter 6's fast recipe, CAUSAL_SCHEMES from Chapter 8's decoder-only one as it
    was when they were measured (FFN width 128, lengths drawn uniformly); both with tables long
    enough for every test length and a warm-up of a tenth of the steps.
    """
    if name not in SCHEMES and name not in CAUSAL_SCHEMES:
        raise ValueError(f"name must be one of {[*SCHEMES, *CAUSAL_SCHEMES]}, got {name!r}")
    check_positive_int("min_len", min_len)
    check_positive_int("max_len", max_len)
    base, overrides = (FAST_RECIPE, SCHEMES[name]) if name in SCHEMES else (DECODER_ONLY_RECIPE, CAUSAL_SCHEMES[name])
    recipe = copy.deepcopy(base)
    recipe["model"].update(max_len=128, **overrides)  # room for every test length
    recipe.update(min_len=min_len, max_len=max_len, scheme=name)
    if name in CAUSAL_SCHEMES:  # measured before Chapter 8's robustness change: keep that recipe
        recipe["model"]["d_ff"] = CAUSAL_D_FF
        recipe.pop("length_draw", None)  # lengths drawn uniformly
    steps = STEPS if steps is None else check_positive_int("steps", steps)
    recipe["train"].update(steps=steps, warmup=min(steps // 10, steps - 1))
    return recipe


def train_scheme(
    name: str, min_len: int = 3, max_len: int = 10, steps: int | None = None, progress: bool = False
) -> tuple[nn.Module, TrainHistory, Recipe]:
    """Train the reversal model with scheme ``name``; (model, history, recipe). Chapter 9.

    A name in CAUSAL_SCHEMES trains Chapter 8's decoder-only model (evaluation helpers accept it directly).
    """
    return tuple(run_reversal(scheme_recipe(name, min_len, max_len, steps), progress))


def results_recipe() -> Recipe:
    """The full recipe of ``length_generalisation.json``: every scheme's recipe and the benchmark's settings."""
    return {
        "schemes": {name: scheme_recipe(name) for name in [*SCHEMES, *CAUSAL_SCHEMES]},
        "test_lengths": [TEST_LENGTHS.start, TEST_LENGTHS.stop - 1], "n_per_length": N_PER_LENGTH,
        "variant": {"train_lengths": list(VARIANT_LENGTHS), "test_lengths": list(VARIANT_TEST),
                    "steps": VARIANT_STEPS},
        "long_budget": {"factor": LONG_FACTOR, "below": SLOW_BELOW},
    }


EXTRA_ROWS_FILE = "length_extra_rows.json"


def sinusoidal_end_recipe() -> Recipe:
    """The sinusoidal scheme with source positions counted from the end (a row Chapter 9's quiz asks about)."""
    recipe = scheme_recipe("sinusoidal")
    recipe["model"]["source_positions"] = "end"
    recipe["scheme"] = "sinusoidal-end"
    return recipe


def extra_rows_recipe() -> Recipe:
    """The full recipe of ``length_extra_rows.json`` (``benchmarks/length_extra_rows.py``). Chapter 9."""
    return {"randomized": scheme_recipe("randomized"), "sinusoidal-end": sinusoidal_end_recipe(),
            "test_lengths": [TEST_LENGTHS.start, TEST_LENGTHS.stop - 1], "n_per_length": N_PER_LENGTH}


def shipped_recipe(name: str) -> Recipe:
    """The recipe of the shipped checkpoint of scheme ``name`` (the winner has WINNER_STEPS steps). Chapter 9."""
    return scheme_recipe(name, steps=WINNER_STEPS if name == WINNER else None)


def length_curve(
    model: nn.Module | Predictor, lengths: Iterable[int] = TEST_LENGTHS, n_per_length: int = 100, seed: int = 1234
) -> dict[str, Any]:
    """{"exact_match": {"3": %, ...}, "token_accuracy": {...}} on fresh seeded strings of each length. Chapter 9."""
    results = evaluate_by_length(model, lengths, n_per_length, seed)
    return {
        "exact_match": {str(n): round(100 * r["exact_match"], 1) for n, r in results.items()},
        "token_accuracy": {str(n): round(100 * r["token_accuracy"], 1) for n, r in results.items()},
    }


def position_gap(model: Transformer, n_strings: int = 512, seed: int = 5) -> dict[str, float]:
    """Teacher-forced loss on strings of 3-10 letters with the training positions and with plain ones. Chapter 9.

    {"loss_training_positions": ..., "loss_plain_positions": ...} for a model built with
    ``random_positions``: the first draws positions as in training (random for ``random_fraction`` of
    the strings, seeded), the second uses 0, 1, 2, ... as evaluation does. A large gap means the model
    learned the task for the positions it trained on but not for the ones it is tested on.
    """
    if not isinstance(model, Transformer) or model.config.random_positions == 0:
        raise ValueError("model must be a Transformer built with random_positions > 0")
    check_positive_int("n_strings", n_strings)
    src, tgt_in, tgt_out = random_batch(n_strings, 3, 10, torch.Generator().manual_seed(seed))
    was_training, losses = model.training, {}
    with torch.no_grad(), torch.random.fork_rng():  # the caller's random state is left as it was
        for key, training in (("loss_training_positions", True), ("loss_plain_positions", False)):
            model.train(training)  # positions are drawn at random in training mode only
            torch.manual_seed(seed)
            losses[key] = round(masked_cross_entropy(model(src, tgt_in), tgt_out).item(), 3)
    model.train(was_training)
    return losses


def checkpoint_file(name: str) -> str:
    """The file name of the shipped Chapter 9 checkpoint of scheme ``name``. Chapter 9."""
    if name not in SCHEMES:
        raise ValueError(f"name must be one of {list(SCHEMES)}, got {name!r}")
    return f"length_{name}.pt"


def checkpoint_path(name: str):
    """Where the shipped Chapter 9 checkpoint of scheme ``name`` lives. Chapter 9."""
    return asset_path(checkpoint_file(name))


def load_scheme_model(name: str) -> Transformer:
    """The shipped checkpoint of scheme ``name`` (WINNER or LOSER), in eval mode. Chapter 9."""
    return load_as(checkpoint_path(name), Transformer)


def load_results() -> dict[str, Any]:
    """The benchmark's JSON record (recipe, train lengths, per-scheme curves and times). Chapter 9."""
    from .core import load_asset

    return load_asset(RESULTS_FILE)
