"""Old path of conformance.reports.report (report.json and divergence folders); kept as a
re-export for one release."""
from .reports.report import *  # noqa: F403
