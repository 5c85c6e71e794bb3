"""The estimator core: pure Python (stdlib + pydantic), no I/O, no Qt, no network.

Entry points: :func:`vramdesk.core.estimate.model_facts` (config dict -> architecture, tensors, counts) and
:func:`vramdesk.core.estimate.estimate` (scenario x model x GPU -> Estimate).
"""
