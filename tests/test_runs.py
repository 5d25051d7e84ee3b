"""course_utils.runs: the one recipe/run/checkpoint layer and the freshness check of shipped results."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from course_utils.data import VOCAB_SIZE
from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.runs import (
    ASSETS,
    load,
    load_asset,
    machine_record,
    read_checkpoint,
    run,
    save,
    with_steps,
    write_asset,
)
from course_utils.runs.registry import REGISTRY, check, check_one
from course_utils.runs.reversal import (
    DECODER_ONLY_RECIPE,
    FAST_RECIPE,
    build_decoder_only,
    build_model,
    one_sequence_batch_fn,
    reversal_batch_fn,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_utils"


def test_every_shipped_result_is_registered_and_fresh():
    shipped = sorted(p.name for p in ASSETS.iterdir() if p.suffix in (".pt", ".json"))
    assert sorted(REGISTRY) == shipped  # a new result without a registry line fails here
    verdicts = check()
    assert verdicts == {name: "fresh" for name in REGISTRY}, verdicts


def test_assets_readme_is_generated_from_the_registry():
    from course_utils.runs.registry import MADE_BY, assets_readme

    assert list(MADE_BY) and set(MADE_BY) == set(REGISTRY)  # every shipped file says how it is made
    readme = (ASSETS / "README.md").read_text(encoding="utf-8")
    assert readme == assets_readme(), "course_utils/assets/README.md is stale: run `python -m course_utils.runs readme`"
    scripts = {command.split()[1] for _, command in MADE_BY.values()}
    assert all((ROOT / script).is_file() for script in scripts), scripts
    from course_utils.runs.makers import RUNNERS

    for _, command in MADE_BY.values():  # a checkpoint's --run names a runner of the table
        if "train_checkpoint.py" in command:
            assert command.split("--run ")[1].split()[0] in RUNNERS, command


def test_check_fails_and_names_the_file_when_a_stored_recipe_is_edited(tmp_path):
    for name in REGISTRY:
        shutil.copy(ASSETS / name, tmp_path / name)
    data = json.loads((tmp_path / "ablations.json").read_text())
    data["recipe"]["table3_train"]["lr"] = 1e-3  # someone edits the stored recipe by hand
    (tmp_path / "ablations.json").write_text(json.dumps(data))
    ckpt = torch.load(tmp_path / "reversal_transformer.pt", weights_only=True)
    ckpt["recipe"] = with_steps(ckpt["recipe"], 450)  # a checkpoint made with another number of steps
    torch.save(ckpt, tmp_path / "reversal_transformer.pt")
    verdicts = check(assets=tmp_path)
    assert verdicts["ablations.json"].startswith("stale: recipe.table3_train.lr stored 0.001, code 0.005")
    assert "recipe.train.steps stored 450, code 350" in verdicts["reversal_transformer.pt"]
    assert {n for n, v in verdicts.items() if v != "fresh"} == {"ablations.json", "reversal_transformer.pt"}


def test_check_fails_when_a_code_recipe_is_edited(monkeypatch):
    edited = {**FAST_RECIPE, "batch_size": 64}
    verdict = check_one("reversal_transformer.pt", lambda: edited)
    assert verdict == "stale: recipe.batch_size stored 128, code 64"
    assert check_one("reversal_transformer.pt", lambda: {**FAST_RECIPE, "extra": 1}).startswith(
        "stale: recipe.extra is in the code")
    assert check_one("missing.json", lambda: {}) == "stale: the file is missing"
    # the command itself: non-zero exit and the file named when the code's recipe changes
    monkeypatch.setitem(FAST_RECIPE["train"], "lr", 1e-3)
    assert check()["reversal_transformer.pt"].startswith("stale: recipe.train.lr")
    assert check()["ch08_reversal_benchmark.json"].startswith("stale: recipe.encoder-decoder.train.lr")


def test_check_command_prints_one_line_per_result_and_exits_zero_when_fresh(capsys):
    # in this process (`make test` also runs `python -m course_utils.runs check` as its own step)
    from course_utils.runs.__main__ import main

    code = main(["check"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    lines = out.strip().splitlines()
    assert len(lines) == len(REGISTRY) and all(line.split()[-1] == "fresh" for line in lines)


def test_run_returns_the_recipe_it_ran_and_is_seeded():
    a = run(FAST_RECIPE, build_model, reversal_batch_fn, progress=False, steps=3)
    b = run(FAST_RECIPE, build_model, reversal_batch_fn, progress=False, steps=3)
    assert a.recipe["train"]["steps"] == 3 and a.recipe["train"]["warmup"] == 2  # warm-up capped below the steps
    assert FAST_RECIPE["train"]["steps"] == 350  # the constant is untouched
    assert a.history.losses == b.history.losses  # same seed, same data, same weights
    for (k, v), w in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(v, w), k


@pytest.mark.parametrize("family", ["transformer", "decoder_only"])
def test_save_load_round_trip_records_kind_and_recipe(tmp_path, family):
    recipe = FAST_RECIPE if family == "transformer" else DECODER_ONLY_RECIPE
    build, batches = (build_model, reversal_batch_fn) if family == "transformer" else (build_decoder_only,
                                                                                        one_sequence_batch_fn)
    model, history, ran = run(recipe, build, batches, progress=False, steps=2)
    path = save(model, ran, tmp_path / "m.pt", {"loss": history.losses})
    data = read_checkpoint(path)
    assert data["kind"] == family and data["recipe"] == ran and data["results"] == {"loss": history.losses}
    again = load(path)
    assert type(again) is type(model) and not again.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, again.state_dict()[k]), k


def test_load_asset_reads_json_and_checkpoints():
    assert "recipe" in load_asset("ablations.json")
    assert isinstance(load_asset("reversal_decoder_only.pt"), DecoderOnly)
    assert isinstance(load(ASSETS / "charlm_shakespeare.pt"), DecoderOnly)


def test_write_asset_writes_what_the_benchmarks_wrote_by_hand(tmp_path):
    # the bytes each benchmark wrote before the one writer: json.dumps(indent=1) and a newline
    record = {"rows": [{"bits": 1.25, "name": "Größe"}], "recipe": {"seed": 0}, "machine": machine_record()}
    path = write_asset(tmp_path / "r.json", record)
    assert path.read_bytes() == (json.dumps(record, indent=1) + "\n").encode("utf-8")
    write_asset(tmp_path / "u.json", record, ensure_ascii=False)  # benchmarks/translation.py keeps its umlauts
    assert (tmp_path / "u.json").read_text(encoding="utf-8") == json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    assert json.loads(path.read_text(encoding="utf-8")) == record


def test_machine_record_holds_what_the_chapters_read():
    machine = machine_record()
    # Chapter 9 prints cpu_cores and torch_threads, Chapter 10 the processor
    assert {"processor", "cpu_cores", "torch_threads", "torch", "platform", "load_average"} <= set(machine)
    assert machine["torch_threads"] == torch.get_num_threads() and len(machine["load_average"]) == 3


def test_write_asset_refuses_a_path_as_a_name_and_a_record_that_is_not_a_dict(tmp_path):
    with pytest.raises(ValueError, match="name must be a file name in course_utils/assets"):
        write_asset("sub/r.json", {})
    with pytest.raises(TypeError, match="record must be a dict"):
        write_asset(tmp_path / "r.json", [1, 2])


def test_every_benchmark_writes_only_with_write():
    # one flag for every benchmark that rewrites a shipped file: default print only, --write writes
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "--no-save" not in text and "--no-write" not in text, f"{path.name}: use --write (default: print only)"
        if re.search(r"write_asset\(|\bsave\w*\(|write_text\(", text):
            assert '"--write"' in text, f"{path.name} writes a shipped file without a --write flag"


def test_teaching_modules_never_name_a_shipped_file():
    """Only runs/ names files in assets/; the teaching modules never import runs (the layering rule)."""
    shipped = [p.name for p in ASSETS.iterdir() if p.suffix in (".pt", ".json")]
    teaching = [p for p in PACKAGE.glob("*.py")]
    assert len(teaching) > 20
    for path in teaching:
        text = path.read_text(encoding="utf-8")
        named = [name for name in shipped if name in text]
        assert not named, f"{path.name} names {named}: only course_utils/runs/ may"
        # explorers load the shipped model for their figures; induction.py keeps Chapter 8's old import path
        # of reference_attention_only (TODO(charlm): import it from course_utils.runs.induction in the
        # notebook and Exercise 8.6, then delete the shim and this exemption)
        if path.name not in ("explorers.py", "induction.py"):
            imports_runs = re.search(r"^\s*(from \.runs|from course_utils\.runs|import course_utils\.runs)", text, re.M)
            assert not imports_runs, f"{path.name} imports course_utils.runs: teaching modules must not"
        if path.name != "charlm.py":  # the corpus is input data, not a result; charlm.py loads it
            assert '"assets"' not in text, f"{path.name} builds a path into assets/: only course_utils/runs/ may"


def test_api_page_lists_every_public_module():
    api = "".join((ROOT / "book" / page).read_text(encoding="utf-8")
                  for page in ("api.md", "api_later.md", "api_tools.md"))
    modules = [p for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")
               and not re.match(r"ch\d\d_", p.name)]  # chapter checker modules are the exercises' own
    for path in modules:
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        assert f".. automodule:: {dotted}\n" in api, f"the API pages (book/api*.md) do not document {dotted}"
    assert ".. automodule:: course_utils.runs\n" in api


def test_decoder_only_config_round_trips_through_the_checkpoint(tmp_path):
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=VOCAB_SIZE, d_model=8, n_heads=2, d_ff=16, n_layers=1))
    path = save(model, {"model": {}, "train": {}, "seed": 0}, tmp_path / "tiny.pt")
    assert load(path).config == model.config


def test_the_chapter_6_model_is_one_run():
    """Every shipped number about "the Chapter 6 model" comes from one seeded run: the checkpoint.

    Chapter 10's baselines re-ran Chapter 6's fast recipe and score exactly like the shipped
    checkpoint on their own test set (100 strings per length), so the chapters' different
    length-11 figures come from the test strings, not from different models. Chapter 8's
    side-by-side benchmark re-ran the recipe on a later machine, whose arithmetic gives another
    run: Chapter 8 says so and prints the lengths where the two differ, which must be these.
    """
    from course_utils.evaluation import evaluate_by_length
    from course_utils.runs.reversal import FAST_RECIPE, load_reversal_model

    model = load_reversal_model()
    for asset, part, n in (("ch08_reversal_benchmark.json", "encoder-decoder", 200),
                           ("ablations.json", "baselines", 100)):
        data = load_asset(asset)
        record = data[part] if part == "encoder-decoder" else data[part]["transformer"]
        scores = evaluate_by_length(model, range(3, 16), n)
        differ = [k for k, v in scores.items() if record["exact_match"][str(k)] != round(100 * v["exact_match"], 1)]
        if part == "encoder-decoder":
            assert data["recipe"]["encoder-decoder"] == FAST_RECIPE
            printed = f"differs from Chapter 6's shipped model: {differ or 'none'}"
            assert printed in (ROOT / "chapters" / "08_decoder_only.ipynb").read_text(), printed
        else:
            assert differ == [], asset


def test_the_reversal_grid_holds_what_chapter_8_says():
    """Chapter 8's decoder-only recipe is claimed to hold at least 99.5 % exact match at every length 3-10
    for seeds 0-2 in three numerics settings: the shipped grid has those nine runs of today's recipe, its
    summary is recomputed from them, and Chapter 8 prints the least of the nine."""
    from course_utils.runs.registry import GRID_FILE, ch08_grid_recipe

    grid = load_asset(GRID_FILE)
    assert grid["recipe"] == json.loads(json.dumps(ch08_grid_recipe()))
    seeds, settings = grid["recipe"]["grid"]["seeds"], grid["recipe"]["grid"]["settings"]
    assert [(r["seed"], r["setting"]) for r in grid["runs"]] == [(s, k) for s in seeds for k in settings]
    for one in grid["runs"]:
        assert sorted(one["exact_match"], key=int) == [str(n) for n in range(3, 11)], one
        assert one["least"] == min(one["exact_match"].values()) >= 99.5, one
        assert one["torch_threads"] == (2 if one["setting"] == "2 threads" else 1), one
        assert one["n_per_length"] == grid["recipe"]["grid"]["n_per_length"] == 200, one
        # the portable kernels were really in use, and only in their runs
        assert (one["cpu_capability"] == "DEFAULT") == (one["setting"] == "portable kernels"), one
    assert grid["least"] == min(r["least"] for r in grid["runs"])
    printed = f"least over lengths 3-10 of all nine runs: {grid['least']} %"
    assert printed in (ROOT / "chapters" / "08_decoder_only.ipynb").read_text(), printed


# Written exemptions: utils.set_seed is the seeding helper itself (Chapter 1); training.train is the one loop.
EXEMPT = {("utils.py", "seeds"), ("training.py", "loop")}


def _rule_breaks(path: Path) -> set[str]:
    """What a teaching module does that only course_utils/runs/ may: "recipe", "seeds", "loop"."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:  # module-level constants named *_RECIPE
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if any(isinstance(t, ast.Name) and t.id.endswith("_RECIPE") for t in targets):
            found.add("recipe")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        owner = ast.unparse(f.value) if isinstance(f, ast.Attribute) else ""
        # the global generators: torch.manual_seed, torch.random.manual_seed, np.random.seed, random.seed,
        # set_seed / seeded (a torch.Generator(...).manual_seed(...) of one's own is fine)
        if (name == "manual_seed" and owner in ("torch", "torch.random", "torch.cuda")) or name in (
                "set_seed", "seeded") or (name == "seed" and owner in ("random", "np.random", "numpy.random")):
            found.add("seeds")
        # an optimisation loop of its own: backward(), an optimiser's or a scheduler's step(), or an optimiser
        if name in ("backward", "step") and not node.args or owner.startswith("torch.optim"):
            found.add("loop")
    return found


def test_teaching_modules_hold_no_recipe_seed_nor_training_loop():
    """Recipes, seeded runs and training loops live in course_utils/runs/ (and training.train): the layering rule."""
    teaching = sorted(PACKAGE.glob("*.py"))
    breaks = {(p.name, what) for p in teaching for what in _rule_breaks(p)} - EXEMPT
    assert not breaks, f"teaching modules break the layering rule (move it into course_utils/runs/): {sorted(breaks)}"


def test_the_layering_check_sees_each_kind_of_break(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import torch\nX_RECIPE = {}\n", encoding="utf-8")
    assert _rule_breaks(module) == {"recipe"}
    module.write_text("import torch\ndef f():\n    torch.manual_seed(0)\n", encoding="utf-8")
    assert _rule_breaks(module) == {"seeds"}
    module.write_text("def f(opt, loss):\n    loss.backward()\n    opt.step()\n", encoding="utf-8")
    assert _rule_breaks(module) == {"loop"}
    module.write_text("import torch\ng = torch.Generator().manual_seed(0)\nRECIPES = {}\n", encoding="utf-8")
    assert _rule_breaks(module) == set()
