"""Procedural scenes for the planted-edit set: a backdrop and textured shapes, drawn by code.

A :class:`Scene` is a value (a backdrop and a tuple of :class:`SceneObject`); :func:`render`
draws it, the same pixels every time. Objects are the probe set's shapes and colours
(:mod:`cigeval.probes.scenes`), here with anti-aliased edges (drawn at four times the size and
averaged down), a little shading and a texture; the backdrop is a wall and a floor with soft
light, planks and grain, so the picture has edges and texture everywhere, as a photograph
does. :func:`footprint` is the share of each pixel an object covers: the ground truth of
every edit's mask.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from PIL import Image, ImageDraw

from cigeval.probes.scenes import COLOURS, Shape, ShapeKind

#: The shapes objects take (the probe set's).
OBJECT_KINDS: tuple[ShapeKind, ...] = ("circle", "square", "rectangle", "triangle", "star", "ring")
#: The colours objects take, by the word an instruction uses.
OBJECT_COLOURS = ("red", "blue", "green", "yellow", "orange", "purple", "brown", "black", "white")
Texture = Literal["plain", "stripes", "checks", "dots", "grain"]
TEXTURES: tuple[Texture, ...] = ("plain", "stripes", "checks", "dots", "grain")
#: How an instruction names a texture.
TEXTURE_WORDS: dict[str, str] = {
    "plain": "plain",
    "stripes": "striped",
    "checks": "checked",
    "dots": "dotted",
    "grain": "speckled",
}
#: Wall and floor colours of the backdrops (muted, as rooms and tables are).
BACKDROPS: tuple[tuple[tuple[int, int, int], tuple[int, int, int]], ...] = (
    (COLOURS["paper"], (180, 150, 115)),
    (COLOURS["sky"], COLOURS["grass"]),
    ((205, 200, 190), (120, 110, 100)),
    ((90, 100, 120), (160, 160, 150)),
    ((230, 215, 190), (140, 95, 60)),
    ((200, 220, 210), (95, 120, 110)),
)
#: Supersampling factor of the objects' edges.
_SUPER = 4
Rect = tuple[float, float, float, float]


@dataclass(frozen=True)
class SceneObject:
    """One shape in ``box`` (left, top, right, bottom; floats, image pixels), filled with
    ``colour`` in a ``texture`` whose second colour is ``pattern``; ``seed`` fixes its
    shading direction, its pattern's angle and period and its grain."""

    kind: ShapeKind
    box: Rect
    colour: str
    texture: Texture = "plain"
    pattern: str = "white"
    seed: int = 0

    @property
    def phrase(self) -> str:
        """How an instruction names it: ``striped red circle`` (no article)."""
        texture = "" if self.texture == "plain" else TEXTURE_WORDS[self.texture] + " "
        return f"{texture}{self.colour} {self.kind}"

    @property
    def side(self) -> float:
        """The larger side of its box."""
        left, top, right, bottom = self.box
        return max(right - left, bottom - top)

    def moved_to(self, box: Rect) -> SceneObject:
        """The same object in another box."""
        return replace(self, box=box)


@dataclass(frozen=True)
class Backdrop:
    """A wall above a floor: their colours, the floor's top as a share of the height, plank
    lines on the floor or not, and the grain and light variation fixed by ``seed``."""

    wall: tuple[int, int, int]
    floor: tuple[int, int, int]
    horizon: float
    planks: bool
    grain: float
    seed: int


@dataclass(frozen=True)
class Scene:
    """A square picture of ``size`` pixels: a backdrop and objects drawn in order."""

    size: int
    backdrop: Backdrop
    objects: tuple[SceneObject, ...]


def _smooth_field(rng: np.random.Generator, size: int, cells: int, scale: float) -> np.ndarray:
    """Low-frequency variation: a coarse random grid upsampled smoothly to ``size``."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    coarse = rng.normal(0.0, scale, (cells, cells)).astype(np.float32)
    return np.asarray(cv2.resize(coarse, (size, size), interpolation=cv2.INTER_CUBIC))


def render_backdrop(backdrop: Backdrop, size: int) -> np.ndarray:
    """The backdrop alone, as float32 RGB ``(size, size, 3)`` in 0-255."""
    rng = np.random.default_rng(backdrop.seed)
    ys = np.arange(size, dtype=np.float32)[:, None]
    horizon = backdrop.horizon * size
    # A soft edge two pixels wide where the wall meets the floor.
    on_floor = np.clip((ys - horizon) / 2.0 + 0.5, 0.0, 1.0)
    wall, floor = np.asarray(backdrop.wall, np.float32), np.asarray(backdrop.floor, np.float32)
    image = (1 - on_floor)[..., None] * wall + on_floor[..., None] * floor
    image = np.broadcast_to(image, (size, size, 3)).copy()
    light = 1.0 + 0.12 * (0.5 - ys / size) + _smooth_field(rng, size, 5, 0.04)
    image *= light[..., None]
    if backdrop.planks:
        spacing = max(6.0, size / float(rng.uniform(10, 18)))
        line = np.abs(((ys - horizon) % spacing) - spacing / 2) > spacing / 2 - 1.0
        image *= np.where((ys > horizon + 1) & line, 0.82, 1.0)[..., None]
    grain = rng.standard_normal((size, size, 1), dtype=np.float32) * np.float32(backdrop.grain)
    return np.asarray(image + grain, np.float32)


def _crop_of(box: Rect, size: int) -> tuple[int, int, int, int]:
    """The integer pixel window holding ``box`` (clipped to the picture)."""
    left, top, right, bottom = box
    x0, y0 = max(0, int(np.floor(left)) - 1), max(0, int(np.floor(top)) - 1)
    x1, y1 = min(size, int(np.ceil(right)) + 1), min(size, int(np.ceil(bottom)) + 1)
    return x0, y0, x1, y1


def _coverage(obj: SceneObject, window: tuple[int, int, int, int]) -> np.ndarray:
    """The share of each pixel of ``window`` that ``obj`` covers, float32 in [0, 1]."""
    x0, y0, x1, y1 = window
    width, height = (x1 - x0) * _SUPER, (y1 - y0) * _SUPER
    left, top, right, bottom = (
        (v - o) * _SUPER for v, o in zip(obj.box, (x0, y0, x0, y0), strict=True)
    )
    shape = Shape(obj.kind, (round(left), round(top), round(right), round(bottom)), obj.colour)
    layer = Image.new("L", (width, height), 0)
    pen = ImageDraw.Draw(layer)
    if obj.kind == "circle":
        pen.ellipse(shape.box, fill=255)
    elif obj.kind in ("square", "rectangle"):
        pen.rectangle(shape.box, fill=255)
    elif obj.kind == "ring":
        thickness = max(2 * _SUPER, (shape.box[2] - shape.box[0]) // 5)
        pen.ellipse(shape.box, outline=255, width=thickness)
    else:
        pen.polygon(shape.points(), fill=255)
    reduced = layer.reduce(_SUPER)  # the mean of each 4x4 block: anti-aliased coverage
    return np.asarray(reduced, np.float32) / 255.0


def footprint(obj: SceneObject, size: int) -> np.ndarray:
    """The share of each pixel of the ``size`` square picture that ``obj`` covers
    (float32, 0 outside it)."""
    x0, y0, x1, y1 = window = _crop_of(obj.box, size)
    full = np.zeros((size, size), np.float32)
    if x1 > x0 and y1 > y0:
        full[y0:y1, x0:x1] = _coverage(obj, window)
    return full


def _fill(obj: SceneObject, window: tuple[int, int, int, int]) -> np.ndarray:
    """The object's paint over ``window``: colour, texture and shading, float32 RGB."""
    rng = np.random.default_rng(obj.seed)
    x0, y0, x1, y1 = window
    ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    # The texture is anchored to the object's box, so it travels with the object.
    u, v = xs - obj.box[0], ys - obj.box[1]
    base, second = np.asarray(COLOURS[obj.colour], np.float32), np.asarray(COLOURS[obj.pattern])
    period = float(rng.uniform(0.12, 0.25)) * max(obj.side, 8.0)
    angle = float(rng.uniform(0, np.pi))
    if obj.texture == "stripes":
        phase = (u * np.cos(angle) + v * np.sin(angle)) / period
        share = np.clip(np.sin(2 * np.pi * phase) * 3.0 + 0.5, 0.0, 1.0)
    elif obj.texture == "checks":
        share = ((np.floor(u / period) + np.floor(v / period)) % 2).astype(np.float32)
    elif obj.texture == "dots":
        cu, cv = (u % period) - period / 2, (v % period) - period / 2
        share = np.clip(period * 0.28 - np.sqrt(cu * cu + cv * cv) + 0.5, 0.0, 1.0)
    else:
        share = np.zeros_like(u)
    paint = (1 - share)[..., None] * base + share[..., None] * second.astype(np.float32)
    if obj.texture == "grain":
        paint = paint + rng.normal(0.0, 16.0, (*paint.shape[:2], 1)).astype(np.float32)
    # Light from one side: up to 12% darker across the object.
    direction = float(rng.uniform(0, 2 * np.pi))
    along = (u * np.cos(direction) + v * np.sin(direction)) / max(obj.side, 1.0)
    shade = 1.0 - 0.12 * np.clip(along, 0.0, 1.0)
    return np.asarray(paint * shade[..., None], np.float32)


def render_float(scene: Scene) -> np.ndarray:
    """:func:`render` before rounding: float32 RGB in 0-255 (not clipped)."""
    image = render_backdrop(scene.backdrop, scene.size)
    for obj in scene.objects:
        x0, y0, x1, y1 = window = _crop_of(obj.box, scene.size)
        if x1 <= x0 or y1 <= y0:
            continue
        alpha = _coverage(obj, window)[..., None]
        region = image[y0:y1, x0:x1]
        image[y0:y1, x0:x1] = region * (1 - alpha) + _fill(obj, window) * alpha
    return image


def render(scene: Scene) -> np.ndarray:
    """The scene's pixels, RGB uint8 ``(size, size, 3)``."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    # Saturating conversion: rounds and clips to 0-255 in one pass.
    return np.asarray(cv2.convertScaleAbs(np.maximum(render_float(scene), 0)))
