"""Tests of the time-budgeted character-LM benchmark of issue 35 (benchmarks/charlm.py): the whole-split
score counts every character once, the FLOP count by hand, the planner ends the schedule with the budget."""

from __future__ import annotations

import copy
import importlib.util
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from course_utils.charlm import CharVocab, model_bits_per_char, train_val_ids
from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.runs.charlm import (
    BENCHMARK_RECIPE,
    matmul_flops_per_token,
    matmul_peak_gflops,
    train_budgeted,
    validation_nats,
)

TEXT = "to be, or not to be: that is the question. " * 60
TINY = copy.deepcopy(BENCHMARK_RECIPE)
TINY["model"].update(d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)
TINY.update(batch_size=4, block_size=16)
TINY["train"]["warmup"] = 2


def tiny_data():
    vocab = CharVocab(TEXT)
    return (vocab, *train_val_ids(TEXT, vocab))


def model_for(vocab_size: int, max_len: int = 8) -> DecoderOnly:
    torch.manual_seed(0)
    return DecoderOnly(DecoderOnlyConfig(vocab_size=vocab_size, d_model=8, n_heads=2, d_ff=16, n_layers=1,
                                         max_len=max_len)).eval()


def test_whole_split_predicts_every_character_once():
    ids = torch.arange(30) % 7  # 29 predictions: three windows of 8 and a last one of 5
    model = model_for(7)
    with torch.no_grad():
        total = 0.0
        for start, length in ((0, 8), (8, 8), (16, 8), (24, 5)):
            logits = model(ids[start:start + length][None])[0]
            total += float(F.cross_entropy(logits, ids[start + 1:start + length + 1], reduction="sum"))
    want = total / 29
    assert validation_nats(model, ids, 8) == pytest.approx(want, rel=1e-5)
    assert model_bits_per_char(model, ids, 8) == pytest.approx(want / math.log(2), rel=1e-5)
    # with max_windows only full windows count, as before
    assert model_bits_per_char(model, ids, 8, max_windows=3) != pytest.approx(want / math.log(2), rel=1e-5)


def test_flops_per_token_by_hand():
    model = model_for(7, max_len=8)  # d = 8, d_ff = 16, one layer, tied 7 x 8 head
    linear = 4 * 8 * 8 + 2 * 8 * 16 + 7 * 8  # W_Q, W_K, W_V, W_O; the FFN; the output projection
    assert matmul_flops_per_token(model, 8) == 6 * linear + 12 * 1 * 8 * 8


def test_matmul_peak_is_a_positive_speed():
    assert matmul_peak_gflops(64, 2) > 0


def test_fixed_steps_are_deterministic_and_learn():
    data = tiny_data()
    _, a = train_budgeted(TINY, steps=30, progress=False, data=data)
    _, b = train_budgeted(TINY, steps=30, progress=False, data=data)
    assert a["steps"] == 30 and a["tokens_seen"] == 30 * 4 * 16
    assert a["val_nats"] == b["val_nats"] < math.log(len(data[0]))  # better than a uniform guess
    assert a["val_bits_per_char"] == pytest.approx(a["val_nats"] / math.log(2), abs=1e-3)


def test_time_budget_plans_the_steps():
    _, record = train_budgeted(TINY, seconds=3.0, progress=False, data=tiny_data(), clock="cpu", probe_steps=2)
    assert record["steps"] >= 4 and record["planned_steps"] is not None  # planned after 2 + 2 steps
    assert record["planned_steps"] >= record["steps"]
    assert record["train_cpu_seconds"] < 3.0 + 1.5  # stops with the budget (one step may overrun)
    assert record["gflops_per_s"] >= 0 and record["gflops_per_cpu_s"] > 0


def test_benchmark_script_reads_settings():
    spec = importlib.util.spec_from_file_location("bench_charlm", Path(__file__).parents[1] / "benchmarks/charlm.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    recipe = bench.with_setting(BENCHMARK_RECIPE, "train.lr=0.006")
    assert recipe["train"]["lr"] == 0.006 and BENCHMARK_RECIPE["train"]["lr"] != 0.006
    with pytest.raises(ValueError, match="no field"):
        bench.with_setting(BENCHMARK_RECIPE, "train.lrr=1")
    with pytest.raises(ValueError, match="must look like"):
        bench.with_setting(BENCHMARK_RECIPE, "train.lr")


def test_shipped_character_lm_scores_at_most_1_55_nats_on_the_whole_validation_split():
    """Issue 35's bar for the shipped model, recomputed from its weights: every validation character
    predicted once, consecutive windows of its context; the recorded score is the recomputed one."""
    from course_utils.runs.charlm import charlm_split, load_charlm

    torch.set_num_threads(1)
    model, log = load_charlm()
    _, _, val_ids = charlm_split()
    nats = validation_nats(model, val_ids, log["recipe"]["block_size"])
    assert nats <= 1.55, nats
    assert abs(nats - log["val_nats_full"]) < 1e-3, (nats, log["val_nats_full"])
    assert log["recipe"]["train"]["steps"] == len(log["train_loss_nats"])
