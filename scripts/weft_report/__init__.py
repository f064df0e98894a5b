"""weft's benchmark report: weft-bench --json results to markdown with plots.

The entry point is scripts/weft-report; docs/report.md describes the figure
module API (Figure, Row).
"""
from .weft_report import Figure, Row, fmt, main, value_of, workers_of  # noqa: F401
