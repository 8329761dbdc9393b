r"""Hand-written gradients of a stack of plain MLPs: the fast path of :mod:`._torch_training`.

For a module that is an ``nn.Sequential`` of ``nn.Linear`` layers with
``nn.ReLU`` / ``nn.Tanh`` / ``nn.Sigmoid`` between them, the per-model
gradients of the weighted loss are written out as a dozen batched kernels per
step (``baddbmm``, ``bmm`` and elementwise ops) instead of
``torch.func.vmap(torch.func.grad(...))``, whose transforms cost several
milliseconds of Python and dispatch per step on a CPU. The maths is the same
backpropagation: with :math:`A_0 = X`, :math:`Z_k = A_{k-1} W_k^\top + b_k`,
:math:`A_k = \sigma_k(Z_k)` and normalised weights
:math:`\tilde w_i = w_i / \max(1, \sum_j w_j)`,

.. math:: \frac{\partial L}{\partial Z_K} = \tilde w \odot (\operatorname{softmax}(Z_K) - e_y)
          \ \text{(cross-entropy)}, \qquad 2\,\tilde w \odot (Z_K - y) \ \text{(squared error)},

.. math:: \frac{\partial L}{\partial W_k} = \Bigl(\frac{\partial L}{\partial Z_k}\Bigr)^{\!\top} A_{k-1},\quad
          \frac{\partial L}{\partial b_k} = \sum_i \frac{\partial L}{\partial Z_{k,i}},\quad
          \frac{\partial L}{\partial Z_{k-1}} = \sigma_{k-1}'\odot \frac{\partial L}{\partial Z_k} W_k,

with :math:`\sigma'` taken from the activation's output (ReLU: :math:`1[A > 0]`,
tanh: :math:`1 - A^2`, sigmoid: :math:`A(1 - A)`), exactly as autograd does.
Any other module keeps the generic ``vmap`` path.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable

Tensor = Any  # a torch.Tensor; torch is imported inside the functions only


@dataclass(frozen=True)
class MLPLayer:
    """One ``nn.Linear`` of the chain: its parameter names and the activation after it (None: the output)."""

    weight: str
    bias: str | None
    activation: str | None


_ACTIVATIONS = ("ReLU", "Tanh", "Sigmoid")


def mlp_layers(template: Any, trained: list[str]) -> list[MLPLayer] | None:
    """The chain of layers of ``template`` when the fast path can train it, else None.

    It can when ``template`` is exactly an ``nn.Sequential`` (no subclass, no
    hooks, no buffers) alternating ``nn.Linear`` and one of ReLU, Tanh, Sigmoid
    (exact classes, default arguments), ending with an ``nn.Linear``, and
    ``trained`` names every one of its parameters.
    """
    import torch
    from torch import nn

    if type(template) is not nn.Sequential or list(template.buffers()) or _has_hooks(template):
        return None
    children = list(template.named_children())  # a module used twice (shared weights) is listed once
    if not children or len(children) % 2 == 0 or len(children) != len(template):
        return None
    layers = []
    for position in range(0, len(children), 2):
        name, linear = children[position]
        activation = children[position + 1][1] if position + 1 < len(children) else None
        if type(linear) is not nn.Linear or _has_hooks(linear):
            return None
        kind = type(activation).__name__ if activation is not None else None
        if activation is not None and (kind not in _ACTIVATIONS or type(activation) is not getattr(nn, kind)
                                       or getattr(activation, "inplace", False) or _has_hooks(activation)):
            return None
        layers.append(MLPLayer(f"{name}.weight", None if linear.bias is None else f"{name}.bias", kind))
    names = [value for layer in layers for value in (layer.weight, layer.bias) if value is not None]
    if sorted(names) != sorted(trained) or not all(isinstance(p, torch.Tensor) for p in template.parameters()):
        return None
    return layers


def _has_hooks(module: Any) -> bool:
    return bool(module._forward_hooks or module._forward_pre_hooks or module._backward_hooks)


def mlp_gradient(layers: list[MLPLayer], task: str) -> Callable[..., dict[str, Tensor]]:
    """``grad(params, constants, weights, X, y)`` of a stack of MLPs, as :func:`._torch_training.stacked_gradient`.

    ``params`` maps names to stacked (B, ...) tensors; ``weights`` is (B, n);
    ``X`` is (n, d) rows shared by every model or (B, n, d) rows of each; ``y``
    is (n,) or (B, n). ``constants`` is unused (the chain has none). The last
    layer's output is laid out (B, K, n), so the softmax runs over a middle
    axis (torch's kernel over a last axis of 2 classes is ten times slower).
    The terms of the output gradient that depend on the weights and labels
    only are computed once for a given pair of tensors (full-batch training
    passes the same ones at every step).
    """
    import torch

    # the (scale, offset) of one (weights, y) pair, held only while that weights tensor lives: a chunk's
    # terms leave with its weights, so no device memory stays held between calls. One per thread: threads
    # training chunks of one game at once (the threading backend) each keep their own pair's.
    per_thread = threading.local()

    def gradient(params: dict[str, Tensor], constants: dict[str, Tensor], weights: Tensor, X: Tensor,
                 y: Tensor) -> dict[str, Tensor]:
        count = weights.shape[0]
        inputs = X if X.dim() == 3 else X.unsqueeze(0).expand(count, *X.shape)
        if not hasattr(per_thread, "cache"):
            per_thread.cache = {}
        cache: dict[str, Any] = per_thread.cache
        if not cache or cache["weights"]() is not weights or cache["y"]() is not y:
            cache.clear()
            cache.update(weights=weakref.ref(weights), y=weakref.ref(y),
                         terms=_output_gradient_terms(task, weights, y, params[layers[-1].weight].shape[1]))
            weakref.finalize(weights, _forget_dead, cache)
        scale, offset = cache["terms"]
        activations = _hidden_forward(layers, params, inputs)
        last = _last_layer_transposed(layers[-1], params, activations[-1])
        if task == "classification":  # dL/dZ = w~ (softmax(Z) - e_y)
            delta = torch.softmax(last, dim=1).mul_(scale).sub_(offset)
        else:  # dL/dz = 2 w~ (z - y)
            delta = torch.addcmul(offset, last, scale, value=1.0)
        return _backward(layers, params, activations, delta)

    return gradient


def _forget_dead(cache: dict[str, Any]) -> None:
    """Drop the cached terms once their weights tensor is gone (a newer pair's terms stay)."""
    if cache and cache["weights"]() is None:
        cache.clear()


def _output_gradient_terms(task: str, weights: Tensor, y: Tensor, width: int) -> tuple[Tensor, Tensor]:
    """``(scale, offset)`` with dL/dZ = scale * softmax(Z) - offset (classification) or scale * z + offset."""
    import torch

    count = weights.shape[0]
    normalised = (weights / weights.sum(dim=1, keepdim=True).clamp(min=1.0)).unsqueeze(1)  # (B, 1, n)
    labels = y if y.dim() == 2 else y.unsqueeze(0).expand(count, -1)
    if task == "classification":
        offset = torch.zeros((count, width, labels.shape[1]), dtype=weights.dtype, device=weights.device)
        offset.scatter_(1, labels.unsqueeze(1), normalised)
        return normalised, offset
    scale = normalised * 2.0
    return scale, -scale * labels.unsqueeze(1)


def _hidden_forward(layers: list[MLPLayer], params: dict[str, Tensor], inputs: Tensor) -> list[Tensor]:
    """The input and each hidden layer's activation output, all (B, n, width)."""
    import torch

    outputs, current = [inputs], inputs
    for layer in layers[:-1]:
        weight_t = params[layer.weight].transpose(1, 2)
        if layer.bias is None:
            current = torch.bmm(current, weight_t)
        else:
            current = torch.baddbmm(params[layer.bias].unsqueeze(1), current, weight_t)
        if layer.activation == "ReLU":
            current = torch.relu_(current)
        elif layer.activation == "Tanh":
            current = torch.tanh_(current)
        else:
            current = torch.sigmoid_(current)
        outputs.append(current)
    return outputs


def _last_layer_transposed(layer: MLPLayer, params: dict[str, Tensor], below: Tensor) -> Tensor:
    """The last layer's output, (B, K, n): :math:`W A^\top + b`."""
    import torch

    if layer.bias is None:
        return torch.bmm(params[layer.weight], below.transpose(1, 2))
    return torch.baddbmm(params[layer.bias].unsqueeze(2), params[layer.weight], below.transpose(1, 2))


def _backward(layers: list[MLPLayer], params: dict[str, Tensor], inputs: list[Tensor],
              delta_t: Tensor) -> dict[str, Tensor]:
    """Every parameter's gradient from ``delta_t`` = dL/d(last output), (B, K, n); ``inputs[k]``: layer k's input."""
    import torch

    last = layers[-1]
    grads: dict[str, Tensor] = {last.weight: torch.bmm(delta_t, inputs[-1])}
    if last.bias is not None:
        grads[last.bias] = delta_t.sum(dim=2)
    upstream = torch.bmm(delta_t.transpose(1, 2), params[last.weight]) if len(layers) > 1 else None
    for k in range(len(layers) - 2, -1, -1):
        layer, output = layers[k], inputs[k + 1]
        if layer.activation == "ReLU":  # the derivative from the activation's output, as autograd takes it
            delta = torch.ops.aten.threshold_backward(upstream, output, 0)
        elif layer.activation == "Tanh":
            delta = torch.ops.aten.tanh_backward(upstream, output)
        else:
            delta = torch.ops.aten.sigmoid_backward(upstream, output)
        grads[layer.weight] = torch.bmm(delta.transpose(1, 2), inputs[k])
        if layer.bias is not None:
            grads[layer.bias] = delta.sum(dim=1)
        if k > 0:
            upstream = torch.bmm(delta, params[layer.weight])
    return grads
