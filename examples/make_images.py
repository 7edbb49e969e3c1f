"""Draws the small synthetic images used by examples/samples.jsonl (already committed).

Run it again only to regenerate them: ``python examples/make_images.py``.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

FOLDER = Path(__file__).resolve().parent / "images"
SIZE = (256, 256)


def scene(ball: str = "red", cube: str | None = "green", sky: str = "#9cc9f0") -> Image.Image:
    """A ground, a sky, a ball and optionally a cube."""
    image = Image.new("RGB", SIZE, sky)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 170, 256, 256), fill="#6b8e23")
    draw.ellipse((40, 110, 110, 180), fill=ball)
    if cube:
        draw.rectangle((150, 120, 210, 180), fill=cube)
    return image


def main() -> None:
    """Write every example image."""
    FOLDER.mkdir(exist_ok=True)
    scene().save(FOLDER / "source.png")
    scene(ball="blue").save(FOLDER / "edited_ball_blue.png")
    scene(ball="blue", cube=None, sky="#f4a460").save(FOLDER / "edited_overdone.png")
    mask = Image.new("RGB", SIZE, "black")
    ImageDraw.Draw(mask).ellipse((35, 105, 115, 185), fill="white")
    mask.save(FOLDER / "mask_ball.png")
    subject = Image.new("RGB", SIZE, "white")
    ImageDraw.Draw(subject).ellipse((60, 60, 196, 196), fill="red", outline="black", width=6)
    subject.save(FOLDER / "subject_ball.png")
    cube = Image.new("RGB", SIZE, "white")
    ImageDraw.Draw(cube).rectangle((70, 70, 186, 186), fill="green", outline="black", width=6)
    cube.save(FOLDER / "subject_cube.png")
    gray = scene().convert("L").filter(ImageFilter.FIND_EDGES)
    edges = gray.point(lambda v: 255 if v > 20 else 0)
    edges.convert("RGB").save(FOLDER / "control_canny.png")


if __name__ == "__main__":
    main()
