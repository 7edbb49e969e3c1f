"""The noise a real editor adds to the whole picture it returns, drawn per pair.

Editors such as InstructPix2Pix, MagicBrush-style models and diffusion inpainting re-render
the whole image: the output drifts by a pixel or two, its texture is softened (or sharpened),
its tone and white balance shift slightly, it carries a little noise and it is saved as a
JPEG. :class:`EditorNoise` is one draw of those, from the ranges below (set once from that
description, not tuned to any method's figures), applied in that order by
:meth:`EditorNoise.apply`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

#: JPEG quality of the returned file.
JPEG_QUALITY = (70, 95)
#: Translation of the whole picture, pixels per axis (sub-pixel, either sign).
MAX_SHIFT = 3.0
#: Gaussian blur sigma (softened texture) and unsharp-mask amount (sharpened), in pixels / x.
BLUR_SIGMA = (0.3, 1.0)
SHARPEN_AMOUNT = (0.2, 0.8)
#: Tone: gamma, contrast about mid-gray, brightness offset (0-255 scale).
GAMMA = (0.9, 1.1)
CONTRAST = (0.92, 1.08)
BRIGHTNESS = (-8.0, 8.0)
#: White balance: a gain per channel.
WHITE_BALANCE = (0.95, 1.05)
#: Sensor-like noise, standard deviation on the 0-255 scale.
NOISE_SIGMA = (0.0, 3.0)

Detail = Literal["none", "blur", "sharpen"]


@dataclass(frozen=True)
class EditorNoise:
    """One editor's re-rendering: shift ``(dx, dy)`` in pixels, ``detail`` (blur with sigma
    ``detail_amount``, sharpen with that amount, or none), ``gamma``, ``contrast``,
    ``brightness``, per-channel ``white_balance`` gains, ``noise_sigma``, ``jpeg_quality``
    and the ``seed`` of the noise."""

    shift: tuple[float, float]
    detail: Detail
    detail_amount: float
    gamma: float
    contrast: float
    brightness: float
    white_balance: tuple[float, float, float]
    noise_sigma: float
    jpeg_quality: int
    seed: int

    @classmethod
    def draw(cls, rng: np.random.Generator) -> EditorNoise:
        """A random draw from the module's ranges."""
        detail: Detail = ("none", "blur", "sharpen")[int(rng.choice(3, p=[0.3, 0.4, 0.3]))]
        amount = {
            "none": 0.0,
            "blur": float(rng.uniform(*BLUR_SIGMA)),
            "sharpen": float(rng.uniform(*SHARPEN_AMOUNT)),
        }[detail]
        gains = rng.uniform(*WHITE_BALANCE, size=3)
        return cls(
            shift=(
                float(rng.uniform(-MAX_SHIFT, MAX_SHIFT)),
                float(rng.uniform(-MAX_SHIFT, MAX_SHIFT)),
            ),
            detail=detail,
            detail_amount=amount,
            gamma=float(rng.uniform(*GAMMA)),
            contrast=float(rng.uniform(*CONTRAST)),
            brightness=float(rng.uniform(*BRIGHTNESS)),
            white_balance=(float(gains[0]), float(gains[1]), float(gains[2])),
            noise_sigma=float(rng.uniform(*NOISE_SIGMA)),
            jpeg_quality=int(rng.integers(JPEG_QUALITY[0], JPEG_QUALITY[1] + 1)),
            seed=int(rng.integers(2**31)),
        )

    def as_record(self) -> dict[str, object]:
        """The parameters as JSON-ready data."""
        record = asdict(self)
        record["shift"], record["white_balance"] = list(self.shift), list(self.white_balance)
        return record

    def degrade(self, pixels: np.ndarray) -> np.ndarray:
        """Everything but the JPEG step: RGB uint8 in, RGB uint8 out, same size."""
        import cv2  # OpenCV loads on first use, keeping `import cigeval` light

        image: np.ndarray = pixels.astype(np.float32)
        height, width = image.shape[:2]
        move = np.array([[1, 0, self.shift[0]], [0, 1, self.shift[1]]], np.float32)
        image = cv2.warpAffine(
            image, move, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
        if self.detail == "blur":
            image = cv2.GaussianBlur(image, (0, 0), self.detail_amount)
        elif self.detail == "sharpen":
            soft = cv2.GaussianBlur(image, (0, 0), 1.0)
            image = image + self.detail_amount * (image - soft)
        image = cv2.pow(np.clip(image, 0, 255) * np.float32(1 / 255), self.gamma)
        # Gamma, then contrast about mid-gray and brightness, then a gain per channel.
        gains = np.asarray(self.white_balance, np.float32) * np.float32(self.contrast)
        offsets = (128.0 * (1 - self.contrast) + self.brightness) * np.asarray(
            self.white_balance, np.float32
        )
        image = image * (255 * gains) + offsets
        rng = np.random.default_rng(self.seed)
        image += rng.standard_normal(image.shape, dtype=np.float32) * np.float32(self.noise_sigma)
        # Saturating conversion: rounds and clips to 0-255 in one pass.
        return np.asarray(cv2.convertScaleAbs(np.maximum(image, 0)))

    def apply(self, pixels: np.ndarray) -> bytes:
        """The editor's output file (JPEG bytes) for the clean edited ``pixels`` (RGB uint8)."""
        from cigeval.images import encode_pixels

        return encode_pixels(self.degrade(pixels), "JPEG", quality=self.jpeg_quality)
