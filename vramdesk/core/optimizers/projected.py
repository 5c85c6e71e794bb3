"""Gradient-projection optimizers: GaLore (galore-torch 1.0: ``GaLoreAdamW``, ``GaLoreAdamW8bit``) and APOLLO
(apollo-torch 1.0.3: ``APOLLOAdamW``, APOLLO-Mini as rank 1 with tensor-wise scaling).

Both keep Adam's two moments of a rank-r projection of each projected matrix's gradient, plus the projection
matrix itself; the other parameters (embeddings, norms, lm_head) get ordinary Adam states from the same optimizer.
Which matrices are projected follows the examples' ``target_modules_list = ["attn", "mlp"]`` and HF Trainer's
``optim_target_modules``: every ``nn.Linear`` of the decoder layers (q, k, v, o, gate, up, down, a router, a shared
expert; the stacked 3-D expert tensors are not ``nn.Linear`` and are not projected).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..inventory import Tensor
from ..lora import LINEAR_ROLES
from ..messages import Message
from .shared import bnb_8bit_state_bytes

GALORE_STATES = Message(
    "optimizer.states.galore",
    "{name}: Adam moments of a rank-{rank} projection of {matrices} matrices ({projected:,} elements) and their "
    "projection matrices ({projections:,} elements), full Adam states for the other {others:,} parameters",
)
GALORE_TEMP = Message(
    "optimizer.temp.galore",
    "one parameter at a time: the SVD of the largest projected gradient in fp32 (every {gap} steps), or the "
    "projected-back update of the largest tensor",
)
APOLLO_TEMP = Message(
    "optimizer.temp.apollo",
    "one parameter at a time: the fp32 copy of the largest projected gradient and its random projection (every "
    "{gap} steps), or the rescaled full-rank update of the largest tensor",
)

#: optimizer value -> (the projection: SVD or random; 8-bit moments)
FAMILY = {
    "galore-adamw": ("svd", False),
    "galore-adamw-8bit": ("svd", True),
    "apollo": ("random", False),
    "apollo-mini": ("random", False),
}


def projected(t: Tensor) -> bool:
    """An ``nn.Linear`` of a decoder layer (``target_modules_list = ["attn", "mlp"]``)."""
    return t.role in LINEAR_ROLES and len(t.shape) == 2 and t.layer is not None and t.part == "text"


@dataclass(frozen=True)
class _Shape:
    """One projected matrix (m, n) as the projector sees it, 'std' projection type."""

    m: int
    n: int
    r: int

    @property
    def low(self) -> int:
        """Elements of the projected gradient and of each moment: m >= n projects on the right, (m, r); else on
        the left, (r, n): r x max(m, n) either way."""
        return self.r * max(self.m, self.n)

    @property
    def projection(self) -> int:
        """The kept projection matrix: Vh[:r] (r, n) or U[:, :r] (m, r), r x min(m, n)."""
        return self.r * min(self.m, self.n)


def projected_bytes(
    name: str, rank: int, gap: int, state_bytes: int, tensors: Sequence[Tensor]
) -> tuple[int, int, str, str]:
    """(state bytes, step temporary bytes, their explanations) of a GaLore / APOLLO optimizer over ``tensors``
    (every trained tensor; parameters and gradients in ``state_bytes`` per element, the moments follow them)."""
    method, eight_bit = FAMILY[name]
    r_opt = 1 if name == "apollo-mini" else rank
    shapes, others, largest_other = [], 0, 0
    for t in tensors:
        if projected(t):
            m, n = t.shape
            # GaLoreProjector.get_orthogonal_matrix slices the SVD's factors to rank r (at most min(m, n));
            # APOLLO's GradientProjector draws a (m, r) or (r, n) Gaussian matrix whatever r is
            r = min(r_opt, m, n) if method == "svd" else r_opt
            shapes.append(_Shape(m, n, r))
        else:
            others += t.numel
            largest_other = max(largest_other, t.numel)
    low = sum(s.low for s in shapes)
    projections = sum(s.projection for s in shapes)
    if eight_bit:
        # GaLoreAdamW8bit is bitsandbytes' Optimizer2State over the projected gradient (and over the others)
        states = bnb_8bit_state_bytes(low) + bnb_8bit_state_bytes(others) + projections * state_bytes
    else:
        # GaLore's / APOLLO's AdamW: exp_avg and exp_avg_sq = torch.zeros_like(grad), the projected gradient's dtype
        states = 2 * (low + others) * state_bytes + projections * state_bytes
    explain = GALORE_STATES(
        name=name, rank=r_opt, matrices=len(shapes), projected=low, projections=projections, others=others
    )
    temp = max(
        [_step_temp(s, method, eight_bit, state_bytes) for s in shapes]
        + [_other_temp(largest_other, state_bytes, eight_bit)]
    )
    return states, temp, explain, (GALORE_TEMP if method == "svd" else APOLLO_TEMP)(gap=gap)


def _step_temp(s: _Shape, method: str, eight_bit: bool, b: int) -> int:
    """The largest moment of one projected matrix's step (galore_projector.py / random_projector.py, adamw.py)."""
    mn, k = s.m * s.n, min(s.m, s.n)
    copy = 0 if b == 4 else 4 * mn  # matrix = module_params.data.float() unless it is fp32 already
    # SVD: torch.linalg.svd(matrix, full_matrices=False): U (m, k), s (k), Vh (k, n) in fp32; then
    # A = U[:, :r] @ diag(s[:r]) (right) or B = diag(s[:r]) @ Vh[:r] (left): r x max(m, n) fp32, and the r x r
    # diagonal. Random: stable_randn((m, r) or (r, n)) in fp32, divided by sqrt(r) into a second one
    svd = 4 * (s.m * k + k + k * s.n + s.r * s.r + s.low)
    refresh = copy + (svd if method == "svd" else 2 * 4 * s.projection)
    if eight_bit:
        # GaLoreAdamW8bit: p.saved_data = p.data.clone(), p.data = grad.clone(); project_back's matmul and its
        # x scale, both full size, before saved_data.add_
        update = 3 * mn * b + 2 * s.low * b
    elif method == "svd":
        # denom = exp_avg_sq.sqrt(), norm_grad = exp_avg / denom next to the projected gradient; project_back's
        # matmul and its x scale (full size)
        update = 3 * s.low * b + 2 * mn * b
    else:
        # APOLLO: the same three projected tensors and scaled_grad = p.grad * grad_scaling_factor (full size)
        update = 3 * s.low * b + mn * b
    return max(refresh, update)


def _other_temp(largest: int, b: int, eight_bit: bool) -> int:
    """An unprojected parameter's step: denom and norm_grad of the for-loop AdamW (bitsandbytes: fused, none)."""
    return 0 if eight_bit else 2 * largest * b
