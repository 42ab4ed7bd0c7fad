"""detectron2: its rotated-box ops (box_iou_rotated, nms_rotated) at angle 0 against the
axis-aligned IoU and greedy NMS in torch. Its CPU kernels run the same ops on the CPU."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import torch

from ._reference import box_iou, boxes, nms

if TYPE_CHECKING:
    from ._harness import Check

CPU = True  # detectron2._C has CPU implementations of both
REFERENCE = "axis-aligned IoU and greedy NMS in torch (rotated boxes at angle 0)"


def run(check: Check, device: str) -> None:
    importlib.import_module("detectron2._C")  # registers torch.ops.detectron2 (no torchvision)
    dets, scores = boxes(64, device=device)
    iou = box_iou(dets, dets)
    # (x centre, y centre, w, h, angle in degrees)
    rotated = torch.cat(
        [(dets[:, :2] + dets[:, 2:]) / 2, dets[:, 2:] - dets[:, :2], torch.zeros_like(dets[:, :1])],
        dim=1,
    )
    got = torch.ops.detectron2.box_iou_rotated(rotated[:16], rotated[16:32])
    check.close("box_iou_rotated angle 0", got, iou[:16, 16:32], atol=1e-5)
    kept = torch.ops.detectron2.nms_rotated(rotated, scores, 0.5)
    check.close("nms_rotated angle 0", kept.cpu(), nms(iou.cpu(), scores.cpu(), 0.5), atol=0)
