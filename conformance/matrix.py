"""Old path of conformance.campaign.matrix (`gradspec matrix`); kept as a re-export for one
release."""
from .campaign.matrix import *  # noqa: F403
from .reports.pages import CSS, cell_of, markdown, page  # noqa: F401
