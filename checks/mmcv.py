"""mmcv: ops.nms and ops.box_iou_rotated (boxes at angle 0) against greedy NMS and the
axis-aligned IoU in torch. Its CPU kernels run the same calls on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import box_iou, boxes, nms

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # mmcv._ext has CPU implementations of both
REFERENCE = "greedy NMS and axis-aligned IoU in torch"


def run(check: Check, device: str) -> None:
    ops = importlib.import_module("mmcv.ops")
    dets, scores = boxes(64, device=device)
    iou = box_iou(dets, dets)
    _, kept = ops.nms(dets, scores, 0.5)  # offset 0: width is x2 - x1
    check.close("nms", kept.cpu(), nms(iou.cpu(), scores.cpu(), 0.5), atol=0)
    # (x centre, y centre, w, h, angle): at angle 0 the rotated IoU is the axis-aligned one
    centred = torch.cat(
        [(dets[:, :2] + dets[:, 2:]) / 2, dets[:, 2:] - dets[:, :2], torch.zeros_like(dets[:, :1])],
        dim=1,
    )
    got = ops.box_iou_rotated(centred[:16], centred[16:32])
    check.close("box_iou_rotated angle 0", got, iou[:16, 16:32], atol=1e-5)
