"""Old path of conformance.campaign.runner (a campaign in worker processes); kept as a
re-export for one release."""
from .campaign.runner import *  # noqa: F403
from .reports.summary import print_summary  # noqa: F401
