"""One synthetic scene per built-in task: a reference sample that fits its conditions, and
the task's own ways of breaking it (the ``must_drop`` kinds that need a task's inputs).

The generic kinds (blank output, JPEG re-encode, resize, repeat, spread) are added to every
task by :mod:`cigeval.probes.probe_set`; this module only says what each task looks like.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from cigeval.probes.kinds import Check
from cigeval.probes.scenes import SIZE, Shape, canvas, draw, outline, write_text

#: An image role's value: one image, or a list (``subjects`` of multi_concept_ic).
RoleImage = Image.Image | list[Image.Image]


@dataclass(frozen=True)
class DropVariant:
    """A ``must_drop`` change of the reference: the image roles it replaces, and the checks."""

    kind: str
    images: dict[str, RoleImage]
    checks: tuple[Check, ...]
    description: str


@dataclass(frozen=True)
class TaskScene:
    """The reference sample of a task (text fields and images by role) and its drop variants."""

    task: str
    texts: dict[str, Any]
    images: dict[str, RoleImage]
    variants: tuple[DropVariant, ...] = field(default=())


def _drop(question: str) -> Check:
    return Check(question, "drop")


def _keep(question: str) -> Check:
    return Check(question, "not_drop")


def _on_table(objects: list[Shape], table: str = "blue") -> Image.Image:
    """Objects standing on a table: a top and two legs along the bottom of the picture."""
    parts = [
        Shape("rectangle", (16, 180, 240, 196), table),
        Shape("rectangle", (32, 196, 48, 250), table),
        Shape("rectangle", (208, 196, 224, 250), table),
    ]
    return draw(canvas(), parts + objects)


def _subject(shape: Shape) -> Image.Image:
    """A subject reference photo: the object alone, large, on white."""
    return draw(canvas("white"), [shape])


STAR = Shape("star", (40, 40, 216, 216), "orange")
RING = Shape("ring", (48, 48, 208, 208), "purple")
PYRAMID = Shape("triangle", (48, 48, 208, 208), "green")


def text_guided_ig() -> TaskScene:
    """Two coloured shapes and a word; the wrong output shows other shapes and another word."""
    good = draw(
        canvas(),
        [Shape("circle", (24, 40, 114, 130), "red"), Shape("square", (142, 40, 232, 130), "blue")],
    )
    write_text(good, "HELLO", (SIZE // 2, 196))
    other = draw(
        canvas(),
        [
            Shape("triangle", (24, 40, 114, 130), "green"),
            Shape("square", (142, 40, 232, 130), "yellow"),
        ],
    )
    write_text(other, "WORLD", (SIZE // 2, 196))
    prompt = "a red circle to the left of a blue square, with the word HELLO written below them"
    return TaskScene(
        "text_guided_ig",
        {"prompt": prompt},
        {"output": good},
        (
            DropVariant(
                "wrong_output",
                {"output": other},
                (_drop("prompt_following"),),
                "the output of another prompt: a green triangle, a yellow square, 'WORLD'",
            ),
        ),
    )


def _edit_scene(
    before: list[Shape], after: list[Shape], other: list[Shape]
) -> tuple[dict[str, RoleImage], tuple[DropVariant, ...]]:
    """The source, the good edit, and the unchanged / wrong edits of an editing task."""
    source = draw(canvas(), before)
    images: dict[str, RoleImage] = {"source": source, "output": draw(canvas(), after)}
    variants = (
        DropVariant(
            "unchanged_source",
            {"output": source},
            (_drop("edit_success"), _keep("over_editing")),
            "the source image returned unchanged as the edit",
        ),
        DropVariant(
            "wrong_output",
            {"output": draw(canvas(), other)},
            (_drop("edit_success"),),
            "the edit of another instruction",
        ),
    )
    return images, variants


def mask_guided_ie() -> TaskScene:
    """Turn the masked red circle blue; the wrong edit puts a yellow triangle there instead."""
    square = Shape("square", (150, 90, 226, 166), "green")
    circle_box = (30, 80, 126, 176)
    images, variants = _edit_scene(
        [Shape("circle", circle_box, "red"), square],
        [Shape("circle", circle_box, "blue"), square],
        [Shape("triangle", circle_box, "yellow"), square],
    )
    mask = Image.new("RGB", (SIZE, SIZE), (0, 0, 0))
    mask.paste((255, 255, 255), (20, 70, 136, 186))
    images["mask"] = mask
    return TaskScene(
        "mask_guided_ie", {"instruction": "turn the red circle blue"}, images, variants
    )


def text_guided_ie() -> TaskScene:
    """Make the gray roof of a house red; the wrong edit turns the sun blue instead."""
    body = Shape("square", (70, 130, 186, 230), "brown")
    sun_box = (190, 18, 240, 68)
    images, variants = _edit_scene(
        [body, Shape("triangle", (56, 60, 200, 130), "gray"), Shape("circle", sun_box, "yellow")],
        [body, Shape("triangle", (56, 60, 200, 130), "red"), Shape("circle", sun_box, "yellow")],
        [body, Shape("triangle", (56, 60, 200, 130), "gray"), Shape("circle", sun_box, "blue")],
    )
    return TaskScene(
        "text_guided_ie", {"instruction": "make the roof of the house red"}, images, variants
    )


def subject_driven_ig() -> TaskScene:
    """The orange star toy on a blue table; wrong subject: a purple ring as the reference."""
    star = Shape("star", (88, 84, 168, 164), "orange")
    grass = draw(
        canvas("sky"),
        [
            Shape("rectangle", (0, 170, SIZE, SIZE), "grass"),
            Shape("circle", (20, 20, 70, 70), "yellow"),
            star,
        ],
    )
    return TaskScene(
        "subject_driven_ig",
        {"subject": "star toy", "prompt": "the star toy on a blue table"},
        {"subject": _subject(STAR), "output": _on_table([star])},
        (
            DropVariant(
                "wrong_subject",
                {"subject": _subject(RING)},
                (_drop("subject_similarity"),),
                "the subject reference shows a purple ring, the output an orange star",
            ),
            DropVariant(
                "wrong_output",
                {"output": grass},
                (_drop("prompt_following"),),
                "the output of another prompt: the star toy on grass under the sun",
            ),
        ),
    )


def subject_driven_ie() -> TaskScene:
    """Replace the gray box in a field by the star toy; the unchanged source has no star."""
    ground = [Shape("rectangle", (0, 150, SIZE, SIZE), "grass")]
    source = draw(canvas("sky"), [*ground, Shape("square", (92, 110, 164, 182), "gray")])
    output = draw(canvas("sky"), [*ground, Shape("star", (88, 104, 168, 184), "orange")])
    return TaskScene(
        "subject_driven_ie",
        {"subject": "star toy"},
        {"source": source, "subject": _subject(STAR), "output": output},
        (
            DropVariant(
                "unchanged_source",
                {"output": source},
                (_drop("subject_similarity"), _keep("background_preservation")),
                "the source image returned unchanged: no star toy in it",
            ),
            DropVariant(
                "wrong_subject",
                {"subject": _subject(RING)},
                (_drop("subject_similarity"),),
                "the subject reference shows a purple ring, the output an orange star",
            ),
        ),
    )


def multi_concept_ic() -> TaskScene:
    """The star toy and the ring toy on a blue table; wrong subject: a green pyramid as
    concept 1's reference."""
    both = _on_table(
        [Shape("star", (30, 90, 110, 170), "orange"), Shape("ring", (146, 90, 226, 170), "purple")]
    )
    other = draw(
        canvas(),
        [
            Shape("square", (40, 100, 200, 220), "red"),
            Shape("circle", (90, 40, 170, 120), "yellow"),
        ],
    )
    return TaskScene(
        "multi_concept_ic",
        {
            "concepts": ["star toy", "ring toy"],
            "prompt": "the star toy and the ring toy side by side on a blue table",
        },
        {"subjects": [_subject(STAR), _subject(RING)], "output": both},
        (
            DropVariant(
                "wrong_subject",
                {"subjects": [_subject(PYRAMID), _subject(RING)]},
                (_drop("concept_1_similarity"),),
                "concept 1's reference shows a green pyramid, the output an orange star",
            ),
            DropVariant(
                "wrong_output",
                {"output": other},
                (_drop("prompt_following"),),
                "the output of another prompt: a yellow ball over a red box",
            ),
        ),
    )


def control_guided_ig() -> TaskScene:
    """A ball on the left and a box on the right, as a Canny-style edge map; the ignored
    control swaps and resizes them, the wrong output paints them other colours."""
    ball, box = (24, 70, 114, 160), (142, 70, 232, 160)
    layout = [Shape("circle", ball, "red"), Shape("square", box, "blue")]
    swapped = [
        Shape("circle", (150, 150, 240, 240), "red"),
        Shape("square", (10, 10, 70, 70), "blue"),
    ]
    recoloured = [Shape("circle", ball, "green"), Shape("square", box, "yellow")]
    return TaskScene(
        "control_guided_ig",
        {"prompt": "a red ball and a blue box", "control_type": "canny"},
        {"control": outline(layout), "output": draw(canvas(), layout)},
        (
            DropVariant(
                "ignored_control",
                {"output": draw(canvas(), swapped)},
                (_drop("control_following"),),
                "the ball and the box are elsewhere and of other sizes than the edges show",
            ),
            DropVariant(
                "wrong_output",
                {"output": draw(canvas(), recoloured)},
                (_drop("prompt_following"),),
                "the output of another prompt, on the same edges: a green ball and a yellow box",
            ),
        ),
    )


#: The scene of each built-in task, by task id.
TASK_SCENES: dict[str, Callable[[], TaskScene]] = {
    "text_guided_ig": text_guided_ig,
    "mask_guided_ie": mask_guided_ie,
    "text_guided_ie": text_guided_ie,
    "subject_driven_ig": subject_driven_ig,
    "subject_driven_ie": subject_driven_ie,
    "multi_concept_ic": multi_concept_ic,
    "control_guided_ig": control_guided_ig,
}
