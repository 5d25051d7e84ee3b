"""Chapter 12: patches, the Vision Transformer and its baseline."""

import pytest
import torch

from course_utils.runs.core import seeded
from course_utils.runs.vit import VIT_RECIPE, build_vit, load_vit, run_vit
from course_utils.vit import (
    VisionTransformer,
    accuracy,
    count_params,
    epoch_batches,
    load_digits_split,
    matched_mlp,
    mlp_baseline,
    multiply_adds,
    patchify,
    random_shift,
    steps_per_epoch,
    train_classifier,
    unpatchify,
    zero_positions,
)


@pytest.mark.parametrize("shape, p", [((2, 1, 8, 8), 2), ((3, 3, 6, 4), 2), ((1, 2, 12, 12), 4), ((2, 8, 8), 4)])
def test_patchify_matches_a_loop_reference(shape, p):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    x4 = x[:, None] if x.dim() == 3 else x  # (B, C, H, W)
    B, C, H, W = x4.shape
    want = torch.stack([
        torch.stack([x4[b, :, i * p:(i + 1) * p, j * p:(j + 1) * p].reshape(-1)  # one (C, p, p) square
                     for i in range(H // p) for j in range(W // p)])
        for b in range(B)])  # (B, N, C p p)
    torch.testing.assert_close(patchify(x, p), want, rtol=0, atol=0)
    # and nn.Unfold (columns are (C, p, p) patches, row by row) gives the same
    torch.testing.assert_close(patchify(x, p), torch.nn.functional.unfold(x4, p, stride=p).transpose(1, 2))


def test_patchify_bad_input():
    with pytest.raises(ValueError, match="patch"):
        patchify(torch.zeros(1, 8, 8), 3)
    with pytest.raises(ValueError, match="images"):
        patchify(torch.zeros(8, 8), 2)


def test_vit_shapes_and_class_token_attention():
    torch.manual_seed(0)
    model = VisionTransformer(d_model=16, n_heads=2, d_ff=32, n_layers=2).eval()
    logits, weights = model(torch.rand(3, 8, 8), return_attention=True)
    assert logits.shape == (3, 10)
    assert len(weights) == 2 and weights[0].shape == (3, 2, 17, 17)  # class token + 16 patches
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(3, 2, 17))
    with pytest.raises(ValueError, match="images"):
        model(torch.rand(3, 6, 6))


def test_vit_without_positions_ignores_patch_order():
    torch.manual_seed(0)
    model = VisionTransformer(d_model=16, n_heads=2, d_ff=32, n_layers=1).eval()
    with torch.no_grad():
        model.pos.zero_()
    x = torch.rand(2, 8, 8)
    flipped = x.reshape(2, 4, 2, 4, 2).flip(1).reshape(2, 8, 8)  # the rows of 2x2 patches reversed
    torch.testing.assert_close(model(x), model(flipped), atol=1e-5, rtol=1e-5)


def test_baseline_and_split():
    mlp = matched_mlp(20_000)
    assert abs(count_params(mlp) - 20_000) < 200
    assert mlp(torch.rand(4, 8, 8)).shape == (4, 10)
    assert count_params(mlp_baseline(10, depth=1)) == 64 * 10 + 10 + 10 * 10 + 10
    x_train, y_train, x_test, y_test = load_digits_split()
    assert x_train.shape == (1347, 8, 8) and x_test.shape == (450, 8, 8)
    assert float(x_train.max()) == 1.0 and float(x_train.min()) == 0.0
    assert torch.equal(load_digits_split()[3], y_test)  # the split is fixed


def test_random_shift_moves_whole_images():
    x = torch.arange(64.0).reshape(1, 8, 8)
    out = random_shift(x, 1, torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    nonzero = out[out != 0]
    assert set(nonzero.tolist()) <= set(x.flatten().tolist())
    torch.testing.assert_close(random_shift(x, 0), x)


def test_the_shipped_run_holds_every_score_of_the_chapter_s_table():
    """Chapter 12's table reads the shipped ViT's scores and its baselines', stored with the recipe."""
    vit, info = load_vit()
    result = info["result"]
    assert info["recipe"] == VIT_RECIPE and result["params"] == count_params(vit)
    assert set(result["runs"]) == {"vit", "vit_mean", "mlp"} and set(result["sizes"]) == set(result["runs"])
    for key, size in result["sizes"].items():
        assert abs(size["params"] - result["params"]) <= 0.05 * result["params"], key  # equal size, within 5 %
        assert len(result["runs"][key]) == 3
    assert result["sizes"]["vit"]["multiply_adds"] == multiply_adds(vit)
    assert [s["patch"] for s in result["selection"]] == [2, 4]
    chosen = max(result["selection"], key=lambda s: s["val_accuracy"])["patch"]
    assert chosen == VIT_RECIPE["model"]["patch"]  # the recipe's patch size is the one validation chose
    _, _, x_test, y_test = load_digits_split(VIT_RECIPE["test_size"], VIT_RECIPE["split_seed"])
    # the stored score is this model's (within one image: another CPU may round a near-tie the other way)
    assert abs(accuracy(vit, x_test, y_test) - result["test_accuracy"]) <= 1 / len(y_test) + 1e-4
    assert [p["seed"] for p in result["positions"]] == [0, 1, 2]


def test_train_classifier_is_run_vit_by_epochs_and_takes_no_warm_up():
    data = load_digits_split()
    small = {**VIT_RECIPE, "model": {**VIT_RECIPE["model"], "d_model": 16, "d_ff": 32, "n_layers": 1}}
    per_epoch = steps_per_epoch(len(data[1]), small["batch_size"])
    _, by_run = run_vit(small, steps=2 * per_epoch, data=data)  # warm-up capped at 2 epochs - 1 step
    seeded(small["seed"])
    model = build_vit(small)
    no_warmup = train_classifier(model, data, epochs=2, warmup_epochs=0, seed=small["seed"])
    assert no_warmup["steps"] == 2 * per_epoch and 0.1 < no_warmup["test_accuracy"] <= 1.0
    assert by_run["steps"] == 2 * per_epoch
    with pytest.raises(ValueError, match="warmup_epochs must be an int in"):
        train_classifier(model, data, epochs=2, warmup_epochs=2)


def test_epoch_batches_visit_every_image_once_per_epoch():
    x, y = torch.rand(10, 8, 8), torch.arange(10)
    batch = epoch_batches(x, y, 4, torch.Generator().manual_seed(0))
    first = torch.cat([batch(step)[1] for step in (1, 2, 3)])
    second = torch.cat([batch(step)[1] for step in (4, 5, 6)])
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(10))
    assert first.tolist() != second.tolist()  # a fresh permutation each epoch


def test_pooling_zeroed_positions_and_unpatchify():
    torch.manual_seed(0)
    mean = VisionTransformer(d_model=16, n_heads=2, d_ff=32, n_layers=1, pool="mean").eval()
    assert mean.pos.shape == (1, 16, 16) and not hasattr(mean, "cls")
    assert mean(torch.rand(2, 8, 8)).shape == (2, 10)
    x = torch.rand(3, 8, 8)
    for p in (1, 2, 4, 8):
        torch.testing.assert_close(unpatchify(patchify(x, p), 8), x, rtol=0, atol=0)
    model = VisionTransformer(d_model=16, n_heads=2, d_ff=32, n_layers=1)
    zeroed = zero_positions(model)
    assert float(zeroed.pos.detach().abs().sum()) == 0
    assert float(model.pos.detach().abs().sum()) > 0  # a copy: the model keeps its positions
    with pytest.raises(ValueError, match="pool must be"):
        VisionTransformer(pool="max")


def test_baselines_match_their_target_or_refuse_it():
    for target in (20_000, 69_194, 150_000):
        assert abs(count_params(matched_mlp(target)) - target) <= 0.05 * target
    with pytest.raises(ValueError, match="target_params must be within 5 %"):
        matched_mlp(10**8)  # the widest MLP holds about 17 million parameters
    assert multiply_adds(mlp_baseline(10, depth=1)) == 64 * 10 + 10 * 10
