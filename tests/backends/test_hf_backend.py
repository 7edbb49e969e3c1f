"""HFBackend on a tiny random Qwen2-VL saved to disk and loaded back offline."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from cigeval.backends import HFBackend, resolve_backend
from cigeval.errors import ConfigError
from cigeval.messages import GenerationSettings

from .support import image_request, make_image
from .tiny_qwen import save_tiny_qwen2_vl

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_qwen2_vl(tmp_path_factory.mktemp("tiny-qwen2-vl"))


@pytest.fixture(scope="module")
def backend(tiny_model_dir: Path) -> HFBackend:
    backend = HFBackend(tiny_model_dir, device="cpu")
    backend.load()
    return backend


def greedy(max_tokens: int = 8) -> GenerationSettings:
    return GenerationSettings(temperature=0.0, max_tokens=max_tokens, seed=0)


async def test_generates_text_for_a_request_with_an_image(backend: HFBackend) -> None:
    request = image_request(
        "Rate the image.", (make_image((255, 0, 0), (80, 60)),), settings=greedy()
    )
    response = await backend.complete(request)
    assert isinstance(response.text, str) and response.text.strip()
    assert response.model == backend.identity
    # 80x60 becomes a 4x6 patch grid, merged 2x2: six image tokens in the prompt.
    assert response.usage.prompt_tokens > 6
    assert 0 < response.usage.completion_tokens <= 8
    again = await backend.complete(request)
    assert again.text == response.text  # greedy decoding is deterministic


async def test_two_images_and_text_only(backend: HFBackend) -> None:
    images = (make_image((255, 0, 0), (80, 60)), make_image((0, 0, 255), (60, 90)))
    two = await backend.complete(image_request("Compare.", images, settings=greedy(4)))
    one = await backend.complete(image_request("Compare.", images[:1], settings=greedy(4)))
    assert two.usage.prompt_tokens > one.usage.prompt_tokens
    text_only = await backend.complete(image_request("Hello", settings=greedy(4)))
    assert text_only.usage.completion_tokens > 0


async def test_sampling_follows_the_seed(backend: HFBackend) -> None:
    def sampled(seed: int) -> GenerationSettings:
        return GenerationSettings(temperature=1.0, max_tokens=12, seed=seed)

    request = image_request("Rate the image.", (make_image(),), settings=sampled(1))
    first = await backend.complete(request)
    assert (await backend.complete(request)).text == first.text
    others = {
        (
            await backend.complete(
                image_request("Rate the image.", (make_image(),), settings=sampled(s))
            )
        ).text
        for s in (2, 3, 4)
    }
    assert len(others | {first.text}) > 1


def test_missing_local_path_fails_fast(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError, match="does not exist"):
        HFBackend(tmp_path / "no-such-model")
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_backend("hf:./surely/not/here")
    assert time.monotonic() - started < 1.0


async def test_directory_without_weights_names_the_path(tmp_path: Path) -> None:
    backend = HFBackend(tmp_path, device="cpu")
    with pytest.raises(ConfigError) as info:
        await backend.complete(image_request())
    assert str(tmp_path) in str(info.value) and "local directory" in str(info.value)


async def test_unknown_hub_id_offline_is_a_clear_error() -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError, match="no-such-org/no-such-model"):
        await HFBackend("no-such-org/no-such-model", device="cpu").complete(image_request())
    assert time.monotonic() - started < 10.0


async def test_uses_auto_processor_when_it_loads(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With torchvision present AutoProcessor works; stand in for it with the same parts."""
    import transformers

    from cigeval.backends.hf_backend import _expand_image_pads

    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    image_processor = transformers.AutoImageProcessor.from_pretrained(tiny_model_dir)
    calls: list[int] = []

    class StandInProcessor:
        def __init__(self) -> None:
            self.tokenizer = tokenizer
            self.image_processor = image_processor

        def apply_chat_template(self, conversation: list[dict[str, Any]], **kwargs: Any) -> str:
            return str(tokenizer.apply_chat_template(conversation, **kwargs))

        def __call__(
            self, text: list[str], images: Any, return_tensors: str, padding: bool
        ) -> dict[str, Any]:
            calls.append(len(images or []))
            vision = dict(image_processor(images=images, return_tensors=return_tensors))
            prompt = _expand_image_pads(text[0], vision["image_grid_thw"], 2)
            encoded = dict(tokenizer([prompt], return_tensors=return_tensors, padding=padding))
            pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
            encoded["mm_token_type_ids"] = (encoded["input_ids"] == pad).int()
            return {**encoded, **vision}

    monkeypatch.setattr(
        transformers.AutoProcessor, "from_pretrained", lambda *a, **k: StandInProcessor()
    )
    backend = HFBackend(tiny_model_dir, device="cpu")
    response = await backend.complete(image_request("Rate.", (make_image(),), settings=greedy(4)))
    assert calls == [1]
    assert backend._tokenizer is None  # the fallback was not needed
    assert response.usage.completion_tokens > 0


async def test_a_reply_that_ran_into_max_tokens_reports_length(backend: HFBackend) -> None:
    cut = await backend.complete(image_request("Rate the image.", settings=greedy(2)))
    assert cut.usage.completion_tokens == 2 and cut.finish_reason == "length"


async def test_a_model_that_cannot_load_fails_later_requests_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import transformers

    from cigeval.errors import PreflightError

    attempts: list[str] = []
    original = transformers.AutoModelForImageTextToText.from_pretrained

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        attempts.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForImageTextToText, "from_pretrained", counting)
    backend = HFBackend("no-such-org/no-such-model", device="cpu")
    with pytest.raises(PreflightError, match=r"cannot be loaded.*no-such-org/no-such-model"):
        await backend.preflight()
    for _ in range(3):
        with pytest.raises(ConfigError, match="no-such-org/no-such-model"):
            await backend.complete(image_request())
    assert attempts == ["no-such-org/no-such-model"]


def _mixed_requests(settings: GenerationSettings | None = None) -> list[Any]:
    """Six requests of different lengths with 0, 1 or 2 images of different sizes."""
    requests = []
    for i in range(6):
        images = tuple(
            make_image((40 * i, 255 - 30 * i, n * 90), (60 + 8 * i, 60 + 14 * n))
            for n in range(i % 3)
        )
        own = settings or GenerationSettings(temperature=0.0, max_tokens=5 + i, seed=0)
        requests.append(image_request("Rate the image. " * (1 + i), images, settings=own))
    return requests


async def test_requests_arriving_together_share_one_generate_call(tiny_model_dir: Path) -> None:
    """Batched greedy replies (left-padded) equal the replies made one by one."""
    requests = _mixed_requests()
    alone = HFBackend(tiny_model_dir, device="cpu", max_batch_size=1)
    singles = [await alone.complete(r) for r in requests]
    together = HFBackend(tiny_model_dir, device="cpu", max_batch_size=4, batch_wait_s=0.2)
    batched = await asyncio.gather(*(together.complete(r) for r in requests))
    assert alone.batch_sizes == [1] * 6
    assert sorted(together.batch_sizes) == [2, 4]  # at most max_batch_size per call
    for single, joint in zip(singles, batched, strict=True):
        assert joint.text == single.text
        assert joint.usage == single.usage
    assert [r.usage.completion_tokens for r in batched] == [5, 6, 7, 8, 9, 10]
    alone.close()
    together.close()


async def test_sampled_requests_run_alone_and_keep_their_seeds(tiny_model_dir: Path) -> None:
    settings = GenerationSettings(temperature=1.0, max_tokens=8, seed=3)
    requests = _mixed_requests(settings)[:3]
    backend = HFBackend(tiny_model_dir, device="cpu", max_batch_size=8, batch_wait_s=0.2)
    together = await asyncio.gather(*(backend.complete(r) for r in requests))
    assert backend.batch_sizes == [1, 1, 1]
    again = [await backend.complete(r) for r in requests]
    assert [r.text for r in again] == [r.text for r in together]
    backend.close()


def test_device_dtype_and_batch_size_are_picked_for_you(tiny_model_dir: Path) -> None:
    import torch

    from cigeval.config import RunConfig

    config = RunConfig(local_batch_size=3, use_cache=False)
    backend = resolve_backend(f"hf:{tiny_model_dir}", run_config=config)
    assert isinstance(backend, HFBackend) and backend.max_batch_size == 3
    backend.load()
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert backend.device == expected
    if expected == "cpu":
        assert backend._model.dtype == torch.float32
    with pytest.raises(ConfigError, match="at least 1"):
        HFBackend(tiny_model_dir, max_batch_size=0)


async def test_an_unfinished_finetune_folder_says_so(tmp_path: Path) -> None:
    (tmp_path / "finetune.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match="unfinished"):
        await HFBackend(tmp_path, device="cpu").complete(image_request())


def _save_turn_ending_model(directory: Path) -> Path:
    """A tiny Qwen2-VL whose greedy reply is ``<|im_end|>`` at once, while its generation
    config and tokenizer name only ``<|endoftext|>`` as the end (as some tuned models do).

    The weights are set so that one hidden dimension always holds 10 (every token embeds it,
    no layer writes to it) and only ``<|im_end|>`` reads it: its logit is the only positive one.
    """
    import torch
    import transformers

    save_tiny_qwen2_vl(directory)
    model = transformers.AutoModelForImageTextToText.from_pretrained(directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    text = model.model.language_model
    with torch.no_grad():
        text.embed_tokens.weight[:, 0] = 10.0
        for layer in text.layers:
            layer.self_attn.o_proj.weight[0, :] = 0.0
            layer.mlp.down_proj.weight[0, :] = 0.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[end_of_turn, 0] = 1.0
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    model.save_pretrained(directory)
    tokenizer.eos_token = "<|endoftext|>"
    tokenizer.save_pretrained(directory)
    return directory


async def test_generation_stops_at_the_chat_templates_end_of_turn(tmp_path: Path) -> None:
    backend = HFBackend(_save_turn_ending_model(tmp_path / "model"), device="cpu")
    request = image_request("Rate the image.", (make_image(),), settings=greedy(8))
    reply = await backend.complete(request)
    # Without <|im_end|> as a stop, it would run to the limit (8 tokens, finish_reason length).
    assert (reply.finish_reason, reply.usage.completion_tokens, reply.text) == ("stop", 1, "")


def test_the_end_of_turn_token_is_found_by_name_when_the_template_cannot_render(
    tiny_model_dir: Path,
) -> None:
    import transformers

    from cigeval.backends.hf_backend import _end_of_turn_ids

    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)

    class Broken:
        def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
            raise ValueError("this template wants a system message")

    expected = {tokenizer.convert_tokens_to_ids("<|im_end|>")}
    assert _end_of_turn_ids(tokenizer, tokenizer) == expected  # rendered
    assert _end_of_turn_ids(Broken(), tokenizer) == expected  # named in the template
    tokenizer.chat_template = "{{ messages }}"
    assert _end_of_turn_ids(Broken(), tokenizer) == set()
