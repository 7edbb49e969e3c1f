"""Where the inspect integration keeps cigeval's data in an inspect sample or task state
(shared by the dataset helper and the scorer)."""

#: Where an inspect sample's metadata holds its cigeval sample (a JSON-ready dict, images as
#: absolute paths or data URIs, outputs left out).
SAMPLE_KEY = "cigeval_sample"
#: Where a solver records the output image(s) it made (a path, a data URI, or a list of
#: them), in ``state.store`` or ``state.metadata``; :func:`inspect_samples` puts a sample's
#: existing outputs here too.
OUTPUT_KEY = "cigeval_output"
#: Where an inspect sample's metadata holds why its cigeval sample is invalid.
ERROR_KEY = "cigeval_error"
