"""References several checks share, in plain torch: attention through torch's own
scaled_dot_product_attention, greedy NMS, box IoU, farthest point sampling and k nearest
neighbours by cdist. Each is the textbook definition, small and slow on purpose."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812 - torch's own spelling


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False, heads_last: bool
) -> torch.Tensor:
    """Softmax attention in float32 through torch's scaled_dot_product_attention; `heads_last`:
    tensors are (batch, seq, heads, dim) (flash-attn, xformers) rather than (batch, heads,
    seq, dim). The result has the inputs' layout, in float32 (not rounded to theirs again)."""

    def layout(t: torch.Tensor) -> torch.Tensor:
        return t.transpose(1, 2) if heads_last else t

    out = F.scaled_dot_product_attention(
        layout(q).float(), layout(k).float(), layout(v).float(), is_causal=causal
    )
    return layout(out)


def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """IoU of every box of `a` (N, 4: x1, y1, x2, y2) with every box of `b` (M, 4)."""
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    low = torch.maximum(a[:, None, :2], b[None, :, :2])
    high = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (high - low).clamp(min=0).prod(dim=2)
    return inter / (area_a[:, None] + area_b[None, :] - inter)


def nms(iou: torch.Tensor, scores: torch.Tensor, threshold: float) -> torch.Tensor:
    """Greedy NMS over a pairwise IoU matrix: the kept indices, highest score first (a box is
    dropped when its IoU with a kept one is above `threshold`)."""
    order = torch.argsort(scores, descending=True, stable=True).tolist()
    kept: list[int] = []
    for i in order:
        if all(float(iou[i, j]) <= threshold for j in kept):
            kept.append(i)
    return torch.tensor(kept, dtype=torch.long)


def boxes(count: int, *, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` random boxes (x1, y1, x2, y2) in a 100 x 100 image that overlap often, and
    distinct scores (so the order NMS keeps is one)."""
    corner = torch.rand(count, 2) * 80
    size = torch.rand(count, 2) * 30 + 5
    scores = torch.randperm(count).float() / count
    return torch.cat([corner, corner + size], dim=1).to(device), scores.to(device)


def farthest_points(points: torch.Tensor, count: int) -> torch.Tensor:
    """Farthest point sampling of one cloud (N, D) from point 0: the indices, in pick order."""
    picked = [0]
    nearest = ((points - points[0]) ** 2).sum(dim=1)
    for _ in range(count - 1):
        i = int(torch.argmax(nearest))
        picked.append(i)
        nearest = torch.minimum(nearest, ((points - points[i]) ** 2).sum(dim=1))
    return torch.tensor(picked, dtype=torch.long)


def nearest(
    queries: torch.Tensor, points: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The k nearest of `points` (N, D) to each query (M, D) by cdist: squared distances and
    indices, nearest first, each (M, k)."""
    dist = torch.cdist(queries.double(), points.double()) ** 2
    found = dist.topk(k, dim=1, largest=False)
    return found.values, found.indices
