"""Pixels are decoded when something needs them, once; file checks and hashes use the bytes;
JPEG encodings are remembered across runs for image files."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import cigeval.evaluation.evaluator
import cigeval.images
from cigeval import Evaluator, ScriptedBackend
from cigeval._file_bytes import ReloadableFileBytes
from cigeval._image_bytes import jpeg_is_whole, png_is_plain
from cigeval.backends.cache import ResponseCache
from cigeval.config import RunConfig
from cigeval.errors import InputError
from cigeval.images import EncodedImage, ImagePixels, LoadedImage, encode_image, load_image
from cigeval.results import read_records
from cigeval.sample import join_one_by_one, join_side_by_side
from cigeval.testing import request_text, rule_judge
from cigeval.testing.samples_factory import seven_task_samples, write_jsonl


def noise(size: tuple[int, int] = (64, 48)) -> Image.Image:
    return Image.effect_noise(size, 64).convert("RGB")


def held_bytes(image: LoadedImage) -> bool:
    """Whether the bytes of the file ``image`` was read from are in memory."""
    file = image._file  # what the image holds is private to it: looked at here only
    assert isinstance(file, ReloadableFileBytes)
    return file.held


def decoded(image: LoadedImage) -> bool:
    """Whether the image's pixels are decoded."""
    return image.decoded is not None


@pytest.mark.parametrize("name", ["a.png", "a.jpg"])
def test_a_file_sent_as_it_is_is_never_decoded(tmp_path: Path, name: str) -> None:
    noise().save(tmp_path / name)
    image = load_image(name, role="output", base_dir=tmp_path)
    assert not decoded(image) and image.size == (64, 48) and image.mime is not None
    encoded = encode_image(image, encoding="original")
    assert encoded.data == (tmp_path / name).read_bytes()
    assert not decoded(image)


@pytest.mark.parametrize("name", ["a.png", "a.jpg"])
def test_pixels_decode_on_first_use_and_equal_an_eager_decode(tmp_path: Path, name: str) -> None:
    noise().save(tmp_path / name)
    image = load_image(name, role="output", base_dir=tmp_path)
    with Image.open(tmp_path / name) as eager:
        expected = np.asarray(eager.convert("RGB"))
    assert np.array_equal(np.asarray(image.pixels()), expected)
    assert decoded(image) and image.pixels().mode == "RGB"
    # the JPEG the judge gets is the one made from the eagerly decoded pixels
    lazy = encode_image(image, encoding="jpeg75")
    assert lazy.data == EncodedImage.from_pil(Image.fromarray(expected), encoding="jpeg75").data


def test_threads_share_one_decode(tmp_path: Path) -> None:
    noise((256, 256)).save(tmp_path / "a.png")
    image = load_image("a.png", role="output", base_dir=tmp_path)
    results: list[Image.Image] = []

    def read() -> None:
        results.append(image.pixels())

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8 and all(r is results[0] for r in results)  # one decode


def test_a_truncated_file_is_still_refused_when_loaded(tmp_path: Path) -> None:
    for name in ("a.png", "a.jpg"):
        noise().save(tmp_path / name)
        whole = (tmp_path / name).read_bytes()
        (tmp_path / name).write_bytes(whole[: len(whole) - 40])
        with pytest.raises(InputError, match=f"output image is corrupt or not an image: .*{name}"):
            load_image(name, role="output", base_dir=tmp_path, sample_id="s1")


def test_damaged_pixel_data_is_an_input_error_naming_the_image(tmp_path: Path) -> None:
    noise().save(tmp_path / "a.png")
    data = bytearray((tmp_path / "a.png").read_bytes())
    start = data.index(b"IDAT") + 4
    data[start : start + 64] = bytes(64)  # the frame is whole, the pixel stream is not
    (tmp_path / "a.png").write_bytes(bytes(data))
    image = load_image("a.png", role="output", base_dir=tmp_path, sample_id="s1")
    with pytest.raises(InputError, match="output image is corrupt or not an image") as info:
        image.pixels()
    assert info.value.sample_id == "s1"


@pytest.mark.parametrize("name", ["a.png", "a.jpg"])
def test_a_jpeg75_encoding_leaves_the_image_undecoded(tmp_path: Path, name: str) -> None:
    # A sample waiting for its judge holds its files' bytes and their JPEGs, not its pixels.
    noise((96, 80)).save(tmp_path / name)
    image = load_image(name, role="output", base_dir=tmp_path)
    encoded = encode_image(image, encoding="jpeg75")
    assert not decoded(image)
    with Image.open(tmp_path / name) as eager:
        expected = EncodedImage.from_pil(eager.convert("RGB"), encoding="jpeg75")
    assert encoded.data == expected.data and (encoded.width, encoded.height) == (96, 80)
    # a tool that needs the pixels still gets them, decoded then
    with Image.open(tmp_path / name) as eager:
        assert np.array_equal(np.asarray(image.pixels()), np.asarray(eager.convert("RGB")))
    assert decoded(image)
    assert encode_image(image, encoding="jpeg75").data == encoded.data


def test_a_jpeg75_encoding_of_damaged_pixels_is_an_input_error(tmp_path: Path) -> None:
    noise().save(tmp_path / "a.png")
    data = bytearray((tmp_path / "a.png").read_bytes())
    start = data.index(b"IDAT") + 4
    data[start : start + 64] = bytes(64)
    (tmp_path / "a.png").write_bytes(bytes(data))
    image = load_image("a.png", role="output", base_dir=tmp_path, sample_id="s1")
    with pytest.raises(InputError, match="output image is corrupt or not an image") as info:
        encode_image(image, encoding="jpeg75")
    assert info.value.sample_id == "s1"


def test_file_checks_read_the_structure() -> None:
    image = noise()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    data = buffer.getvalue()
    assert png_is_plain(data)
    assert not png_is_plain(data[:-12])  # IEND cut off
    assert not png_is_plain(b"GIF89a" + data[6:])
    exif = Image.Exif()
    exif[0x0112] = 6
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", exif=exif)
    assert not png_is_plain(buffer.getvalue())  # an eXIf chunk: decoded and rotated at once
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG")
    jpeg = buffer.getvalue()
    assert jpeg_is_whole(jpeg) and jpeg_is_whole(jpeg + b"\x00\x00")
    assert not jpeg_is_whole(jpeg[:-100])


def test_a_png_with_an_exif_rotation_is_upright(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    noise((64, 48)).save(tmp_path / "r.png", exif=exif)
    image = load_image("r.png", role="output", base_dir=tmp_path)
    assert image.size == (48, 64) and image.pixels().size == (48, 64)
    assert encode_image(image).data != (tmp_path / "r.png").read_bytes()


def test_jpeg75_encodings_are_remembered_for_image_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    noise((128, 96)).save(tmp_path / "a.png")
    cache = ResponseCache(tmp_path / "cache")
    first = load_image("a.png", role="output", base_dir=tmp_path)
    made = encode_image(first, encoding="jpeg75", cache=cache)
    assert made.data == EncodedImage.from_pil(first.pixels(), encoding="jpeg75").data

    again = load_image("a.png", role="output", base_dir=tmp_path)
    found = encode_image(again, encoding="jpeg75", cache=ResponseCache(tmp_path / "cache"))
    assert (found.data, found.sha256, found.mime, found.width, found.height) == (
        made.data,
        made.sha256,
        "image/jpeg",
        128,
        96,
    )
    assert not decoded(again)  # found by the file's hash: the pixels were never needed

    # another file (other bytes) is encoded afresh; so is an image that is no file's
    noise((128, 96)).save(tmp_path / "b.png")
    other = encode_image(load_image("b.png", role="output", base_dir=tmp_path), encoding="jpeg75",
                         cache=cache)  # fmt: skip
    assert other.data != made.data
    edited = again.pixels().copy()
    edited.putpixel((0, 0), (0, 0, 0))
    assert encode_image(edited, encoding="jpeg75", cache=cache).data != made.data
    # and the original encoding never goes through the cache
    monkeypatch.setattr(cache, "get_bytes", lambda key: pytest.fail("looked up"))
    assert (
        encode_image(again, encoding="original", cache=cache).data
        == (tmp_path / "a.png").read_bytes()
    )


def test_released_file_bytes_are_read_again_and_checked(tmp_path: Path) -> None:
    noise((96, 80)).save(tmp_path / "a.png")
    image = load_image("a.png", role="output", base_dir=tmp_path, sample_id="s1")
    assert held_bytes(image)
    image.release()
    assert not held_bytes(image)
    with Image.open(tmp_path / "a.png") as eager:
        expected = np.asarray(eager.convert("RGB"))
    assert np.array_equal(np.asarray(image.pixels()), expected)  # read again for the pixels
    assert not held_bytes(image)  # and let go again once they are decoded


@pytest.mark.parametrize("use", ["pixels", "jpeg75"])
@pytest.mark.parametrize("change", ["rewritten", "deleted"])
def test_a_file_changed_after_loading_is_refused_not_judged(
    tmp_path: Path, use: str, change: str
) -> None:
    noise((96, 80)).save(tmp_path / "a.png")
    image = load_image("a.png", role="output", base_dir=tmp_path, sample_id="s1")
    image.release()
    if change == "rewritten":
        noise((96, 80)).save(tmp_path / "a.png")  # other pixels, same name
    else:
        (tmp_path / "a.png").unlink()
    expected = "changed on disk" if change == "rewritten" else "cannot be read again"
    with pytest.raises(InputError, match=f"output image refused: the file {expected}") as info:
        if use == "pixels":
            image.pixels()
        else:
            encode_image(image, encoding="jpeg75")
    assert info.value.sample_id == "s1"


def test_a_sample_waiting_for_its_judge_holds_no_file_bytes_under_jpeg75(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files: list[ReloadableFileBytes] = []

    class Tracked(ReloadableFileBytes):
        def __init__(self, path: str | Path, data: bytes, sha256: str) -> None:
            super().__init__(path, data, sha256)
            files.append(self)

    monkeypatch.setattr(cigeval.images, "ReloadableFileBytes", Tracked)
    samples = write_jsonl(tmp_path / "samples.jsonl", seven_task_samples(tmp_path))
    held_when_asked: dict[str, list[int]] = {}
    for encoding in ("jpeg75", "original"):
        judge = rule_judge(tools={"*": "Difference"})
        counts = held_when_asked.setdefault(encoding, [])

        def reply(request: Any, judge: Any = judge, counts: list[int] = counts) -> str:
            counts.append(sum(f.held for f in files))
            return str(judge(request))

        evaluator = Evaluator(
            ScriptedBackend(reply),
            # one sample at a time: no other sample's tool is reading its file meanwhile
            run_config=RunConfig(preflight=False, concurrency=1),
            image_encoding=encoding,
            tools=["Difference", "Scene Graph"],
        )
        result = evaluator.run(samples, out=tmp_path / f"{encoding}.jsonl", quiet=True)
        assert result.summary.statuses["ok"] == 7
    assert files and held_when_asked["jpeg75"] and max(held_when_asked["jpeg75"]) == 0
    assert max(held_when_asked["original"]) > 0  # sent as they are: the bytes are kept


def test_images_are_joined_one_at_a_time_as_join_side_by_side_joins_them() -> None:
    images = [noise((40, 30)), noise((70, 50))]
    events: list[str] = []

    @contextlib.contextmanager
    def pixels(index: int) -> Iterator[Image.Image]:
        events.append(f"open {index}")
        yield images[index]
        events.append(f"close {index}")

    joined = join_one_by_one([image.size for image in images], pixels)
    assert events == ["open 0", "close 0", "open 1", "close 1"]
    assert joined.tobytes() == join_side_by_side(images).tobytes()


def test_the_planners_joined_concept_image_is_let_go_once_encoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A multi-concept sample shows its planner the two concept images joined: the judge
    calls after the plan find neither the joined pixels nor decoded concept images kept (they
    held some 4 MiB per such sample for its whole life), and the plan is built once."""
    import weakref

    import cigeval.agent.paper_layout as paper_layout

    joined: list[weakref.ref[Image.Image]] = []

    def tracked_join(sizes: Any, pixels: Any) -> Image.Image:
        made = join_one_by_one(sizes, pixels)
        joined.append(weakref.ref(made))
        return made

    monkeypatch.setattr(paper_layout, "join_one_by_one", tracked_join)
    judge = rule_judge()
    concept_images: list[LoadedImage] = []
    kept_when_judged: list[bool] = []

    def reply(request: Any) -> str:
        if "### Task:" not in request_text(request):  # a judge call, after the plan
            gc.collect()
            kept = any(ref() is not None for ref in joined)
            kept_when_judged.append(kept or any(decoded(i) for i in concept_images))
        return str(judge(request))

    evaluator = Evaluator(ScriptedBackend(reply), run_config=RunConfig(preflight=False))
    mcic = next(s for s in seven_task_samples(tmp_path) if s["id"] == "mcic")
    real_load = cigeval.evaluation.evaluator.load_sample_images

    def load(*args: Any, **kwargs: Any) -> dict[str, LoadedImage]:
        images: dict[str, LoadedImage] = real_load(*args, **kwargs)
        concept_images.extend(images[r] for r in ("subject_1", "subject_2"))
        return images

    monkeypatch.setattr(cigeval.evaluation.evaluator, "load_sample_images", load)
    score = evaluator.evaluate(in_folder(mcic, tmp_path))
    assert score.ok, score.error
    assert len(joined) == 1 and len(concept_images) == 2
    assert len(kept_when_judged) == 3 and not any(kept_when_judged)


def test_each_image_is_encoded_as_it_is_loaded_holding_one_files_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under jpeg75 a sample's images are encoded one by one as they are read, each file's
    bytes let go before the next file is read: a worker preparing a sample holds one file,
    not all of them (it held every file until the last was encoded)."""
    files: list[ReloadableFileBytes] = []

    class Tracked(ReloadableFileBytes):
        def __init__(self, path: str | Path, data: bytes, sha256: str) -> None:
            super().__init__(path, data, sha256)
            files.append(self)

    held_when_encoding: list[int] = []
    real_encode = cigeval.images.encode_pixels

    def encode(*args: Any, **kwargs: Any) -> bytes:
        held_when_encoding.append(sum(f.held for f in files))
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(cigeval.images, "ReloadableFileBytes", Tracked)
    monkeypatch.setattr(cigeval.images, "encode_pixels", encode)
    tie = next(s for s in seven_task_samples(tmp_path) if s["id"] == "tie")
    evaluator = Evaluator(ScriptedBackend(rule_judge()), run_config=RunConfig(preflight=False))
    score = evaluator.evaluate(in_folder(tie, tmp_path))
    assert score.ok, score.error
    assert len(files) == 2 and held_when_encoding == [1, 1]


def test_a_file_changed_while_its_sample_is_judged_is_never_shown_as_the_checked_one(
    tmp_path: Path,
) -> None:
    # The output file is rewritten during the mask-guided sample's plan call: its Difference
    # tool, reading the file again, is refused (the sub-questions say they were judged
    # without it, the trace says why); the judge is shown the JPEG of the checked file.
    def judged(folder: Path, rewrite: bool) -> dict[str, dict[str, Any]]:
        samples = write_jsonl(folder / "samples.jsonl", seven_task_samples(folder))
        judge = rule_judge(tools={"*": "Difference"})
        rewritten: list[str] = []

        def reply(request: Any) -> str:
            if rewrite and "make the square red" in request_text(request) and not rewritten:
                Image.new("RGB", (64, 64), "red").save(folder / "output.png")
                rewritten.append("output.png")
            return str(judge(request))

        evaluator = Evaluator(
            ScriptedBackend(reply),
            run_config=RunConfig(preflight=False, concurrency=1),
            tools=["Difference", "Scene Graph"],
        )
        result = evaluator.run(samples, out=folder / "out.jsonl", quiet=True)
        assert result.summary.statuses["ok"] == 7 and bool(rewritten) == rewrite
        return {r["id"]: r for r in read_records(folder / "out.jsonl")}

    def degraded(record: dict[str, Any]) -> list[bool]:
        return [bool(s["degraded"]) for s in record["sub_scores"]]

    plain = judged(tmp_path / "plain", rewrite=False)
    changed = judged(tmp_path / "changed", rewrite=True)
    assert degraded(plain["mie"]) == [False, False]
    assert degraded(changed["mie"]) == [True, True]
    errors = [e["message"] for e in changed["mie"]["trace"] if e["type"] == "error"]
    assert any("the file changed on disk" in m and "output.png" in m for m in errors), errors
    assert changed["mie"]["input_images"] == plain["mie"]["input_images"]  # what was checked
    assert {i: degraded(r) for i, r in changed.items() if i != "mie"} == {
        i: degraded(r) for i, r in plain.items() if i != "mie"
    }


def in_folder(sample: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``sample`` with its image paths made absolute (in ``folder``)."""

    def absolute(value: Any) -> Any:
        return [absolute(v) for v in value] if isinstance(value, list) else str(folder / value)

    return {**sample, "images": {r: absolute(v) for r, v in sample["images"].items()}}


def test_pixels_by_role_decode_only_the_image_looked_up(tmp_path: Path) -> None:
    noise().save(tmp_path / "source.png")
    noise().save(tmp_path / "output.png")
    loaded = {
        role: load_image(f"{role}.png", role=role, base_dir=tmp_path)
        for role in ("source", "output")
    }
    pixels = ImagePixels(loaded)
    assert "output" in pixels and "mask" not in pixels and list(pixels) == ["source", "output"]
    assert len(pixels) == 2 and not any(decoded(i) for i in loaded.values())
    assert pixels["output"] is loaded["output"].pixels() and pixels["output"].size == (64, 48)
    assert decoded(loaded["output"]) and not decoded(loaded["source"])


def test_a_sample_judged_without_tools_under_original_is_never_decoded(tmp_path: Path) -> None:
    evaluator = Evaluator(
        ScriptedBackend(rule_judge()),
        run_config=RunConfig(preflight=False),
        image_encoding="original",
    )
    tie = next(s for s in seven_task_samples(tmp_path) if s["id"] == "tie")
    score = evaluator.evaluate(in_folder(tie, tmp_path))
    assert score.ok and isinstance(score.images, ImagePixels)
    assert set(score.images) == {"source", "output"}
    assert not any(decoded(image) for image in score.images.loaded.values())
    sent = {role: (tmp_path / f"{role}.png").read_bytes() for role in ("source", "output")}
    hashes = {role: hashlib.sha256(data).hexdigest() for role, data in sent.items()}
    assert score.input_images == hashes == score.file_hashes  # the files, sent as they are


def test_a_run_hashes_each_image_file_once_the_loaders_hash_goes_on_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cigeval.sample_files as sample_files

    samples = seven_task_samples(tmp_path)
    missing = {**samples[0], "id": "missing", "images": {"output": str(tmp_path / "gone.png")}}
    path = write_jsonl(tmp_path / "samples.jsonl", [*samples, missing])
    hashed_again: list[Path] = []
    real_sha256 = sample_files.known_file_sha256

    def counting(file: Path, *limit: Any) -> str:
        hashed_again.append(file)
        return real_sha256(file, *limit)

    monkeypatch.setattr(sample_files, "known_file_sha256", counting)
    evaluator = Evaluator(ScriptedBackend(rule_judge()), run_config=RunConfig(preflight=False))
    evaluator.run(path, out=tmp_path / "out.jsonl", quiet=True)
    # only the sample whose images were never loaded has its files hashed by the run
    assert hashed_again == [tmp_path / "gone.png"]
    records = {r["id"]: r for r in read_records(tmp_path / "out.jsonl")}
    assert records["missing"]["provenance"]["image_files"] == {"output": "unreadable"}
    for sample in samples:
        expected = sample_files.image_file_hashes(in_folder(sample, tmp_path))
        assert expected and records[sample["id"]]["provenance"]["image_files"] == expected
