"""One solver code for numpy and torch: the array namespace, device and dtype of a learner.

The solvers (:mod:`._softmax`, :mod:`._binary`, :mod:`._line_search`,
:mod:`._newton`, :mod:`._lbfgs`) and the ridge normal equations are written
once against the array API standard, through ``array_api_compat`` (as
scikit-learn's array-API support is): ``xp.sum``, ``xp.linalg.solve``,
``xp.einsum`` and the like resolve to numpy's own functions for numpy arrays
and to torch's for tensors on any device. :class:`ArrayBackend` adds what
the standard leaves out or spells differently: creation on the device in the
learner's dtype, in-place ``exp``, ``maximum`` with a Python scalar, copies
and the transfer back to numpy.

On the numpy path (numpy 2, itself an array-API namespace, is called
directly) every operation is the numpy call the learners made before this
layer existed, so their results are unchanged bit for bit: hashes of 42
learner outputs (both solvers, both metrics, prefix paths, ridge) were
compared before and after, and every committed result reproduced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import array_api_compat
except ImportError:  # pragma: no cover - scikit-learn vendors the same package (the GPU machine has no index)
    from sklearn.externals import array_api_compat

from ..._device import torch_dtype

# numpy 2 is an array-API namespace itself: calling it directly spares the compatibility layer's wrappers
_NUMPY_NAMESPACE = np if hasattr(np, "permute_dims") else array_api_compat.array_namespace(np.zeros(0))


# A numpy array or a torch tensor, by the backend (typed loosely: torch is optional and untyped here).
Array = Any


def namespace(x: Any) -> Any:
    """The array namespace of ``x``: numpy itself for numpy arrays (numpy >= 2), else ``array_api_compat``'s."""
    return _NUMPY_NAMESPACE if isinstance(x, np.ndarray) else array_api_compat.array_namespace(x)


class ArrayBackend:
    """The namespace ``xp``, device and float type every array of one learner lives in.

    Parameters
    ----------
    device : torch.device or None
        ``None``: numpy on the host; otherwise torch tensors on that device
        (resolved by :func:`shapley_research._device.resolve_device`).
    dtype : {"float64", "float32"}
        Type of every floating-point array.
    """

    def __init__(self, device: Any = None, dtype: str = "float64"):
        self.device = device
        self.dtype_name = dtype
        if device is None:
            self.xp = _NUMPY_NAMESPACE
            self.float = np.dtype(dtype)
            self.int = np.dtype(np.int64)
            self.bool = np.dtype(bool)
            self._on = {}
        else:
            import torch

            self.xp = array_api_compat.array_namespace(torch.zeros(0))
            self.float, self.int, self.bool = torch_dtype(dtype), torch.int64, torch.bool
            self._on = {"device": device}
        self.eps = float(self.xp.finfo(self.float).eps)
        self._scalars: dict[float, Any] = {}

    def __reduce__(self) -> tuple[Any, tuple[Any, str]]:
        """Pickled as its device and dtype (its namespace is a module, which pickle refuses)."""
        return ArrayBackend, (self.device, self.dtype_name)

    @property
    def is_numpy(self) -> bool:
        return self.device is None

    def _kind(self, kind: str) -> Any:
        return {"float": self.float, "int": self.int, "bool": self.bool}[kind]

    def asarray(self, x: Any, kind: str = "float") -> Any:
        """``x`` in this backend (a no-op for an array already there with this type)."""
        if self.is_numpy:
            return np.asarray(x, dtype=self._kind(kind))
        import torch

        return torch.as_tensor(np.asarray(x) if isinstance(x, (list, tuple)) else x, dtype=self._kind(kind),
                               **self._on)

    def zeros(self, shape: Any, kind: str = "float") -> Any:
        return self.xp.zeros(shape, dtype=self._kind(kind), **self._on)

    def ones(self, shape: Any, kind: str = "float") -> Any:
        return self.xp.ones(shape, dtype=self._kind(kind), **self._on)

    def empty(self, shape: Any) -> Any:
        return self.xp.empty(shape, dtype=self.float, **self._on)

    def full(self, shape: Any, value: float) -> Any:
        return self.xp.full(shape, value, dtype=self.float, **self._on)

    def arange(self, n: int) -> Any:
        return self.xp.arange(n, dtype=self.int, **self._on)

    def scalar(self, value: float) -> Any:
        """A 0-d float array (for ``where`` with two constants, which torch would make float32).

        Made once per value and reused: on a GPU each new one is a copy from
        the host that waits for it. Callers only read it.
        """
        cached = self._scalars.get(value)
        if cached is None:
            cached = self._scalars[value] = self.asarray(value)
        return cached

    def rows(self, mask: Any) -> Any:
        """Indices of the true entries of a (B,) mask: one device wait, where each boolean index would cost one."""
        return self.xp.nonzero(mask)[0]

    def copy(self, x: Any) -> Any:
        return x.copy() if self.is_numpy else x.clone()

    def exp_(self, x: Any) -> Any:
        """``exp`` in place (the softmax's passes over memory dominate its cost)."""
        return np.exp(x, out=x) if self.is_numpy else x.exp_()

    def maximum(self, x: Any, value: float) -> Any:
        """Elementwise ``max(x, value)`` for a Python scalar."""
        return np.maximum(x, value) if self.is_numpy else x.clamp(min=value)

    def to_numpy(self, x: Any) -> np.ndarray:
        """A numpy array of ``x`` (a no-op on the numpy path)."""
        return x if self.is_numpy else x.detach().cpu().numpy()

    def __repr__(self) -> str:
        return f"ArrayBackend(device={self.device}, dtype={self.dtype_name!r})"


NUMPY = ArrayBackend()  # the default backend of every learner
