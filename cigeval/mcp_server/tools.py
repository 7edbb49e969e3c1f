"""What the MCP tools do, free of the MCP SDK: judge one image, list the tasks, probe the judge.

:class:`JudgeTools` holds one :class:`~cigeval.evaluation.Evaluator` for the server's life
(its preflight, cache and limits shared by every call) and the :class:`ImageRoot` client paths
must lie under. A bad request (an unknown task, a missing text field, an image outside the
root) raises :class:`~cigeval.errors.InputError`, which the server answers as a tool error; a
judgement that fails (the judge's reply unusable) is a result with ``status`` ``error``.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from typing import Any

from cigeval.errors import InputError
from cigeval.evaluation import Evaluator
from cigeval.mcp_server.images import ImageRoot
from cigeval.mcp_server.results import JudgeResult, ProbeSummary, TaskInfo, TaskList

#: The text conditions judge_image takes by name (a task's own declared ones go in ``fields``).
TEXT_FIELDS = ("prompt", "instruction", "subject", "concepts", "control_type")


class JudgeTools:
    """The tools of one MCP server: ``evaluator`` judges, ``root`` bounds the images."""

    def __init__(self, evaluator: Evaluator, root: ImageRoot) -> None:
        self.evaluator = evaluator
        self.root = root
        self._numbers = itertools.count(1)
        self._probing = asyncio.Lock()
        self._checking = asyncio.Lock()
        self._checked = False

    async def judge_image(
        self,
        task: str,
        images: dict[str, Any],
        *,
        text: dict[str, Any] | None = None,
        sample_id: str | None = None,
    ) -> JudgeResult:
        """Judge the ``output`` image of ``images`` (role -> path or data URI, or a list of
        them for a list role) for ``task``, given the text conditions in ``text``."""
        from cigeval.sample import sample_from_dict
        from cigeval.tasks import get_task

        spec = get_task(task)  # an unknown task: a ConfigError listing the known ones
        if not isinstance(images, dict) or "output" not in images:
            raise InputError("images: give the image to judge as images.output")
        read: dict[str, Any] = {}
        for role, value in images.items():
            if isinstance(value, list):
                read[role] = [self.root.read(v, f"images.{role}[{i}]") for i, v in enumerate(value)]
            else:
                read[role] = self.root.read(value, f"images.{role}")
        given = {k: v for k, v in (text or {}).items() if v is not None}
        identity = sample_id or f"judge_image-{next(self._numbers)}"
        sample = sample_from_dict({"id": identity, "task": spec.id, **given, "images": read})
        spec.validate_sample(sample)  # a missing field or image: the task's own words
        await self._ready()
        score = await self.evaluator.evaluate_async(sample)
        return JudgeResult.of(score)

    async def _ready(self) -> None:
        """The judge's preflight, until it passes once. A failure is raised for this call
        only (the Evaluator would keep it for good): a judge server started after the MCP
        server serves the next call."""
        if self._checked or not self.evaluator.run_config.preflight:
            return
        async with self._checking:
            if not self._checked:
                await self.evaluator.preflight_async()
                self._checked = True

    def list_tasks(self) -> TaskList:
        """Every registered task, with what its samples need and its sub-questions."""
        from cigeval.tasks.registry import get_task, task_names

        return TaskList(tasks=[TaskInfo.of(get_task(name)) for name in task_names()])

    async def probe_judge(
        self, tasks: list[str] | None = None, kinds: list[str] | None = None
    ) -> ProbeSummary:
        """Run the synthetic probes (docs/probes.md) of ``tasks`` and ``kinds`` (default: all)
        through this server's judge; one probe run at a time."""
        from cigeval.probes import build_probe_set, run_probe_set

        await self._ready()
        async with self._probing:
            with tempfile.TemporaryDirectory(prefix="cigeval-mcp-probes-") as folder:
                probe_set = await asyncio.to_thread(build_probe_set, folder, tasks, kinds)
                report = await run_probe_set(self.evaluator, probe_set)
        return ProbeSummary.of(report)
