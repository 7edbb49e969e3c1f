"""Reward functions a training script imports, against a server or in-process.

- :class:`FlowGRPOReward`: Flow-GRPO's ``fn(images, prompts, metadata) -> (scores, info)``;
  ``images`` a float NCHW tensor in [0, 1], a uint8 NHWC array or a list of PIL images.
- :func:`trl_reward`: a TRL ``reward_funcs`` entry, ``f(prompts, completions, **kw)``.
- :func:`verl_compute_score`: verl's ``compute_score(data_source, solution_str, ground_truth,
  extra_info)``.

Each returns one float per image; an image the judge could not score is ``nan`` (never a
made-up number), and ``info`` / the scorer's ``last_errors`` say why.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from typing import Any

from cigeval.serve.client import ScoreClient, b64


def to_png_bytes(images: Any) -> list[bytes]:
    """PNG bytes of each image: a float NCHW tensor/array in [0, 1], a uint8 NHWC array, or
    PIL images (a list of them or of arrays)."""
    import numpy as np
    from PIL import Image

    if hasattr(images, "detach"):  # a torch tensor: NCHW floats in [0, 1] (Flow-GRPO)
        array = images.detach().float().cpu().numpy()
        if array.ndim != 4:
            raise ValueError(f"expected an NCHW tensor, got shape {tuple(array.shape)}")
        images = (np.clip(array, 0.0, 1.0) * 255).round().astype(np.uint8).transpose(0, 2, 3, 1)
    elif isinstance(images, np.ndarray):
        if images.ndim != 4:
            raise ValueError(f"expected an NHWC array, got shape {images.shape}")
        if images.dtype != np.uint8:
            if images.shape[1] in (1, 3) and images.shape[-1] not in (1, 3):
                images = images.transpose(0, 2, 3, 1)
            images = (np.clip(images, 0.0, 1.0) * 255).round().astype(np.uint8)
    out = []
    for index, image in enumerate(images):
        if isinstance(image, np.ndarray):
            image = Image.fromarray(image.squeeze(-1) if image.shape[-1] == 1 else image)
        if not isinstance(image, Image.Image):
            raise TypeError(f"image {index}: {type(image).__name__} is not an image")
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


class ImageScorer:
    """Scores (prompt, image) pairs: over HTTP when ``url`` is given, else in-process with
    ``evaluator`` (a :class:`cigeval.Evaluator`). ``task`` is the T2I task; with
    ``sources`` the pairs are edits judged under ``edit_task``."""

    def __init__(
        self,
        *,
        url: str | None = None,
        api_key: str | None = None,
        evaluator: Any = None,
        task: str = "text_guided_ig",
        edit_task: str = "text_guided_ie",
        timeout_s: float = 300.0,
    ) -> None:
        if (url is None) == (evaluator is None):
            raise ValueError("give either url= (a running cigeval serve) or evaluator=")
        self.client = ScoreClient(url, api_key=api_key, timeout_s=timeout_s) if url else None
        self.evaluator = evaluator
        self.task, self.edit_task = task, edit_task
        #: Why each image of the last call has no score (None where it has one).
        self.last_errors: list[str | None] = []

    def score(
        self,
        prompts: Sequence[str],
        images: Any,
        sources: Any = None,
        groups: Sequence[str | None] | None = None,
    ) -> list[float]:
        """One float per image (``nan`` where the judge gave none)."""
        outputs = to_png_bytes(images)
        prompts = [str(p) for p in prompts]
        if len(prompts) != len(outputs):
            raise ValueError(f"{len(outputs)} image(s) but {len(prompts)} prompt(s)")
        edits = to_png_bytes(sources) if sources is not None else None
        items = []
        for i, (prompt, output) in enumerate(zip(prompts, outputs, strict=True)):
            if edits is None:
                item: dict[str, Any] = {"task": self.task, "prompt": prompt}
                images_of = {"output": output}
            else:
                item = {"task": self.edit_task, "instruction": prompt}
                images_of = {"source": edits[i], "output": output}
            if groups is not None and groups[i] is not None:
                item["group"] = groups[i]
            items.append((str(i), item, images_of))
        if self.client is not None:
            answer = self.client.score(
                [
                    {"id": i, **item, "images": {r: b64(d) for r, d in im.items()}}
                    for i, item, im in items
                ]
            )
            results = answer["results"]
            self.last_errors = [r.get("error") for r in results]
            return [float(r["score"]) if r["score"] is not None else math.nan for r in results]
        samples = [
            {"id": i, **{k: v for k, v in item.items() if k != "group"}, "images": im}
            for i, item, im in items
        ]
        scores = self.evaluator.evaluate_many(samples)
        self.last_errors = [s.error for s in scores]
        return [
            float(s.value) if s.status == "ok" and s.value is not None else math.nan for s in scores
        ]


class FlowGRPOReward:
    """Flow-GRPO's reward function: ``scores, info = reward(images, prompts, metadata)``.

    ``metadata`` may hold, per image, a ``group`` (for the service's tie statistics) or a
    ``source`` image (then the pair is an edit). ``info`` has ``errors`` (None where scored).
    """

    def __init__(self, scorer: ImageScorer) -> None:
        self.scorer = scorer

    def __call__(
        self, images: Any, prompts: Sequence[str], metadata: Any = None
    ) -> tuple[Any, dict[str, Any]]:
        """One float per image, as a numpy array, and the per-image errors."""
        import numpy as np

        metadata = list(metadata) if metadata is not None else []
        sources = [m.get("source") for m in metadata if isinstance(m, dict)]
        groups = [m.get("group") if isinstance(m, dict) else None for m in metadata] or None
        use_sources = sources if sources and all(s is not None for s in sources) else None
        scores = self.scorer.score(prompts, images, use_sources, groups)
        return np.asarray(scores, dtype=np.float64), {"errors": self.scorer.last_errors}


def trl_reward(scorer: ImageScorer) -> Callable[..., list[float]]:
    """A TRL ``reward_funcs`` entry: ``f(prompts, completions, **kwargs) -> list[float]``,
    where each completion is the generated image (PIL or array); an ``images`` keyword, when
    given, takes precedence over ``completions``."""

    def cigeval_reward(prompts: Sequence[Any], completions: Any, **kwargs: Any) -> list[float]:
        images = kwargs.get("images", completions)
        texts = [p if isinstance(p, str) else _prompt_text(p) for p in prompts]
        return scorer.score(texts, images)

    return cigeval_reward


def _prompt_text(prompt: Any) -> str:
    """The text of a conversational TRL prompt (a list of role/content messages)."""
    if isinstance(prompt, list):
        return " ".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    return str(prompt)


def verl_compute_score(scorer: ImageScorer) -> Callable[..., float]:
    """verl's custom reward: ``compute_score(data_source, solution_str, ground_truth,
    extra_info)`` where ``extra_info["image"]`` is the generated image and
    ``extra_info.get("prompt", ground_truth)`` its prompt."""

    def compute_score(
        data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None
    ) -> float:
        extra = extra_info or {}
        if "image" not in extra:
            raise ValueError("verl compute_score: extra_info['image'] must hold the image")
        prompt = str(extra.get("prompt", ground_truth))
        return scorer.score([prompt], [extra["image"]])[0]

    return compute_score
