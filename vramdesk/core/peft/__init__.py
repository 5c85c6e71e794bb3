"""PEFT's methods other than LoRA, as peft 0.21 builds them: which modules each wraps, what it trains (the count
``print_trainable_parameters`` gives and the shapes the optimizer sees) and what its layers keep for backward.

One :class:`~vramdesk.core.peft.common.MethodParams` per method (:mod:`.methods` picks the method's module:
:mod:`.ia3`, :mod:`.prompts`, :mod:`.ln_tuning`); :mod:`vramdesk.core.training_state` puts it over the frozen base
as it does LoRA's adapters, and :mod:`vramdesk.core.training_activations` adds what the method's layers save.
"""
