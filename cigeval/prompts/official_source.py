"""The exact prompts of the user's copy of the official CIGEval code, as paper-layout templates.

cigeval ships its own wording; the official sentences stay in the user's clone of
HITsz-TMG/Agentic-CIGEval. :func:`extract_official_prompts` reads them from its Python files by
parsing them (:mod:`ast`: nothing there is imported or run) and :func:`write_official_prompts`
writes them as the exact-text templates of :mod:`cigeval.agent.paper_layout`, so that
``--prompt-dir`` with ``--method paper`` sends the official requests byte for byte.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import secrets
from pathlib import Path

from cigeval._regular_file import read_regular
from cigeval.errors import ConfigError
from cigeval.prompts import paper_templates as paper_names
from cigeval.prompts.exact import EXACT_SUFFIX

#: The official prompt module and its variable of each planner part, by cigeval task.
PLAN_PARTS: dict[str, tuple[str, ...]] = {
    "text_guided_ig": ("Text_Guided_IG_Rule", "Text_Guided_IG_Task_1"),
    "mask_guided_ie": ("Mask_Guided_IE_Rule", "Mask_Guided_IE_Task_1", "Mask_Guided_IE_Task_2"),
    "text_guided_ie": ("Text_Guided_IE_Rule", "Text_Guided_IE_Task_1", "Text_Guided_IE_Task_2"),
    "subject_driven_ig": (
        "Subject_Driven_IG_Rule",
        "Subject_Driven_IG_Task_1",
        "Subject_Driven_IG_Task_2",
    ),
    "subject_driven_ie": (
        "Subject_Driven_IE_Rule",
        "Subject_Driven_IE_Task_1",
        "Subject_Driven_IE_Task_2",
    ),
    "multi_concept_ic": (
        "Multi_Concept_IC_Rule",
        "Multi_Concept_IC_Task_1",
        "Multi_Concept_IC_Task_2",
    ),
    "control_guided_ig": (
        "Control_Guided_IG_Rule",
        "Control_Guided_IG_Task_1",
        "Control_Guided_IG_Task_2",
    ),
}
#: The official judge prompt of each (task, sub-question), as the official evaluate pass uses them.
JUDGE_PROMPTS: dict[tuple[str, str], str] = {
    ("text_guided_ig", "prompt_following"): "Text_Guided_IG_Task_1_evaluation",
    ("mask_guided_ie", "edit_success"): "Mask_Guided_IE_Task_1_evaluation",
    ("mask_guided_ie", "over_editing"): "Mask_Guided_IE_Task_2_evaluation",
    ("text_guided_ie", "edit_success"): "Text_Guided_IE_Task_1_evaluation",
    ("text_guided_ie", "over_editing"): "Text_Guided_IE_Task_2_evaluation",
    ("subject_driven_ig", "subject_similarity"): "Subject_Driven_IG_Task_1_evaluation",
    ("subject_driven_ig", "prompt_following"): "Subject_Driven_IG_Task_2_evaluation",
    ("subject_driven_ie", "subject_similarity"): "Subject_Driven_IE_Task_1_evaluation",
    ("subject_driven_ie", "background_preservation"): "Subject_Driven_IE_Task_2_evaluation",
    ("multi_concept_ic", "concept_1_similarity"): "Multi_Concept_IC_Task_1_evaluation",
    ("multi_concept_ic", "concept_2_similarity"): "Multi_Concept_IC_Task_1_evaluation",
    ("multi_concept_ic", "prompt_following"): "Multi_Concept_IC_Task_2_evaluation",
    ("control_guided_ig", "control_following"): "Control_Guided_IG_Task_1_evaluation",
    ("control_guided_ig", "prompt_following"): "Control_Guided_IG_Task_2_evaluation",
}
#: The files of the official code the prompts are read from.
PROMPT_MODULE = Path("agent/prompt_agent.py")
EVALUATE_MODULE = Path("evaluate.py")
SCENE_GRAPH_MODULE = Path("tools/scene_graph.py")
UTIL_MODULE = Path("util.py")
#: The largest official source file parsed: the official files are at most 40 KB; parsing
#: takes up to about 700 bytes of memory per byte of a hostile file (a list of 260,000
#: names: 1.5 GB at the 2 MiB once allowed), so 512 KiB keeps it under half a gigabyte.
MAX_SOURCE_BYTES = 512 * 1024
#: The largest git file read for the clone's commit (HEAD, a ref, packed-refs).
_MAX_GIT_FILE_BYTES = 16 * 1024 * 1024
#: The file ``official-prompts`` writes beside the templates: where they came from and the
#: sha256 of each, so a run can tell an unchanged official set (:mod:`.prompt_set`).
MANIFEST = "prompt-set.json"
#: The official planner's tool lines, ``1. **Highlight**: ...`` (``paper_templates.tool_line``).
_TOOL_LINE = re.compile(r"^(\d+)\. \*\*(\w+)\*\*: (.*)$", re.MULTILINE)


def _tree(root: Path, relative: Path) -> ast.Module:
    path = root / relative
    if not path.is_file():
        raise ConfigError(
            f"{root} is not the official CIGEval code (HITsz-TMG/Agentic-CIGEval): "
            f"{relative} is missing"
        )
    try:
        return ast.parse(read_regular(path, MAX_SOURCE_BYTES).decode("utf-8"), filename=str(path))
    except Exception as exc:  # anything a hostile file makes the parser raise: MemoryError...
        raise ConfigError(f"cannot read {path} as Python source: {_why(exc)}") from None


def _why(exc: BaseException) -> str:
    """An exception in a few words (its type, and its message when it has one)."""
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _string_assignments(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "literal"`` assignments (the last one of a name wins)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Constant):
            continue
        if not isinstance(node.value.value, str):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                found[target.id] = node.value.value
    return found


def _function(tree: ast.Module, name: str, path: Path) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise ConfigError(f"{path} has no function {name}(): not the official CIGEval code")


def _tool_texts(tree: ast.Module) -> dict[str, str]:
    """The tool texts of ``get_tool_text`` in evaluate.py: the focus sentence (the string it
    returns) and the two scene-graph wrappers (the strings holding their placeholders)."""
    function = _function(tree, "get_tool_text", EVALUATE_MODULE)
    texts: dict[str, str] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, str) and value:
                texts.setdefault("paper_tool_focus", value)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, str) and "{scene_graph_1}" in value:
                texts["paper_tool_scene_graphs"] = value
            elif isinstance(value, str) and "{scene_graph}" in value:
                texts["paper_tool_scene_graph"] = value
    return texts


def _planner_parts(text: str) -> dict[str, str]:
    """The official planner prompt split into the template (its tool list and the tool names
    it lists replaced by ``{tools}`` and ``{tool_choices}``) and each tool's description, so
    that a run shows the planner exactly the tools it offers. Empty when the prompt does not
    list the official tools as expected (the caller reports it)."""
    lines = list(_TOOL_LINE.finditer(text))
    found = [match.group(2) for match in lines]
    if found != list(paper_names.OFFICIAL_TOOLS):
        return {}
    listed = text[lines[0].start() : lines[-1].end()]
    described = {match.group(2): match.group(3) for match in lines}
    rebuilt = "\n".join(
        paper_names.tool_line(number, name, described[name])
        for number, name in enumerate(paper_names.OFFICIAL_TOOLS, start=1)
    )
    choices = " or ".join(paper_names.OFFICIAL_TOOLS)
    if listed != rebuilt or text.count(choices) != 1:
        return {}
    template = text.replace(listed, "{tools}", 1).replace(choices, "{tool_choices}", 1)
    parts = {paper_names.PLANNER: template}
    for name in paper_names.OFFICIAL_TOOLS:
        parts[paper_names.PLANNER_TOOL[name]] = described[name]
    return parts


def _repair_prompt(tree: ast.Module) -> str | None:
    """The repair request of ``GPTResponse2JSON`` in util.py (an f-string around the reply it
    could not read), with ``{reply}`` where the reply goes; None when it is not there."""
    function = _function(tree, "GPTResponse2JSON", UTIL_MODULE)
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.JoinedStr):
            continue
        pieces: list[str] = []
        for value in node.value.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                pieces.append(value.value)
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                pieces.append("{reply}")
            else:
                break
        else:
            if pieces.count("{reply}") == 1:
                return "".join(pieces)
    return None


def extract_official_prompts(root: str | Path) -> dict[str, str]:
    """Every paper-layout template (name -> exact text) read from the official code at ``root``.

    ConfigError when ``root`` is not that code or a prompt the paper layout needs is missing.
    """
    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder (expected a clone of the official code)")
    strings = _string_assignments(_tree(folder, PROMPT_MODULE))
    templates: dict[str, str] = {}
    missing: list[str] = []

    def take(name: str, source: dict[str, str], where: Path) -> str:
        if name not in source:
            missing.append(f"{name} ({where})")
            return ""
        return source[name]

    planner = _planner_parts(take("Tool_Decide", strings, PROMPT_MODULE))
    if not planner and "Tool_Decide" in strings:
        listed = ", ".join(paper_names.OFFICIAL_TOOLS)
        missing.append(f"Tool_Decide's list of the tools {listed} ({PROMPT_MODULE})")
    templates.update(planner)
    for task, parts in PLAN_PARTS.items():
        templates[paper_names.plan_template(task)] = "".join(
            take(p, strings, PROMPT_MODULE) for p in parts
        )
    for (task, question), variable in JUDGE_PROMPTS.items():
        templates[paper_names.judge_template(task, question)] = take(
            variable, strings, PROMPT_MODULE
        )
    tools = _tool_texts(_tree(folder, EVALUATE_MODULE))
    for name in (paper_names.FOCUS, paper_names.ONE_SCENE_GRAPH, paper_names.TWO_SCENE_GRAPHS):
        templates[name] = take(name, tools, EVALUATE_MODULE)
    graph = _string_assignments(_tree(folder, SCENE_GRAPH_MODULE))
    templates[paper_names.SCENE_GRAPH] = take("sgPrompt", graph, SCENE_GRAPH_MODULE)
    repair = _repair_prompt(_tree(folder, UTIL_MODULE))
    if repair is None:
        missing.append(f"GPTResponse2JSON's repair prompt ({UTIL_MODULE})")
    else:
        templates[paper_names.REPAIR] = repair
    if missing:
        raise ConfigError(
            f"{folder} lacks prompts the paper layout needs: {', '.join(missing)} "
            "(not the official CIGEval code, or a version that changed them)"
        )
    return templates


def _clone_commit(root: Path) -> str | None:
    """The commit a git clone's HEAD points at, read from its files (None when unknown)."""
    git = root / ".git"

    def text(path: Path) -> str:  # a regular file of bounded size, or OSError
        return read_regular(path, _MAX_GIT_FILE_BYTES).decode("utf-8")

    try:
        head = text(git / "HEAD").strip()
        if not head.startswith("ref: "):
            return head[:100] or None
        ref = head[len("ref: ") :]
        if not ref.startswith("refs/") or ".." in Path(ref).parts:
            return None  # a ref outside the clone's refs is no commit of it
        loose = git / ref
        if loose.is_file():
            return text(loose).strip()[:100] or None
        for line in text(git / "packed-refs").splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0][:100]
    except (OSError, UnicodeDecodeError):
        return None
    return None


def write_official_prompts(root: str | Path, out: str | Path) -> list[Path]:
    """Write the templates of :func:`extract_official_prompts` into ``out``, with the
    manifest (:data:`MANIFEST`: the source, its commit, each template's sha256); the paths
    written. Nothing is written through a symbolic link: a link at a template's name (a clone
    may ship a folder of them) is replaced by the template, its target untouched, and ``out``
    itself a link is refused. Any failure to read the clone, whatever the parser raises, is
    one :class:`~cigeval.errors.ConfigError`."""
    try:
        templates = extract_official_prompts(root)
    except ConfigError:
        raise
    except Exception as exc:  # a hostile clone: nesting the parser or its walk cannot take
        raise ConfigError(f"cannot read the official code in {root}: {_why(exc)}") from None
    folder = Path(out).expanduser()
    if folder.is_symlink():
        raise ConfigError(
            f"{folder} is a symbolic link; cigeval writes no template through it: give the "
            "folder it points to, or another folder"
        )
    manifest = {
        "prompt_set": "official",
        "source": "HITsz-TMG/Agentic-CIGEval",
        "commit": _clone_commit(Path(root).expanduser()),
        "templates": {
            f"{name}{EXACT_SUFFIX}": hashlib.sha256(text.encode("utf-8")).hexdigest()
            for name, text in sorted(templates.items())
        },
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in sorted(templates.items()):
            written.append(_replace(folder / f"{name}{EXACT_SUFFIX}", text.encode("utf-8")))
        listing = json.dumps(manifest, indent=2) + "\n"
        written.append(_replace(folder / MANIFEST, listing.encode("utf-8")))
    except OSError as exc:
        raise ConfigError(f"cannot write the prompt templates into {folder}: {_why(exc)}") from None
    return written


def _replace(path: Path, data: bytes) -> Path:
    """Write ``data`` to a new file beside ``path`` and rename it over ``path``: whatever is
    at ``path`` (a symbolic link included) is replaced, never written through."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temporary, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path
