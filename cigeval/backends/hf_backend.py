"""A local transformers vision-language model (Qwen2-VL / Qwen2.5-VL style) as a backend.

``hf:<name>`` is a hub id, a model folder, a LoRA adapter folder (``adapter_config.json``: its
base model loads and the adapter is merged in) or a ``cigeval finetune`` output folder (its
merged model, else its adapter); see :mod:`cigeval.training.outputs`.

Requests that arrive together (the sub-questions of a sample, several samples at once) are
answered in one batched ``generate`` call, left-padded: the first request of a batch waits a
few milliseconds for company, and requests arriving during a generation form the next batch.
Only greedy requests (temperature 0) are batched; a sampled request runs alone so that its
seed gives the same answer again. torch and transformers are imported when the model is first
loaded, never at cigeval import. transformers' ``AutoProcessor`` for Qwen needs torchvision
(for its video processor); where that fails, the inputs are assembled from the tokenizer and
the image processor by hand.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cigeval._hub import ensure_loadable
from cigeval.errors import (
    BackendError,
    CigevalError,
    ConfigError,
    MissingDependency,
    PreflightError,
)
from cigeval.messages import ImagePart, ModelRequest, ModelResponse, Usage

_IMAGE_PAD = "<|image_pad|>"
#: How long the first request of a batch waits for others, by default.
DEFAULT_BATCH_WAIT_S = 0.01


@dataclass
class _Pending:
    request: ModelRequest
    future: concurrent.futures.Future[tuple[str, Usage, str]]


class HFBackend:
    """Runs a transformers image-text-to-text model in this process.

    ``model_name_or_path``: a local folder (model, adapter or ``cigeval finetune`` output) or
    a Hugging Face hub id (already in the local cache when offline). ``device``: default
    ``cuda`` when available, else ``mps``, else ``cpu``. ``dtype``: a torch dtype or its name;
    default bfloat16 on a GPU that supports it (else float16), float32 elsewhere. The model
    loads on the first request (or :meth:`load`). ``max_batch_size`` greedy requests that
    arrive within ``batch_wait_s`` of each other share one ``generate`` call (1: one request
    at a time); :attr:`batch_sizes` lists the size of every call made. ``temperature == 0``
    decodes greedily; otherwise it samples with the request's seed, so a seeded request gives
    the same answer again. A model that fails
    to load fails every later request at once with the same error (it is not loaded again).
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        device: str | None = None,
        dtype: Any = None,
        max_batch_size: int = 8,
        batch_wait_s: float = DEFAULT_BATCH_WAIT_S,
    ) -> None:
        name = str(model_name_or_path).strip()
        if not name:
            raise ConfigError("HFBackend needs a model name or path")
        if max_batch_size < 1:
            raise ConfigError(f"max_batch_size must be at least 1, got {max_batch_size}")
        path = Path(name).expanduser()
        if _looks_like_path(name) and not path.exists():
            raise ConfigError(
                f"model path {name!r} does not exist; pass a directory holding the weights "
                "(config.json, *.safetensors, tokenizer and preprocessor files), a LoRA "
                "adapter or a `cigeval finetune` output folder"
            )
        self.model_name_or_path = str(path) if path.exists() else name
        self.device = device
        self.dtype = dtype
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_s
        #: The number of requests answered by each ``generate`` call so far.
        self.batch_sizes: list[int] = []
        self._lock = threading.Lock()  # the model: loading and generating
        self._worker_lock = threading.Lock()  # starting and stopping the batching thread
        self._queue: queue.Queue[_Pending | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._processor: Any = None
        self._image_processor: Any = None
        self._load_error: CigevalError | None = None
        #: The token(s) the chat template ends an assistant turn with (found on load).
        self._end_of_turn: set[int] = set()

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
        """Queue the request for the next batch and wait for its reply."""
        started = time.perf_counter()
        future: concurrent.futures.Future[tuple[str, Usage, str]] = concurrent.futures.Future()
        self._ensure_worker()
        self._queue.put(_Pending(request, future))
        text, usage, finish_reason = await asyncio.wrap_future(future)
        return ModelResponse(
            text,
            self.identity,
            usage,
            time.perf_counter() - started,
            finish_reason=finish_reason,
        )

    async def aclose(self) -> None:
        """:meth:`close`, awaitable (``Evaluator`` calls it when a run ends)."""
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Stop the batching thread (requests already queued are answered first).

        The model stays loaded; a later request starts the thread again.
        """
        with self._worker_lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            self._queue.put(None)
            worker.join()

    # --- batching ---------------------------------------------------------------------------

    def _ensure_worker(self) -> None:
        with self._worker_lock:
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._work, name=f"cigeval-{self.identity}", daemon=True
                )
                self._worker.start()

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            pending, stop = self._collect(first)
            greedy = [p for p in pending if _batchable(p.request)]
            for start in range(0, len(greedy), self.max_batch_size):
                self._answer(greedy[start : start + self.max_batch_size])
            for item in pending:
                if not _batchable(item.request):
                    self._answer([item])
            if stop:
                return

    def _collect(self, first: _Pending) -> tuple[list[_Pending], bool]:
        """The first request plus those arriving within the wait window (up to the batch size);
        and whether :meth:`close` asked the worker to stop meanwhile."""
        pending = [first]
        if self.max_batch_size == 1 or not _batchable(first.request):
            return pending, False
        deadline = time.monotonic() + self.batch_wait_s
        while len(pending) < self.max_batch_size:
            timeout = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return pending, True
            pending.append(item)
        return pending, False

    def _answer(self, batch: list[_Pending]) -> None:
        live = [p for p in batch if p.future.set_running_or_notify_cancel()]
        if not live:
            return
        try:
            replies = self._generate([p.request for p in live])
        except BaseException as exc:
            for item in live:
                item.future.set_exception(exc)
            return
        for item, reply in zip(live, replies, strict=True):
            item.future.set_result(reply)

    # --- loading ----------------------------------------------------------------------------

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
        from cigeval.training.outputs import resolve_model_folder

        folder = resolve_model_folder(self.model_name_or_path)
        ensure_loadable(str(folder.weights), "the judge model")
        if self.device is None:
            self.device = _default_device(torch)
        dtype = _dtype(torch, self.dtype, str(self.device))
        try:
            model: Any = transformers.AutoModelForImageTextToText.from_pretrained(
                folder.weights, dtype=dtype
            )
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(
                f"could not load the model {folder.weights!r}: {exc}. Pass a local directory "
                "with the weights, or download them first (pip install 'cigeval[hf]'; "
                "huggingface-cli download <id>) when the network allows"
            ) from exc
        if folder.adapter is not None:
            model = _with_adapter(model, folder.adapter)
        self._load_processor(transformers, folder.processor)
        renderer = self._processor if self._processor is not None else self._tokenizer
        self._end_of_turn = _end_of_turn_ids(renderer, self._text_tokenizer)
        self._model = model.to(self.device).eval()

    @property
    def _text_tokenizer(self) -> Any:
        """The tokenizer (the processor's, when the processor loaded)."""
        return self._tokenizer if self._tokenizer is not None else self._processor.tokenizer

    def _load_processor(self, transformers: Any, where: str) -> None:
        try:
            processor = transformers.AutoProcessor.from_pretrained(where)
            if getattr(processor, "image_processor", None) is None:
                # e.g. an adapter folder without config.json: AutoProcessor gives a tokenizer
                raise TypeError(f"AutoProcessor gave a {type(processor).__name__}")
            processor.tokenizer.padding_side = "left"
            self._processor = processor
            return
        except (ImportError, OSError, ValueError, KeyError, TypeError) as exc:
            # Qwen processors need torchvision in transformers 5; fall back to the parts.
            first_error = exc
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(where)
            self._image_processor = transformers.AutoImageProcessor.from_pretrained(where)
        except (ImportError, OSError, ValueError, KeyError, TypeError) as inner:
            raise ConfigError(
                f"could not load the processor of {where!r} ({first_error}); nor its tokenizer "
                f"and image processor ({inner})"
            ) from inner
        if _IMAGE_PAD not in self._tokenizer.get_vocab():
            raise ConfigError(
                f"AutoProcessor failed for {where!r} ({first_error}) and the fallback only knows "
                "Qwen-VL style models (with an <|image_pad|> token)"
            ) from first_error
        self._tokenizer.padding_side = "left"

    # --- generation -------------------------------------------------------------------------

    def _generate(self, requests: list[ModelRequest]) -> list[tuple[str, Usage, str]]:
        """One ``generate`` call for ``requests`` (which share their sampling settings)."""
        with self._lock:
            self._load_locked()
            import torch

            conversations, images = [], []
            for request in requests:
                conversation, request_images = _conversation(request)
                conversations.append(conversation)
                images.append(request_images)
            inputs = self._inputs(conversations, images)
            inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
            settings = requests[0].settings
            options: dict[str, Any] = {"max_new_tokens": max(map(_budget, requests))}
            if settings.temperature is None:
                pass  # the model's own generation config decides (sampling or not)
            elif settings.temperature > 0:
                options.update(do_sample=True, temperature=settings.temperature)
                if settings.top_p is not None:
                    options["top_p"] = settings.top_p
            else:
                options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            tokenizer = self._text_tokenizer
            pad = tokenizer.pad_token_id
            if pad is None:
                pad = tokenizer.eos_token_id
            # Stop at the end-of-turn token too: a tuned model's generation config often
            # lists only <|endoftext|>, and it would run on to the token limit after its turn.
            stops = _stop_ids(self._model, tokenizer, pad) | self._end_of_turn
            devices = [self.device] if str(self.device).startswith("cuda") else []
            try:
                with torch.random.fork_rng(devices=devices), torch.inference_mode():
                    if settings.seed is not None:
                        torch.manual_seed(settings.seed)
                    output = self._model.generate(
                        **inputs, **options, pad_token_id=pad, eos_token_id=sorted(stops)
                    )
            except Exception as exc:
                raise BackendError(f"{self.identity} failed to generate: {exc}") from exc
            self.batch_sizes.append(len(requests))
            prompt_length = inputs["input_ids"].shape[1]
            replies = []
            for row, request in enumerate(requests):
                new_tokens = output[row, prompt_length:][: _budget(request)].tolist()
                end = next((i + 1 for i, t in enumerate(new_tokens) if t in stops), None)
                # Ran into the token limit without a stop token: the reply is cut, and the
                # session asks again with a larger budget (or reports it cut off).
                cut = end is None and len(new_tokens) >= _budget(request)
                finish_reason = "length" if cut else "stop"
                new_tokens = new_tokens[:end]
                text = tokenizer.decode(new_tokens, skip_special_tokens=True)
                prompt_tokens = int(inputs["attention_mask"][row].sum())
                completion = sum(1 for t in new_tokens if t != pad)
                replies.append((text, Usage(prompt_tokens, completion), finish_reason))
            return replies

    def _inputs(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Any]]
    ) -> dict[str, Any]:
        """Model inputs for several conversations, left-padded to one length."""
        flat = [image for request_images in images for image in request_images]
        if self._processor is not None:
            prompts = [
                self._processor.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                for c in conversations
            ]
            return dict(
                self._processor(
                    text=prompts, images=flat or None, return_tensors="pt", padding=True
                )
            )
        prompts = [
            self._tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
            for c in conversations
        ]
        vision: dict[str, Any] = {}
        if flat:
            vision = dict(self._image_processor(images=flat, return_tensors="pt"))
            merge = int(self._image_processor.merge_size)
            grids = list(vision["image_grid_thw"])
            expanded = []
            for prompt, request_images in zip(prompts, images, strict=True):
                own, grids = grids[: len(request_images)], grids[len(request_images) :]
                expanded.append(_expand_image_pads(prompt, own, merge))
            prompts = expanded
        encoded = dict(self._tokenizer(prompts, return_tensors="pt", padding=True))
        pad_id = self._tokenizer.convert_tokens_to_ids(_IMAGE_PAD)
        # transformers 5 builds Qwen's 3-D rotary positions from these (1 = image token).
        encoded["mm_token_type_ids"] = (encoded["input_ids"] == pad_id).int()
        return {**encoded, **vision}


def _batchable(request: ModelRequest) -> bool:
    """Greedy requests can share a generate call without changing their answers."""
    temperature = request.settings.temperature
    return temperature is not None and temperature <= 0


#: New tokens generated at most when a request sets no ``max_tokens``.
DEFAULT_MAX_NEW_TOKENS = 1024


def _budget(request: ModelRequest) -> int:
    """The request's token budget (:data:`DEFAULT_MAX_NEW_TOKENS` when it sets none)."""
    max_tokens = request.settings.max_tokens
    return DEFAULT_MAX_NEW_TOKENS if max_tokens is None else max_tokens


def _default_device(torch: Any) -> str:
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _dtype(torch: Any, dtype: Any, device: str) -> Any:
    if dtype is None:
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if isinstance(dtype, str) and dtype != "auto":
        return getattr(torch, dtype)
    return dtype


def _with_adapter(model: Any, adapter: str) -> Any:
    """``model`` with the LoRA adapter in ``adapter`` merged into its weights."""
    try:
        import peft
    except ImportError as exc:
        raise MissingDependency("peft", "train", f"Loading the LoRA adapter {adapter}") from exc
    try:
        return peft.PeftModel.from_pretrained(model, adapter).merge_and_unload()
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"could not load the LoRA adapter {adapter!r}: {exc}") from exc


def _stop_ids(model: Any, tokenizer: Any, pad: int | None) -> set[int]:
    """Tokens that end a reply: the generation config's end tokens, the tokenizer's, padding."""
    found: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (configured, tokenizer.eos_token_id, pad):
        if isinstance(value, int):
            found.add(value)
        elif isinstance(value, list | tuple):
            found.update(int(v) for v in value)
    return found


#: End-of-turn tokens of common chat templates (Qwen/ChatML, Llama 3, Gemma, Phi), looked for
#: in a template that cannot be rendered with a sample turn.
KNOWN_END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")
_MARKER = "CIGEVAL-END-OF-TURN-PROBE"


def _end_of_turn_ids(renderer: Any, tokenizer: Any) -> set[int]:
    """The token the chat template closes an assistant turn with (e.g. ``<|im_end|>``).

    Rendered from a two-turn conversation: the first special token after the assistant's
    text. Where the template cannot be rendered, the known end-of-turn tokens that the
    template text names and the vocabulary holds.
    """
    special = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": _MARKER}]},
    ]
    try:
        rendered = renderer.apply_chat_template(conversation, tokenize=False)
        tail = str(rendered).split(_MARKER, 1)[1]
        ids = tokenizer(tail, add_special_tokens=False)["input_ids"]
    except Exception:  # templates are user code: any failure means "look by name"
        ids = []
    first = next((int(i) for i in ids if int(i) in special), None)
    if first is not None:
        return {first}
    template = str(getattr(tokenizer, "chat_template", None) or "")
    vocabulary = tokenizer.get_vocab()
    return {vocabulary[t] for t in KNOWN_END_OF_TURN if t in template and t in vocabulary}


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
    batch = getattr(run_config, "local_batch_size", None)
    return HFBackend(model, max_batch_size=batch or 8)
