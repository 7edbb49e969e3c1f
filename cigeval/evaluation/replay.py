"""A sample whose every answer is cached, replayed without the agent: its record, stored once.

When a sample is judged with the response cache in use, its record is stored in the same
cache under a sample key: the settings fingerprint (judges, rubric, method, prompts, encoding,
cigeval's version), a digest of cigeval's own files, the image encoder's version and the
sample itself, each image file by
path and sha256. The entry lists the cache key of every request the sample made and a digest
of each answer. A later sample with the same key whose listed answers are all still cached,
unchanged, gets that record back as a replay of those answers would write it (every call
marked cached, no HTTP attempt): no graph, no tool, no image decoded or encoded. The record is
not trusted for what it says: the replies its trace holds must be those answers, and the
rubric must read its sub-scores and score from them again (a rubric without such a check is
never replayed). Anything else (a deleted or changed answer, an image of the store that is
gone, a record whose numbers its answers do not give) judges it again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from cigeval._digest import known_file_sha256
from cigeval._regular_file import MAX_IMAGE_BYTES
from cigeval.backends.cache import ResponseCache
from cigeval.errors import CigevalError
from cigeval.image_store import ImageStore
from cigeval.images import EncodedImage, image_path
from cigeval.messages import ModelResponse, normalize_finish_reason
from cigeval.rubrics.registry import BUILTIN_RUBRICS
from cigeval.sample import Sample, image_inputs
from cigeval.score import Score
from cigeval.session import recorded_reply
from cigeval.tasks import get_task
from cigeval.tasks.builtin import BUILTIN_TASKS
from cigeval.tools.registry import BUILTIN_TOOLS, ON_REQUEST_TOOLS, resolve_tools

#: Bumped when the sample key or the entry changes.
REPLAY_FORMAT = 2


#: How a rubric says why a stored record does not follow from the replies of its trace (None:
#: it does), given the aggregate rule of the settings (``CigevalRubric.replay_disagreement``).
RecordCheck = Callable[[Mapping[str, Any], str], "str | None"]


class SampleReplay:
    """The sample entries of one evaluator's settings in ``cache``; ``store`` is where the
    evaluator writes the images it shows (None: nowhere). ``check`` is the rubric's
    :data:`RecordCheck`, ``aggregate_rule`` and ``max_reply_chars`` the settings' own: a
    stored record is replayed only when the replies its trace holds are the cached answers
    (as a session records them) and its scores follow from those replies."""

    def __init__(
        self,
        cache: ResponseCache,
        fingerprint: str,
        store: ImageStore | None,
        check: RecordCheck,
        aggregate_rule: str,
        max_reply_chars: int,
    ) -> None:
        self.cache = cache
        self.fingerprint = fingerprint
        self.store = store
        self.check = check
        self.aggregate_rule = aggregate_rule
        self.max_reply_chars = max_reply_chars

    def key(self, sample: Sample, encoding: str, max_bytes: int = MAX_IMAGE_BYTES) -> str | None:
        """The sample key, or None when the sample cannot have one (a task of the user's: its
        questions are code the key cannot cover; an image given in memory; a file that
        cannot be read, is no regular file or holds more than ``max_bytes`` bytes)."""
        if not any(get_task(sample.task) is task for task in BUILTIN_TASKS):
            return None
        try:
            images = _hashed(sample, max_bytes)
        except (OSError, TypeError, ValueError):
            return None
        payload = {
            "format": REPLAY_FORMAT,
            "fingerprint": self.fingerprint,
            "encoder": _encoder_version() if encoding == "jpeg75" else None,
            "code": source_digest(),
            "sample": sample.model_dump(mode="json", exclude={"images", "candidates"}),
            "images": images,
        }
        return "sample|" + json.dumps(payload, sort_keys=True, separators=(",", ":"))

    def replayed(self, key: str, started: float) -> Score | None:
        """The stored record of ``key`` as a replay of its cached answers writes it, or None
        when there is none or it cannot be used."""
        entry = self.cache.get(key)
        if not isinstance(entry, dict):
            return None
        try:  # an entry of another shape (a newer format, a damaged value) is a miss
            calls = [(str(call_key), str(digest)) for call_key, digest in entry["calls"]]
            shown = {
                str(sha): (str(a), str(b), str(c)) for sha, (a, b, c) in entry["shown"].items()
            }
            replies: Counter[str] = Counter()
            for call_key, digest in calls:
                answer = self.cache.lookup(call_key)
                if answer is None or answer_digest(answer) != digest:
                    return None
                replies[recorded_reply(answer.text, self.max_reply_chars)] += 1
            record = entry["record"]
            if not self._follows(record, replies):
                return None  # judged again: its record says what its answers do not
            image_files = self._image_files(shown)
            if image_files is None:
                return None
            score = Score.from_record({**record, "image_files": image_files})
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        shift = time.time() - min((e.time for e in score.trace.events), default=0.0)
        for event in score.trace.events:
            event.time += shift
        score.usage["wall_ms"] = round((time.perf_counter() - started) * 1000)
        return score

    def _follows(self, record: dict[str, Any], replies: Counter[str]) -> bool:
        """Whether ``record`` is what its answers (``replies``, as a session records them)
        give: its trace holds exactly those replies, and the rubric reads its scores from
        them (:data:`RecordCheck`)."""
        calls = [e for e in record["trace"] if e.get("type") == "model_call"]
        if Counter(str(e.get("reply")) for e in calls) != replies:
            return False
        try:
            return self.check(record, self.aggregate_rule) is None
        except (CigevalError, KeyError, TypeError, ValueError, AttributeError):
            return False  # a reply that does not parse (as it did) is no record to replay

    def _image_files(self, shown: dict[str, tuple[str, str, str]]) -> dict[str, str] | None:
        """Where each shown image is now, as the judging would list it: its own file, or the
        image store (copied there from where the first judging stored it); None when an image
        of the store can no longer be found."""
        files: dict[str, str] = {}
        for sha, (place, where, mime) in shown.items():
            if place == "file":
                files[sha] = where
                continue
            if self.store is None:
                continue
            target = self.store.path_for(sha, mime)
            if not target.exists():
                try:
                    data = Path(where).read_bytes()
                except OSError:
                    return None
                if hashlib.sha256(data).hexdigest() != sha:
                    return None
                self.store.put(EncodedImage(data, mime, sha, 0, 0))
            files[sha] = str(target.resolve())
        return files

    def save(
        self,
        key: str,
        score: Score,
        answers: list[tuple[str, ModelResponse]],
        shown: dict[str, EncodedImage],
    ) -> None:
        """Store ``score`` (a judging of the sample of ``key`` built from ``answers``, by cache
        key, showing ``shown`` by sha256), unless it holds an error a new judging might not
        repeat."""
        if not score.ok or _tool_failed(score) or any(s.error for s in score.sub_scores):
            return
        digests = {call_key: answer_digest(answer) for call_key, answer in answers}
        record = score.to_record()
        calls_made = 0
        for event in record["trace"]:
            if event["type"] == "model_call":
                event["cached"], event["latency_s"] = True, 0.0
                calls_made += 1
        record["usage"] = {**record["usage"], "http_attempts": 0, "cached_calls": calls_made}
        files = record.pop("image_files", {})
        places = {}
        for sha, image in shown.items():
            if sha in files or image.source is None:
                place = "file" if image.source is not None else "store"
                places[sha] = [place, files.get(sha, ""), image.mime]
        calls = [[call_key, digest] for call_key, digest in digests.items()]
        self.cache.set(key, {"calls": calls, "record": record, "shown": places})


def built_in_judging(
    rubric: object, tools: Iterable[str] | None, method: str | None = None
) -> bool:
    """Whether ``rubric`` and the ``tools`` it may use are cigeval's own, whose requests are
    covered by the digest of cigeval's files in the sample key (a user's rubric or tool is
    code that may change what is asked without changing any setting)."""
    if not _built_in(rubric, BUILTIN_RUBRICS.get(getattr(rubric, "name", ""))):
        return False
    shipped = {**BUILTIN_TOOLS, **ON_REQUEST_TOOLS}
    return all(_built_in(tool, shipped.get(tool.name)) for tool in resolve_tools(tools, method))


def _built_in(item: object, path: str | None) -> bool:
    """Whether ``item`` is the built-in entry ``path`` names (that object, or of that class)."""
    if path is None:
        return False
    module, _, attribute = path.partition(":")
    found = getattr(sys.modules.get(module), attribute, None)
    return found is not None and (item is found or type(item) is found)


def _tool_failed(score: Score) -> bool:
    """Whether a tool failed while judging ``score`` (it might not fail again); a tool the
    method does not run in the task (``not run: ...``) is no failure."""
    steps = (step for sub in score.sub_scores for step in sub.tool_steps)
    return any(step.error and not step.error.startswith("not run:") for step in steps)


def answer_digest(answer: ModelResponse) -> str:
    """A digest of what a cached answer says (its text, model, tokens, finish reason), the
    same for the answer as received and as read back from the cache."""
    said = [answer.text, answer.model, answer.usage.prompt_tokens, answer.usage.completion_tokens]
    said += [normalize_finish_reason(answer.finish_reason), answer.endpoint]
    return hashlib.sha256(json.dumps(said).encode("ascii")).hexdigest()


def _hashed(sample: Sample, max_bytes: int) -> dict[str, Any]:
    """Each image of ``sample`` (by the name records use) as its resolved path and sha256,
    or the sha256 of bytes given; a TypeError for a PIL image given in memory."""
    hashed: dict[str, Any] = {}
    for name, value in image_inputs(sample):
        if isinstance(value, bytes):
            hashed[name] = hashlib.sha256(value).hexdigest()
        elif isinstance(value, str | Path):
            path = image_path(value, sample.base_dir).resolve()
            hashed[name] = [str(path), known_file_sha256(path, max_bytes)]
        else:
            raise TypeError("an image given in memory has no sample key")
    return hashed


@cache
def source_digest() -> str:
    """The sha256 of cigeval's own files (code, prompts, templates): a checkout edited
    without a new version number, which may now ask other questions, replays nothing
    stored before the edit. Reading them takes a few milliseconds once per process."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@cache
def _encoder_version() -> str:
    """The version of the JPEG encoder (OpenCV), read without importing it where possible."""
    spec = importlib.util.find_spec("cv2")
    for folder in (spec and spec.submodule_search_locations) or []:
        version = Path(folder) / "version.py"
        if version.is_file():
            return version.read_text(encoding="utf-8", errors="replace")
    import cv2

    return str(cv2.__version__)
