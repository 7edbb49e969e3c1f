"""Synthetic probe images: flat coloured shapes and rendered text with known content.

Every image is drawn by code from a list of :class:`Shape` objects, so what it shows is known
exactly: the probe set knows which colour sits where, and a control image is the outline of
the very shapes the matching output fills. Images are small (:data:`SIZE` pixels square) so
probes are quick and cheap on an API, and deterministic, so the same cigeval version draws
the same bytes (the drift check relies on that).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Literal

from PIL import Image, ImageDraw, ImageFont

#: Side of every probe image, in pixels.
SIZE = 256
#: The colours the scenes use, by the word a prompt uses for them (saturated, far apart).
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "blue": (40, 80, 220),
    "green": (40, 160, 60),
    "yellow": (240, 210, 40),
    "orange": (245, 140, 30),
    "purple": (140, 60, 180),
    "brown": (130, 80, 40),
    "gray": (128, 128, 128),
    "black": (20, 20, 20),
    "white": (252, 252, 252),
    "paper": (245, 242, 235),
    "sky": (175, 210, 240),
    "grass": (120, 190, 110),
}
#: The uniform colour of a blank output.
BLANK_COLOUR = (128, 128, 128)

ShapeKind = Literal["circle", "square", "rectangle", "triangle", "star", "ring"]
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Shape:
    """One filled shape inside ``box`` (left, top, right, bottom), in a named colour."""

    kind: ShapeKind
    box: Box
    colour: str

    def points(self) -> list[tuple[float, float]]:
        """The outline of a polygonal shape (triangle, star), clockwise from the top."""
        left, top, right, bottom = self.box
        cx, cy = (left + right) / 2, (top + bottom) / 2
        if self.kind == "triangle":
            return [(cx, top), (right, bottom), (left, bottom)]
        if self.kind == "star":
            outer = min(right - left, bottom - top) / 2
            inner = outer * 0.45
            return [
                (
                    cx + (outer if i % 2 == 0 else inner) * math.sin(math.pi * i / 5),
                    cy - (outer if i % 2 == 0 else inner) * math.cos(math.pi * i / 5),
                )
                for i in range(10)
            ]
        raise ValueError(f"{self.kind} is not a polygon")


def canvas(colour: str = "paper") -> Image.Image:
    """A plain :data:`SIZE` square RGB image."""
    return Image.new("RGB", (SIZE, SIZE), COLOURS[colour])


def draw(image: Image.Image, shapes: list[Shape]) -> Image.Image:
    """Draw ``shapes`` filled, in order, on a copy of ``image``."""
    image = image.copy()
    pen = ImageDraw.Draw(image)
    for shape in shapes:
        fill = COLOURS[shape.colour]
        if shape.kind == "circle":
            pen.ellipse(shape.box, fill=fill)
        elif shape.kind in ("square", "rectangle"):
            pen.rectangle(shape.box, fill=fill)
        elif shape.kind == "ring":
            pen.ellipse(shape.box, outline=fill, width=max(6, (shape.box[2] - shape.box[0]) // 6))
        else:
            pen.polygon(shape.points(), fill=fill, outline=COLOURS["black"])
    return image


def outline(shapes: list[Shape], width: int = 3) -> Image.Image:
    """A control image in the style of a Canny edge map: white outlines on black."""
    image = Image.new("RGB", (SIZE, SIZE), (0, 0, 0))
    pen = ImageDraw.Draw(image)
    white = (255, 255, 255)
    for shape in shapes:
        if shape.kind in ("circle", "ring"):
            pen.ellipse(shape.box, outline=white, width=width)
        elif shape.kind in ("square", "rectangle"):
            pen.rectangle(shape.box, outline=white, width=width)
        else:
            pen.polygon(shape.points(), outline=white, width=width)
    return image


def write_text(image: Image.Image, text: str, centre: tuple[int, int], size: int = 40) -> None:
    """Render ``text`` in black with Pillow's default font, centred on ``centre`` (in place)."""
    font = ImageFont.load_default(size=size)
    ImageDraw.Draw(image).text(centre, text, fill=COLOURS["black"], font=font, anchor="mm")


def blank() -> Image.Image:
    """A uniform gray image: an output with nothing in it."""
    return Image.new("RGB", (SIZE, SIZE), BLANK_COLOUR)


def jpeg_bytes(image: Image.Image, quality: int = 90) -> bytes:
    """``image`` re-encoded as a JPEG file of the given quality."""
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def resized(image: Image.Image, factor: float = 0.9) -> Image.Image:
    """``image`` scaled by ``factor`` on both sides (Lanczos)."""
    width, height = image.size
    return image.resize((round(width * factor), round(height * factor)), Image.Resampling.LANCZOS)
