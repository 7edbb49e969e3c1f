"""The ``cigeval serve-bench`` command: latency and throughput of a running service."""

from __future__ import annotations

import argparse
import os
import sys

from cigeval.cli._common import UsageError


def _counts(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def configure_serve_bench_parser(p: argparse.ArgumentParser) -> None:
    """The arguments of ``serve-bench``."""
    p.description = (
        "Drive a running `cigeval serve` with batches of synthetic T2I items (every image "
        "new, as in RL) at each concurrency x batch size; print p50/p90/p99 request "
        "latency, images/s and the judge calls made; warn when a cache answered."
    )
    p.add_argument("--url", default="http://127.0.0.1:8080", help="the service's URL")
    p.add_argument(
        "--concurrency", type=_counts, default=[1, 4, 16], help="requests in flight (list)"
    )
    p.add_argument("--batch-size", type=_counts, default=[1, 8, 64], help="items per request")
    p.add_argument("--requests", type=int, default=8, help="requests per cell (at least C)")
    p.add_argument("--image-size", type=int, default=256, help="side of the synthetic JPEGs")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    p.add_argument("--api-key", help="bearer key (default: $CIGEVAL_SERVE_API_KEY)")


def run_serve_bench(args: argparse.Namespace) -> int:
    """The ``serve-bench`` command: the table goes to stdout."""
    from cigeval.serve.bench import cache_warning, run_bench, summary
    from cigeval.serve.client import ServiceError

    if args.requests < 1:
        raise UsageError("--requests must be at least 1")
    try:
        rows = run_bench(
            args.url,
            args.concurrency,
            args.batch_size,
            args.requests,
            api_key=args.api_key or os.environ.get("CIGEVAL_SERVE_API_KEY"),
            image_size=args.image_size,
            timeout_s=args.timeout,
        )
    except ServiceError as exc:
        raise UsageError(f"the service refused the bench: {exc}") from None
    print(summary(rows))
    warning = cache_warning(rows)
    if warning:
        print(f"cigeval serve-bench: {warning}", file=sys.stderr)
    return 0 if all(row.failed == 0 for row in rows) else 1
