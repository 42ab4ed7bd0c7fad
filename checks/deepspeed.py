"""DeepSpeed: FusedAdam (its prebuilt fused_adam op) on the GPU and DeepSpeedCPUAdam (its
prebuilt cpu_adam op) on the CPU, three AdamW steps each against torch.optim.AdamW."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # DeepSpeedCPUAdam: the wheel's deepspeed/ops/adam/cpu_adam_op
REFERENCE = "torch.optim.AdamW, three steps with the same gradients"
TOLERANCE = 1e-5  # float32 parameters of about 1 after three steps of lr 1e-2


def run(check: Check, device: str) -> None:
    # a machine without a GPU makes DeepSpeed pick its CPU accelerator, which just-in-time
    # compiles its own ops; the wheel's ops are the CUDA accelerator's (a GPU machine detects it)
    os.environ.setdefault("DS_ACCELERATOR", "cuda")
    adam = importlib.import_module("deepspeed.ops.adam")
    start = torch.randn(1000, device=device)
    grads = [torch.randn(1000, device=device) for _ in range(3)]
    theirs = torch.nn.Parameter(start.clone())
    ours = torch.nn.Parameter(start.clone())
    settings = {"lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
    if device == "cuda":
        optimizer = adam.FusedAdam([theirs], adam_w_mode=True, **settings)
        name = "FusedAdam"
    else:
        optimizer = adam.DeepSpeedCPUAdam([theirs], adamw_mode=True, **settings)
        name = "DeepSpeedCPUAdam"
    reference = torch.optim.AdamW([ours], **settings)
    for grad in grads:
        for param, opt in ((theirs, optimizer), (ours, reference)):
            param.grad = grad.clone()
            opt.step()
    check.close(f"{name} 3 steps", theirs.detach(), ours.detach(), atol=TOLERANCE)
