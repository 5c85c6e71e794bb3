"""Small scenarios the tests build from the default one."""

from __future__ import annotations

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario


def variant(**work: object) -> Scenario:
    """The default scenario with some workload fields changed."""
    data = DEFAULT_SCENARIO.model_dump()
    data["workload"].update(work)
    return Scenario.model_validate(data)
