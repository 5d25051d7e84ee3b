"""Chapter 13's translation recipe, its seeded run, the shipped checkpoint and the Table 2/3 rows.

``TRANSLATION_RECIPE`` is the paper's setup in miniature: a shared BPE vocabulary, tied embeddings,
label smoothing 0.1, the warm-up schedule of section 5.3, Adam with beta2 = 0.98, and the average
of the last checkpoints. :func:`run_translation` trains it (or a variant, :func:`variant`);
:func:`load_translation` reads the shipped model with its tokenizer;
``python benchmarks/translation.py`` re-trains the shipped row and measures every row of the table.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from torch import nn

from ..bpe import BPETokenizer
from ..model import Transformer, TransformerConfig
from ..training import TrainHistory
from ..translation import (
    KeepCheckpoints,
    averaged_model,
    batch_sampler,
    beyond_numbers,
    encode_pairs,
    make_pairs,
    split_numbers,
)
from ..validate import check_bool, check_choice, check_positive_int
from .core import Recipe, asset_path, check_recipe, read_checkpoint, run

TRANSLATION_CHECKPOINT = "translation_en_de.pt"
TRANSLATION_RESULTS = "translation_table.json"

TRANSLATION_RECIPE: Recipe = {
    "model": {"d_model": 64, "n_heads": 4, "d_ff": 256, "n_encoder_layers": 2, "n_decoder_layers": 2,
              "dropout": 0.1, "norm_first": False, "tie_embeddings": True, "max_len": 128},
    "train": {"steps": 1500, "lr": 2e-3, "warmup": 150, "optimizer": "adam", "betas": [0.9, 0.98], "clip": 1.0,
              "label_smoothing": 0.1, "schedule": "inverse_sqrt"},
    "batch_size": 64,
    "data": {"source": "en", "target": "de", "limit": 10000, "n_test": 1000, "split_seed": 0, "n_merges": 200,
             "beyond": [10000, 100000, 500]},
    "average": {"every": 100, "keep": 5},
    "seed": 0,
}

_KEYS = ("model", "train", "batch_size", "data", "average", "seed")


class TranslationData(NamedTuple):
    """The task of a recipe: numbers, (source, target) pairs and the shared tokenizer."""

    tokenizer: BPETokenizer
    train: list[tuple[str, str]]
    test: list[tuple[str, str]]
    beyond: list[tuple[str, str]]
    train_numbers: list[int]
    test_numbers: list[int]
    beyond_numbers: list[int]


def make_data(recipe: Recipe, merges: list[tuple[str, str]] | None = None) -> TranslationData:
    """The recipe's split, pairs and tokenizer (learned from the training pairs unless ``merges`` are given)."""
    d = check_recipe(recipe, _KEYS)["data"]
    train_n, test_n = split_numbers(d["limit"], d["n_test"], d["split_seed"])
    low, high, n = d["beyond"]
    beyond_n = beyond_numbers(low, high, n, d["split_seed"])
    train = make_pairs(train_n, d["target"], d["source"])
    test = make_pairs(test_n, d["target"], d["source"])
    beyond = make_pairs(beyond_n, d["target"], d["source"])
    texts = [t for pair in train for t in pair]  # one vocabulary for both languages
    if merges is None:
        tokenizer = BPETokenizer.train(texts, d["n_merges"])
    else:
        tokenizer = BPETokenizer({ch for t in texts for ch in t if ch != " "}, merges)
    return TranslationData(tokenizer, train, test, beyond, train_n, test_n, beyond_n)


def build(recipe: Recipe, vocab_size: int) -> Transformer:
    """A fresh Transformer for the recipe, source and target sharing one vocabulary of ``vocab_size``."""
    return Transformer(TransformerConfig(src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, **recipe["model"]))


class TranslationRun(NamedTuple):
    """What :func:`run_translation` returns."""

    model: nn.Module  # the averaged model when the recipe averages, else the last
    last: nn.Module  # the model after the last step
    history: TrainHistory
    data: TranslationData
    recipe: Recipe


def run_translation(recipe: Recipe = TRANSLATION_RECIPE, progress: bool = True, steps: int | None = None,
                    data: TranslationData | None = None) -> TranslationRun:
    """Train the recipe, seeded; keep the last checkpoints and average them (section 6.1)."""
    recipe = check_recipe(recipe, _KEYS)
    check_bool("progress", progress)
    if steps is not None:
        check_positive_int("steps", steps)  # before the data is built
    data = make_data(recipe) if data is None else data
    src_rows, tgt_rows = encode_pairs(data.tokenizer, data.train)
    avg = recipe["average"]
    keeper = KeepCheckpoints(avg["every"], avg["keep"])
    r = run(recipe, lambda rc: build(rc, data.tokenizer.vocab_size),
            lambda rc, g: batch_sampler(src_rows, tgt_rows, rc["batch_size"], g),
            progress=progress, steps=steps, callbacks=[keeper])
    model = averaged_model(r.model, keeper.states) if avg["keep"] > 1 and keeper.states else r.model
    return TranslationRun(model, r.model.eval(), r.history, data, r.recipe)


# ---------------------------------------------------------------- the table's variants
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "no label smoothing": {"train.label_smoothing": 0.0},
    # about as many tokens per batch as the base recipe (9 pairs of ~74 characters against 64 pairs of
    # ~11 subwords): the paper batches by tokens, so this is the equal budget (same steps, same tokens)
    "characters": {"data.n_merges": 0, "batch_size": 9},
    "smaller width": {"model.d_model": 32, "model.d_ff": 128},
}


def variant(name: str, recipe: Recipe = TRANSLATION_RECIPE) -> Recipe:
    """A copy of ``recipe`` with one of :data:`VARIANTS` applied (same steps and batch: equal budget)."""
    check_choice("name", name, tuple(VARIANTS))
    out = copy.deepcopy(recipe)
    for path, value in VARIANTS[name].items():
        if "." in path:
            section, key = path.split(".")
            out[section][key] = value
        else:
            out[path] = value
    return out


def benchmark_recipe() -> Recipe:
    """The recipe of ``translation_table.json``: every variant's recipe and the evaluation settings."""
    return {"variants": {name: variant(name) for name in VARIANTS},
            "evaluation": {"beam_size": 4, "alpha": 0.6, "extra": 50, "n_bootstrap": 1000, "torch_threads": 1}}


def load_translation() -> tuple[nn.Module, BPETokenizer, dict[str, Any]]:
    """The shipped Chapter 13 model (averaged checkpoint), its tokenizer and its results dict."""
    data = read_checkpoint(asset_path(TRANSLATION_CHECKPOINT))
    from .core import load

    model = load(asset_path(TRANSLATION_CHECKPOINT))
    results = data["results"]
    tokenizer = BPETokenizer(results["alphabet"], [tuple(p) for p in results["merges"]])
    return model, tokenizer, results
