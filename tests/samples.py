"""Small scenarios the tests build from the default one."""

from __future__ import annotations

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario


def variant(**work: object) -> Scenario:
    """The default scenario with some workload fields changed."""
    data = DEFAULT_SCENARIO.model_dump()
    data["workload"].update(work)
    return Scenario.model_validate(data)


def named_plan(name: str, **changes: object) -> Scenario:
    """The default scenario named ``name``, with ``weights`` and workload fields changed."""
    data = DEFAULT_SCENARIO.model_dump()
    data["name"] = name
    for k, v in changes.items():
        if k == "weights":
            data["weights"] = v
        else:
            data["workload"][k] = v
    return Scenario.model_validate(data)
