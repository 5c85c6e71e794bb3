"""Write the parameter oracle of every causal-LM and image-text-to-text model type in an installed transformers.

Run it with a Python that has torch and transformers (the trace Python of ``.ci/run``, or your own); it imports
nothing of vramdesk:

    .tracevenv/bin/python benchmarks/transformers_families_gen.py benchmarks/data/transformers_families.jsonl

For every model type transformers maps to a causal-LM or image-text-to-text class, the config class is built with
its own defaults (transformers documents each default as the reference checkpoint's value), the model is built
from it on the meta device (no weights, no download, no remote code) and its parameters are counted the way
``model.parameters()`` counts them (a tied tensor once). One JSON line per model type: the config as
``save_pretrained`` would write it (``to_diff_dict``, with ``architectures`` set to the class built), the total,
the totals per name prefix (``model.language_model``, ``model.vision_tower``, ``lm_head``...; two name parts) and
the transformers version; or the exception when transformers itself cannot build the class from its defaults.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections import Counter


def one(model_type: str, class_name: str, head: str) -> dict[str, object]:
    import torch
    import transformers
    from transformers import CONFIG_MAPPING

    rec: dict[str, object] = {"model_type": model_type, "head": head, "class": class_name}
    t0 = time.perf_counter()
    try:
        config = CONFIG_MAPPING[model_type]()
        cls = getattr(transformers, class_name)
        with torch.device("meta"):
            model = cls._from_config(config)
        params = dict(model.named_parameters())
        rec["total"] = sum(p.numel() for p in params.values())
        prefixes: Counter[str] = Counter()
        for name, p in params.items():
            prefixes[".".join(name.split(".")[:2])] += p.numel()
        rec["by_prefix"] = dict(sorted(prefixes.items()))
        rec["tensors"] = len(params)
        cfg = config.to_diff_dict()
        cfg["architectures"] = [class_name]
        cfg["model_type"] = model_type
        rec["config"] = cfg
    except Exception as err:  # (transformers' own defaults do not always build: recorded, not fatal)
        rec["error"] = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    return rec


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")
    import transformers
    from transformers.models.auto import modeling_auto as auto

    heads = {
        **{t: (c, "image-text-to-text") for t, c in auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items()},
        **{t: (c, "causal-lm") for t, c in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()},
    }
    with open(argv[0], "w", encoding="utf-8") as fh:
        for model_type in sorted(heads):
            class_name, head = heads[model_type]
            rec = one(model_type, class_name, head)
            rec["transformers"] = transformers.__version__
            fh.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
            print(model_type, rec.get("total", rec.get("error")), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
