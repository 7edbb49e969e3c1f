"""What a run leaves behind: the results JSONL, its DataFrame, HTML and summary.

One reader and one writer for results files (:mod:`cigeval.results.jsonl`): resumable, each
record written as its sample ends and fsynced in batches (:mod:`cigeval.results.syncing`),
with one policy for lines that cannot be read; one run per results file
(:mod:`cigeval.results.lock`).
"""

from typing import TYPE_CHECKING

from cigeval._lazy import lazy_exports

if TYPE_CHECKING:
    from cigeval.results.frame import to_frame
    from cigeval.results.html import record_to_html
    from cigeval.results.jsonl import (
        ResultsWriter,
        SkippedLine,
        last_record_per_id,
        read_records,
        rejected_path,
        repair_tail,
    )
    from cigeval.results.lock import ResultsLock, ResultsLocked
    from cigeval.results.summary import RunSummary, load_price_table

__all__ = [
    "ResultsLock",
    "ResultsLocked",
    "ResultsWriter",
    "RunSummary",
    "SkippedLine",
    "last_record_per_id",
    "load_price_table",
    "read_records",
    "record_to_html",
    "rejected_path",
    "repair_tail",
    "to_frame",
]

# Loaded on first use: reading records (a report) needs neither Score nor pandas.
_JSONL = "ResultsWriter SkippedLine last_record_per_id read_records rejected_path repair_tail"
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "to_frame": ".frame",
        "record_to_html": ".html",
        **dict.fromkeys(_JSONL.split(), ".jsonl"),
        **dict.fromkeys(("ResultsLock", "ResultsLocked"), ".lock"),
        **dict.fromkeys(("RunSummary", "load_price_table"), ".summary"),
    },
    __all__,
)
