"""The workload form (centre of the window): model and precision, Inference / Fine-tune tabs, hardware.

Every widget change emits ``changed``; :meth:`WorkloadForm.values` reads the form into plain
:class:`FormValues` and :meth:`WorkloadForm.set_values` shows them. Each choice has a tooltip that says
what it changes in memory.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.scenario import MAX_TOKENS
from vramdesk.services.catalog import Catalog
from vramdesk.services.nvml import DetectionResult

from .core_text import localize
from .i18n import tr
from .presenter import (
    ADAPTER_DTYPES,
    ATTENTIONS,
    DETECTED_PREFIX,
    ENGINES,
    FSDP_STRATEGIES,
    KV_DTYPES,
    LORA_BIASES,
    METHODS,
    OFFLOADS,
    OPTIMIZERS,
    PRECISIONS,
    VISION_TOWERS,
    WEIGHT_FORMATS,
    FormValues,
    unit_bytes,
    unit_name,
)

#: the largest LoRA dropout the form offers (two decimals below 1: PEFT and the core accept [0, 1))
LORA_DROPOUT_MAX = 0.99
#: the largest accelerate max_memory the form offers (GiB; the core's own limits)
MAX_MEMORY_GIB_MAX = 100_000.0
CPU_MEMORY_GIB_MAX = 1_000_000.0
#: the largest DeepSpeed bucket the form offers (elements; the core's limit)
ZERO_BUCKET_MAX = 10**12
#: DeepSpeed's own reduce_bucket_size (shown as the "default" of the bucket field)
ZERO_BUCKET_DEFAULT = 500_000_000

TIPS: dict[str, str] = {
    "transformers": "Hugging Face transformers generate(): the KV cache grows with every token",
    "vllm": "vLLM pre-allocates gpu_memory_utilization x the GPU's memory; the question is how many tokens fit",
    "llamacpp": "llama.cpp: GGUF block formats, KV cache sized for n_ctx, layers may stay on the CPU",
    "sdpa": "PyTorch scaled_dot_product_attention: no n x n score matrix in memory",
    "flash": "FlashAttention 2: no n x n score matrix in memory",
    "eager": "Eager attention materialises the n x n attention scores per head: large for long sequences",
    "lora": "LoRA: the base model frozen in bf16, small trainable adapters with their own gradients and optimizer",
    "qlora": "QLoRA: the base model in 4-bit NF4, adapters in bf16",
    "full": "Full fine-tuning: gradients and optimizer states for every parameter",
    "adamw": "AdamW: two fp32 states per trainable parameter; PyTorch's foreach step briefly copies them",
    "adamw-fused": "Fused AdamW: two fp32 states, no extra copy during the step",
    "adamw-8bit": "bitsandbytes 8-bit AdamW: two 8-bit states with block-wise scales",
    "paged-adamw-8bit": "8-bit AdamW with states that can page out to CPU memory",
    "paged-adamw-32bit": "bitsandbytes paged AdamW: two fp32 states that can page out to CPU memory",
    "adamw-forloop": "AdamW with foreach=False: one parameter at a time, a temporary the size of one tensor",
    "adamw-torch2.0": "AdamW as PyTorch 2.0 and older ran it (foreach): two state-sized copies during the step",
    "sgd": "SGD with momentum: one state per trainable parameter",
    "adafactor": "Adafactor: factored second moments, much smaller than Adam's",
    "lion": "Lion: one momentum state per trainable parameter",
    "bf16": "Weights and gradients in bfloat16",
    "fp16": "Weights and gradients in float16",
    "fp32": "Everything in float32 (4 bytes per parameter)",
    "amp-bf16": "Mixed precision: fp32 master weights, bf16 compute (more memory than pure bf16)",
    "amp-fp16": "Mixed precision: fp32 master weights, fp16 compute",
    "none": "Nothing is offloaded to CPU memory",
    "optimizer": "Optimizer states live in CPU memory (DeepSpeed / FSDP offload)",
    "params": "Parameters and optimizer states live in CPU memory",
}


def _combo(
    values: tuple[str, ...], tooltip: str, labels: dict[str, str] | None = None, tips: dict[str, str] | None = None
) -> QComboBox:
    """A combo of ``values`` (item data), shown as ``labels``; item tooltips from ``tips``, else :data:`TIPS`."""
    c = QComboBox()
    for v in values:
        c.addItem((labels or {}).get(v, v), v)
        tip = tips.get(v) if tips is not None else tr(TIPS[v]) if v in TIPS else None
        if tip:
            c.setItemData(c.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
    c.setToolTip(tooltip)
    c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    c.setMinimumContentsLength(8)
    return c


def _spin(minimum: int, maximum: int, tooltip: str, step: int = 1) -> QSpinBox:
    s = QSpinBox()
    s.setRange(minimum, maximum)
    s.setGroupSeparatorShown(True)
    s.setAccelerated(True)
    s.setSingleStep(step)
    s.setToolTip(tooltip)
    s.setAlignment(Qt.AlignmentFlag.AlignRight)
    return s


def _gib_spin(minimum: float, maximum: float, special: str, tooltip: str) -> QDoubleSpinBox:
    """A GiB field whose minimum shows ``special`` (no value: the core's default)."""
    s = QDoubleSpinBox()
    s.setRange(minimum, maximum)
    s.setDecimals(2)
    s.setSingleStep(1.0)
    s.setSuffix(" GiB")
    s.setGroupSeparatorShown(True)
    s.setAccelerated(True)
    s.setSpecialValueText(special)
    s.setAlignment(Qt.AlignmentFlag.AlignRight)
    s.setToolTip(tooltip)
    return s


def _row(*widgets: QWidget) -> QWidget:
    """Widgets side by side in one form row, from the left."""
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(12)
    for w in widgets:
        row.addWidget(w)
    row.addStretch(1)
    return box


def _readout() -> QLabel:
    """A small "max 40,448" label next to a length field (filled by the window from the solver)."""
    label = QLabel("")
    label.setObjectName("caption")
    label.setMinimumWidth(70)
    label.setAccessibleName(tr("Largest value that fits"))
    return label


def _with_readout(field: QWidget, readout: QLabel) -> QWidget:
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(6)
    row.addWidget(field, 1)
    row.addWidget(readout)
    return box


def select(combo: QComboBox, value: object, text: str | None = None) -> None:
    """Select the item whose data is ``value``, adding one (labelled ``text``) when there is none."""
    i = combo.findData(value)
    if i < 0:
        combo.addItem(text if text is not None else str(value), value)
        i = combo.count() - 1
    combo.setCurrentIndex(i)


class WorkloadForm(QWidget):
    changed = Signal()

    def __init__(self, catalog: Catalog, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._catalog = catalog
        self._loading = False
        self._detection: tuple[DetectionResult | None, dict[str, GpuSpec]] = (None, {})
        #: whether models outside the catalog have a vision tower (see note_model_facts)
        self._vision_known: dict[str, bool] = {}

        # ---- model and precision
        self.model_combo = QComboBox()
        for m in sorted(catalog.models(), key=lambda m: m.id.lower()):
            self.model_combo.addItem(m.id, m.id)
        self.model_combo.setToolTip(tr("The model to estimate: pick one in the browser, or drop a config.json here"))
        self.model_combo.setMaxVisibleItems(20)
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_combo.setMinimumContentsLength(12)
        self.weights_combo = _combo(
            WEIGHT_FORMATS, tr("How the weights are stored in memory"), {"auto": tr("auto (checkpoint)")}
        )
        self.kv_combo = _combo(
            KV_DTYPES, tr("Data type of the KV cache (fp8 / q8_0 halve it)"), {"auto": tr("auto (compute)")}
        )
        self.attention_combo = _combo(ATTENTIONS, tr("The attention implementation: eager keeps n x n scores"))

        model_box = QGroupBox(tr("Model and precision"))
        fl = self._form_layout(model_box)
        fl.addRow(tr("&Model"), self.model_combo)
        fl.addRow(tr("&Weights"), self.weights_combo)
        fl.addRow(tr("&Attention"), self.attention_combo)

        # ---- inference tab
        self.engine_combo = _combo(ENGINES, tr("The inference engine: its memory rules differ"))
        self.batch_spin = _spin(1, 65536, tr("Sequences generated at once"))
        self.input_spin = _spin(
            0, MAX_TOKENS, tr("Prompt tokens per sequence; auto = the model's context, at most 4,096"), 512
        )
        self.input_spin.setSpecialValueText(tr("auto"))
        self.output_spin = _spin(0, MAX_TOKENS, tr("Generated tokens per sequence"), 128)
        inf_page = QWidget()
        il = QVBoxLayout(inf_page)
        il.setContentsMargins(4, 6, 4, 4)
        base = QFormLayout()
        self._tune(base)
        base.addRow(tr("&Engine"), self.engine_combo)
        base.addRow(tr("&Batch"), self.batch_spin)
        self.input_max_label = _readout()
        base.addRow(tr("&Input tokens"), _with_readout(self.input_spin, self.input_max_label))
        base.addRow(tr("&Output tokens"), self.output_spin)
        base.addRow(tr("&KV cache"), self.kv_combo)
        il.addLayout(base)

        self.vllm_box = QGroupBox(tr("vLLM"))
        vl = self._form_layout(self.vllm_box)
        self.vllm_util_spin = QDoubleSpinBox()
        self.vllm_util_spin.setRange(0.05, 1.0)
        self.vllm_util_spin.setSingleStep(0.05)
        self.vllm_util_spin.setDecimals(2)
        self.vllm_util_spin.setToolTip(
            tr("Fraction of the GPU's memory vLLM takes for weights, activations and the KV pool")
        )
        self.vllm_seqs_spin = _spin(1, 65536, tr("Most sequences scheduled at once (--max-num-seqs)"))
        self.vllm_eager_check = QCheckBox(tr("enforce eager (no CUDA graphs)"))
        self.vllm_eager_check.setToolTip(tr("Skips CUDA graph capture: less memory, slower decoding"))
        vl.addRow(tr("GPU memory utilization"), self.vllm_util_spin)
        vl.addRow(tr("Max sequences"), self.vllm_seqs_spin)
        vl.addRow(self.vllm_eager_check)
        il.addWidget(self.vllm_box)

        self.llama_box = QGroupBox(tr("llama.cpp"))
        ll = self._form_layout(self.llama_box)
        self.llama_ngl_spin = _spin(
            -1, 100000, tr("Layers on the GPU (-ngl); all = every layer, the rest run from CPU memory")
        )
        self.llama_ngl_spin.setSpecialValueText(tr("all"))
        self.llama_ubatch_spin = _spin(1, 65536, tr("Physical batch (-ub): sizes the compute buffer"), 128)
        self.llama_fa_check = QCheckBox(tr("flash attention (-fa)"))
        self.llama_fa_check.setToolTip(tr("Smaller compute buffer; also allows a quantized V cache"))
        self.llama_split_combo = _combo(
            ("layer", "row"),
            tr("How several GPUs share the model (--split-mode)"),
            {"layer": tr("layers"), "row": tr("rows")},
            {
                "layer": tr("Each GPU holds whole layers and their KV cache (the default)"),
                "row": tr(
                    "Every matrix is split by rows over the GPUs; the KV cache and the compute buffer stay on "
                    "the main GPU"
                ),
            },
        )
        self.llama_split_combo.setAccessibleName(tr("llama.cpp split mode"))
        ll.addRow(tr("GPU layers"), self.llama_ngl_spin)
        ll.addRow(tr("Micro-batch"), self.llama_ubatch_spin)
        ll.addRow(tr("Split mode"), self.llama_split_combo)
        ll.addRow(self.llama_fa_check)
        il.addWidget(self.llama_box)

        # transformers device_map="auto": accelerate's max_memory (shown for the transformers engine only)
        self.hf_box = QGroupBox(tr("transformers device_map"))
        hfl = self._form_layout(self.hf_box)
        self.max_memory_spin = _gib_spin(
            0.0,
            MAX_MEMORY_GIB_MAX,
            tr("no cap"),
            tr(
                "accelerate's max_memory per GPU for the weights. Weights that do not fit spill to CPU memory, "
                "then to disk, and cross PCIe on every forward; no cap = an even split over the GPUs"
            ),
        )
        self.max_memory_spin.setAccessibleName(tr("Max memory per GPU"))
        self.cpu_memory_spin = _gib_spin(
            -1.0,
            CPU_MEMORY_GIB_MAX,
            tr("no cap"),
            tr(
                "accelerate's max_memory for the CPU: spilled weights beyond it go to disk (offload_folder). "
                "0 GiB sends every spilled weight to disk; only matters with a max memory per GPU"
            ),
        )
        self.cpu_memory_spin.setAccessibleName(tr("CPU memory for spilled weights"))
        # short labels: the group must fit the form's width next to the GiB fields
        hfl.addRow(tr("GPU memory cap"), self.max_memory_spin)
        hfl.addRow(tr("CPU memory cap"), self.cpu_memory_spin)
        il.addWidget(self.hf_box)
        il.addStretch(1)

        # ---- fine-tune tab
        self.method_combo = _combo(METHODS, tr("Full fine-tuning or adapters (LoRA / QLoRA)"), {"full": tr("full")})
        self.micro_batch_spin = _spin(1, 65536, tr("Sequences per forward/backward pass on each GPU"))
        self.seq_len_spin = _spin(1, MAX_TOKENS, tr("Tokens per training sequence"), 256)
        self.mean_len_spin = _spin(
            0,
            MAX_TOKENS,
            tr(
                "Unpacked batches of varying length: their mean length (the sequence length is then the longest). "
                "Each new length leaves blocks of other sizes in PyTorch's cache, which nvidia-smi shows"
            ),
            256,
        )
        self.mean_len_spin.setSpecialValueText(tr("packed"))
        self.mean_len_spin.setAccessibleName(tr("Mean length of unpacked batches"))
        self.grad_accum_spin = _spin(1, 1_000_000, tr("Micro-batches per optimizer step (no extra memory)"))
        self.optimizer_combo = _combo(OPTIMIZERS, tr("The optimizer: its states are often the largest part"))
        self.precision_combo = _combo(PRECISIONS, tr("Training precision"))
        self.checkpointing_check = QCheckBox(tr("gradient checkpointing"))
        self.checkpointing_check.setToolTip(tr("Recompute activations in backward: keeps one tensor per layer"))
        self.checkpoint_every_spin = _spin(
            1,
            4096,
            tr(
                "Selective checkpointing (torchtune): checkpoint every k-th layer; the layers in between keep all "
                "their activations, trading memory for less recomputation"
            ),
        )
        self.checkpoint_every_spin.setPrefix(tr("every "))
        self.checkpoint_every_spin.setSuffix(tr(" layers"))
        self.checkpoint_every_spin.setSpecialValueText(tr("every layer"))
        self.checkpoint_every_spin.setAccessibleName(tr("Checkpoint every k-th layer"))
        self.lora_rank_spin = _spin(1, 65536, tr("LoRA rank r: adapter size grows linearly with it"))
        self.lora_targets_edit = QLineEdit()
        self.lora_targets_edit.setToolTip(tr("all-linear, or a comma list of modules: q,k,v,o,gate,up,down"))
        self.lora_dropout_spin = QDoubleSpinBox()
        # PEFT accepts a dropout probability in [0, 1); so does the core (FinetuneWorkload.lora_dropout < 1)
        self.lora_dropout_spin.setRange(0.0, LORA_DROPOUT_MAX)
        self.lora_dropout_spin.setSingleStep(0.05)
        self.lora_dropout_spin.setDecimals(2)
        self.lora_dropout_spin.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.lora_dropout_spin.setSpecialValueText(tr("off"))
        self.lora_dropout_spin.setToolTip(
            tr(
                "LoRA dropout probability. Above 0, PEFT saves a 1-byte dropout mask per adapted input "
                "element for backward: more activation memory"
            )
        )
        self.dora_check = QCheckBox(tr("DoRA (weight-decomposed LoRA)"))
        self.dora_check.setToolTip(
            tr(
                "DoRA adds a magnitude vector per adapted matrix, keeps the base and rescaled outputs for "
                "backward (4 B per adapted output) and builds one fp32 weight for its norm: more memory than LoRA"
            )
        )
        self.chunked_loss_check = QCheckBox(tr("chunked cross-entropy"))
        self.chunked_loss_check.setToolTip(
            tr(
                "Computes the loss in 8 chunks (torchtune, Liger): the fp32 log-softmax and its gradient exist "
                "for one chunk at a time, so the loss head shrinks (most with large vocabularies)"
            )
        )
        self.expandable_check = QCheckBox(tr("expandable segments"))
        self.expandable_check.setToolTip(
            tr(
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: PyTorch's allocator grows its memory in place "
                "instead of keeping blocks it cannot reuse, so nvidia-smi shows less above the allocated peak"
            )
        )
        self.activation_offload_check = QCheckBox(tr("activation offloading"))
        self.activation_offload_check.setToolTip(
            tr(
                "Saved activations move to CPU memory during the forward (torchtune, DeepSpeed): the GPU keeps "
                "about two layers' worth; the rest counts as host memory, and steps get slower"
            )
        )
        self.save_embed_check = QCheckBox(tr("embeddings"))
        self.save_embed_check.setToolTip(
            tr(
                "peft modules_to_save: the input embeddings train in full next to the adapters, as a trainable "
                "copy with its gradients and optimizer states (needed when new tokens are added)"
            )
        )
        self.save_embed_check.setAccessibleName(tr("Train the embeddings in full"))
        self.save_head_check = QCheckBox(tr("lm_head"))
        self.save_head_check.setToolTip(
            tr(
                "peft modules_to_save: the output head trains in full next to the adapters, as a trainable copy "
                "with its gradients and optimizer states (a tied head gets its own copy)"
            )
        )
        self.save_head_check.setAccessibleName(tr("Train lm_head in full"))
        self.saved_modules_row = _row(self.save_embed_check, self.save_head_check)
        self.saved_modules_row.setToolTip(tr("Modules trained in full next to the adapters (peft modules_to_save)"))
        self.lora_bias_combo = _combo(
            LORA_BIASES,
            tr("peft LoRA bias: which bias vectors train (each with its gradient and optimizer states)"),
            {"none": tr("none"), "all": tr("all"), "lora_only": tr("LoRA layers only")},
            {
                "none": tr("No bias trains (peft's default)"),
                "all": tr("Every bias of the model trains"),
                "lora_only": tr("Only the biases of the adapted layers train"),
            },
        )
        self.lora_bias_combo.setAccessibleName(tr("LoRA bias"))
        self.adapter_dtype_combo = _combo(
            ADAPTER_DTYPES,
            tr("The dtype peft keeps the adapters in: fp32 since peft 0.12, the base weights' dtype before"),
            {"fp32": tr("fp32 (peft ≥ 0.12)"), "base": tr("base dtype (older peft)")},
            {
                "fp32": tr("peft ≥ 0.12 upcasts the adapters to fp32 (autocast_adapter_dtype): 4 bytes a parameter"),
                "base": tr(
                    "Older peft keeps the adapters in the base weights' dtype (2 bytes in bf16): smaller; "
                    "QLoRA adapters stay fp32"
                ),
            },
        )
        self.adapter_dtype_combo.setAccessibleName(tr("Adapter dtype"))
        self.vision_combo = _combo(
            VISION_TOWERS,
            tr("A multimodal model's vision tower; only for models that have one"),
            {"frozen": tr("frozen"), "trained": tr("trained"), "absent": tr("not loaded")},
            {
                "frozen": tr("Loaded and frozen: its weights count, no gradients or optimizer states"),
                "trained": tr(
                    "Trained with the language model (in full, or adapters on its linear layers): more "
                    "trainable parameters; its activations depend on the images and are not counted"
                ),
                "absent": tr("Not loaded: the text model class alone (text-only training), no vision weights"),
            },
        )
        self.vision_combo.setAccessibleName(tr("Vision tower"))
        self._vision_tip = self.vision_combo.toolTip()
        ft_page = QWidget()
        fl2 = QFormLayout(ft_page)
        self._tune(fl2)
        fl2.setContentsMargins(4, 6, 4, 4)
        fl2.addRow(tr("Me&thod"), self.method_combo)
        fl2.addRow(tr("Micro-batch"), self.micro_batch_spin)
        self.seq_max_label = _readout()
        fl2.addRow(tr("Sequence length"), _with_readout(self.seq_len_spin, self.seq_max_label))
        fl2.addRow(tr("Mean length"), self.mean_len_spin)
        # a short label: the widest label plus the widest field (length + readout) must fit the form's width
        fl2.addRow(tr("Grad. accum."), self.grad_accum_spin)
        self.grad_accum_spin.setAccessibleName(tr("Gradient accumulation steps"))
        fl2.addRow(tr("O&ptimizer"), self.optimizer_combo)
        fl2.addRow(tr("Precision"), self.precision_combo)
        fl2.addRow(self.checkpointing_check)
        fl2.addRow(tr("Checkpoints"), self.checkpoint_every_spin)
        fl2.addRow(tr("LoRA rank"), self.lora_rank_spin)
        fl2.addRow(tr("LoRA targets"), self.lora_targets_edit)
        fl2.addRow(tr("LoRA dropout"), self.lora_dropout_spin)
        fl2.addRow(tr("LoRA bias"), self.lora_bias_combo)
        fl2.addRow(tr("Trained in full"), self.saved_modules_row)
        fl2.addRow(tr("Adapter dtype"), self.adapter_dtype_combo)
        fl2.addRow(self.dora_check)
        fl2.addRow(self.chunked_loss_check)
        fl2.addRow(self.activation_offload_check)
        fl2.addRow(self.expandable_check)
        fl2.addRow(tr("Vision tower"), self.vision_combo)

        self.tabs = QTabWidget()
        self.tabs.addTab(inf_page, tr("Inference"))
        self.tabs.addTab(ft_page, tr("Fine-tune"))
        self.tabs.setAccessibleName(tr("Workload"))

        # ---- hardware and parallelism
        self.detected_label = QLabel("")
        self.detected_label.setObjectName("caption")
        self.detected_label.setWordWrap(True)
        self.detected_label.setTextFormat(Qt.TextFormat.RichText)
        self.gpu_combo = QComboBox()
        self.gpu_combo.setToolTip(tr("The GPU to plan for: a detected one (free memory) or any from the catalog"))
        self.gpu_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.gpu_combo.setMinimumContentsLength(12)
        self.gpu_combo.setMaxVisibleItems(24)
        self._fill_gpus({})
        self.gpu_count_spin = _spin(1, 4096, tr("Number of GPUs of this kind"))
        self.nodes_spin = _spin(
            1,
            4096,
            tr(
                "Machines of this many GPUs each (fine-tuning): data parallel, ZeRO and FSDP spread over all of "
                "them, tensor parallel stays inside one machine, host memory is per machine"
            ),
        )
        self.tp_spin = _spin(1, 4096, tr("Tensor parallel: each layer split across this many GPUs"))
        self.pp_spin = _spin(1, 4096, tr("Pipeline parallel: the layers split into this many stages"))
        self.zero_combo = QComboBox()
        for z, tip in (
            (0, "no sharding"),
            (1, "optimizer states sharded"),
            (2, "optimizer states and gradients sharded"),
            (3, "states, gradients and parameters sharded"),
        ):
            self.zero_combo.addItem(f"ZeRO-{z}" if z else tr("off"), z)
            self.zero_combo.setItemData(self.zero_combo.count() - 1, tr(tip), Qt.ItemDataRole.ToolTipRole)
        self.zero_combo.setToolTip(tr("DeepSpeed ZeRO stage (fine-tuning on several GPUs)"))
        self.fsdp_check = QCheckBox(tr("FSDP"))
        self.fsdp_check.setToolTip(tr("PyTorch FSDP: shards the model over the GPUs (full sharding is like ZeRO-3)"))
        self.fsdp_strategy_combo = _combo(
            FSDP_STRATEGIES,
            tr("FSDP sharding strategy (FSDP only)"),
            {"full": tr("full shard"), "shard-grad-op": tr("shard grad/op"), "hybrid": tr("hybrid shard")},
            {
                "full": tr("FULL_SHARD: parameters, gradients and optimizer states sharded (like ZeRO-3)"),
                "shard-grad-op": tr(
                    "SHARD_GRAD_OP: gradients and optimizer states sharded, every GPU keeps all the parameters "
                    "(like ZeRO-2): more memory, less communication"
                ),
                "hybrid": tr("HYBRID_SHARD: full sharding inside each node, a replica per node"),
            },
        )
        self.fsdp_strategy_combo.setAccessibleName(tr("FSDP strategy"))
        self.fsdp_version_combo = _combo(
            ("1", "2"),
            tr("FSDP version (FSDP only)"),
            {"1": tr("FSDP1"), "2": tr("FSDP2")},
            {
                "1": tr(
                    "FullyShardedDataParallel (accelerate's default): with LoRA, frozen layers keep their inputs for "
                    "backward as in a full fine-tune"
                ),
                "2": tr("fully_shard (per-parameter sharding): frozen layers keep only what LoRA needs"),
            },
        )
        self.fsdp_version_combo.setAccessibleName(tr("FSDP version"))
        self.zero_bucket_spin = QDoubleSpinBox()
        # elements up to 10^12 do not fit a QSpinBox (32 bits); a double holds them exactly
        self.zero_bucket_spin.setRange(0, ZERO_BUCKET_MAX)
        self.zero_bucket_spin.setDecimals(0)
        self.zero_bucket_spin.setSingleStep(50_000_000)
        self.zero_bucket_spin.setGroupSeparatorShown(True)
        self.zero_bucket_spin.setAccelerated(True)
        self.zero_bucket_spin.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.zero_bucket_spin.setSpecialValueText(tr("default (5e8)"))
        self.zero_bucket_spin.setToolTip(
            tr(
                "DeepSpeed reduce_bucket_size in elements (ZeRO only): the gradient buckets are this large; "
                "default = DeepSpeed's 500,000,000"
            )
        )
        self.zero_bucket_spin.setAccessibleName(tr("DeepSpeed bucket size (elements)"))
        self.zero_overlap_combo = QComboBox()
        for value, label, tip in (
            (None, tr("default"), tr("DeepSpeed's default: on for ZeRO-3, off for ZeRO-1 and 2")),
            (
                True,
                tr("on"),
                tr("Overlaps gradient reduction with the backward: a second gradient bucket (ZeRO-1 and 2)"),
            ),
            (False, tr("off"), tr("One gradient bucket; the reduction waits for it")),
        ):
            self.zero_overlap_combo.addItem(label, value)
            self.zero_overlap_combo.setItemData(self.zero_overlap_combo.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.zero_overlap_combo.setToolTip(tr("DeepSpeed overlap_comm (ZeRO only)"))
        self.zero_overlap_combo.setAccessibleName(tr("DeepSpeed overlap_comm"))
        self.offload_combo = _combo(
            OFFLOADS,
            tr("Move optimizer states or parameters to CPU memory"),
            {"none": tr("off"), "optimizer": tr("optimizer states"), "params": tr("parameters")},
        )
        hw_box = QGroupBox(tr("Hardware"))
        hl = self._form_layout(hw_box)
        hl.addRow(self.detected_label)
        hl.addRow(tr("&GPU"), self.gpu_combo)
        hl.addRow(tr("GPU &count"), self.gpu_count_spin)
        hl.addRow(tr("Machines"), self.nodes_spin)
        hl.addRow(tr("Tensor parallel"), self.tp_spin)
        hl.addRow(tr("Pipeline parallel"), self.pp_spin)
        hl.addRow(tr("ZeRO"), self.zero_combo)
        hl.addRow(tr("ZeRO bucket"), self.zero_bucket_spin)
        hl.addRow(tr("overlap_comm"), self.zero_overlap_combo)
        hl.addRow(self.fsdp_check, self.fsdp_strategy_combo)
        hl.addRow(tr("FSDP version"), self.fsdp_version_combo)
        hl.addRow(tr("Offload"), self.offload_combo)

        self.validation_label = QLabel("")
        self.validation_label.setObjectName("validation")
        self.validation_label.setWordWrap(True)
        self.validation_label.setVisible(False)
        self.validation_label.setAccessibleName(tr("Problem with the settings"))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(8)
        layout.addWidget(model_box)
        layout.addWidget(self.tabs)
        layout.addWidget(hw_box)
        layout.addWidget(self.validation_label)
        layout.addStretch(1)

        for combo in (
            self.model_combo,
            self.weights_combo,
            self.kv_combo,
            self.attention_combo,
            self.engine_combo,
            self.method_combo,
            self.optimizer_combo,
            self.precision_combo,
            self.gpu_combo,
            self.zero_combo,
            self.offload_combo,
            self.lora_bias_combo,
            self.adapter_dtype_combo,
            self.vision_combo,
            self.fsdp_strategy_combo,
            self.fsdp_version_combo,
            self.zero_overlap_combo,
            self.llama_split_combo,
        ):
            combo.currentIndexChanged.connect(self._on_changed)
        for spin in (
            self.batch_spin,
            self.input_spin,
            self.output_spin,
            self.vllm_seqs_spin,
            self.llama_ngl_spin,
            self.llama_ubatch_spin,
            self.checkpoint_every_spin,
            self.micro_batch_spin,
            self.seq_len_spin,
            self.mean_len_spin,
            self.grad_accum_spin,
            self.lora_rank_spin,
            self.gpu_count_spin,
            self.nodes_spin,
            self.tp_spin,
            self.pp_spin,
        ):
            spin.valueChanged.connect(self._on_changed)
        self.vllm_util_spin.valueChanged.connect(self._on_changed)
        self.lora_dropout_spin.valueChanged.connect(self._on_changed)
        for dspin in (self.max_memory_spin, self.cpu_memory_spin, self.zero_bucket_spin):
            dspin.valueChanged.connect(self._on_changed)
        for check in (
            self.vllm_eager_check,
            self.llama_fa_check,
            self.checkpointing_check,
            self.dora_check,
            self.chunked_loss_check,
            self.activation_offload_check,
            self.expandable_check,
            self.save_embed_check,
            self.save_head_check,
            self.fsdp_check,
        ):
            check.toggled.connect(self._on_changed)
        self.lora_targets_edit.textChanged.connect(self._on_changed)
        self.tabs.currentChanged.connect(self._on_changed)
        self._sync_visibility()

    @staticmethod
    def _tune(fl: QFormLayout) -> None:
        fl.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        fl.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        fl.setHorizontalSpacing(8)
        fl.setVerticalSpacing(4)

    def _form_layout(self, box: QGroupBox) -> QFormLayout:
        fl = QFormLayout(box)
        self._tune(fl)
        fl.setContentsMargins(8, 6, 8, 6)
        return fl

    # ---------------------------------------------------------------- GPUs
    def _fill_gpus(self, detected: dict[str, tuple[str, GpuSpec]]) -> None:
        current = self.gpu_combo.currentData()
        self.gpu_combo.blockSignals(True)
        self.gpu_combo.clear()
        self.gpu_combo.addItem(tr("No GPU"), None)
        for key, (label, spec) in detected.items():
            self.gpu_combo.addItem(label, key)
            free = (spec.free_bytes or 0) / unit_bytes()
            self.gpu_combo.setItemData(
                self.gpu_combo.count() - 1,
                tr("Detected on this machine; the verdict uses its free memory") + f" ({free:.2f} {unit_name()})",
                Qt.ItemDataRole.ToolTipRole,
            )
        if detected:
            self.gpu_combo.insertSeparator(self.gpu_combo.count())
        for g in self._catalog.gpus():
            self.gpu_combo.addItem(f"{g.name} — {g.memory_bytes / unit_bytes():.2f} {unit_name()}", g.name)
        i = self.gpu_combo.findData(current)
        self.gpu_combo.setCurrentIndex(max(0, i))
        self.gpu_combo.blockSignals(False)

    def set_detected(self, result: DetectionResult | None, specs: dict[str, GpuSpec]) -> None:
        """Show what NVML found (or why nothing) and offer the detected GPUs at the top of the GPU list."""
        self._detection = (result, specs)
        entries: dict[str, tuple[str, GpuSpec]] = {}
        if result is not None:
            for g in result.gpus:
                key = f"{DETECTED_PREFIX}{g.index}"
                if key in specs:
                    entries[key] = (f"{tr('This machine')}: GPU {g.index} {g.name}", specs[key])
        self._fill_gpus(entries)
        if result is None:
            self.detected_label.setText(tr("Looking for NVIDIA GPUs…"))
        elif not result.gpus:
            self.detected_label.setText(
                "<b>"
                + tr("No NVIDIA GPU detected — choose the GPUs to plan for")
                + "</b>"
                + (f"<br>{html.escape(localize(f'({result.reason})'))}" if result.reason else "")
            )
        else:
            lines = []
            unit = unit_bytes()
            for g in result.gpus:
                others = ", ".join(
                    f"{p.name or 'pid ' + str(p.pid)} {((p.used_bytes or 0) / unit_bytes()):.1f} {unit_name()}"
                    for p in g.processes[:3]
                )
                mig = " · MIG" if g.mig else ""
                lines.append(
                    f"<b>GPU {g.index}</b> {g.name}{mig}: {g.free / unit:.1f} / {g.total / unit:.1f} {unit_name()} "
                    + tr("free")
                    + (f"<br>&nbsp;&nbsp;{tr('other processes')}: {others}" if others else "")
                )
            if result.reason:  # some GPUs answered, others not
                lines.append(f"<i>{html.escape(localize(result.reason))}</i>")
            self.detected_label.setText("<br>".join(lines))

    def refresh_units(self) -> None:
        """Rewrite the memory figures of the GPU list and the detection note in the current unit."""
        result, specs = self._detection
        self.set_detected(result, specs)

    def note_model_facts(self, model_id: str, facts: ModelFacts) -> None:
        """Remember what a resolved model (Hub, local) is made of: the vision tower choice then follows it."""
        self._vision_known[model_id] = facts.counts.vision > 0
        if not self._loading:
            self._sync_visibility()

    # ---------------------------------------------------------------- values
    def _on_changed(self, *_args: object) -> None:
        if not self._loading:
            self._sync_visibility()
            self.changed.emit()

    def _sync_visibility(self) -> None:
        engine = self.engine_combo.currentData()
        self.vllm_box.setVisible(engine == "vllm")
        self.llama_box.setVisible(engine == "llamacpp")
        # accelerate's max_memory is a transformers device_map setting: no other engine reads it
        self.hf_box.setVisible(engine == "transformers")
        self.hf_box.setEnabled(engine == "transformers")
        self.cpu_memory_spin.setEnabled(self.max_memory_spin.value() > 0)
        finetune = self.tabs.currentIndex() == 1
        for w in (self.zero_combo, self.fsdp_check, self.offload_combo, self.nodes_spin):
            w.setEnabled(finetune)
        self.fsdp_strategy_combo.setEnabled(finetune and self.fsdp_check.isChecked())
        self.fsdp_version_combo.setEnabled(finetune and self.fsdp_check.isChecked())
        self.checkpoint_every_spin.setEnabled(self.checkpointing_check.isChecked())
        self.llama_split_combo.setEnabled(self.gpu_count_spin.value() > 1)
        zero = finetune and bool(self.zero_combo.currentData())
        self.zero_bucket_spin.setEnabled(zero)
        self.zero_overlap_combo.setEnabled(zero)
        adapters = self.method_combo.currentData() in ("lora", "qlora")
        self.lora_rank_spin.setEnabled(adapters)
        self.lora_targets_edit.setEnabled(adapters)
        self.lora_dropout_spin.setEnabled(adapters)
        self.dora_check.setEnabled(adapters)
        for w in (self.save_embed_check, self.save_head_check, self.lora_bias_combo, self.adapter_dtype_combo):
            w.setEnabled(adapters)
        vision = self.model_has_vision(str(self.model_combo.currentData()))
        self.vision_combo.setEnabled(vision is not False)
        self.vision_combo.setToolTip(
            self._vision_tip
            + "\n"
            + (
                tr("This model has no vision tower")
                if vision is False
                else tr("This model has a vision tower")
                if vision
                else tr("Not a catalog model: the window cannot tell whether it has a vision tower")
            )
        )

    def model_has_vision(self, model_id: str) -> bool | None:
        """Whether ``model_id`` has a vision tower: known for catalog models and those passed to
        :meth:`note_model_facts`; None (unknown) otherwise."""
        if self._catalog.find(model_id) is None:
            return self._vision_known.get(model_id)
        try:
            return self._catalog.facts(model_id).counts.vision > 0
        except (ValueError, LookupError):
            return None

    @property
    def mode(self) -> str:
        return "finetune" if self.tabs.currentIndex() == 1 else "inference"

    def values(self) -> FormValues:
        ngl = self.llama_ngl_spin.value()
        max_memory = round(self.max_memory_spin.value(), 4)
        cpu_memory = round(self.cpu_memory_spin.value(), 4)
        bucket = round(self.zero_bucket_spin.value())
        vision = str(self.vision_combo.currentData())
        if vision == "trained" and self.model_has_vision(str(self.model_combo.currentData())) is False:
            vision = "frozen"  # a model without a vision tower has none to train (the core says so)
        return FormValues(
            model=str(self.model_combo.currentData()),
            mode=self.mode,
            engine=str(self.engine_combo.currentData()),
            weights=str(self.weights_combo.currentData()),
            attention=str(self.attention_combo.currentData()),
            batch=self.batch_spin.value(),
            input_len=self.input_spin.value() or None,
            output_len=self.output_spin.value(),
            kv_dtype=str(self.kv_combo.currentData()),
            gpu_memory_utilization=round(self.vllm_util_spin.value(), 4),
            max_num_seqs=self.vllm_seqs_spin.value(),
            enforce_eager=self.vllm_eager_check.isChecked(),
            n_gpu_layers=None if ngl < 0 else ngl,
            n_ubatch=self.llama_ubatch_spin.value(),
            flash_attn=self.llama_fa_check.isChecked(),
            split_mode=str(self.llama_split_combo.currentData()),
            max_memory_gib=max_memory if max_memory > 0 else None,
            cpu_memory_gib=cpu_memory if cpu_memory >= 0 else None,
            method=str(self.method_combo.currentData()),
            micro_batch=self.micro_batch_spin.value(),
            seq_len=self.seq_len_spin.value(),
            mean_seq_len=min(self.mean_len_spin.value(), self.seq_len_spin.value()),
            grad_accum=self.grad_accum_spin.value(),
            optimizer=str(self.optimizer_combo.currentData()),
            precision=str(self.precision_combo.currentData()),
            grad_checkpointing=self.checkpointing_check.isChecked(),
            checkpoint_every=self.checkpoint_every_spin.value(),
            lora_rank=self.lora_rank_spin.value(),
            lora_targets=self.lora_targets_edit.text().strip() or "all-linear",
            lora_dropout=round(self.lora_dropout_spin.value(), 4),
            dora=self.dora_check.isChecked(),
            chunked_loss=self.chunked_loss_check.isChecked(),
            activation_offload=self.activation_offload_check.isChecked(),
            expandable_segments=self.expandable_check.isChecked(),
            modules_to_save=tuple(
                kind
                for kind, check in (("embed", self.save_embed_check), ("lm_head", self.save_head_check))
                if check.isChecked()
            ),
            lora_bias=str(self.lora_bias_combo.currentData()),
            adapter_dtype=str(self.adapter_dtype_combo.currentData()),
            vision_tower=vision,
            tp=self.tp_spin.value(),
            pp=self.pp_spin.value(),
            zero=int(self.zero_combo.currentData()),
            fsdp=self.fsdp_check.isChecked(),
            fsdp_strategy=str(self.fsdp_strategy_combo.currentData()),
            fsdp_version=int(self.fsdp_version_combo.currentData()),
            zero_bucket=bucket or None,
            zero_overlap_comm=self.zero_overlap_combo.currentData(),
            offload=str(self.offload_combo.currentData()),
            gpu=self.gpu_combo.currentData(),
            gpu_count=self.gpu_count_spin.value(),
            nodes=self.nodes_spin.value(),
        )

    def set_values(self, form: FormValues) -> None:
        self._loading = True
        try:
            select(self.model_combo, form.model)
            select(self.weights_combo, form.weights)
            select(self.attention_combo, form.attention)
            select(self.engine_combo, form.engine)
            select(self.kv_combo, form.kv_dtype)
            self.batch_spin.setValue(form.batch)
            self.input_spin.setValue(form.input_len or 0)
            self.output_spin.setValue(form.output_len)
            self.vllm_util_spin.setValue(form.gpu_memory_utilization)
            self.vllm_seqs_spin.setValue(form.max_num_seqs)
            self.vllm_eager_check.setChecked(form.enforce_eager)
            self.llama_ngl_spin.setValue(-1 if form.n_gpu_layers is None else form.n_gpu_layers)
            self.llama_ubatch_spin.setValue(form.n_ubatch)
            self.llama_fa_check.setChecked(form.flash_attn)
            select(self.llama_split_combo, form.split_mode)
            self.max_memory_spin.setValue(form.max_memory_gib or 0.0)
            self.cpu_memory_spin.setValue(-1.0 if form.cpu_memory_gib is None else form.cpu_memory_gib)
            select(self.method_combo, form.method)
            self.micro_batch_spin.setValue(form.micro_batch)
            self.seq_len_spin.setValue(form.seq_len)
            self.mean_len_spin.setValue(form.mean_seq_len)
            self.grad_accum_spin.setValue(form.grad_accum)
            select(self.optimizer_combo, form.optimizer)
            select(self.precision_combo, form.precision)
            self.checkpointing_check.setChecked(form.grad_checkpointing)
            self.checkpoint_every_spin.setValue(form.checkpoint_every)
            self.lora_rank_spin.setValue(form.lora_rank)
            self.lora_targets_edit.setText(form.lora_targets)
            self.lora_dropout_spin.setValue(form.lora_dropout)
            self.dora_check.setChecked(form.dora)
            self.chunked_loss_check.setChecked(form.chunked_loss)
            self.activation_offload_check.setChecked(form.activation_offload)
            self.expandable_check.setChecked(form.expandable_segments)
            self.save_embed_check.setChecked("embed" in form.modules_to_save)
            self.save_head_check.setChecked("lm_head" in form.modules_to_save)
            select(self.lora_bias_combo, form.lora_bias)
            select(self.adapter_dtype_combo, form.adapter_dtype)
            select(self.vision_combo, form.vision_tower)
            self.tp_spin.setValue(form.tp)
            self.pp_spin.setValue(form.pp)
            select(self.zero_combo, form.zero)
            self.fsdp_check.setChecked(form.fsdp)
            select(self.fsdp_strategy_combo, form.fsdp_strategy)
            select(self.fsdp_version_combo, str(form.fsdp_version))
            self.zero_bucket_spin.setValue(form.zero_bucket or 0)
            select(self.zero_overlap_combo, form.zero_overlap_comm)
            select(self.offload_combo, form.offload)
            select(self.gpu_combo, form.gpu)
            self.gpu_count_spin.setValue(form.gpu_count)
            self.nodes_spin.setValue(form.nodes)
            self.tabs.setCurrentIndex(1 if form.mode == "finetune" else 0)
        finally:
            self._loading = False
        self._sync_visibility()

    def show_max_length(self, field: str, value: int | None, tooltip: str, tight: int | None = None) -> None:
        """The solver's largest ``field`` ("input_len" / "seq_len") next to its spin box; None clears it. ``tight``:
        a larger value that still runs inside the headroom, shown instead, marked tight."""
        own, other = (
            (self.input_max_label, self.seq_max_label)
            if field == "input_len"
            else (self.seq_max_label, self.input_max_label)
        )
        other.setText("")
        other.setToolTip("")
        if tight:
            own.setText(f"{tr('max')} {tight:,} ({tr('tight')})")
        else:
            own.setText("" if value is None and not tooltip else f"{tr('max')} {value:,}" if value else tr("none fits"))
        own.setToolTip(tooltip)

    def set_problem(self, text: str | None) -> None:
        """Inline validation: the problem in words under the form (None hides it)."""
        self.validation_label.setVisible(bool(text))
        self.validation_label.setText(f"⚠ {text}" if text else "")
