"""A local transformers vision-language model (Qwen2-VL / Qwen2.5-VL style) as a backend.

torch and transformers are imported when the model is first loaded, never at cigeval import.
transformers' ``AutoProcessor`` for Qwen needs torchvision (for its video processor); where
that fails, the inputs are assembled from the tokenizer and the image processor by hand.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cigeval.errors import (
    BackendError,
    CigevalError,
    ConfigError,
    MissingDependency,
    PreflightError,
)
from cigeval.messages import ImagePart, ModelRequest, ModelResponse, Usage

_IMAGE_PAD = "<|image_pad|>"


class HFBackend:
    """Runs a transformers image-text-to-text model in this process.

    ``model_name_or_path``: a local directory or a Hugging Face hub id (already in the local
    cache when offline). ``device``: default ``cuda`` when available, else ``cpu``. ``dtype``:
    a torch dtype or its name; default bfloat16 on a GPU that supports it, else float32.
    The model loads on the first request (or :meth:`load`). Requests run one at a time in a
    worker thread. ``temperature == 0`` decodes greedily; otherwise it samples with the
    request's seed, so a seeded request gives the same answer again. A model that fails to
    load fails every later request at once with the same error (it is not loaded again).
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        device: str | None = None,
        dtype: Any = None,
    ) -> None:
        name = str(model_name_or_path).strip()
        if not name:
            raise ConfigError("HFBackend needs a model name or path")
        path = Path(name).expanduser()
        if _looks_like_path(name) and not path.exists():
            raise ConfigError(
                f"model path {name!r} does not exist; pass a directory holding the weights "
                "(config.json, *.safetensors, tokenizer and preprocessor files)"
            )
        self.model_name_or_path = str(path) if path.exists() else name
        self.device = device
        self.dtype = dtype
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._processor: Any = None
        self._image_processor: Any = None
        self._load_error: CigevalError | None = None

    @property
    def identity(self) -> str:
        """``hf:<name or path>``."""
        return f"hf:{self.model_name_or_path}"

    def __repr__(self) -> str:
        state = "loaded" if self._model is not None else "not loaded"
        return f"HFBackend({self.model_name_or_path!r}, device={self.device!r}, {state})"

    def load(self) -> None:
        """Load the model and its processor now (otherwise the first request does it)."""
        with self._lock:
            self._load_locked()

    async def preflight(self) -> None:
        """Load the model now; a failure is a :class:`PreflightError` naming the fix."""
        try:
            await asyncio.to_thread(self.load)
        except (ConfigError, MissingDependency) as exc:
            raise PreflightError(f"the judge {self.identity} cannot be loaded: {exc}") from exc

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Generate a reply in a worker thread."""
        started = time.perf_counter()
        text, usage, finish_reason = await asyncio.to_thread(self._generate, request)
        return ModelResponse(
            text,
            self.identity,
            usage,
            time.perf_counter() - started,
            finish_reason=finish_reason,
        )

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        if self._load_error is not None:
            raise self._load_error.with_traceback(None)
        try:
            self._load_uncached()
        except (ConfigError, MissingDependency) as exc:
            self._load_error = exc
            raise

    def _load_uncached(self) -> None:
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise MissingDependency(
                exc.name or "transformers", "hf", "Running a local model (hf:...)"
            ) from exc
        if self.device is None:
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = self.dtype
        if dtype is None:
            cuda = str(self.device).startswith("cuda")
            dtype = torch.bfloat16 if cuda and torch.cuda.is_bf16_supported() else torch.float32
        elif isinstance(dtype, str) and dtype != "auto":
            dtype = getattr(torch, dtype)
        where = self.model_name_or_path
        try:
            model: Any = transformers.AutoModelForImageTextToText.from_pretrained(
                where, dtype=dtype
            )
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(
                f"could not load the model {where!r}: {exc}. Pass a local directory with the "
                "weights, or download them first (pip install 'cigeval[hf]'; "
                "huggingface-cli download <id>) when the network allows"
            ) from exc
        try:
            self._processor = transformers.AutoProcessor.from_pretrained(where)
        except (ImportError, OSError, ValueError, KeyError, TypeError) as exc:
            # Qwen processors need torchvision in transformers 5; fall back to the parts.
            try:
                self._tokenizer = transformers.AutoTokenizer.from_pretrained(where)
                self._image_processor = transformers.AutoImageProcessor.from_pretrained(where)
            except (ImportError, OSError, ValueError, KeyError, TypeError) as inner:
                raise ConfigError(
                    f"could not load the processor of {where!r} ({exc}); nor its tokenizer "
                    f"and image processor ({inner})"
                ) from inner
            if _IMAGE_PAD not in self._tokenizer.get_vocab():
                raise ConfigError(
                    f"AutoProcessor failed for {where!r} ({exc}) and the fallback only knows "
                    "Qwen-VL style models (with an <|image_pad|> token)"
                ) from exc
        self._model = model.to(self.device).eval()

    def _generate(self, request: ModelRequest) -> tuple[str, Usage, str]:
        with self._lock:
            self._load_locked()
            import torch

            conversation, images = _conversation(request)
            inputs = self._inputs(conversation, images)
            inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
            settings = request.settings
            options: dict[str, Any] = {"max_new_tokens": settings.max_tokens}
            if settings.temperature > 0:
                options.update(do_sample=True, temperature=settings.temperature)
                if settings.top_p is not None:
                    options["top_p"] = settings.top_p
            else:
                options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            tokenizer = self._tokenizer or self._processor.tokenizer
            pad = tokenizer.pad_token_id
            if pad is None:
                pad = tokenizer.eos_token_id
            devices = [self.device] if str(self.device).startswith("cuda") else []
            try:
                with torch.random.fork_rng(devices=devices), torch.inference_mode():
                    if settings.seed is not None:
                        torch.manual_seed(settings.seed)
                    output = self._model.generate(**inputs, **options, pad_token_id=pad)
            except Exception as exc:
                raise BackendError(f"{self.identity} failed to generate: {exc}") from exc
            prompt_length = inputs["input_ids"].shape[1]
            new_tokens = output[0, prompt_length:]
            finish_reason = self._finish_reason(new_tokens, settings.max_tokens, pad)
            if pad is not None:
                new_tokens = new_tokens[new_tokens != pad]
            text = tokenizer.decode(new_tokens, skip_special_tokens=True)
            return text, Usage(int(prompt_length), int(new_tokens.shape[0])), finish_reason

    def _finish_reason(self, new_tokens: Any, max_tokens: int, pad: int | None) -> str:
        """``length`` when generation ran into ``max_tokens`` without ending, else ``stop``."""
        if new_tokens.shape[0] < max_tokens:
            return "stop"
        eos = getattr(getattr(self._model, "generation_config", None), "eos_token_id", None)
        ends = {eos} if isinstance(eos, int) else set(eos or [])
        if pad is not None:
            ends.add(pad)
        return "stop" if int(new_tokens[-1]) in ends else "length"

    def _inputs(self, conversation: list[dict[str, Any]], images: list[Any]) -> dict[str, Any]:
        if self._processor is not None:
            prompt = self._processor.apply_chat_template(
                conversation, tokenize=False, add_generation_prompt=True
            )
            return dict(self._processor(text=[prompt], images=images or None, return_tensors="pt"))
        prompt = self._tokenizer.apply_chat_template(
            conversation, tokenize=False, add_generation_prompt=True
        )
        vision: dict[str, Any] = {}
        if images:
            vision = dict(self._image_processor(images=images, return_tensors="pt"))
            prompt = _expand_image_pads(
                prompt, vision["image_grid_thw"], int(self._image_processor.merge_size)
            )
        encoded = dict(self._tokenizer([prompt], return_tensors="pt"))
        pad_id = self._tokenizer.convert_tokens_to_ids(_IMAGE_PAD)
        # transformers 5 builds Qwen's 3-D rotary positions from these (1 = image token).
        encoded["mm_token_type_ids"] = (encoded["input_ids"] == pad_id).int()
        return {**encoded, **vision}


def _conversation(request: ModelRequest) -> tuple[list[dict[str, Any]], list[Any]]:
    """Chat-template messages (images as placeholders) and the PIL images in order."""
    conversation = []
    images = []
    for message in request.messages:
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                content.append({"type": "image"})
                images.append(part.image.to_pil())
            else:
                content.append({"type": "text", "text": part.text})
        conversation.append({"role": message.role, "content": content})
    return conversation, images


def _expand_image_pads(prompt: str, grid_thw: Any, merge_size: int) -> str:
    """Repeat each image's single ``<|image_pad|>`` once per merged vision patch."""
    pieces = prompt.split(_IMAGE_PAD)
    if len(pieces) - 1 != len(grid_thw):
        raise BackendError(
            f"the chat template produced {len(pieces) - 1} image placeholders for "
            f"{len(grid_thw)} images"
        )
    expanded = [pieces[0]]
    for grid, rest in zip(grid_thw, pieces[1:], strict=True):
        expanded.append(_IMAGE_PAD * (int(grid.prod()) // merge_size**2) + rest)
    return "".join(expanded)


def _looks_like_path(name: str) -> bool:
    """True for names meant as local paths rather than hub ids like ``org/model``."""
    return (
        name.startswith(("/", "./", "../", "~", ".\\"))
        or os.path.isabs(name)
        or (os.sep == "\\" and ":" in name[:3])
    )


def from_spec(
    model: str, *, base_url: str | Sequence[str] | None = None, run_config: Any = None
) -> HFBackend:
    """The backend of an ``hf:<hub id or local path>`` spec (the part after ``hf:``)."""
    if base_url is not None:
        raise ConfigError("base_url applies to 'openai:' specs, not to 'hf:' models")
    return HFBackend(model)
