"""The report: numbers, plots and cards of one or more runs, as one self-contained HTML page.

The page needs nothing but itself: thumbnails are data URIs, plots inline SVG, the script
inline and allowed by its hash in the page's Content-Security-Policy (which also forbids
every network request). The templates in ``assets/`` write the HTML and escape every value.
Cards travel as one JSON blob that a small script filters, sorts and shows a page at a time,
so 10,000 samples open in seconds. :meth:`Report.fragment` is a static version without
script, for notebooks.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from markupsafe import Markup

from cigeval._version import __version__
from cigeval.comparisons.inputs import is_preference_record
from cigeval.report import plots
from cigeval.report.cards import CSS as CARD_CSS
from cigeval.report.cards import Figure, ImageTag, sample_card
from cigeval.report.compare import compare_section
from cigeval.report.images import (
    THUMBNAIL_SIDE,
    ImageCatalog,
    MissingImage,
    default_thumbnail_cache,
    requested_hashes,
)
from cigeval.report.provenance import provenance_summary
from cigeval.report.render import macro
from cigeval.report.stats import (
    HumanAgreement,
    JudgeAgreement,
    Leaderboard,
    column_of,
    human_agreement,
    judge_agreement,
    leaderboard,
)
from cigeval.results.record import NO_GENERATOR, degraded_count, generator_of
from cigeval.results.run import (
    Run,
    distinct_labels,
    load_run,
    record_problem,
    run_from_scores,
    sample_ids,
    score_of,
    split_by_settings,
)
from cigeval.rubrics.registry import record_score_range

#: Cards shown per page of the report.
PAGE_SIZE = 200
#: Points drawn per judge-vs-human scatter (an even subsample beyond that).
_SCATTER_POINTS = 1500

PAGE_CSS = """
body{font-family:system-ui,sans-serif;margin:0;background:#f5f6f8;color:#222}
main{max-width:1280px;margin:0 auto;padding:12px 20px}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:12px 0 4px}
.cg-box{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 12px;margin:8px 0;
 overflow-x:auto}
table.cg-t{border-collapse:collapse;font-size:12px}
.cg-t th,.cg-t td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
.cg-t td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.cg-ci{color:#777;font-size:11px}
.cg-controls{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:center;position:sticky;top:0;
 background:#f5f6f8;padding:6px 0;z-index:2;border-bottom:1px solid #ddd}
.cg-controls label{font-size:12px;color:#444}.cg-controls input[type=number]{width:64px}
.cg-problems li{font-size:12px}.cg-warn{color:#a00}.cg-note{font-size:12px;color:#666}
.cg-prov{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:8px}
.cg-prov .cg-box{margin:0}.cg-prov th{white-space:nowrap}
.cg-compare-table tr.cg-sig td{background:#f1f6fd}
"""


@dataclass
class Report:
    """Everything a report shows. Build one with :func:`build_report`."""

    runs: list[Run]
    leaderboards: list[Leaderboard]
    humans: list[list[HumanAgreement]]
    agreements: list[JudgeAgreement]
    catalog: ImageCatalog
    n_boot: int
    level: float
    seed: int
    title: str = "cigeval report"
    problems: list[str] = field(default_factory=list)
    #: The Compare section (report/compare.py), already rendered.
    compare_html: str = ""
    #: The cards rendered while the thumbnails were made (:meth:`prepare_cards`).
    early_cards: list[dict[str, Any]] | None = field(default=None, repr=False)
    #: The folder the page is shown from: the paths on it are relative to it (:meth:`write`
    #: sets it to the page's folder; None: the current folder, as in a notebook).
    page_dir: Path | None = None

    def shown_path(self, path: str | Path) -> str:
        """``path`` as the page shows it: relative to :attr:`page_dir` (``../`` where it
        lies elsewhere), or as given where no relative path leads to it."""
        start = (self.page_dir or Path.cwd()).absolute()
        try:
            return os.path.relpath(Path(path).absolute(), start)
        except ValueError:  # another drive
            return str(path)

    def _shown_sources(self, text: str) -> str:
        """A problem line that starts with a results file, that file shown from the page."""
        for run in self.runs:
            if run.base_dir is not None and text.startswith(f"{run.source}: "):
                return f"{self.shown_path(run.source)}{text[len(run.source) :]}"
        return text

    # -- cards -------------------------------------------------------------------------
    def _image_tag(self, inline: bool) -> ImageTag:
        thumbnails = self.catalog.thumbnails
        missing = {m.sha256: m.reason for m in self.catalog.missing}

        def tag(sha: str, caption: str) -> Figure:
            if sha not in thumbnails:
                reason = missing.get(sha, "image not available")
                return Figure(caption, reason=_short_reason(reason))
            if inline:
                return Figure(caption, src=thumbnails[sha])
            return Figure(caption, key=sha)

        return tag

    def _cards(
        self, inline: bool, limit: int | None = None, tag: ImageTag | None = None
    ) -> list[dict[str, Any]]:
        by_id = [run.by_id() for run in self.runs]
        labels = [run.label for run in self.runs]
        tag = tag or self._image_tag(inline)
        early, shown = None if inline else self.early_cards, self.catalog.thumbnails
        cards = []
        for order, sid in enumerate(sample_ids(self.runs)):
            if limit is not None and order >= limit:
                break
            judged = [
                (label, records.get(sid)) for label, records in zip(labels, by_id, strict=True)
            ]
            present = [r for _, r in judged if r is not None]
            if early and all(s in shown for r in present for _, s in requested_hashes(r)):
                cards.append(early[order])  # no image of it is missing: as rendered early
                continue
            first = present[0]
            scores = [score_of(r) if r is not None else None for _, r in judged]
            finite = [s for s in scores if s is not None]
            search = " ".join(
                str(v) for r in present for v in (r.get("conditions") or {}).values()
            ).lower()
            cards.append(
                {
                    "order": order,
                    "id": sid,
                    "task": str(first.get("task", "?")),
                    "generator": generator_of(first),
                    "scores": scores,
                    "errors": len(scores) - len(finite),
                    "spread": (max(finite) - min(finite)) if len(finite) > 1 else None,
                    "degraded": sum(degraded_count(r) for r in present),
                    "search": search,
                    "html": sample_card(sid, judged, tag),
                }
            )
        return cards

    def prepare_cards(self) -> None:
        """Render the page's cards and leaderboards while the thumbnails are still being made,
        each card as if all its images were shown (:meth:`to_html` renders again those with an
        image missing)."""
        self.early_cards = self._cards(False, tag=lambda sha, caption: Figure(caption, key=sha))
        _macro("page")  # compiled now too, and the leaderboards rendered
        self._leaderboards  # noqa: B018

    # -- sections ----------------------------------------------------------------------
    def _header(self) -> Markup:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        note = (
            f"written {stamp} by cigeval {__version__} · {len(sample_ids(self.runs))} samples · "
            f"{len(self.runs)} judge run(s) · {self.level:.0%} percentile bootstrap intervals, "
            f"{self.n_boot} resamples, seed {self.seed}"
        )
        summary = provenance_summary(self.runs)
        for run in self.runs:  # each results file as the page reaches it
            if run.base_dir is not None:
                lines = summary[run.label]
                summary[run.label] = [
                    (name, self.shown_path(value) if name == "results" else value)
                    for name, value in lines
                ]
        return _macro("header")(self.title, note, summary)

    def _problems(self) -> Markup:
        items = [self._shown_sources(problem) for problem in self.problems]
        for run in self.runs:
            source = self.shown_path(run.source) if run.base_dir is not None else run.source
            items += [f"{source}: {line}" for line in run.skipped]
        missing = self.catalog.missing
        items += [_shown_missing(m, self.shown_path) for m in missing[:500]]
        if len(missing) > 500:
            items.append(f"… and {len(missing) - 500} more missing images")
        return _macro("problems")(items)

    @cached_property
    def _leaderboards(self) -> Markup:
        boxes = []
        for run, board, humans in zip(self.runs, self.leaderboards, self.humans, strict=True):
            distributions = plots.distributions_svg(
                board.run, board.tasks, _distributions(run, board)
            )
            scatter = plots.human_scatter_svg(board.run, _thinned(humans)) if humans else ""
            plot = plots.leaderboard_svg(board, self.level)
            boxes.append((board, Markup(distributions), humans, Markup(scatter), Markup(plot)))
        # a pair of runs with no sample both scored (one judge's runs of other samples) has
        # nothing to show: no row, and no table when no pair has one
        agreements = [a for a in self.agreements if a.n > 0]
        return _macro("leaderboards")(boxes, agreements, self.level)

    # -- output ------------------------------------------------------------------------
    def to_html(self) -> str:
        """The self-contained interactive page."""
        before, data, after = self._page_parts()
        return before + data.decode("utf-8") + after

    def write(self, path: str | Path) -> Path:
        """Write :meth:`to_html` to ``path`` (UTF-8) through a temporary file renamed over it,
        its paths shown relative to the page's folder; returns the path. A path that is an
        input (a results file read, a samples file the records name, a file of JSON lines) is
        refused with InputError, a failed write is :class:`~cigeval.errors.ReportWriteError`
        (:mod:`cigeval.report.output`)."""
        from cigeval.report.output import write_page

        self.page_dir = Path(path).absolute().parent
        before, data, after = self._page_parts()
        # in parts: the page (tens of MB) is never one string
        parts = (before.encode("utf-8"), data, after.encode("utf-8"))
        return write_page(Path(path), parts, self.input_files())

    def input_files(self) -> list[tuple[str, Path]]:
        """The files the report was made from, by what they are: its results files and the
        samples files their records name."""
        inputs: list[tuple[str, Path]] = []
        samples: set[str] = set()
        for run in self.runs:
            if run.base_dir is not None:
                inputs.append(("results file", Path(run.source)))
            for record in run.records:
                provenance = record.get("provenance")
                named = provenance.get("samples_file") if isinstance(provenance, dict) else None
                where = named.get("path") if isinstance(named, dict) else None
                if isinstance(where, str) and where and where not in samples:
                    samples.add(where)
                    inputs.append(("samples file", Path(where)))
        return inputs

    def _page_parts(self) -> tuple[str, bytes, str]:
        """The page's markup before its data block, the data (JSON in UTF-8), the markup after."""
        script = resources.files("cigeval.report").joinpath("assets/report.js").read_text("utf-8")
        digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
        policy = (
            "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
        )
        cards = self._cards(inline=False)
        data = {
            "samples": cards,
            "images": self.catalog.thumbnails,
            "judges": [run.label for run in self.runs],
            "tasks": sorted({c["task"] for c in cards}),
            "generators": sorted({c["generator"] for c in cards}),
            "page_size": PAGE_SIZE,
        }
        body = Markup("").join(
            (self._header(), self._problems(), self._leaderboards, Markup(self.compare_html))
        )
        page = _macro("page")(
            self.title,
            Markup(policy),  # constants and a base64 digest: its quotes stay as they are
            Markup(PAGE_CSS + CARD_CSS),
            body,
            Markup(_DATA_SLOT),
            Markup(script),
        )
        before, _, after = str(page).partition(_DATA_SLOT)
        return before, json_for_script_bytes(data), after

    def fragment(self, max_cards: int = 20) -> str:
        """A static HTML fragment (no script): leaderboard, plots and the first cards."""
        cards = [Markup(c["html"]) for c in self._cards(inline=True, limit=max_cards)]
        body = Markup("").join((self._problems(), self._leaderboards, Markup(self.compare_html)))
        total = len(sample_ids(self.runs))
        css = Markup(CARD_CSS + _FRAGMENT_CSS)
        return str(_macro("fragment")(css, body, cards, len(cards), total))

    def _repr_html_(self) -> str:
        return self.fragment()


_FRAGMENT_CSS = (
    ".cg-report{font-family:system-ui,sans-serif;color:#222}"
    ".cg-report h2{font-size:16px;margin:14px 0 6px}.cg-report h3{font-size:14px;margin:10px 0 4px}"
    ".cg-note{font-size:12px;color:#666}.cg-warn{color:#a00}"
    ".cg-box{border:1px solid #ddd;border-radius:6px;padding:6px 10px;margin:6px 0}"
    "table.cg-t{border-collapse:collapse;font-size:12px}"
    ".cg-t th,.cg-t td{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}"
    ".cg-ci{color:#777;font-size:11px}"
)


#: Where the data block goes in the rendered page; escaped text can hold no ``<``.
_DATA_SLOT = "<!--cg-data-->"

#: What is written escaped in a data block (as UTF-8), and how.
_SCRIPT_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def json_for_script(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&``
    (so no ``</script>`` or comment opener can end the block) and no raw U+2028/U+2029."""
    return json_for_script_bytes(data).decode("utf-8")


def json_for_script_bytes(data: Any) -> bytes:
    """:func:`json_for_script` as UTF-8 bytes. A dict's values are encoded one by one, so a
    large value with nothing to escape (the thumbnails' base64) is only searched, not copied."""
    if isinstance(data, dict) and all(isinstance(key, str) for key in data):
        members = (_script_json(key) + b":" + _script_json(value) for key, value in data.items())
        return b"{" + b",".join(members) + b"}"
    return _script_json(data)


def _script_json(data: Any) -> bytes:
    """JSON by orjson (the standard json module for the text orjson refuses, such as a lone
    surrogate, written as an escape), with the characters of :data:`_SCRIPT_ESCAPES` escaped."""
    import orjson

    try:
        encoded = orjson.dumps(data)
    except TypeError:  # orjson.JSONEncodeError
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        encoded = text.encode("utf-8", "backslashreplace")
    for raw, escaped in _SCRIPT_ESCAPES:
        if raw in encoded:
            encoded = encoded.replace(raw, escaped)
    return encoded


def _shown_missing(missing: MissingImage, shown_path: Callable[[str], str]) -> str:
    """A missing image's problem line, the file it names shown from the page."""
    prefix = "file not found: "
    if missing.reason.startswith(prefix):
        where = shown_path(missing.reason[len(prefix) :])
        return str(replace(missing, reason=f"{prefix}{where}"))
    return str(missing)


def _short_reason(reason: str) -> str:
    return "missing" if reason.startswith("file not found") else reason[:60]


def _macro(name: str) -> Any:
    return macro("page.j2", name, pct=lambda value: f"{value:.0%}", no_generator=NO_GENERATOR)


def _distributions(run: Run, board: Leaderboard) -> dict[str, plots.Distribution]:
    """The ok scores of ``run`` per generator (records without one included) and task, in
    leaderboard order, with the score range of their rubric. A run holds one rubric's
    records: records of other settings are split into runs of their own."""
    rows: dict[str, plots.Distribution] = {
        name: ({}, (0.0, 1.0)) for name in [*board.ranking, *board.unranked]
    }
    for record in run.records:
        value = None if is_preference_record(record) else score_of(record)
        if value is not None:
            by_task, _ = rows[generator_of(record)]
            rows[generator_of(record)] = (by_task, record_score_range(record))
            by_task.setdefault(column_of(record, board.group_by), []).append(value)
    return {name: row for name, row in rows.items() if row[0]}


def _thinned(humans: list[HumanAgreement]) -> list[HumanAgreement]:
    out = []
    for h in humans:
        step = max(1, len(h.pairs) // _SCATTER_POINTS)
        out.append(HumanAgreement(h.task, h.n, h.spearman, h.pearson, h.low, h.high,
                                  h.pairs[::step], h.note))  # fmt: skip
    return out


def _calibrate_runs(runs: list[Run], calibration: Any) -> None:
    """Add the calibrated value to each record of ``runs`` that lacks one."""
    from cigeval.calibration import calibrate_records, load_calibration

    loaded = load_calibration(calibration)
    for run in runs:
        todo = [r for r in run.records if "calibrated" not in r]
        done = iter(calibrate_records(loaded, todo))
        run.records = [r if "calibrated" in r else next(done) for r in run.records]


def build_report(
    sources: Iterable[str | Path | Run] | Sequence[Any],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    thumbnail_side: int = THUMBNAIL_SIDE,
    title: str = "cigeval report",
    workers: int | None = None,
    baseline: str | None = None,
    thumbnail_cache: str | Path | bool = True,
    group_by: str | None = None,
    calibration: Any = None,
) -> Report:
    """A :class:`Report` of one or more runs: results files (paths), :class:`Run` objects, or
    one list of Scores/records. Several runs (one per judge) are matched by sample id.

    ``n_boot`` resamples for the bootstrap intervals at confidence ``level`` (seeded by
    ``seed``: the same inputs give the same page numbers). ``baseline``: the generator the
    Compare section pairs the others with (default: the generator of the scored record
    first in the input, as :func:`cigeval.compare` picks it).
    ``workers``: processes (or threads) making thumbnails, default one per core.
    ``thumbnail_cache``: the folder of cached thumbnails, True for
    :func:`~cigeval.report.images.default_thumbnail_cache`, False for none.
    ``group_by``: the leaderboards' columns are the values of this record field or metadata
    key (``category``, ``seed``, ``metadata.tag``; :func:`~cigeval.results.record.group_of`)
    instead of the tasks.
    ``calibration``: a calibration file (docs/calibration.md) applied to every record that
    holds no calibrated value yet; records it was not fitted for are refused
    (:class:`~cigeval.calibration.CalibrationMismatch`). Records calibrated by ``evaluate
    --calibration`` show theirs without it.
    """
    items = list(sources)
    if items and not any(isinstance(i, str | Path | Run) for i in items):  # Scores or records
        runs = [run_from_scores(items)]
    else:
        runs = []
        for item in items:
            if isinstance(item, Run):
                runs.append(item)
            elif isinstance(item, str | Path):
                runs.append(load_run(item))
            else:
                raise TypeError(
                    f"expected results file paths, Runs or Scores, got {type(item).__name__}"
                )
    problems = []
    split: list[Run] = []
    for run in runs:
        parts, mixed = split_by_settings(run)
        split.extend(parts)
        if mixed:
            problems.append(mixed)
    runs = split
    if calibration is not None:
        _calibrate_runs(runs, calibration)
    for run, label in zip(runs, distinct_labels(runs), strict=True):
        run.label = label
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be between 0 and 1, got {level}")
    if thumbnail_cache is True:
        thumbnail_cache = default_thumbnail_cache()
    catalog = ImageCatalog(thumbnail_side, Path(thumbnail_cache) if thumbnail_cache else None)
    for run in runs:
        for record in run.records:
            files = record.get("image_files") or {}
            for role, sha in requested_hashes(record):
                catalog.request(
                    sha, sample_id=str(record["id"]), role=role, files=files,
                    base_dir=run.base_dir, in_memory=run.images,
                )  # fmt: skip
    background = ThreadPoolExecutor(1)  # the thumbnails are made while the numbers are computed
    thumbnails = background.submit(catalog.resolve, workers)
    background.shutdown(wait=False)
    for run in runs:
        if not run.records:
            problems.append(f"{run.source}: no readable records")
        if run.duplicates:
            listed = ", ".join(repr(i) for i in run.duplicates[:10])
            more = f" and {len(run.duplicates) - 10} more" if len(run.duplicates) > 10 else ""
            problems.append(
                f"{run.source}: {len(run.duplicates)} sample id(s) have more than one record "
                f"({listed}{more}); the last record of each is used, n counts samples"
            )
        for record in run.records:
            problem = record_problem(record)
            if problem:
                problems.append(
                    f"{run.source}: {problem}; it counts as an error and is left out of every mean"
                )
    report = Report(
        runs=runs,
        leaderboards=[leaderboard(run, n_boot, level, seed, group_by) for run in runs],
        humans=[human_agreement(run, n_boot, level, seed) for run in runs],
        agreements=[judge_agreement(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]],
        catalog=catalog,
        n_boot=n_boot,
        level=level,
        seed=seed,
        title=title,
        problems=problems,
        compare_html=compare_section(runs, baseline, n_boot, level, seed),
    )
    report.prepare_cards()
    thumbnails.result()
    return report
