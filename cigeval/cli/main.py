"""The ``cigeval`` command: evaluate, validate, tasks, rubrics, meta, probe, finetune, report,
compare.

Building the parser imports no sub-command: each one is registered in :data:`COMMANDS` and
built when it is used (:mod:`cigeval.cli._commands`), so ``cigeval --help`` answers at once.
Data goes to stdout; progress, what was written and every diagnostic go to stderr
(docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cigeval._caller import command_line
from cigeval._version import __version__
from cigeval.cli._commands import Command, add_commands
from cigeval.cli._common import EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, UsageError
from cigeval.cli._plugins import add_plugin_flag, load_plugins, plugins_given
from cigeval.redact import redact_credentials
from cigeval.signals import Terminated
from cigeval.terminal import echo

#: Every sub-command, in the order ``cigeval --help`` lists them. A sub-command's code is in
#: ``cigeval/cli/<name>.py`` unless ``module=`` says otherwise (see ``Command``).
COMMANDS: tuple[Command, ...] = (
    Command("evaluate", "judge every sample of a JSONL file"),
    Command("validate", "check every sample (fields, task, images) without calling a model"),
    Command("tasks", "list the tasks and their sub-questions", module="cigeval.cli.listing"),
    Command("rubrics", "list the rubrics", module="cigeval.cli.listing"),
    Command("meta", "meta-evaluation against human ratings (ImagenHub)"),
    Command(
        "official-prompts", "write the official CIGEval code's prompts as --prompt-dir templates"
    ),
    Command("probe", "check that a judge looks at the images (synthetic probes, no human ratings)"),
    Command(
        "finetune",
        "fine-tune a vision-language judge on exported trajectories (LoRA, or the paper's "
        "full fine-tuning)",
    ),
    Command(
        "report",
        "write one self-contained HTML page: leaderboard, plots, provenance, sample cards",
    ),
    Command(
        "regions",
        "write a results file's evidence regions as COCO JSON for a reviewer (docs/evidence.md)",
    ),
    Command(
        "compare",
        "which generator is better, and how sure: paired differences against a baseline",
    ),
    Command("serve", "serve the judge as a reward service for RL training (docs/serve.md)"),
    Command(
        "calibrate",
        "learn from human labels how far the judge's scores can be trusted (docs/calibration.md)",
    ),
    Command("serve-bench", "drive a running `cigeval serve`: latency percentiles, images/s"),
    Command("mcp", "serve the judge to agents as MCP tools: judge_image, list_tasks, probe_judge"),
)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``cigeval`` command (sub-commands built on first use)."""
    parser = argparse.ArgumentParser(
        prog="cigeval",
        description="Judge AI-generated and AI-edited images with an agentic LMM (CIGEval). "
        "Run `cigeval COMMAND --help` for a command's options.",
        epilog="Results and tables go to stdout; progress, what was written and every "
        "warning or error go to stderr (docs/cli.md).",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"cigeval {__version__}")
    add_plugin_flag(parser)
    add_commands(parser, COMMANDS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cigeval`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command = next(c for c in COMMANDS if c.name == args.command)
    try:
        with command_line():  # errors give their advice as flags, not Python keywords
            load_plugins(plugins_given(args))
            return command.runner()(args)
    except UsageError as exc:
        echo(f"cigeval {command.name}: error: {redact_credentials(str(exc))}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cigeval: interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:  # SIGTERM outside the judging, which ends a run by itself
        print("cigeval: terminated (SIGTERM); rerun the same command to resume", file=sys.stderr)
        return EXIT_TERMINATED
