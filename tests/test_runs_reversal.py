"""The shipped reversal checkpoints (Chapters 6 and 8): load safely, are accurate, the script re-creates them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_utils.data import random_strings
from course_utils.decoding import reverse_strings
from course_utils.evaluation import evaluate_by_length
from course_utils.model import Transformer
from course_utils.runs import read_checkpoint, save
from course_utils.runs.reversal import (
    CHECKPOINT_PATH,
    DECODER_ONLY_RECIPE,
    FAST_RECIPE,
    build_model,
    checkpoint_recipe,
    load_decoder_only_reversal,
    load_reversal_model,
    train_reversal_model,
    training_lengths,
)

ROOT = Path(__file__).resolve().parents[1]


def test_checkpoint_small_and_plain_data():
    assert CHECKPOINT_PATH.exists() and CHECKPOINT_PATH.stat().st_size < 2 * 1024 * 1024
    data = torch.load(CHECKPOINT_PATH, map_location="cpu", weights_only=True)  # plain data only
    assert set(data) == {"kind", "config", "recipe", "results", "state_dict"} and data["kind"] == "transformer"


def test_loaded_model_matches_recipe_and_is_eval():
    model = load_reversal_model()
    assert isinstance(model, Transformer) and not model.training
    assert checkpoint_recipe() == FAST_RECIPE  # the script's recipe is the one that was shipped
    assert training_lengths() == (3, 10)
    fresh = build_model(FAST_RECIPE)
    assert {k: v.shape for k, v in fresh.state_dict().items()} == {k: v.shape for k, v in model.state_dict().items()}


def test_checkpoint_accuracy_in_training_range():
    results = evaluate_by_length(load_reversal_model(), range(3, 11), n_per_length=40, seed=99)
    total = sum(r["exact_match"] for r in results.values()) / len(results)
    assert total >= 0.99, results


def test_save_load_round_trip(tmp_path):
    model, hist = train_reversal_model(steps=3, progress=False)
    assert len(hist.losses) == 3
    path = save(model, FAST_RECIPE, tmp_path / "m.pt")
    again = load_reversal_model(path)
    strings = random_strings(8, 3, 6, torch.Generator().manual_seed(0))
    assert reverse_strings(model, strings) == reverse_strings(again, strings)


def test_missing_checkpoint_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="train_checkpoint.py"):
        load_reversal_model(tmp_path / "nope.pt")


def test_script_smoke_run(tmp_path):
    out = tmp_path / "smoke.pt"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train_checkpoint.py"), "--run", "reversal", "--steps", "5",
         "--out", str(out), "--no-eval"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    recipe = checkpoint_recipe(out)  # the recipe that actually ran, not the one asked for
    assert recipe["model"] == FAST_RECIPE["model"] and recipe["train"]["steps"] == 5 and recipe["train"]["warmup"] == 4
    assert len(read_checkpoint(out)["results"]["train_loss"]) == 5
    assert load_reversal_model(out).config == load_reversal_model().config


def test_shipped_decoder_only_model_loads_and_reverses():
    model = load_decoder_only_reversal()
    assert read_checkpoint(CHECKPOINT_PATH.with_name("reversal_decoder_only.pt"))["recipe"] == DECODER_ONLY_RECIPE
    results = evaluate_by_length(model, range(3, 10), n_per_length=20, seed=99)  # a DecoderOnly, directly
    assert min(r["exact_match"] for r in results.values()) >= 0.95, results


def test_loaders_refuse_the_other_family():
    with pytest.raises(ValueError, match="must hold an encoder-decoder Transformer"):
        load_reversal_model(CHECKPOINT_PATH.with_name("reversal_decoder_only.pt"))
    with pytest.raises(ValueError, match="must hold a DecoderOnly"):
        load_decoder_only_reversal(CHECKPOINT_PATH)
