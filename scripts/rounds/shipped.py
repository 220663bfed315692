"""What the round generators of this folder know of gangplan's shipped model files: hardware
models as (gpu_type, gpus, cpu_milli, memory_mib), workload names, and the weight names of
`policy.weights` (docs/formats.md). Keep in step with models/ and src/instance."""

MODELS = {
    "dgx-h100": ("H100", 8, 224000, 2097152),
    "dgx-h200": ("H200", 8, 224000, 2097152),
    "dgx-a100": ("A100", 8, 256000, 2097152),
    "dgx-b200": ("B200", 8, 224000, 2097152),
    "a100-pcie-8x": ("A100", 8, None, None),
    "v100-sxm2-8x": ("V100", 8, 80000, 524288),
    "l40s-pcie-4x": ("L40S", 4, None, None),
    "gb200-nvl72-tray": ("GB200", 4, 144000, None),
}
WORKLOADS = ["default", "data-parallel", "inference", "llm-3d", "recommender"]
WEIGHT_NAMES = ["gpu", "priority", "aging", "aging_cap_hours", "cpu_job", "spread",
                "preemption", "checkpoint", "fairness", "open_node", "strand", "fragmentation"]
