"""Evaluator: judge one sample or many, concurrently, turning every failure into a record."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
)
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

from cigeval._caller import in_callers_words
from cigeval._off_loop import off_loop
from cigeval._warn_once import warn_once
from cigeval.backends import Backend, ResponseCache, resolve_backend
from cigeval.backends.base import backend_endpoint
from cigeval.backends.cache import (
    CachedBackend,
    bypass_cached_answers,
    cache_bypassed,
    noting_answers,
)
from cigeval.backends.policy import widen_calls_in_flight
from cigeval.config import SAMPLING_SETTINGS, EnsembleConfig, EvalConfig, JudgeSpec, RunConfig
from cigeval.errors import (
    CigevalError,
    ConfigError,
    InputError,
    PreflightError,
    ResultsWriteError,
)
from cigeval.evaluation._sync import run_sync
from cigeval.evaluation.assemble import (
    assemble_score,
    judge_provenance,
    provenance_of,
    usage_of,
)
from cigeval.evaluation.ensemble import Judge, build_judges, combine_verdicts
from cigeval.evaluation.not_shown import images_not_shown, not_shown_files
from cigeval.evaluation.replay import SampleReplay, built_in_judging
from cigeval.image_store import ImageStore, image_location
from cigeval.images import EncodedImage, ImagePixels, LoadedImage, encode_image
from cigeval.messages import GenerationSettings
from cigeval.prompts import templates_sha256
from cigeval.prompts.prompt_set import missing_templates, prompt_set_of
from cigeval.results.fingerprint import compute_fingerprint, fingerprint_settings
from cigeval.rubrics import get_rubric
from cigeval.rubrics.base import score_range_of
from cigeval.sample import (
    Sample,
    SampleLine,
    file_hashes,
    load_sample_images,
    sample_from_dict,
    sample_identity,
)
from cigeval.sample_files import failed_inputs_recorded, image_file_hashes
from cigeval.sample_run import SampleRun
from cigeval.score import Score, Verdict
from cigeval.session import JudgeSession
from cigeval.tasks import get_task
from cigeval.tools import resolve_tools
from cigeval.trace import ErrorEvent, Trace

if TYPE_CHECKING:
    from cigeval.backends.batch import BatchCoordinator
    from cigeval.calibration import Calibration

T = TypeVar("T")
E = TypeVar("E", bound="Evaluator")

logger = logging.getLogger(__name__)
#: The model that wrote every scene graph of the paper (§3.2, §4.4).
PAPER_SCENE_GRAPH_MODEL = "gpt-4o"


def scene_graph_warning(config: EvalConfig, judges: list[str]) -> str | None:
    """Why a ``paper`` run's scene graphs are not the paper's: the paper wrote them with GPT-4o
    whichever model judged; None when a judge is GPT-4o or the run cannot draw one. In the
    caller's words (flags inside a ``cigeval`` command, keywords from Python)."""
    if config.method != "paper" or config.rubric != "cigeval" or config.scene_graph_model:
        return None
    if config.tools is not None and not any("scene" in t.lower() for t in config.tools):
        return None
    others = [j for j in judges if PAPER_SCENE_GRAPH_MODEL not in j.lower()]
    if not others:
        return None
    method = in_callers_words("--method paper", "method='paper'")
    option = in_callers_words(
        "--scene-graph-model openai:gpt-4o-2024-05-13",
        "scene_graph_model='openai:gpt-4o-2024-05-13'",
    )
    return (
        f"{method}: the paper's scene graphs came from GPT-4o, whichever model judged; "
        f"here the judge ({', '.join(others)}) writes them. For the paper's graphs pass {option}"
    )


def paraphrase_warning(prompt_sets: Collection[str]) -> str | None:
    """What a run with cigeval's paraphrased paper prompts says once: that they are not the
    official wording, and how to get it (in the caller's words); None for other prompt sets."""
    if "paraphrase" not in prompt_sets:
        return None
    method = in_callers_words("--method paper", "method='paper'")
    option = in_callers_words("--prompt-dir DIR", "prompt_dir='DIR'")
    return (
        f"{method} sends cigeval's own paraphrases of the official CIGEval prompts (records say "
        "prompt_set 'paraphrase'); for the official wording, write it from a clone of "
        "HITsz-TMG/Agentic-CIGEval with `cigeval official-prompts CLONE -o DIR` and pass "
        f"{option} (docs/official-code.md)"
    )


#: What the evaluator accepts as a sample: a Sample, a line of a samples file, or a dict.
SampleInput = Sample | SampleLine | dict[str, Any]


class Evaluator:
    """A judge model (or an ensemble of judges) plus settings, built once and called on one
    sample or thousands.

    ``model`` is a spec string (``openai:gpt-4o-2024-05-13``,
    ``openai:my-model@http://localhost:8000/v1``, ``hf:/path/to/weights``), a LangChain chat
    model, any :class:`cigeval.Backend`, or a list of these (an ensemble; see
    :class:`cigeval.EnsembleConfig`). Keyword arguments override :class:`cigeval.EvalConfig`
    fields, e.g. ``rubric="viescore"``.

    The first sample judged runs the :meth:`preflight` first, once (the same checks and
    :class:`~cigeval.errors.PreflightError` as ``cigeval evaluate``): a server that is down
    or weights that are missing fail at once, not per sample. ``preflight=False`` (or
    ``RunConfig(preflight=False)``) skips it.

    ``calibration`` (a calibration file, docs/calibration.md) adds to every scored Score its
    calibrated value and interval (:meth:`use_calibration`).
    """

    def __init__(
        self,
        model: Any,
        *,
        config: EvalConfig | None = None,
        run_config: RunConfig | None = None,
        base_url: str | None = None,
        ensemble: EnsembleConfig | None = None,
        preflight: bool | None = None,
        calibration: Any = None,
        **config_overrides: Any,
    ) -> None:
        base = config or EvalConfig()
        try:
            # The explicit settings only: a `method` override then fills in its own.
            merged = {**base.model_dump(exclude_unset=True), **config_overrides}
            config = EvalConfig.model_validate(merged) if config_overrides else base
        except Exception as exc:
            raise ConfigError(f"invalid evaluation settings: {exc}") from None
        #: The judge this evaluator is (models and settings), as one value.
        self.spec = JudgeSpec.of(
            model, config=config, run_config=run_config, ensemble=ensemble, base_url=base_url
        )
        self._preflight = _PreflightOnce(
            self.run_config.preflight if preflight is None else preflight
        )
        self.rubric = get_rubric(self.config.rubric)
        resolve_tools(
            self.config.tools, self.config.method
        )  # unknown tool names fail here, not once per sample
        self.backends: list[Backend] = [
            resolve_backend(m, base_url=base_url, run_config=self.run_config)
            for m in self.spec.models
        ]
        #: The Batch API coordinator under ``RunConfig(batch=True)`` (``--batch``), else None.
        self.batch: BatchCoordinator | None = None
        if self.run_config.batch:
            from cigeval.backends.batch import BatchCoordinator, batch_backends

            self.batch = BatchCoordinator.from_run_config(self.run_config)
            self.backends = batch_backends(self.backends, self.batch)
        self.backend = self.backends[0]
        #: The model writing scene graphs when ``config.scene_graph_model`` names one.
        self.scene_graph_backend = self._scene_graph_backend()
        self.judges = build_judges(
            self.backends, self.config.generation(), self.ensemble, self.config.prompt_dir
        )
        self._check_prompt_dirs()
        #: The prompt set of each judge (:mod:`cigeval.prompts.prompt_set`), as records say it.
        self.prompt_sets = [prompt_set_of(self.config, judge.prompt_dir) for judge in self.judges]
        if self.rubric.name == "cigeval":
            warning = paraphrase_warning(self.prompt_sets)
            if warning is not None:
                warn_once(logger, "paraphrased-prompts", warning)
        image_dir = self.run_config.image_dir
        self.image_store = ImageStore(image_dir) if image_dir is not None else None
        use_cache = self.run_config.use_cache and self.run_config.cache_dir is not None
        self.tool_cache = ResponseCache(self.run_config.cache_dir) if use_cache else None  # type: ignore[arg-type]
        #: Fully cached samples replayed without the agent (:mod:`cigeval.evaluation.replay`);
        #: None where the short cut does not apply (no cache, an ensemble, batch, a backend
        #: given without the cache, a rubric or tool of the user's).
        self.replay = self._sample_replay()
        #: The calibration applied to every Score (:meth:`use_calibration`), or None.
        self.calibration: Calibration | None = None
        #: Calibrated scores with a wider interval are marked ``abstain`` (None: the file's).
        self.abstain_width: float | None = None
        if calibration is not None:
            self.use_calibration(calibration)

    def _sample_replay(self) -> SampleReplay | None:
        helpers = [self.scene_graph_backend] if self.scene_graph_backend is not None else []
        backends = [*self.backends, *helpers]
        if self.tool_cache is None or len(self.judges) > 1 or self.batch is not None:
            return None
        if not built_in_judging(self.rubric, self.config.tools, self.config.method):
            return None
        folder = self.tool_cache.directory
        if not all(isinstance(b, CachedBackend) and b.cache.directory == folder for b in backends):
            return None
        check = getattr(self.rubric, "replay_disagreement", None)
        if check is None:  # a rubric that cannot tell a record from its replies: judged again
            return None
        config = self.config
        return SampleReplay(
            self.tool_cache,
            self.fingerprint,
            self.image_store,
            check,
            config.aggregate,
            config.max_reply_chars,
        )

    @classmethod
    def from_spec(cls: type[E], spec: JudgeSpec, *, preflight: bool | None = None) -> E:
        """The evaluator of ``spec`` (``preflight`` as in the constructor)."""
        return cls(
            list(spec.models),
            config=spec.config,
            run_config=spec.run_config,
            base_url=spec.base_url,
            ensemble=spec.ensemble,
            preflight=preflight,
        )

    @property
    def config(self) -> EvalConfig:
        """How each sample is judged (recorded with every Score)."""
        return self.spec.config

    @property
    def run_config(self) -> RunConfig:
        """How the judges are called: concurrency, limits, retries, caching."""
        return self.spec.run_config

    @property
    def ensemble(self) -> EnsembleConfig:
        """How several judgments per sample are made and combined."""
        return self.spec.ensemble

    def _check_prompt_dirs(self) -> None:
        """ConfigError naming the templates a judge's ``--prompt-dir`` lacks: the paper
        layout renders each of them, and a folder missing one would mix its wording with
        cigeval's while the records named the folder."""
        for prompt_dir in dict.fromkeys(judge.prompt_dir for judge in self.judges):
            missing = missing_templates(self.config, prompt_dir)
            if missing:
                option = in_callers_words("--prompt-dir", "prompt_dir")
                shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
                raise ConfigError(
                    f"{option} {prompt_dir} lacks {len(missing)} template(s) the paper layout "
                    f"needs: {shown}. Write the complete set with `cigeval official-prompts "
                    "CLONE -o DIR` (a folder written by an older cigeval lacks the newer ones)"
                )

    def _scene_graph_backend(self) -> Backend | None:
        spec = self.config.scene_graph_model
        if spec is None:
            identities = [b.identity for b in self.backends]
            warning = scene_graph_warning(self.config, identities)
            if warning is not None:
                warn_once(logger, "paper-scene-graphs:" + ",".join(identities), warning)
            return None
        backend = resolve_backend(spec, run_config=self.run_config)
        if self.batch is not None:
            from cigeval.backends.batch import batch_backends

            backend = batch_backends([backend], self.batch)[0]
        return backend

    def preflight(self) -> list[str]:
        """Synchronous :meth:`preflight_async`."""
        return run_sync(self.preflight_async())

    async def preflight_async(self) -> list[str]:
        """Check, before the first sample, that every judge and offered tool can work.

        Each judge's backend runs its own check when it has one (an OpenAI-compatible server
        must answer and serve the model name; a local ``hf:`` model is loaded); backends
        without one (scripted, langchain, your own) are skipped. When the rubric offers tools,
        each tool with a ``preflight(config)`` method loads what it needs (GroundingDINO's
        weights, the OCR engine). Raises :class:`PreflightError` naming the fix; returns a
        line per check made. Once it has passed, judging does not run it again.
        """
        done = await self._preflight_checks()
        self._preflight.passed = True
        return done

    async def _preflight_checks(self) -> list[str]:
        done: list[str] = []
        seen: set[tuple[str, str | None]] = set()
        helpers = [self.scene_graph_backend] if self.scene_graph_backend is not None else []
        for backend in [*self.backends, *helpers]:
            name = (backend.identity, backend_endpoint(backend))
            check = getattr(backend, "preflight", None)
            if name in seen or check is None:
                continue
            seen.add(name)
            try:
                await check()
            except PreflightError:
                raise
            except CigevalError as exc:
                raise PreflightError(f"the judge {backend.identity} is not usable: {exc}") from exc
            where = f" at {name[1]}" if name[1] else ""
            done.append(f"judge {backend.identity}{where}: ready")
        if hasattr(self.rubric, "offered_tools"):
            for tool in resolve_tools(self.config.tools, self.config.method):
                tool_check = getattr(tool, "preflight", None)
                if tool_check is None:
                    continue
                try:
                    await asyncio.to_thread(tool_check, self.config)
                except PreflightError:
                    raise
                except CigevalError as exc:
                    raise PreflightError(f"the {tool.name} tool is not usable: {exc}") from exc
                done.append(f"tool {tool.name}: ready")
        return done

    def use_calibration(self, calibration: Any, abstain_width: float | None = None) -> None:
        """Apply a calibration file (a path, its parsed JSON or a
        :class:`~cigeval.calibration.Calibration`) to every Score from now on: each scored one
        gains ``calibrated`` (value on the human scale and interval), its raw value kept.
        ``abstain_width`` marks items whose interval is wider (default: the file's own).
        :class:`~cigeval.calibration.CalibrationMismatch` when the file was fitted for another
        judge, rubric, method, aggregate rule or prompt set (docs/calibration.md)."""
        from cigeval.calibration import binding_of_record, check_binding, load_calibration

        loaded = load_calibration(calibration)
        if loaded.kind != "scores":
            raise InputError(
                f"calibration {loaded.source}: a {loaded.kind} calibration decides between "
                "candidates from several judges' votes; it does not apply to scores"
            )
        check_binding(loaded, binding_of_record(self.identity_record()))
        self.calibration, self.abstain_width = loaded, abstain_width

    def identity_record(self) -> dict[str, Any]:
        """What this evaluator's records say of their judge (rubric, settings, provenance,
        judge identity), the part a calibration is bound to."""
        return {
            "rubric": self.config.rubric,
            "config": self._config_record(),
            "provenance": self._provenance(),
            "judge": self.judge_identity,
        }

    def calibrate_score(self, score: Score) -> Score:
        """``score`` with its ``calibrated`` entry, when a calibration is in use and the score
        has none yet (unchanged otherwise)."""
        if self.calibration is None or not score.ok or score.calibrated is not None:
            return score
        from cigeval.calibration import calibrated_field

        record = score.to_record(include_trace=False)
        score.calibrated = calibrated_field(self.calibration, record, self.abstain_width)
        return score

    @property
    def judge_identity(self) -> str:
        """The judge model(s), as recorded in each Score."""
        return ",".join(dict.fromkeys(b.identity for b in self.backends))

    def fingerprint_settings(self) -> dict[str, Any]:
        """The settings this evaluator's records carry the fingerprint of (rubric, settings,
        judges, prompt hashes, cigeval version; :mod:`cigeval.results.fingerprint`)."""
        return fingerprint_settings(self.config.rubric, self._config_record(), self._provenance())

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the records this evaluator writes."""
        return compute_fingerprint(self.fingerprint_settings())

    def _config_record(self) -> dict[str, Any]:
        record = self.config.record()
        if len(self.judges) > 1:
            record["ensemble"] = self.ensemble.model_dump(mode="json")
        return record

    def _provenance(self, traces: list[Trace] | None = None) -> dict[str, Any]:
        """The provenance of a record; ``traces`` holds each judge's trace, in judge order."""
        return provenance_of(
            (
                judge_provenance(
                    judge.label,
                    judge.backend,
                    templates_sha256(judge.prompt_dir),
                    traces[index] if traces is not None else None,
                    prompt_set=self.prompt_sets[index],
                )
                for index, judge in enumerate(self.judges)
            ),
            method=self.config.method,
            planner_tools=self._planner_tools_departure(),
            scene_graph_model=(
                self.scene_graph_backend.identity if self.scene_graph_backend else None
            ),
            sampling={name: self.config.record()[name] for name in SAMPLING_SETTINGS},
        )

    def _planner_tools_departure(self) -> str | None:
        """How the planner's tool list departs from the official prompt's, under the paper
        layout (:func:`cigeval.agent.paper_layout.planner_tools_departure`); else None."""
        if not hasattr(self.rubric, "offered_tools") or self.config.request_layout != "official":
            return None
        from cigeval.agent.paper_layout import planner_tools_departure

        return planner_tools_departure(resolve_tools(self.config.tools, self.config.method))

    async def _judge_once(
        self,
        sample: Sample,
        images: dict[str, Any],
        judge: Judge,
        encoded: dict[int, Any],
        ready: dict[int, EncodedImage],
    ) -> tuple[Verdict, list[JudgeSession], Trace]:
        """One judge's verdict on a sample, with the sessions that asked (the judge's, and the
        scene-graph model's when it is set apart) and their shared trace."""
        trace = Trace()
        config = self.config
        if judge.prompt_dir != config.prompt_dir:
            config = config.model_copy(update={"prompt_dir": judge.prompt_dir})

        def session(backend: Backend, settings: GenerationSettings) -> JudgeSession:
            return JudgeSession(
                backend,
                settings,
                trace,
                config.max_parse_retries,
                judge.prompt_dir,
                templates_sha256(judge.prompt_dir),
                max_tokens_cap=config.token_cap,
                max_reply_chars=config.max_reply_chars,
                sample_id=sample.id,
            )

        sessions = [session(judge.backend, judge.settings)]
        if self.scene_graph_backend is not None:
            sessions.append(session(self.scene_graph_backend, config.generation()))
        run = SampleRun(
            sample,
            images,
            config,
            sessions[0],
            trace,
            self.tool_cache,
            _encoded=encoded,
            _ready=ready,
            scene_graph=sessions[1] if len(sessions) > 1 else None,
        )
        try:
            verdict = await self.rubric.evaluate(run)
        except Exception as exc:  # one failed judgment must never stop the others
            verdict = Verdict.failure(exc)
            trace.add(ErrorEvent(stage="evaluate", message=verdict.error or ""))
        return verdict, sessions, trace

    async def evaluate_async(self, item: SampleInput, *, refresh_cache: bool = False) -> Score:
        """Judge one sample. Never raises for a bad sample: the Score says ``error`` and why.
        Raises :class:`PreflightError` when the preflight (run before the first sample)
        fails, and again on every later call.

        ``refresh_cache`` asks the judges again instead of reading cached answers (the new
        answers replace them), e.g. to rerun a sample that ended in error.
        """
        await self._preflight.ensure(self.preflight_async)
        bypass = bypass_cached_answers() if refresh_cache else contextlib.nullcontext()
        # Under --batch the coordinator watches this sample to tell when a stage is complete.
        scope = self.batch.sample_scope() if self.batch else contextlib.nullcontext()
        with bypass, scope:
            return self.calibrate_score(await self._evaluate(item))

    async def _evaluate(self, item: SampleInput) -> Score:
        started = time.perf_counter()
        sample_id, task = sample_identity(item)
        parsed: Sample | None = None
        try:
            sample = parsed = _as_sample(item)
            self.rubric.validate(sample)
            replay = self.replay
            # hashing, cache reads, image files and the encodings the judge is sent off the
            # event loop: a signal is handled at once, and the loop, which sends every other
            # sample's calls, never waits on a file or an image codec
            bypassed = cache_bypassed()
            key, replayed, images, ready = await off_loop(self._prepare, sample, started, bypassed)
            if replayed is not None:
                return replayed
        except ResultsWriteError:
            raise  # the image folder cannot be written: no sample's fault, the run stops
        except Exception as exc:
            message = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            trace = Trace()
            trace.add(ErrorEvent(stage="input", message=message))
            failed = assemble_score(
                sample_id=sample_id,
                task=task,
                rubric=self.config.rubric,
                verdict=Verdict.failure(message),
                trace=trace,
                judge=self.judge_identity,
                config=self._config_record(),
                passthrough=_passthrough(item),
                provenance=self._provenance(),
            )
            if parsed is not None and failed_inputs_recorded():
                # its images were never loaded: the hashes of its files, which a run records
                # (a rerun judges it again once they change), are read here, off the event
                # loop too: a file whose read never ends holds up this sample alone
                failed._file_hashes = await off_loop(
                    image_file_hashes, parsed, self.run_config.max_image_bytes
                )
            return failed
        encoded: dict[int, Any] = {}
        with noting_answers() as answers:
            outcomes = await asyncio.gather(
                *(self._judge_once(sample, images, j, encoded, ready) for j in self.judges)
            )
        verdicts = [verdict for verdict, _, _ in outcomes]
        verdict = verdicts[0]
        if len(outcomes) > 1:
            labels = [j.label for j in self.judges]
            verdict = combine_verdicts(
                verdicts,
                labels,
                self.ensemble,
                self.config.aggregate,
                sub_question_level=getattr(self.rubric, "combines_sub_scores", False),
            )
            # a rubric whose details carry more than a score (a preference) combines them too
            combine_details = getattr(self.rubric, "combine_verdicts", None)
            if combine_details is not None:
                verdict = combine_details(verdicts, labels, verdict)
        trace = Trace(events=[e for _, _, t in outcomes for e in t.events])
        input_images = {r: encoded[id(i)].sha256 for r, i in images.items() if id(i) in encoded}
        image_files = await asyncio.to_thread(self._image_files, encoded.values())
        not_shown = images_not_shown(images)
        if not_shown:
            store = self.image_store
            image_files.update(await asyncio.to_thread(not_shown_files, sample, not_shown, store))
        wall_ms = round((time.perf_counter() - started) * 1000)
        score = assemble_score(
            sample_id=sample.id,
            task=sample.task,
            rubric=self.config.rubric,
            verdict=verdict,
            trace=trace,
            judge=self.judge_identity,
            config=self._config_record(),
            passthrough=sample.passthrough(),
            usage=usage_of((s for _, group, _ in outcomes for s in group), trace, wall_ms),
            images=images,
            input_images=input_images,
            images_not_shown=not_shown,
            image_files=image_files,
            provenance=self._provenance([t for _, _, t in outcomes]),
            score_range=score_range_of(self.rubric),
            transport_failure=next(
                (
                    s.transport_failure
                    for _, group, _ in outcomes
                    for s in group
                    if s.transport_failure
                ),
                None,
            ),
        )
        if replay is not None and key is not None:
            replay.save(key, score, answers, {image.sha256: image for image in encoded.values()})
        return score

    def _prepare(
        self, sample: Sample, started: float, bypassed: bool
    ) -> tuple[str | None, Score | None, dict[str, LoadedImage], dict[int, EncodedImage]]:
        """The sample's replay key, its replayed Score when its answers are all cached (then
        no image is loaded where the image store says where each is), its images, and,
        unless replayed, the encodings of those its task's sub-questions show, made now
        (:meth:`SampleRun.encode` takes them as it would have made them)."""
        replay = self.replay
        key = (
            replay.key(sample, self.config.image_encoding, self.run_config.max_image_bytes)
            if replay
            else None
        )
        replayed = None
        if replay is not None and key is not None and not bypassed:
            replayed = replay.replayed(key, started)
        if replayed is not None and self.image_store is not None:
            # its record says where the images it showed are
            return key, _locate_not_shown(replayed, sample, self.image_store), {}, {}
        ready: dict[int, EncodedImage] = {}
        shown: set[str] = set()
        if replayed is None:
            shown = {r for q in get_task(sample.task).sub_questions for r in q.image_roles}

        def encode(role: str, image: LoadedImage) -> None:
            if role in shown and id(image) not in ready:
                ready[id(image)] = encode_image(
                    image,
                    self.config.image_format,
                    encoding=self.config.image_encoding,
                    cache=self.tool_cache,
                )

        # each image encoded as it is loaded: under jpeg75 its file's bytes are let go before
        # the next file is read, so a worker holds one file, not the sample's every file
        images = load_sample_images(
            sample,
            self.config.image_conversion,
            max_bytes=self.run_config.max_image_bytes,
            on_loaded=encode,
        )
        for role in sorted(shown & images.keys()):  # images made from others (halves)
            encode(role, images[role])
        if self.config.image_encoding == "jpeg75":
            # nothing is sent as it was read: hold no file's bytes while the sample waits
            for image in images.values():
                image.release()
        if replayed is not None:  # it holds its input images, as a judged Score does
            replayed._images = ImagePixels(images)
            replayed._file_hashes = file_hashes(images)
            replayed = _locate_not_shown(replayed, sample, self.image_store)
        return key, replayed, images, ready

    def _image_files(self, encoded: Iterable[EncodedImage]) -> dict[str, str]:
        """sha256 -> where each image shown to the judge can be read back."""
        files: dict[str, str] = {}
        for image in encoded:
            location = image_location(image, self.image_store)
            if location is not None:
                files[image.sha256] = location
        return files

    def evaluate(self, item: SampleInput, *, refresh_cache: bool = False) -> Score:
        """Synchronous :meth:`evaluate_async`."""
        return run_sync(self._closing(self.evaluate_async(item, refresh_cache=refresh_cache)))

    async def aclose(self) -> None:
        """Close the HTTP connections the judges opened in the running event loop.

        The synchronous methods do this themselves; call it when done with :meth:`stream` or
        the ``*_async`` methods in a loop that will end (connections left open are closed by
        the garbage collector later, which fails noisily once their loop is closed).
        """
        if self.batch is not None:
            await self.batch.aclose()
        helpers = [self.scene_graph_backend] if self.scene_graph_backend is not None else []
        for backend in [*self.backends, *helpers]:
            inner = getattr(backend, "inner", backend)  # CachedBackend wraps the real one
            close = getattr(inner, "aclose", None)
            if close is not None:
                await close()

    async def _closing(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        finally:
            await self.aclose()

    async def stream(
        self,
        items: Iterable[SampleInput],
        concurrency: int | None = None,
        *,
        refresh_ids: Collection[str] = (),
    ) -> AsyncGenerator[Score, None]:
        """Yield Scores as samples finish, at most ``concurrency`` at once.

        ``items`` is consumed lazily, so memory stays bounded for any number of samples.
        Samples whose id is in ``refresh_ids`` are judged without cached answers. Under
        ``batch`` the limit is ``run_config.batch_samples`` (their calls share batches).
        """
        limit = self._sample_limit(concurrency)
        iterator = iter(items)
        in_memory = isinstance(items, list | tuple)
        pending: set[asyncio.Future[Score]] = set()
        done: set[asyncio.Future[Score]] = set()
        exhausted = False
        try:
            while pending or not exhausted:
                wanted = limit - len(pending)
                if not exhausted and wanted > 0:
                    # a lazy source (a samples file, the hashes of a resumed run's images)
                    # is read off the event loop, so a signal is handled at once
                    taken = (
                        _take(iterator, wanted)
                        if in_memory
                        else await off_loop(_take, iterator, wanted)
                    )
                    exhausted = len(taken) < wanted
                    for item in taken:
                        refresh = bool(refresh_ids) and sample_identity(item)[0] in refresh_ids
                        pending.add(
                            asyncio.ensure_future(self.evaluate_async(item, refresh_cache=refresh))
                        )
                if not pending:
                    break
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                while done:
                    yield done.pop().result()
        finally:
            # Stopped early (cancelled, the caller left the loop, or a sample raised: the
            # image folder cannot be written): samples still in flight are cancelled rather
            # than left running unseen, and what the others raise is taken here, said once by
            # the first, never printed by the event loop as a task's unretrieved exception
            for task in {*pending, *done}:
                task.cancel()
                task.add_done_callback(_retrieved)

    async def evaluate_many_async(
        self, items: Iterable[SampleInput], concurrency: int | None = None
    ) -> list[Score]:
        """Judge many samples concurrently, at most ``concurrency`` at once (default:
        ``run_config.concurrency``); results in input order.

        The judges keep as many model calls in flight as ``concurrency`` samples need
        (3 per sample), unless ``run_config.max_calls_in_flight`` sets the limit.
        """
        materialised = list(items)
        results: list[Score | None] = [None] * len(materialised)
        semaphore = asyncio.Semaphore(self._sample_limit(concurrency))

        async def one(index: int, item: SampleInput) -> None:
            async with semaphore:
                results[index] = await self.evaluate_async(item)

        await asyncio.gather(*(one(i, x) for i, x in enumerate(materialised)))
        return [r for r in results if r is not None]

    def _sample_limit(self, concurrency: int | None) -> int:
        """Samples in flight at once: ``batch_samples`` under batch, else ``concurrency`` (by
        default the run's), the judges then keeping as many calls in flight as that many
        samples need (:func:`~cigeval.config.calls_in_flight`)."""
        if self.batch is not None:
            return self.run_config.batch_samples
        if concurrency is None:
            return self.run_config.concurrency
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"invalid concurrency {concurrency!r}: give a whole number >= 1")
        self.allow_in_flight(concurrency)
        return concurrency

    def allow_in_flight(self, samples: int) -> None:
        """Let the judges keep in flight the model calls of ``samples`` samples judged at once
        (:func:`~cigeval.config.calls_in_flight`: 3 per sample unless
        ``run_config.max_calls_in_flight`` sets the limit); a limit never narrows."""
        widen_calls_in_flight((*self.backends, self.scene_graph_backend), self.run_config, samples)

    def evaluate_many(
        self, items: Iterable[SampleInput], concurrency: int | None = None
    ) -> list[Score]:
        """Synchronous :meth:`evaluate_many_async`."""
        return run_sync(self._closing(self.evaluate_many_async(items, concurrency)))


def _locate_not_shown(score: Score, sample: Sample, store: ImageStore | None) -> Score:
    """A replayed Score with the files of its images never sent (the edit mask) located in
    ``sample``, as a judging lists them (the stored record keeps where shown images are)."""
    files = not_shown_files(sample, score.images_not_shown, store)
    if files:
        score.image_files = {**score.image_files, **files}
    return score


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Take what a task left behind raised (nothing is said of it: see :meth:`stream`)."""
    if not task.cancelled():
        task.exception()


def _take(iterator: Iterator[SampleInput], count: int) -> list[SampleInput]:
    """The next ``count`` items of ``iterator`` (fewer at its end)."""
    return list(islice(iterator, count))


def _as_sample(item: SampleInput) -> Sample:
    if isinstance(item, Sample):
        return item
    if isinstance(item, SampleLine):
        if item.sample is None:
            raise InputError(item.error or "invalid sample", item.sample_id)
        return item.sample
    return sample_from_dict(item)


class _PreflightOnce:
    """Runs an Evaluator's preflight before its first sample, once, whatever the number of
    samples starting at the same time or the event loops they run in; a failure is kept and
    raised again for every later sample."""

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted
        self.passed = False
        self.failure: PreflightError | None = None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    async def ensure(self, check: Callable[[], Awaitable[list[str]]]) -> None:
        """Run ``check`` unless it passed (or is not wanted); raise its failure if it failed."""
        if not self.wanted or self.passed:
            return
        if self.failure is not None:
            raise PreflightError(str(self.failure))
        lock = self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            if self.passed:
                return
            if self.failure is None:
                try:
                    await check()
                except PreflightError as exc:
                    self.failure = exc
            if self.failure is not None:
                raise PreflightError(str(self.failure))


def _passthrough(item: SampleInput) -> dict[str, Any]:
    """The pass-through fields of an item that did not become a valid sample."""
    if isinstance(item, Sample):
        return item.passthrough()
    raw = item.raw if isinstance(item, SampleLine) else item
    if isinstance(raw, dict):
        return {k: raw[k] for k in ("model", "human") if k in raw}
    return {}
