"""ResponseCache and CachedBackend: keys, hits, durability, concurrent writers, no secrets."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from cigeval.backends import (
    CachedBackend,
    OpenAIBackend,
    ResponseCache,
    ScriptedBackend,
    cache_key,
)
from cigeval.backends.policy import CallPolicy
from cigeval.errors import BackendError
from cigeval.messages import GenerationSettings, Message, ModelRequest, ModelResponse, Usage
from cigeval.testing.openai_server import FakeOpenAIServer

from .support import SECRET_KEY, image_request, make_image


def test_key_covers_what_changes_the_answer() -> None:
    red, blue = make_image((255, 0, 0)), make_image((0, 0, 255))
    base = cache_key("openai:m", image_request("judge", (red,)))
    assert base == cache_key("openai:m", image_request("judge", (red,)))
    assert len(base) == 64
    variants = [
        cache_key("openai:other", image_request("judge", (red,))),
        cache_key("openai:m", image_request("judge!", (red,))),
        cache_key("openai:m", image_request("judge", (blue,))),
        cache_key("openai:m", image_request("judge", (red, red))),
        cache_key("openai:m", image_request("judge", (red,), system="Be strict.")),
        cache_key("openai:m", image_request("judge", (red,), settings=GenerationSettings(seed=1))),
        cache_key(
            "openai:m", image_request("judge", (red,), settings=GenerationSettings(temperature=1))
        ),
    ]
    assert base not in variants and len(set(variants)) == len(variants)


def test_key_ignores_keys_timeouts_retries_and_credentials_but_not_the_server() -> None:
    a = OpenAIBackend(
        "m", ["http://127.0.0.1:1/v1"], api_key="k1", policy=CallPolicy(timeout_s=5, max_retries=0)
    )
    b = OpenAIBackend(
        "m", ["http://u:pw@127.0.0.1:1/v1/"], api_key="k2", policy=CallPolicy(max_retries=9)
    )
    other = OpenAIBackend("m", ["http://10.0.0.2:8000/v1"], api_key="k1")
    request = image_request("x", (make_image(),))
    assert a.endpoint == b.endpoint == "http://127.0.0.1:1/v1"  # no credentials, no slash
    assert CachedBackend(a, ResponseCache("c")).key(request) == CachedBackend(
        b, ResponseCache("c")
    ).key(request)
    assert CachedBackend(a, ResponseCache("c")).key(request) != CachedBackend(
        other, ResponseCache("c")
    ).key(request)


def test_replicas_of_one_spec_share_a_key_in_any_order() -> None:
    request = image_request("x", (make_image(),))
    ab = OpenAIBackend("m", ["http://a:1/v1", "http://b:1/v1"], api_key="k")
    ba = OpenAIBackend("m", ["http://b:1/v1", "http://a:1/v1"], api_key="k")
    only_a = OpenAIBackend("m", ["http://a:1/v1"], api_key="k")
    assert ab.endpoint == ba.endpoint == "http://a:1/v1,http://b:1/v1"
    keys = {CachedBackend(b, ResponseCache("c")).key(request) for b in (ab, ba, only_a)}
    assert len(keys) == 2


def test_key_covers_the_prompt_templates() -> None:
    request = image_request("x", (make_image(),))
    other = ModelRequest(request.messages, request.settings, prompts_sha256="f" * 64)
    assert cache_key("m", request) != cache_key("m", other)


async def test_hit_makes_no_call_and_survives_a_fresh_instance(tmp_path: Path) -> None:
    inner = ScriptedBackend(["first answer"], usage=Usage(5, 3))
    request = image_request("judge", (make_image(),))
    miss = await CachedBackend(inner, ResponseCache(tmp_path)).complete(request)
    assert (miss.text, miss.cached) == ("first answer", False)

    hit = await CachedBackend(inner, ResponseCache(tmp_path)).complete(request)
    assert (hit.text, hit.model, hit.cached) == ("first answer", "scripted:default", True)
    assert hit.usage == Usage(5, 3)
    assert len(inner.requests) == 1  # the script has one reply: a second call would raise


async def test_http_cache_hit_makes_no_request(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.replies = ["remembered"]
    with_password = openai_server.base_url.replace("http://", "http://user:hunter2@")
    backend = CachedBackend(
        OpenAIBackend("fake-model", [with_password], api_key=SECRET_KEY),
        ResponseCache(tmp_path),
    )
    request = image_request("judge", (make_image(),))
    first = await backend.complete(request)
    assert first.cached is False and first.finish_reason == "stop"
    again = await backend.complete(request)
    assert again.cached and again.text == "remembered"
    assert (again.finish_reason, again.endpoint) == ("stop", openai_server.base_url)
    assert len(openai_server.requests) == 1
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert SECRET_KEY.encode() not in file.read_bytes()
            assert b"hunter2" not in file.read_bytes()


async def test_errors_are_not_cached(tmp_path: Path) -> None:
    inner = ScriptedBackend([RuntimeError("boom"), "second try"])
    backend = CachedBackend(inner, ResponseCache(tmp_path))
    with pytest.raises(RuntimeError):
        await backend.complete(image_request())
    assert (await backend.complete(image_request())).text == "second try"


def stored(cache: ResponseCache, namespace: str, key: str) -> bytes:
    """The raw value of an entry, read from the index with SQLite itself."""
    with sqlite3.connect(cache.store.index_path) as db:
        (value,) = db.execute(
            "SELECT value FROM entries WHERE namespace = ? AND key = ?", (namespace, key)
        ).fetchone()
    return bytes(value)


def overwrite(cache: ResponseCache, namespace: str, key: str, value: bytes) -> None:
    with sqlite3.connect(cache.store.index_path) as db:
        db.execute(
            "UPDATE entries SET value = ? WHERE namespace = ? AND key = ?", (value, namespace, key)
        )


def test_entries_live_in_one_index_and_corrupt_entries_are_misses(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("x", image_request())
    cache.save(key, ModelResponse("answer", "m"))
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".sqlite3"] == ["cache.sqlite3"]
    assert not (tmp_path / "responses").exists()  # no file per answer
    assert cache.lookup(key) is not None

    whole = stored(cache, "responses", key)
    for broken in (whole[: len(whole) // 2], b"", b"\x00\xff garbage", b"[1, 2]"):
        overwrite(cache, "responses", key, broken)
        assert cache.lookup(key) is None
    entry = json.loads(whole)
    entry["key"] = "0" * 64  # an entry that claims another key is not trusted
    overwrite(cache, "responses", key, json.dumps(entry).encode())
    assert cache.lookup(key) is None


def write_legacy_entry(cache: ResponseCache, namespace: str, key: str, entry: dict) -> Path:
    """An entry as cigeval wrote it before the index: one JSON file per entry."""
    path = cache.path_for(namespace, key)
    assert path == cache.directory / namespace / key[:2] / key[2:4] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 2, "key": key, "written": 1.0, **entry}))
    return path


async def test_a_cache_of_the_file_per_entry_layout_is_still_read(tmp_path: Path) -> None:
    inner = ScriptedBackend(["fresh answer", "asked again"])
    request = image_request()
    key = CachedBackend(inner, ResponseCache("c")).key(request)
    old = ResponseCache(tmp_path)
    answer = {"text": "old answer", "model": "m", "usage": {"prompt_tokens": 3}}
    path = write_legacy_entry(old, "responses", key, {**answer, "finish_reason": "stop"})
    other = cache_key("x", image_request("another question"))
    write_legacy_entry(old, "responses", other, {**answer, "key": "0" * 64})  # mislabelled

    backend = CachedBackend(inner, ResponseCache(tmp_path))
    hit = await backend.complete(request)
    assert (hit.text, hit.cached, hit.finish_reason, hit.usage.prompt_tokens) == (
        "old answer",
        True,
        "stop",
        3,
    )
    assert inner.requests == []
    assert ResponseCache(tmp_path).lookup(other) is None  # still checked as before
    backend.forget(request)  # an unusable old answer is removed from the old layout too
    assert not path.exists()
    assert (await backend.complete(request)).text == "fresh answer"
    assert (await backend.complete(request)).text == "fresh answer"  # now from the index


def test_leftover_temp_files_of_the_old_layout_are_ignored(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("x", image_request())
    folder = cache.path_for("responses", key).parent
    folder.mkdir(parents=True)
    # What a writer of the file-per-entry layout killed before os.replace left behind.
    (folder / ".tmp-abc.part").write_text('{"format": 1, "key": "')
    assert ResponseCache(tmp_path).lookup(key) is None
    cache.save(key, ModelResponse("ok", "m"))
    assert cache.lookup(key) is not None


def test_bytes_live_in_their_own_namespace(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.set_bytes("jpeg75|abc", b"\xff\xd8 image bytes")
    assert ResponseCache(tmp_path).get_bytes("jpeg75|abc") == b"\xff\xd8 image bytes"
    assert cache.get_bytes("jpeg75|abd") is None and cache.get("jpeg75|abc") is None


def test_json_values_live_in_their_own_namespace(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("x", image_request())
    cache.save(key, ModelResponse("model answer", "m"))
    assert cache.get(key) is None
    cache.set(key, {"boxes": [[1, 2, 3, 4]]})
    assert cache.lookup(key) is not None and cache.lookup(key).text == "model answer"  # type: ignore[union-attr]
    assert ResponseCache(tmp_path).get(key) == {"boxes": [[1, 2, 3, 4]]}
    cache.set("grounding|sha:abc|query:a cat", [0.5, "cat"])
    assert cache.get("grounding|sha:abc|query:a cat") == [0.5, "cat"]
    assert cache.get("grounding|sha:abc|query:a dog") is None


def test_non_json_values_are_refused_without_a_trace(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    with pytest.raises(TypeError):
        cache.set("k", object())
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_concurrent_thread_writers_never_expose_a_partial_entry(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    values = [{"writer": n, "payload": "x" * (2000 * (n + 1))} for n in range(8)]
    seen: list[object] = []
    stop = threading.Event()

    def write(value: dict[str, object]) -> None:
        for _ in range(40):
            cache.set("shared", value)

    def read() -> None:
        while not stop.is_set():
            seen.append(cache.get("shared"))

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(v,)) for v in values]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    reader.join()
    assert cache.get("shared") in values
    assert all(v is None or v in values for v in seen)


def _write_many(directory: str, name: str) -> None:
    cache = ResponseCache(directory)
    for _ in range(100):
        cache.set("shared", {"writer": name, "payload": name * 5000})


def test_concurrent_process_writers(tmp_path: Path) -> None:
    # fork: the children start without re-importing cigeval, which keeps the test fast.
    context = multiprocessing.get_context("fork")
    processes = [
        context.Process(target=_write_many, args=(str(tmp_path), name)) for name in ("a", "b")
    ]
    for process in processes:
        process.start()
    cache = ResponseCache(tmp_path)
    reads = []
    while any(p.is_alive() for p in processes):
        reads.append(cache.get("shared"))
        time.sleep(0.001)
    for process in processes:
        process.join()
    assert [p.exitcode for p in processes] == [0, 0]
    valid = [{"writer": n, "payload": n * 5000} for n in ("a", "b")]
    assert cache.get("shared") in valid
    assert all(r is None or r in valid for r in reads)


async def test_identical_concurrent_requests_share_one_call(tmp_path: Path) -> None:
    async def slow(request: ModelRequest) -> str:
        await asyncio.sleep(0.05)
        return "shared answer"

    inner = ScriptedBackend(slow)
    backend = CachedBackend(inner, ResponseCache(tmp_path))
    request = ModelRequest((Message.text("user", "same question"),))
    replies = await asyncio.gather(*(backend.complete(request) for _ in range(5)))
    assert [r.text for r in replies] == ["shared answer"] * 5
    assert len(inner.requests) == 1
    assert sum(not r.cached for r in replies) == 1


async def test_a_failed_shared_call_fails_every_waiter_and_is_not_cached(tmp_path: Path) -> None:
    async def failing(request: ModelRequest) -> str:
        await asyncio.sleep(0.02)
        raise BackendError("boom")

    backend = CachedBackend(ScriptedBackend(failing), ResponseCache(tmp_path))
    request = ModelRequest((Message.text("user", "q"),))
    results = await asyncio.gather(
        *(backend.complete(request) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, BackendError) for r in results)
    with pytest.raises(BackendError):
        await backend.complete(request)


# ------------------------------------------------------------ failures cost only themselves


async def test_a_cache_folder_that_is_a_file_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    in_the_way = tmp_path / "file"
    in_the_way.write_text("x")
    cache = ResponseCache(in_the_way)
    backend = CachedBackend(ScriptedBackend(["one", "two"]), cache)
    request = image_request()
    assert (await backend.complete(request)).text == "one"
    assert (await backend.complete(request)).text == "two"  # nothing was stored
    cache.set("k", [1])
    assert cache.get("k") is None
    backend.forget(request)  # no error either


async def test_waiters_resolve_when_the_answer_cannot_be_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("cigeval._cache_store.CacheStore.put", full_disk)

    async def slow(request: ModelRequest) -> str:
        await asyncio.sleep(0.02)
        return "answer"

    backend = CachedBackend(ScriptedBackend(slow), ResponseCache(tmp_path))
    request = ModelRequest((Message.text("user", "same"),))
    replies = await asyncio.wait_for(
        asyncio.gather(*(backend.complete(request) for _ in range(4))), timeout=5
    )
    assert [r.text for r in replies] == ["answer"] * 4
    assert ResponseCache(tmp_path).lookup(backend.key(request)) is None  # nothing stored


async def test_a_cancelled_call_lets_its_waiters_ask_themselves(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        started.set()
        await asyncio.sleep(0.05)
        return "answer"

    inner = ScriptedBackend(slow)
    backend = CachedBackend(inner, ResponseCache(tmp_path))
    request = ModelRequest((Message.text("user", "same"),))
    owner = asyncio.ensure_future(backend.complete(request))
    await started.wait()
    waiter = asyncio.ensure_future(backend.complete(request))
    await asyncio.sleep(0)
    owner.cancel()
    reply = await asyncio.wait_for(waiter, timeout=5)
    assert reply.text == "answer" and len(inner.requests) == 2
    assert owner.cancelled()


async def test_lone_surrogates_round_trip_through_the_cache(tmp_path: Path) -> None:
    backend = CachedBackend(ScriptedBackend(["half \ud800 pair"]), ResponseCache(tmp_path))
    request = ModelRequest((Message.text("user", "question \udfff"),))
    assert (await backend.complete(request)).text == "half \ud800 pair"
    hit = await backend.complete(request)
    assert hit.cached and hit.text == "half \ud800 pair"
    key = backend.key(request)
    stored(ResponseCache(tmp_path), "responses", key).decode("ascii")  # escaped, never raw


async def test_forget_and_bypass(tmp_path: Path) -> None:
    from cigeval.backends.cache import bypass_cached_answers

    inner = ScriptedBackend(["first", "second", "third"])
    backend = CachedBackend(inner, ResponseCache(tmp_path))
    request = image_request()
    assert (await backend.complete(request)).text == "first"
    assert (await backend.complete(request)).text == "first"
    backend.forget(request)
    assert (await backend.complete(request)).text == "second"
    with bypass_cached_answers():
        assert (await backend.complete(request)).text == "third"
    hit = await backend.complete(request)
    assert hit.cached and hit.text == "third"  # the fresh answer replaced the old one


def test_a_cached_finish_reason_is_replayed_in_the_one_vocabulary(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.save("k" * 64, ModelResponse("cut", "m", finish_reason="MAX_TOKENS"))  # an old entry
    cache.save("c" * 64, ModelResponse("cut", "m", finish_reason="length"))
    assert cache.lookup("k" * 64).finish_reason == "length"  # type: ignore[union-attr]
    assert cache.lookup("c" * 64).finish_reason == "length"  # type: ignore[union-attr]
