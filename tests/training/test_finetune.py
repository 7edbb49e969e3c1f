"""`cigeval finetune` on a tiny random Qwen2.5-VL (CPU, offline): train, reload, judge, resume."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cigeval.backends import resolve_backend
from cigeval.cli import main
from cigeval.errors import ConfigError
from cigeval.messages import GenerationSettings
from cigeval.training import FinetuneConfig, finetune
from tests.backends.support import image_request, make_image

from .support import conversation, write_data, write_rows

pytest.importorskip("trl")
pytest.importorskip("peft")

FAST = ["--max-steps", "2", "--batch-size", "2", "--gradient-accumulation", "1"]
FAST += ["--save-steps", "1", "--learning-rate", "0.01", "--warmup-ratio", "0", "--quiet"]


@pytest.fixture(scope="module")
def trained(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One short training run through the command line, shared by the tests below."""
    folder = tmp_path_factory.mktemp("finetune")
    data = write_data(folder / "data", 4)
    out = folder / "out"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        argv = ["finetune", str(data), "--base", f"hf:{tiny_model}", "--out", str(out), *FAST]
        assert main(argv) == 0
    PRINTED.update(stdout=stdout.getvalue(), stderr=stderr.getvalue())
    return out


#: What the shared training run printed, by stream.
PRINTED: dict[str, str] = {}


def test_the_summary_of_what_was_written_goes_to_stderr(trained: Path) -> None:
    assert PRINTED["stdout"] == ""  # docs/cli.md: nothing but data on stdout
    assert f"adapter: {trained / 'adapter'}" in PRINTED["stderr"]
    assert f"judge with: cigeval evaluate SAMPLES.jsonl --model hf:{trained}" in PRINTED["stderr"]


def test_the_run_writes_adapter_merged_model_config_and_log(
    trained: Path, tiny_model: Path
) -> None:
    run = json.loads((trained / "finetune.json").read_text())
    assert run["status"] == "done" and run["base"] == f"hf:{tiny_model}"
    assert run["config"]["learning_rate"] == 0.01 and run["config"]["lr_scheduler"] == "cosine"
    assert run["conversations"] == 4 and run["result"]["steps"] == 2
    assert run["result"]["trainable_parameters"] > 0 and run["versions"]["trl"]
    log = [json.loads(line) for line in (trained / "train_log.jsonl").read_text().splitlines()]
    steps = [e for e in log if "loss" in e]
    assert [e["step"] for e in steps] == [1, 2]
    assert all(float(e["loss"]) > 0 and "learning_rate" in e for e in steps)
    assert {p.name for p in (trained / "checkpoints").iterdir()} >= {"checkpoint-2"}
    adapter = json.loads((trained / "adapter" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(tiny_model)
    assert adapter["r"] == 16 and adapter["lora_alpha"] == 32
    for name in ("adapter_model.safetensors", "tokenizer_config.json", "chat_template.jinja"):
        assert (trained / "adapter" / name).is_file(), name
    assert (trained / "merged" / "model.safetensors").is_file()


def test_training_changed_only_the_language_model_projections(
    trained: Path, tiny_model: Path
) -> None:
    from safetensors.torch import load_file

    base = load_file(tiny_model / "model.safetensors")
    merged = load_file(trained / "merged" / "model.safetensors")
    assert base.keys() == merged.keys()
    changed = [k for k in base if not (base[k] == merged[k]).all()]
    assert changed, "the merged model equals the base model"
    # the checkpoint names the language model's layers model.layers.N (no language_model)
    saved = re.compile(r"model\.layers\.\d+\.(self_attn|mlp)\.(q|k|v|o|gate|up|down)_proj\.weight")
    assert all(saved.fullmatch(k) for k in changed), changed
    assert len(changed) == 2 * 7  # two layers, seven projections each


def _judge(spec: str) -> tuple[str, str]:
    backend = resolve_backend(spec)
    request = image_request(
        "Rate the image.", (make_image(),), settings=GenerationSettings(0.0, 6, seed=0)
    )
    response = asyncio.run(backend.complete(request))
    backend.close()  # type: ignore[attr-defined]
    return response.text, response.model


def test_the_run_folder_the_merged_model_and_the_adapter_judge_alike(trained: Path) -> None:
    by_folder = _judge(f"hf:{trained}")
    assert by_folder[1] == f"hf:{trained}"
    assert _judge(f"hf:{trained / 'merged'}")[0] == by_folder[0]
    adapter_text, adapter_name = _judge(f"hf:{trained / 'adapter'}")
    assert adapter_text == by_folder[0] and adapter_name == f"hf:{trained / 'adapter'}"


def test_the_same_command_again_does_not_retrain_and_other_settings_are_refused(
    trained: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads((trained / "finetune.json").read_text())["data"]
    argv = ["finetune", data, "--base", f"hf:{tiny_model}", "--out", str(trained), *FAST]
    assert main(argv) == 0
    assert "nothing to do" in capsys.readouterr().err
    assert main([*argv, "--lora-rank", "4"]) == 2
    assert "different settings" in capsys.readouterr().err


class _StopAt:
    """A trainer callback that interrupts training at a step, as a crash would."""

    def __init__(self, step: int) -> None:
        self.step = step

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == self.step:
            raise KeyboardInterrupt


def test_an_interrupted_run_resumes_from_its_last_checkpoint(
    tiny_model: Path, tmp_path: Path
) -> None:
    data = write_data(tmp_path / "data", 6)
    config = FinetuneConfig(
        max_steps=3, batch_size=2, gradient_accumulation=1, save_steps=1, merge=False
    )
    base = f"hf:{tiny_model}"
    with pytest.raises(KeyboardInterrupt):
        finetune(data, base, tmp_path / "run", config, progress=False, callbacks=[_StopAt(2)])
    assert json.loads((tmp_path / "run" / "finetune.json").read_text())["status"] == "running"
    resumed = finetune(data, base, tmp_path / "run", config, progress=False)
    assert resumed.resumed_from is not None and resumed.resumed_from.endswith("checkpoint-1")
    assert resumed.steps == 3 and resumed.merged is None
    assert finetune(data, base, tmp_path / "whole", config, progress=False).steps == 3

    def last_loss(run: Path) -> float:
        lines = (run / "train_log.jsonl").read_text().splitlines()
        return float(next(e for e in map(json.loads, reversed(lines)) if "loss" in e)["loss"])

    assert last_loss(tmp_path / "run") == pytest.approx(last_loss(tmp_path / "whole"), rel=1e-5)


def test_bad_data_stops_before_any_loading(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = conversation(0, tmp_path)
    row["images"] = row["images"][:1]
    data = write_rows(tmp_path / "bad.jsonl", [conversation(1, tmp_path), row])
    out = tmp_path / "out"
    argv = ["finetune", str(data), "--base", f"hf:{tiny_model}", "--out", str(out), "--quiet"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "line 2: 2 image placeholder(s) but 1 image file(s)" in error
    assert not out.exists()


def test_the_base_model_must_be_an_hf_spec(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data", 1)
    with pytest.raises(ConfigError, match="hf:<hub id or local folder>"):
        finetune(data, "openai:gpt-4o", tmp_path / "out")
    with pytest.raises(ConfigError, match="does not exist"):
        finetune(data, "hf:./no/such/folder", tmp_path / "out")
