"""Backward graph nodes (GRAPH-3, GRAPH-4, GRAPH-5, HOOK-15), saved values (VER-7..VER-16,
FREE-1..FREE-7) and AccumulateGrad (LEAF-5, LEAF-7, LEAF-12, LEAF-16, HOOK-8, HOOK-13, DOUBLE-3,
GRAD-1, GRAD-2, GRAD-4).

A Node is what `tensor.grad_fn` returns. Every built-in op in scope has one output, so a node
receives one gradient and returns one gradient per entry of `next_functions`; a custom
Function's node (refimpl/function.py) may have several outputs and receives a list.
"""
from __future__ import annotations

import itertools
import weakref

from . import errors, grad_mode, hooks
from .layout import contiguous_format

sequence = itertools.count()  # creation order; the engine runs the most recent node first
FREED = "freed"                # Node.saved after release_variables()


class _NoVersion:
    """The version counter of every inference tensor: none (INFER-3). Reading `_version` raises;
    the in-place ops allowed on it inside inference mode bump nothing, and nothing saves it."""
    __slots__ = ()

    def __getitem__(self, _index):
        return 0

    def __setitem__(self, _index, _value):
        pass


NO_VERSION = _NoVersion()


class SavedValue:
    """An array a backward formula needs, plus the version of the tensor it came from.

    vc is the tensor's version counter (a one-element list shared by views); None for constants
    and for the private copy an in-place op keeps of its input's old value. origin names the
    tensor's creator in the error message: the node itself for a saved output, the input tensor
    (whose grad_fn is read when the error is raised, as torch does) for a saved input.
    """
    __slots__ = ("array", "vc", "version", "origin", "idx", "dtype", "edge", "nonleaf")

    def __init__(self, array, vc, origin, idx, dtype):
        self.array, self.vc, self.origin, self.idx, self.dtype = array, vc, origin, idx, dtype
        self.version = vc[0] if vc is not None else 0
        # a saved input that had a history: detach_() may clear it since (VER-16)
        self.nonleaf = origin is not None and not isinstance(origin, str) and \
            origin.grad_fn is not None
        # a result saved by an in-place op through a view: the view's grad_fn after the write,
        # where its graph leads under create_graph (the saving node is CopySlices' inner one)
        self.edge = None

    def unpack(self):
        if self.nonleaf and self.origin.grad_fn is None:
            raise errors.saved_detached_inplace()  # VER-16, before VER-7's check
        vc = self.vc
        if vc is not None and vc[0] != self.version:  # VER-7
            desc = f"{self.dtype.legacy} {list(self.array.shape)}"
            origin = self.origin
            if origin is not None and not isinstance(origin, str):
                fn = origin.grad_fn
                origin = fn.name() if fn is not None else None
            raise errors.version_mismatch(desc, origin, vc[0], self.version)
        return self.array


class Node:
    """One backward function: `backward(node, grad)` returns a tuple, one grad per input."""
    n_outputs = 1         # a custom Function's node may have more (refimpl/function.py)
    materializes = False  # a custom Function's node runs on undefined gradients too
    out_meta = None       # a custom Function's node: (shape, dtype) of each output
    __slots__ = ("_name", "backward", "next_functions", "in_meta", "saved", "info", "seq",
                 "_pre_hooks", "_post_hooks", "_tensor_hooks", "_retains_grad", "__weakref__")

    def __init__(self, name, backward, next_functions, in_meta, info=None):
        self._name, self.backward = name, backward
        self.next_functions = next_functions  # ((node or None, 0), ...) one per input
        self.in_meta = in_meta                # ((shape, dtype) or None, ...) one per input
        self.saved = ()
        self.info = info                      # non-tensor constants the formula needs
        self.seq = next(sequence)
        self._pre_hooks = self._post_hooks = self._tensor_hooks = None
        self._retains_grad = None   # output number -> weakref to the tensor retaining its grad

    def name(self) -> str:
        return self._name

    def __repr__(self):
        return f"<{self._name} object at {id(self):#x}>"

    # saved values (VER-9..VER-13): a None entry is a value the formula will not need.
    def save(self, *values):
        self.saved = values

    def unpack(self):
        saved = self.saved
        if saved is FREED:
            raise errors.graph_freed()
        return tuple(None if s is None else s.unpack() for s in saved)

    def release_variables(self):
        """Free the saved arrays (FREE-1). Nodes that saved nothing stay usable (FREE-3)."""
        if not self.saved and self._name != "torch::autograd::CopySlices":
            return                      # nothing saved: the common case, decided at once
        if self._name == "torch::autograd::CopySlices":  # drops its inner node: always freed
            self.info[0].release_variables()
            self.saved = FREED
        elif self.saved is not FREED and any(s is not None for s in self.saved):
            self.saved = FREED

    # hooks (HOOK-15): prehook(grad_outputs), hook(grad_inputs, grad_outputs)
    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return hooks.add(self._pre_hooks, fn)

    def register_hook(self, fn):
        if self._post_hooks is None:
            self._post_hooks = {}
        return hooks.add(self._post_hooks, fn)

    # tensor hooks and retain_grad of the tensors it made (HOOK-2, RETAIN-1): per output, as a
    # split's or a custom Function's node has several
    def _add_tensor_hooks(self, hooks_dict, nr=0):
        if self._tensor_hooks is None:
            self._tensor_hooks = []
        self._tensor_hooks.append((nr, hooks_dict))

    def tensor_hook_dicts(self):
        """(output number, the hooks its tensor holds), in the order the tensors first got one."""
        return self._tensor_hooks or ()

    def retain(self, nr, ref):
        """Make output nr's gradient fill the tensor `ref` refers to (None: no more)."""
        if ref is not None:
            self._retains_grad = {**(self._retains_grad or {}), nr: ref}
        elif self._retains_grad:
            self._retains_grad = {k: r for k, r in self._retains_grad.items() if k != nr} or None


class AccumulateGrad(Node):
    """The node of a leaf that requires grad; applying it adds the gradient to `leaf.grad`."""
    __slots__ = ("variable",)

    def __init__(self, leaf):
        super().__init__("torch::autograd::AccumulateGrad", _accumulate, (),
                         ((leaf._data.shape, leaf._dtype),))
        self.seq = float("inf")  # runs as soon as it is ready, as torch's AccumulateGrad does
        self.variable = leaf

    def tensor_hook_dicts(self):
        """The hooks the leaf holds now (HOOK-8), read when the node runs, as torch reads them;
        once the leaf got a history they are those registered since (INPLACE-15)."""
        current = self.variable._backward_hooks
        return ((0, current),) if current else ()


def _accumulate(node, grad):
    leaf = node.variable
    if leaf.grad_fn is not None:  # an in-place op gave the leaf (or a view's base) a history
        raise RuntimeError("leaf variable has been moved into the graph interior")
    if isinstance(leaf, grad.__class__):  # create_graph: the gradient is a tensor (DOUBLE-3);
        # isinstance, as the leaf may be a subclass of it (an nn.Parameter)
        if grad_mode.enabled[0] and leaf._requires_grad:
            _accumulate_recorded(leaf, grad)
            grad = None
        else:  # a hook of the leaf turned grad mode off: as without create_graph (DOUBLE-3)
            grad = grad._data
    if grad is None:  # only undefined gradients arrived: .grad stays, post hooks run (LEAF-10)
        pass
    elif not leaf._requires_grad:  # requires_grad_(False) since the graph was built: no update
        pass
    elif leaf._grad is None:  # new memory, a leaf with no history (GRAD-1)
        fresh = _grad_memory(leaf, grad.dtype)
        fresh[...] = grad
        leaf._grad = leaf._new_like(fresh)
    else:  # into the .grad's own memory, as torch without create_graph (LEAF-7, GRAD-4)
        g = leaf._grad
        be = g._be
        if g._data.size and any(s == 0 and n > 1
                                for n, s in zip(g._data.shape, be.strides(g._data), strict=True)):
            raise errors.overlapping_write()  # an expanded .grad cannot be written (LEAF-12)
        xp = be.xp
        if grad.dtype != g._data.dtype:  # added in the wider dtype, kept in .grad's (GRAD-4)
            wide = xp.result_type(g._data, grad)
            grad = xp.astype(xp.astype(g._data, wide) + xp.astype(grad, wide), g._data.dtype)
            g._data[...] = grad
        else:
            g._data[...] = g._data + grad
        if g._vc is NO_VERSION and not grad_mode.inference.value:
            # a .grad that is an inference tensor: an in-place write outside inference mode
            # (INFER-4); torch adds first, then raises (what it holds is open, UNSPEC-10)
            raise errors.inference_inplace()
        g._vc[0] += 1
    if leaf._post_hooks:  # run for a leaf frozen since the graph was built too (LEAF-16)
        _post_accumulate_hooks(leaf)
    return ()


def _accumulate_recorded(leaf, grad) -> None:
    """As torch's AccumulateGrad with grad mode on (DOUBLE-4): the first gradient copied into
    new memory of the leaf's layout (copy_: CopyBackwards, version 1), or, where the leaf's
    layout has gaps or overlaps, cloned row-major (CloneBackward0); later ones added out of
    place (AddBackward0)."""
    if leaf._grad is None and not _dense(leaf):
        leaf._grad = grad.clone(memory_format=contiguous_format)
    elif leaf._grad is None:
        leaf._grad = leaf._new_like(_grad_memory(leaf, grad._data.dtype)).copy_(grad)
    else:
        leaf._grad = leaf._grad + grad


def _dense(leaf) -> bool:
    """Whether the leaf's elements tile a block of memory (non-overlapping and dense), as
    torch's is_non_overlapping_and_dense has it: an empty leaf always does."""
    data, be, need = leaf._data, leaf._be, 1
    if data.size == 0:
        return True
    for s, n in sorted((s, n) for n, s in zip(data.shape, be.strides(data), strict=True) if n > 1):
        if s != need:
            return False
        need *= n
    return True


def _grad_memory(leaf, dtype):
    """Zeros for a leaf's first .grad (GRAD-2): the leaf's strides when its elements tile a block
    of memory (zeros_like keeps them), else row-major."""
    xp = leaf._be.xp
    return xp.zeros_like(leaf._data, dtype=dtype) if _dense(leaf) else xp.zeros(
        leaf._data.shape, dtype=dtype)


def _post_accumulate_hooks(leaf) -> None:
    """HOOK-13, as torch's _call_hooks: a hook that returns None or the tensor it was called
    with changes nothing; any other value is checked as a tensor hook's replacement is, and
    passed to the later hooks in the leaf's place; after the last, a replacement raises."""
    arg, replaced = leaf, False
    for fn in list(leaf._post_hooks.values()):
        res = fn(arg)
        if res is None or res is arg:
            continue
        hooks.check_replacement(fn, res, arg.shape, arg._dtype)
        arg, replaced = res, True
    if replaced:
        raise errors.post_hook_returned_value()


def accumulator(leaf) -> AccumulateGrad:
    """The leaf's AccumulateGrad, shared by every graph that uses the leaf while one is alive."""
    ref = leaf._accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._accumulator = weakref.ref(node)
    return node
