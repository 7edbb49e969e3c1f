"""The planted-edit set: source/edited pairs the project draws itself, with known edits.

Deterministic, on the CPU, from a seed, with nothing downloaded. Each pair is a procedural
scene of textured shapes (:mod:`.scene`, :mod:`.layout`), one or more planted edits of known
masks (add, remove, recolour, move, resize, replace texture; :mod:`.edits`) and the noise a
real editor adds to the whole picture it returns (:mod:`.noise`); some pairs carry a change
nobody asked for (over-editing), some no change at all (a failed edit), a few another picture
altogether (:mod:`.pairs`). See docs/planted-edits.md.

- :func:`planted_pair` / :func:`planted_pairs` draw pairs; :class:`PlantedPair` holds one
  (pictures, instruction, :class:`PlantedEdit` with masks, the :class:`EditorNoise` drawn).
- :func:`write_planted_set` writes a set as files (pictures, masks, ``planted.jsonl``, and
  ``samples.jsonl`` of ``mask_guided_ie`` samples for ``cigeval evaluate``).
- :func:`score_locator` counts a tool's localisation figures (:class:`Localisation`) on pairs;
  :func:`difference_locator` and :func:`grounding_locator` make cigeval's tools locators
  (:mod:`.scoring`; ``benchmarks/planted_edits.py`` prints them).
"""

from cigeval.planted_edits.edits import EDIT_KINDS, EditKind, PlantedEdit
from cigeval.planted_edits.files import write_planted_set
from cigeval.planted_edits.noise import EditorNoise
from cigeval.planted_edits.pairs import (
    DEFAULT_SIZE,
    PAIR_KINDS,
    PairKind,
    PlantedPair,
    planted_pair,
    planted_pairs,
)
from cigeval.planted_edits.scoring import (
    Found,
    Localisation,
    difference_locator,
    grounding_locator,
    score_locator,
)

__all__ = [
    "DEFAULT_SIZE",
    "EDIT_KINDS",
    "PAIR_KINDS",
    "EditKind",
    "EditorNoise",
    "Found",
    "Localisation",
    "PairKind",
    "PlantedEdit",
    "PlantedPair",
    "difference_locator",
    "grounding_locator",
    "planted_pair",
    "planted_pairs",
    "score_locator",
    "write_planted_set",
]
