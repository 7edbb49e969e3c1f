"""cigeval as an inspect_ai scorer: a real ``inspect_ai.eval()`` of one sample per task,
offline. inspect's mock model stands in for the image generator under test; the cigeval
judge is a local OpenAI-compatible server, which records what it was shown, so every check
below is made from the judge's side."""

from __future__ import annotations

import base64
import hashlib
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task, eval
from inspect_ai.model import (
    ChatMessageUser,
    ContentImage,
    ContentText,
    Model,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.solver import Generate, TaskState, generate, solver

from cigeval import RunConfig, ScriptedBackend
from cigeval.integrations.inspect_ai import (
    ERROR_KEY,
    OUTPUT_KEY,
    SAMPLE_KEY,
    inspect_samples,
    inspect_scorer,
)
from cigeval.testing import request_text, rule_judge
from cigeval.testing.openai_server import FakeOpenAIServer
from cigeval.testing.samples_factory import make_image, seven_task_samples

#: How each sample's output reaches the scorer: drawn by the mock model into its reply,
#: saved by the solver as a path in the store, or (no image made) the dataset's own output.
HOW = {
    "t2i": "model",
    "mie": "store",
    "tie": "dataset",
    "sdig": "model",
    "sdie": "store",
    "mcic": "model",
    "cgig": "store",
}
COLOURS = ["orange", "teal", "navy", "olive", "maroon", "pink", "gold"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _shown_to_the_judge(server: FakeOpenAIServer) -> set[str]:
    """The sha256 of every image in every request the judge received."""
    seen = set()
    for request in server.requests:
        for url in request.image_urls():
            seen.add(_sha(base64.b64decode(url.split(",", 1)[1])))
    return seen


@pytest.fixture
def study(tmp_path: Path) -> dict[str, Any]:
    """The seven samples, each with its own dataset output and its own generated image."""
    samples = seven_task_samples(tmp_path)
    generated = {}
    for sample, colour in zip(samples, COLOURS, strict=True):
        sid = sample["id"]
        sample["images"]["output"] = make_image(tmp_path / f"out_{sid}.png", colour, (5, 5, 20, 20))
        generated[sid] = tmp_path / make_image(
            tmp_path / f"gen_{sid}.png", colour, (30, 30, 60, 60)
        )
    return {"folder": tmp_path, "samples": samples, "generated": generated}


def _mock_model(content: Any = "no image") -> Model:
    """inspect's mock model answering ``content(messages)`` (or ``content``). Its usage is
    given: without one it counts tokens with tiktoken, which downloads an encoding."""

    def reply(messages: list[Any], *_: Any) -> ModelOutput:
        output = ModelOutput.from_content(
            model="mockllm/model", content=content(messages) if callable(content) else content
        )
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return get_model("mockllm/model", custom_outputs=reply)


def _image_maker(generated: dict[str, Path]) -> Model:
    """inspect's mock model as an image generator: it answers 'draw sample X' with X's image."""

    def draw(messages: list[Any]) -> list[Any]:
        asked = messages[-1].text.removeprefix("draw sample ")
        return [ContentText(text="here it is"), ContentImage(image=_data_uri(generated[asked]))]

    return _mock_model(draw)


@solver
def make_images(generated: dict[str, Path]) -> Any:
    """Per HOW: ask the mock model to draw, save a path in the store, or make nothing."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        how = HOW[str(state.sample_id)]
        if how == "model":
            state.messages.append(ChatMessageUser(content=f"draw sample {state.sample_id}"))
            return await generate(state)
        if how == "store":
            state.store.set(OUTPUT_KEY, str(generated[str(state.sample_id)]))
        return state

    return solve


def test_a_real_inspect_eval_shows_the_judge_every_image_of_all_seven_tasks(
    study: dict[str, Any],
) -> None:
    folder, generated = study["folder"], study["generated"]
    dataset = inspect_samples(study["samples"], base_dir=folder)
    with FakeOpenAIServer(rule_judge(tools={"*": "Difference"}, default_score=6)) as server:
        scorer = inspect_scorer(
            f"openai:judge@{server.base_url}",
            tools="Difference",
            tool_text="detailed",
            request_layout="cigeval",  # the detailed tool text names the mask's region
            difference={"mask": "split"},
            image_encoding="original",  # the files' bytes, so the judge's side can be hashed
            run_config=RunConfig(use_cache=False),
        )
        task = Task(dataset=dataset, solver=make_images(generated), scorer=scorer)
        (log,) = eval(
            task, model=_image_maker(generated), log_dir=str(folder / "logs"), display="none"
        )
        seen = _shown_to_the_judge(server)
        texts = [t for r in server.requests for t in r.texts()]
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 7
    by_id = {str(s.id): s for s in log.samples}
    files = {name: _sha((folder / name).read_bytes()) for name in ("source.png", "subject.png")}
    for sample in study["samples"]:
        sid = sample["id"]
        (score,) = by_id[sid].scores.values()  # type: ignore[union-attr]
        assert score.value == pytest.approx(0.6), score.explanation
        (judged,) = score.metadata["cigeval"]
        expected_output = generated[sid] if HOW[sid] != "dataset" else folder / f"out_{sid}.png"
        shown = judged["input_images"]
        assert shown.pop("output") == _sha(expected_output.read_bytes())
        for role, name in sample["images"].items():
            if role in ("output", "mask"):
                continue
            names = name if isinstance(name, list) else [name]
            hashes = [_sha((folder / n).read_bytes()) for n in names]
            if role == "subjects":
                assert [shown.pop("subject_1"), shown.pop("subject_2")] == hashes
            else:
                assert [shown.pop(role)] == hashes
        assert shown == {}, f"{sid}: shown beyond the sample's images: {shown}"
        assert set(judged["input_images"].values()) <= seen  # and the server received them
        assert _sha(expected_output.read_bytes()) in seen
        if HOW[sid] != "dataset":  # the solver's image, never the dataset's, was judged
            assert _sha((folder / f"out_{sid}.png").read_bytes()) not in seen
    assert files["source.png"] in seen and files["subject.png"] in seen
    # the mask reaches the judge as the Difference tool shows it (the paper's judge is never
    # shown the mask itself): its region, white in (8, 8)-(32, 32), and the changes in and out
    mie = by_id["mie"].scores["cigeval"]  # type: ignore[index]
    assert mie.metadata["tools"]["edit_success"] == "Difference"
    mask_box = "Mask region (where the edit was asked for), in source pixels: [8, 8, 33, 33]"
    assert any(mask_box in t for t in texts), "the mask did not reach the judge"


def test_the_score_carries_sub_scores_tools_and_the_trace_summary(
    study: dict[str, Any],
) -> None:
    samples = [s for s in study["samples"] if s["id"] in ("tie", "cgig")]
    scripted = ScriptedBackend(rule_judge(scores={"over_editing": 3, "control_following": 9}))
    task = Task(
        dataset=inspect_samples(samples, base_dir=study["folder"]),
        scorer=inspect_scorer(scripted, tools="", run_config=RunConfig(use_cache=False)),
    )
    (log,) = eval(task, model=_mock_model(), log_dir=str(study["folder"] / "logs"), display="none")
    assert log.status == "success", log.error
    scores = {str(s.id): s.scores["cigeval"] for s in log.samples or []}  # type: ignore[index]
    tie, cgig = scores["tie"], scores["cgig"]
    assert tie.value == pytest.approx(0.3) and cgig.value == pytest.approx(0.7)
    assert "over_editing: 3/10" in tie.explanation and "edit_success: 7/10" in tie.explanation
    (judged,) = tie.metadata["cigeval"]
    assert [(s["question_id"], s["score"]) for s in judged["sub_scores"]] == [
        ("edit_success", 7.0),
        ("over_editing", 3.0),
    ]
    assert tie.metadata["tools"] == {"edit_success": None, "over_editing": None}
    assert judged["trace"]["model_calls"] == {"judge": 2}  # no tool offered: no planning call
    assert judged["trace"]["events"]["model_call"] == 2
    assert judged["judge"] == scripted.identity
    metrics = log.results.scores[0].metrics  # type: ignore[union-attr]
    assert metrics["mean"].value == pytest.approx(0.5)


def test_a_bad_sample_is_unscored_with_its_reason_and_the_others_are_scored(
    study: dict[str, Any],
) -> None:
    folder = study["folder"]
    good = next(s for s in study["samples"] if s["id"] == "t2i")
    no_prompt = {"id": "bad", "task": "text_guided_ig", "images": {"output": "out_t2i.png"}}
    gone = {**good, "id": "gone", "images": {"output": "no-such-file.png"}}
    dataset = inspect_samples([good, no_prompt, gone], base_dir=folder)
    assert ERROR_KEY in dataset[1].metadata and SAMPLE_KEY not in dataset[1].metadata
    task = Task(
        dataset=dataset,
        scorer=inspect_scorer(
            ScriptedBackend(rule_judge()), tools="", run_config=RunConfig(use_cache=False)
        ),
    )
    (log,) = eval(task, model=_mock_model(), log_dir=str(folder / "logs"), display="none")
    assert log.status == "success", log.error
    scores = {str(s.id): s.scores["cigeval"] for s in log.samples or []}  # type: ignore[index]
    assert scores["t2i"].value == pytest.approx(0.7)
    assert math.isnan(scores["bad"].value) and "missing text field 'prompt'" in (
        scores["bad"].explanation or ""
    )
    assert math.isnan(scores["gone"].value) and "no-such-file.png" in (
        scores["gone"].explanation or ""
    )
    metrics = log.results.scores[0].metrics  # type: ignore[union-attr]
    assert metrics["mean"].value == pytest.approx(0.7)  # the unscored ones left out


def test_a_plain_inspect_dataset_is_judged_with_the_task_given(tmp_path: Path) -> None:
    from inspect_ai.dataset import Sample as InspectSample

    image = tmp_path / make_image(tmp_path / "cat.png", "white", (10, 10, 40, 40), "black")
    scripted = ScriptedBackend(rule_judge(default_score=8))
    task = Task(
        dataset=[InspectSample(input="a black square on white", id="p1")],
        solver=[generate()],
        scorer=inspect_scorer(
            scripted,
            task="text_guided_ig",
            tools="",
            image_encoding="original",
            run_config=RunConfig(use_cache=False),
        ),
    )
    model = _mock_model([ContentImage(image=str(image))])
    (log,) = eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    (sample,) = log.samples or []
    assert sample.scores["cigeval"].value == pytest.approx(0.8)  # type: ignore[index]
    assert all("a black square on white" in request_text(r) for r in scripted.requests)
    (judged,) = sample.scores["cigeval"].metadata["cigeval"]  # type: ignore[index]
    assert judged["input_images"] == {"output": _sha(image.read_bytes())}


def test_the_example_task_scores_every_shipped_sample(tmp_path: Path) -> None:
    """examples/inspect_task.py as docs/inspect.md runs it, the judge a local server."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "examples" / "inspect_task.py"
    spec = importlib.util.spec_from_file_location("inspect_task_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = [line for line in (path.parent / "samples.jsonl").read_text().splitlines() if line]
    with FakeOpenAIServer(rule_judge(default_score=5)) as server:
        task = module.cigeval_examples(judge=f"openai:judge@{server.base_url}")
        (log,) = eval(task, log_dir=str(tmp_path / "logs"), display="none")  # no model
        plans = [r for r in server.requests if any("### Task:" in t for t in r.texts())]
    assert log.status == "success", log.error
    assert len(plans) == len(shipped)  # one planning call per sample: every one was judged
    values = [s.scores["cigeval"].value for s in log.samples or []]  # type: ignore[index]
    assert len(values) == len(shipped) and values == [pytest.approx(0.5)] * len(shipped)


@solver
def _record(references: dict[str, str]) -> Any:
    """Records ``references[sample id]`` (if any) as the output, making no image."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if str(state.sample_id) in references:
            state.store.set(OUTPUT_KEY, references[str(state.sample_id)])
        return state

    return solve


def test_samples_without_a_usable_output_or_task_are_unscored_naming_why(
    study: dict[str, Any],
) -> None:
    from inspect_ai.dataset import Sample as InspectSample

    t2i = next(s for s in study["samples"] if s["id"] == "t2i")
    (conditions_only,) = inspect_samples([t2i], base_dir=study["folder"], outputs=False)
    on_the_web = inspect_samples([{**t2i, "id": "web"}], base_dir=study["folder"])[0]
    plain = InspectSample(input="a red square", id="plain")
    task = Task(
        dataset=[conditions_only, on_the_web, plain],
        solver=_record(
            {"web": "https://example.com/out.png", "plain": _data_uri(study["generated"]["t2i"])}
        ),
        scorer=inspect_scorer(
            ScriptedBackend(rule_judge()), tools="", run_config=RunConfig(use_cache=False)
        ),
    )
    (log,) = eval(task, model=_mock_model(), log_dir=str(study["folder"] / "logs"), display="none")
    assert log.status == "success", log.error
    scores = {str(s.id): s.scores["cigeval"] for s in log.samples or []}  # type: ignore[index]
    assert all(math.isnan(s.value) for s in scores.values())
    assert scores["t2i"].explanation.startswith("sample 't2i': no output image to judge")
    assert scores["t2i"].reason == "no_response"
    assert scores["web"].explanation.startswith("sample 'web': ")
    assert "is a URL" in scores["web"].explanation and "local images only" in (
        scores["web"].explanation
    )
    assert scores["plain"].explanation == (
        "sample 'plain': no cigeval sample in the metadata (made by inspect_samples) and the "
        "scorer was given no task="
    )


def test_imagenhub_samples_are_scored_on_their_generators_images(tmp_path: Path) -> None:
    """ImagenHub's benchmark samples (one per task, their images drawn in a small stand-in
    Museum folder) become inspect samples whose own outputs are judged, conditions shown."""
    from PIL import Image

    from cigeval.meta.imagenhub_samples import imagenhub_conditions, sample_for

    museum = tmp_path / "Museum"
    first: dict[str, str] = {}
    for task, uid in imagenhub_conditions():
        first.setdefault(task, uid)
    records = [sample_for(task, "SomeModel", uid, museum) for task, uid in first.items()]
    assert len(records) == 7
    paths: set[str] = set()
    for record in records:
        for value in record["images"].values():
            paths.update(value if isinstance(value, list) else [value])
    for number, path in enumerate(sorted(paths)):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (48, 40), (number * 30 % 256, 90, 160)).save(path, format="JPEG")
    dataset = inspect_samples(records)
    for sample, record in zip(dataset, records, strict=True):
        assert sample.metadata[OUTPUT_KEY] == record["images"]["output"]
        shown = [c.image for c in sample.input[0].content if isinstance(c, ContentImage)]
        assert shown == [v for r, v in record["images"].items() if r != "output"]
    scripted = ScriptedBackend(rule_judge(default_score=4))
    task = Task(
        dataset=dataset,
        solver=[],
        scorer=inspect_scorer(
            scripted, tools="", image_encoding="original", run_config=RunConfig(use_cache=False)
        ),
    )
    (log,) = eval(task, model=_mock_model(), log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    for sample in log.samples or []:
        (judged,) = sample.scores["cigeval"].metadata["cigeval"]  # type: ignore[index]
        record = next(r for r in records if r["id"] == sample.id)
        assert judged["value"] == pytest.approx(0.4)
        output = Path(record["images"]["output"]).read_bytes()
        assert judged["input_images"]["output"] == _sha(output)
