"""Length generalisation of string reversal: one model and budget, many positional schemes. Chapter 9.

Every scheme is Chapter 6's fast recipe (same model size, steps, batch, learning rate, seed)
with one change: ``TransformerConfig.positional`` and, for the last schemes, how the integer
positions are chosen (counted from the end of the source, sampled at random in training).
``benchmarks/length_generalisation.py`` trains them all and writes ``RESULTS_PATH``;
``scripts/train_length_checkpoints.py`` writes the two checkpoints Chapter 9 loads.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from .data import LETTERS, random_batch
from .evaluation import Predictor, as_predictor, evaluate_by_length
from .model import Transformer
from .pretrained import FAST_RECIPE, load_reversal_model, train_reversal_model
from .reversal_lm import DECODER_ONLY_RECIPE, reverse_strings_decoder_only, train_decoder_only_reversal
from .training import TrainHistory, masked_cross_entropy
from .validate import check_positive_int

ASSETS = Path(__file__).parent / "assets"
RESULTS_PATH = ASSETS / "length_generalisation.json"
MAX_POSITION = 64  # the range randomized positions are drawn from: longer than any test string (40 + EOS)
TEST_LENGTHS = range(3, 41)
STEPS = 400  # the training budget of every scheme (Chapter 6's fast recipe uses 350)

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
CAUSAL_SCHEMES: dict[str, dict[str, Any]] = {
    "nope-causal": {"positional": "none"},  # NoPE where it can work: the causal mask alone orders tokens
}
WINNER, LOSER = "rope-end-quarter-randomized", "sinusoidal"
WINNER_STEPS = 800  # the shipped winner is trained twice as long as the experiment's budget (Chapter 9 says why)


def scheme_recipe(name: str, min_len: int = 3, max_len: int = 10, steps: int | None = None) -> dict[str, Any]:
    """Chapter 6's fast recipe with positional scheme ``name``, lengths min_len..max_len, STEPS steps. Chapter 9."""
    if name not in SCHEMES:
        raise ValueError(f"name must be one of {list(SCHEMES)}, got {name!r}")
    check_positive_int("min_len", min_len)
    check_positive_int("max_len", max_len)
    recipe = copy.deepcopy(FAST_RECIPE)
    recipe["model"].update(max_len=128, **SCHEMES[name])  # tables long enough for every test length
    recipe.update(min_len=min_len, max_len=max_len, scheme=name)
    steps = STEPS if steps is None else check_positive_int("steps", steps)
    recipe["train"]["steps"] = steps
    recipe["train"]["warmup"] = min(steps // 10, steps - 1)
    return recipe


def train_scheme(
    name: str, min_len: int = 3, max_len: int = 10, steps: int | None = None, progress: bool = False
) -> tuple[Transformer, TrainHistory, dict[str, Any]]:
    """Train the reversal model with positional scheme ``name``; (model, history, recipe). Chapter 9."""
    recipe = scheme_recipe(name, min_len, max_len, steps)
    model, history = train_reversal_model(recipe, progress=progress)
    return model, history, recipe


def train_causal_scheme(
    name: str, min_len: int = 3, max_len: int = 10, steps: int | None = None, progress: bool = False
) -> tuple[Predictor, TrainHistory, dict[str, Any]]:
    """Train Chapter 8's decoder-only reversal model with scheme ``name`` in CAUSAL_SCHEMES. Chapter 9.

    Returns (predictor list[str] -> list[str], history, recipe); same steps as the other schemes.
    """
    if name not in CAUSAL_SCHEMES:
        raise ValueError(f"name must be one of {list(CAUSAL_SCHEMES)}, got {name!r}")
    recipe = copy.deepcopy(DECODER_ONLY_RECIPE)
    recipe["model"].update(max_len=128, **CAUSAL_SCHEMES[name])  # room for [src; SEP; tgt; EOS] of 40 letters
    steps = STEPS if steps is None else check_positive_int("steps", steps)
    recipe["train"].update(steps=steps, warmup=min(steps // 10, steps - 1))
    recipe.update(min_len=min_len, max_len=max_len, scheme=name)
    model, history = train_decoder_only_reversal(recipe, progress=progress)

    def predict(strings: list[str]) -> list[str]:
        return reverse_strings_decoder_only(model, strings)

    return predict, history, recipe


def length_curve(
    model: Transformer | Predictor, lengths: Iterable[int] = TEST_LENGTHS, n_per_length: int = 100, seed: int = 1234
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


def every_string_score(model: Transformer | Predictor, length: int = 3) -> dict[str, Any]:
    """Exact match over *every* string of ``length`` letters (26**length of them), no sampling. Chapter 9.

    {"length", "strings", "wrong", "exact_match" (percent), "misses": [[string, output], ...]}.
    Length 3 is 17,576 strings and takes a second or two; each extra letter costs 26 times more.
    """
    check_positive_int("length", length)
    if length > 4:
        raise ValueError(f"length must be at most 4 (26**length strings), got {length}")
    strings = ["".join(letters) for letters in itertools.product(LETTERS, repeat=length)]
    outputs = as_predictor(model)(strings)
    misses = [[s, out] for s, out in zip(strings, outputs, strict=True) if out != s[::-1]]
    return {"length": length, "strings": len(strings), "wrong": len(misses),
            "exact_match": round(100 * (1 - len(misses) / len(strings)), 2), "misses": misses}


def checkpoint_path(name: str) -> Path:
    """Where the shipped Chapter 9 checkpoint of scheme ``name`` lives. Chapter 9."""
    if name not in SCHEMES:
        raise ValueError(f"name must be one of {list(SCHEMES)}, got {name!r}")
    return ASSETS / f"length_{name}.pt"


def load_scheme_model(name: str) -> Transformer:
    """The shipped checkpoint of scheme ``name`` (WINNER or LOSER), in eval mode. Chapter 9."""
    return load_reversal_model(checkpoint_path(name))


def load_results(path: Path | str = RESULTS_PATH) -> dict[str, Any]:
    """The benchmark's JSON record (train lengths, per-scheme curves and times). Chapter 9."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path.name} not found; create it with `python benchmarks/length_generalisation.py`"
        )
    return json.loads(path.read_text())
