"""torch_generic_nms: generic_nms over boxes and over a precomputed IoU matrix against greedy
NMS in torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._reference import box_iou, boxes, nms

if TYPE_CHECKING:
    from ._harness import Check

CPU = "CUDA kernels only (its op refuses CPU tensors)"
REFERENCE = "greedy NMS (highest score first, IoU above the threshold dropped) in torch"


def run(check: Check, device: str) -> None:
    gn = importlib.import_module("torch_generic_nms")
    dets, scores = boxes(64, device=device)
    iou = box_iou(dets, dets)
    want = nms(iou.cpu(), scores.cpu(), 0.5)
    got = gn.generic_nms(dets, scores, 0.5, False)  # kept indices, highest score first
    check.close("generic_nms boxes", got.cpu(), want, atol=0)
    got = gn.generic_nms(iou, scores, 0.5, True)
    check.close("generic_nms IoU matrix", got.cpu(), want, atol=0)
