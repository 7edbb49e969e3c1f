"""One registry behind tasks, tools, rubrics and backends: the same names, errors and plugins."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

from cigeval.backends import backend_names, get_backend, register_backend, resolve_backend
from cigeval.backends.registry import BACKENDS
from cigeval.errors import ConfigError
from cigeval.registry import Registry, normalize_name
from cigeval.rubrics import get_rubric, register_rubric, rubric_names
from cigeval.rubrics.registry import RUBRICS
from cigeval.tasks import get_task, register_task, task_names
from cigeval.tasks.registry import TASKS
from cigeval.tools import get_tool, register_tool, tool_names
from cigeval.tools.registry import TOOLS


@pytest.mark.parametrize(
    ("get", "names", "kind"),
    [
        (get_task, task_names, "task"),
        (get_tool, tool_names, "tool"),
        (get_rubric, rubric_names, "rubric"),
        (get_backend, backend_names, "backend"),
    ],
)
def test_an_unknown_name_of_every_kind_is_the_same_error_listing_the_choices(
    get: Any, names: Any, kind: str
) -> None:
    with pytest.raises(ConfigError) as info:
        get("no-such-thing")
    message = str(info.value)
    assert message.startswith(f"unknown {kind} 'no-such-thing'; choose one of: ")
    for name in names():
        assert name in message


def test_names_match_whatever_the_case_spaces_hyphens_or_underscores() -> None:
    assert normalize_name("Scene Graph") == normalize_name("scene_graph") == "scenegraph"
    assert get_tool("SCENE-GRAPH") is get_tool("scene graph")
    assert get_task("Text Guided IE").id == "text_guided_ie"
    assert get_rubric("LMM-Score").name == "lmm_score"
    assert get_backend("OpenAI") is get_backend("openai")


class _Probe:
    name = "Probe"
    description = "A rubric used by the registry tests; it never judges anything at all."

    def validate(self, sample: Any) -> None:
        """Accept every sample."""

    async def evaluate(self, run: Any) -> Any:
        """Never called here."""
        raise NotImplementedError


def test_replacing_needs_replace_true_for_every_kind() -> None:
    with RUBRICS.scoped(), TASKS.scoped(), TOOLS.scoped(), BACKENDS.scoped():
        for register, item in (
            (register_rubric, get_rubric("viescore")),
            (register_task, get_task("text_guided_ig")),
            (register_tool, get_tool("Difference")),
        ):
            with pytest.raises(ConfigError, match="already registered"):
                register(item)
            register(item, replace=True)
        with pytest.raises(ConfigError, match="already registered"):
            register_backend("openai", lambda model, **_: get_backend("hf")(model))
        register_rubric(_Probe())
        with pytest.raises(ConfigError, match="already registered"):
            register_rubric(_Probe())
    assert "Probe" not in rubric_names()  # scoped() undid the registration


def test_something_that_is_not_of_the_kind_is_refused() -> None:
    with pytest.raises(ConfigError, match="is not a Rubric"):
        register_rubric(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="is not a Tool"):
        register_tool(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="is not a TaskSpec"):
        register_task(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not a backend factory"):
        register_backend("x", 3)  # type: ignore[arg-type]


def test_lazy_entries_load_once_on_first_use() -> None:
    calls = []

    def make() -> str:
        calls.append(1)
        return "built"

    registry: Registry[str] = Registry("thing")
    registry.register_lazy("Widget", make)
    registry.register_lazy("Path Entry", "cigeval.rules:COMBINE_RULES")
    assert calls == [] and registry.names() == ["Widget", "Path Entry"]
    assert registry.get("widget") == "built" and registry.get("WIDGET") == "built"
    assert calls == [1]
    assert registry.get("path_entry")[0] == "mean"
    registry.register_lazy("Broken", "cigeval.no_such_module:thing")
    with pytest.raises(ConfigError, match="the thing 'Broken' could not be loaded"):
        registry.get("broken")


def test_plugins_come_from_the_entry_point_group(monkeypatch: pytest.MonkeyPatch) -> None:
    point = metadata.EntryPoint(
        name="echo", value="tests.test_registry:echo_backend", group="cigeval.backends"
    )
    real = metadata.entry_points

    def entry_points(**kwargs: Any) -> Any:
        if kwargs.get("group") == "cigeval.backends":
            return [point]
        return real(**kwargs)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    with BACKENDS.scoped():
        monkeypatch.setattr(BACKENDS, "_plugins_loaded", False)
        assert "echo" in backend_names()
        backend = resolve_backend("echo:my-model")
        assert backend.identity == "scripted:my-model"


def echo_backend(model: str, **_: Any) -> Any:
    """The backend factory the plugin test's entry point names."""
    from cigeval.backends import ScriptedBackend

    return ScriptedBackend(["ok"], name=model)


def test_a_plugin_takes_the_place_of_a_default_registered_before_plugins_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry: Registry[str] = Registry("thing", entry_point_group="cigeval.things")
    point = metadata.EntryPoint(name="grounding", value="plugin:thing", group="cigeval.things")
    read: list[str] = []

    def entry_points(**kwargs: Any) -> Any:
        read.append(kwargs["group"])
        return [point]

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    registry.register_default("Grounding", "builtin:thing")
    registry.register_default("Difference", "builtin:other")
    assert read == []  # registering defaults reads no plugin
    registry.register_default("Difference", "second:thing")  # a taken name stays as it is
    assert registry.names() == ["grounding", "Difference"] and read == ["cigeval.things"]
    assert registry._entries["grounding"].lazy == "plugin:thing"
    assert registry._entries["difference"].lazy == "builtin:other"
