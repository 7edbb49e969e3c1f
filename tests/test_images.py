"""Image loading: conversions, limits, and sending unchanged files as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from cigeval.errors import InputError
from cigeval.images import EncodedImage, encode_image, load_image


def noise(size: tuple[int, int] = (64, 48)) -> Image.Image:
    return Image.effect_noise(size, 64).convert("RGB")


@pytest.mark.parametrize(("name", "mime"), [("a.png", "image/png"), ("a.jpg", "image/jpeg")])
def test_rgb_png_and_jpeg_files_are_sent_byte_for_byte(tmp_path: Path, name: str, mime: str):
    noise().save(tmp_path / name)
    image = load_image(name, role="output", base_dir=tmp_path)
    encoded = encode_image(image)
    assert encoded.data == (tmp_path / name).read_bytes()
    assert encoded.mime == mime and (encoded.width, encoded.height) == (64, 48)


def test_an_edited_copy_is_encoded_afresh(tmp_path: Path):
    noise().save(tmp_path / "a.png")
    image = load_image("a.png", role="output", base_dir=tmp_path)
    edited = image.pixels().copy()
    ImageDraw.Draw(edited).rectangle((0, 0, 9, 9), fill=(255, 0, 0))
    encoded = encode_image(edited)
    assert encoded.data != (tmp_path / "a.png").read_bytes()
    assert encoded.to_pil().getpixel((5, 5)) == (255, 0, 0)


def test_converted_images_are_reencoded_as_rgb(tmp_path: Path):
    rgba = noise().convert("RGBA")
    rgba.putpixel((0, 0), (10, 20, 30, 0))  # transparent: composited on white
    rgba.save(tmp_path / "rgba.png")
    image = load_image("rgba.png", role="output", base_dir=tmp_path).pixels()
    assert image.mode == "RGB" and image.getpixel((0, 0)) == (255, 255, 255)
    encoded = EncodedImage.from_pil(image)
    assert encoded.data != (tmp_path / "rgba.png").read_bytes()
    assert encoded.to_pil().mode == "RGB"


def test_sixteen_bit_images_are_rescaled_not_clipped(tmp_path: Path):
    gray = Image.new("I;16", (4, 1))
    for x, value in enumerate((0, 1000, 30000, 60000)):
        gray.putpixel((x, 0), value)
    gray.save(tmp_path / "deep.png")
    image = load_image("deep.png", role="control", base_dir=tmp_path).pixels()
    values = [image.getpixel((x, 0))[0] for x in range(4)]
    assert values[0] == 0 and values[-1] == 255 and values == sorted(values)


def test_exif_rotated_jpeg_is_upright_and_reencoded(tmp_path: Path):
    image = noise((40, 20))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    image.save(tmp_path / "r.jpg", exif=exif)
    loaded = load_image("r.jpg", role="output", base_dir=tmp_path)
    assert loaded.size == (20, 40) and loaded.pixels().size == (20, 40)
    assert encode_image(loaded).data != (tmp_path / "r.jpg").read_bytes()


def test_errors_name_the_role_and_sample(tmp_path: Path):
    (tmp_path / "zero.png").write_bytes(b"")
    with pytest.raises(InputError, match=r"sample 's1': source image is an empty"):
        load_image("zero.png", role="source", sample_id="s1", base_dir=tmp_path)
    noise((100, 100)).save(tmp_path / "big.png")
    with pytest.raises(InputError, match="too large"):
        load_image("big.png", role="output", sample_id="s2", base_dir=tmp_path, max_pixels=5000)


def _official_jpeg(path: Path) -> bytes:
    """What the official code sends for an image file: EXIF-transposed, RGB, Pillow's JPEG at
    its default quality."""
    import io

    from PIL import ImageOps

    buffer = io.BytesIO()
    ImageOps.exif_transpose(Image.open(path)).convert("RGB").save(buffer, format="JPEG")
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["a.png", "a.jpg", "rotated.jpg", "odd.png"])
def test_jpeg75_sends_the_bytes_the_official_code_sends(tmp_path: Path, name: str):
    size = (37, 53) if name == "odd.png" else (64, 48)
    exif = Image.Exif()
    if name == "rotated.jpg":
        exif[0x0112] = 6
    noise(size).save(tmp_path / name, exif=exif)
    image = load_image(name, role="output", base_dir=tmp_path)
    encoded = encode_image(image, encoding="jpeg75")
    assert encoded.mime == "image/jpeg" and encoded.source is None
    assert encoded.data == _official_jpeg(tmp_path / name)
    assert encoded.data_uri().startswith("data:image/jpeg;base64,")


def test_opencv_jpeg_bytes_equal_pillows_at_the_same_quality():
    import io

    import numpy as np

    from cigeval.images import encode_pixels

    rng = np.random.default_rng(0)
    for height, width in ((1, 1), (17, 31), (240, 320), (333, 211)):
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        for quality in (75, 95):
            buffer = io.BytesIO()
            Image.fromarray(pixels).save(buffer, format="JPEG", quality=quality)
            assert encode_pixels(pixels, "JPEG", quality) == buffer.getvalue()


def test_a_pil_image_and_its_array_encode_to_the_same_jpeg_bytes(tmp_path: Path):
    """A PIL image is JPEG-encoded by Pillow, an array (a tool's image) by OpenCV: the same
    bytes, none of a file's metadata among them (a JPEG file's comment, EXIF, ICC profile and
    DPI are in the decoded image's info; cigeval sent none of them before either)."""
    import io

    import numpy as np

    from cigeval.images import encode_pixels

    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (45, 61, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x010E] = "a description"
    Image.fromarray(pixels).save(
        tmp_path / "a.jpg",
        comment=b"made by a tool",
        exif=exif,
        icc_profile=b"\0" * 200,
        dpi=(300, 300),
    )
    with Image.open(tmp_path / "a.jpg") as opened:
        opened.load()
        decoded = opened.convert("RGB")
    assert {"comment", "exif", "icc_profile", "dpi"} <= decoded.info.keys()
    for quality in (75, 95):
        from_pil = encode_pixels(decoded, "JPEG", quality)
        assert from_pil == encode_pixels(np.asarray(decoded), "JPEG", quality)
        plain = io.BytesIO()
        Image.fromarray(np.asarray(decoded)).save(plain, format="JPEG", quality=quality)
        assert from_pil == plain.getvalue() and b"made by a tool" not in from_pil
    image = load_image("a.jpg", role="output", base_dir=tmp_path)
    assert encode_image(image, encoding="jpeg75").data == encode_pixels(np.asarray(decoded), "JPEG")


def test_png_is_lossless_and_the_data_uri_is_built_once(tmp_path: Path):
    import numpy as np

    image = noise().convert("L").convert("RGB").rotate(10)  # not from a file: re-encoded
    encoded = EncodedImage.from_pil(image)
    assert encoded.mime == "image/png"
    assert np.array_equal(np.asarray(encoded.to_pil()), np.asarray(image))
    assert encoded.data_uri() is encoded.data_uri()
