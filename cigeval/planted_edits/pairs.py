"""Source/edited pairs with planted edits of known masks, as real editors return them.

:func:`planted_pair` draws pair ``index`` of the set of a ``seed``: a random scene (the
source), one to three requested edits (:mod:`cigeval.planted_edits.edits`), and the edited
picture passed through an editor's noise (:class:`~cigeval.planted_edits.noise.EditorNoise`:
shift, blur or sharpening, tone and white balance, noise, JPEG). Each pair is drawn from its
own generator (``numpy.random.default_rng([seed, index])``), so pair 7 is the same whatever
the size of the set, and the same seed gives the same bytes and masks.

The kinds of pair (:data:`PAIR_KINDS`), in the shares :func:`planted_pair` draws them:

- ``edit`` (61%): the requested edits are made; one edit in 75% of them, two in 20%, three in 5%;
- ``over_edit`` (20%): one or two requested edits, and an unrequested change elsewhere;
- ``failed`` (15%): nothing is changed (the editor only re-renders the picture);
- ``regenerated`` (4%): the editor returned another picture altogether: the whole image changed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from PIL import Image

from cigeval.planted_edits.edits import EDIT_KINDS, EditDraft, EditKind, PlantedEdit
from cigeval.planted_edits.layout import random_scene
from cigeval.planted_edits.noise import EditorNoise
from cigeval.planted_edits.scene import Scene, render

PairKind = Literal["edit", "over_edit", "failed", "regenerated"]
PAIR_KINDS: tuple[PairKind, ...] = ("edit", "over_edit", "failed", "regenerated")
#: The share of each kind of pair, in :data:`PAIR_KINDS` order.
PAIR_SHARES = (0.61, 0.20, 0.15, 0.04)
#: How many requested edits an ``edit`` pair carries, and how often.
EDIT_COUNTS = ((1, 0.75), (2, 0.20), (3, 0.05))
#: The side of every picture unless told otherwise.
DEFAULT_SIZE = 512


@dataclass(frozen=True, eq=False)
class PlantedPair:
    """A source picture, the editor's output and what was planted between them.

    ``edits`` are the edits the ``instruction`` asks for, each with its mask (for a
    ``failed`` pair: where they would have been; none was made). ``over_edits`` are changes
    nobody asked for. ``source`` is the clean picture (``source_png``, lossless);
    ``edited`` the editor's file decoded (``edited_jpeg``); ``clean_edited`` the edited
    picture before the editor's noise. Masks and boxes are in source pixels; the editor's
    shift (``noise.shift``) moves the edited picture's content by up to 3 pixels.
    """

    id: str
    kind: PairKind
    instruction: str
    edits: tuple[PlantedEdit, ...]
    over_edits: tuple[PlantedEdit, ...]
    noise: EditorNoise
    source: Image.Image = field(repr=False)
    clean_edited: Image.Image = field(repr=False)
    edited_jpeg: bytes = field(repr=False)

    @property
    def size(self) -> int:
        """The side of both pictures, in pixels."""
        return self.source.size[0]

    @property
    def edited(self) -> Image.Image:
        """The editor's output, decoded from its JPEG file."""
        return Image.open(io.BytesIO(self.edited_jpeg)).convert("RGB")

    @property
    def source_png(self) -> bytes:
        """The source picture as a PNG file."""
        from cigeval.images import encode_pixels

        return encode_pixels(self.source, "PNG")

    @property
    def failed(self) -> bool:
        """Whether the requested edits were not made (the output only re-renders the source)."""
        return self.kind == "failed"

    @property
    def whole_image(self) -> bool:
        """Whether the whole picture changed (another picture was returned)."""
        return self.kind == "regenerated"

    @property
    def target_mask(self) -> np.ndarray:
        """Where the instruction asks for a change: the union of the requested edits' masks
        (a mask-guided editing sample's mask)."""
        return _union(self.edits, self.size)

    @property
    def changed_mask(self) -> np.ndarray:
        """Where the picture really changed, before the editor's noise."""
        if self.whole_image:
            return np.ones((self.size, self.size), bool)
        made = () if self.failed else self.edits
        return _union(made + self.over_edits, self.size)

    def as_record(self) -> dict[str, object]:
        """What was planted, as JSON-ready data (masks as boxes and areas)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "instruction": self.instruction,
            "size": self.size,
            "edits": [e.as_record() for e in self.edits],
            "over_edits": [e.as_record() for e in self.over_edits],
            "noise": self.noise.as_record(),
        }


def _union(edits: tuple[PlantedEdit, ...], size: int) -> np.ndarray:
    mask = np.zeros((size, size), bool)
    for edit in edits:
        mask |= edit.mask
    return mask


def _pick(rng: np.random.Generator, options: tuple[object, ...], shares: tuple[float, ...]):
    return options[int(rng.choice(len(options), p=np.asarray(shares) / sum(shares)))]


def _plant(draft: EditDraft, rng: np.random.Generator, count: int) -> list[PlantedEdit]:
    """Up to ``count`` edits of random kinds (a kind the scene cannot take is drawn again)."""
    made: list[PlantedEdit] = []
    for _ in range(count * 4):
        if len(made) == count:
            break
        kind: EditKind = EDIT_KINDS[int(rng.integers(len(EDIT_KINDS)))]
        edit = draft.plant(kind, rng)
        if edit is not None:
            made.append(edit)
    return made


def planted_pair(seed: int, index: int, *, size: int = DEFAULT_SIZE) -> PlantedPair:
    """Pair ``index`` of the planted-edit set of ``seed`` (pictures ``size`` pixels square)."""
    rng = np.random.default_rng([seed, index])
    kind: PairKind = _pick(rng, PAIR_KINDS, PAIR_SHARES)
    if kind == "edit":
        count = int(_pick(rng, tuple(c for c, _ in EDIT_COUNTS), tuple(s for _, s in EDIT_COUNTS)))
    else:
        count = 1 if kind != "over_edit" or rng.random() < 0.7 else 2
    while True:  # a scene too crowded for the edits is drawn again (rare)
        source = random_scene(rng, size)
        draft = EditDraft(source)
        edits = _plant(draft, rng, count)
        over_edits = _plant(draft, rng, 1) if kind == "over_edit" else []
        if edits and (kind != "over_edit" or over_edits):
            break
    after: Scene = {
        "edit": draft.scene,
        "over_edit": draft.scene,
        "failed": lambda: source,
        "regenerated": lambda: random_scene(rng, size),
    }[kind]()
    noise = EditorNoise.draw(rng)
    clean_edited = render(after)
    return PlantedPair(
        id=f"planted-{seed}-{index:05d}",
        kind=kind,
        instruction=" ".join(e.instruction for e in edits),
        edits=tuple(edits),
        over_edits=tuple(over_edits),
        noise=noise,
        source=Image.fromarray(render(source)),
        clean_edited=Image.fromarray(clean_edited),
        edited_jpeg=noise.apply(clean_edited),
    )


def planted_pairs(
    count: int, seed: int = 0, *, size: int = DEFAULT_SIZE, start: int = 0
) -> list[PlantedPair]:
    """Pairs ``start`` to ``start + count - 1`` of the planted-edit set of ``seed``."""
    return [planted_pair(seed, index, size=size) for index in range(start, start + count)]
