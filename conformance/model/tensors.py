"""What the generator believes about one named tensor, its storage and its backward node.

The model is only a guide to drawing programs that mostly run: torch, the oracle, decides
what really happens.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

_created = itertools.count()     # the order nodes are made in: torch's sequence_nr (HOOK-14)


@dataclass(eq=False, slots=True)
class Storage:
    """A tensor's memory, shared by its views; `version` is its version counter.

    `doubt` counts the writes that may have reached it through a tensor the model calls a
    copy but torch may make a view (a reshape of what the model cannot prove contiguous:
    `may_reach`, the storages such a tensor may share), so that what torch would crash on
    is not drawn (T.hookable)."""
    version: int = 0
    doubt: int = 0
    may_reach: tuple[Storage, ...] = ()
    overwritten: bool = False        # an in-place write reached it (T.exact_now)


@dataclass(eq=False, slots=True)
class Node:
    """A backward node: a leaf's AccumulateGrad or an op's grad_fn. Its parents are fixed
    when it is made (an in-place op makes a new node), so what it reaches is too."""
    parents: list[Node] = field(default_factory=list)
    saved: list[tuple[Storage, int]] = field(default_factory=list)
    leaf: bool = False
    inplace: bool = False
    holds: bool = False              # saved something, tensor or number
    freed: bool = False
    hooks: dict[str, str] = field(default_factory=dict)       # handle -> behaviour
    post_hooks: list[str] = field(default_factory=list)
    returning: list[str] = field(default_factory=list)       # post hooks that return a value
    node_hooks: int = 0              # hooks on the grad_fn itself (HOOK-15)
    fn: tuple[str, ...] = ()         # a custom Function's node: the clauses its row exercises
    #                                  (conformance/lang/functions.py) ...
    cut: list[Node] = field(default_factory=list)   # ... and the parents its backward sends
    #                                  no gradient to (None: FUNC-6)
    packed: str = ""                 # recorded under saved-tensor hooks: their unpack
    #                                  behaviour (kinds/saved.py); not version-checked: SAVED-6
    frozen: bool = False             # a leaf's accumulator after requires_grad_(False): LEAF-16
    moved: bool = False              # ... and its tensor is a non-leaf now: INPLACE-15
    detached: bool = False           # saved as itself an input detached in place since (VER-16)
    refuses: bool = False            # set_()'s node, which has no derivative (DATA-8)
    seq: int = field(default_factory=_created.__next__, repr=False)
    reached: list[Node] | None = field(default=None, repr=False)    # graph.reach, kept (less
    #                                  the node itself)
    leaves: frozenset[int] | None = field(default=None, repr=False)   # graph.leaf_ids, kept


def accumulator() -> Node:
    """A new leaf's AccumulateGrad (Node(leaf=True), without a class's keyword argument,
    which costs a dict per call: every leaf that requires grad is made with one)."""
    node = Node()
    node.leaf = True
    return node


@dataclass(eq=False, slots=True)
class T:
    """What the generator believes about one named tensor."""
    name: str
    shape: tuple[int, ...]
    dtype: str
    rg: bool
    leaf: bool
    storage: Storage
    node: Node | None = None         # grad node (AccumulateGrad for leaves that require grad)
    base: T | None = None            # view base
    views: list[T] = field(default_factory=list)
    origin: str = "leaf"             # leaf | op | no_grad | detach | data | view | grad |
    #                                  held_grad (what a leaf's .grad holds: GRAD-3) |
    #                                  assigned_grad (a leaf assigned to a .grad and kept)
    nograd_view: bool = False        # a view made under no_grad
    multi_view: bool = False         # an output of split, chunk or unbind, or a view of one
    expanded: bool = False           # overlapping memory: in-place is an error
    contiguous: bool = True
    retains: bool = False
    has_grad: bool = False
    packed_grad: bool = False        # its .grad holds what a pass computed from a packed value
    #                                  written after the pack (SAVED-6)
    fn_grad: tuple[str, ...] = ()    # its .grad holds what passes through custom Functions'
    #                                  nodes computed: their clauses (Node.fn)
    output_nr: int = 0               # its place among its node's outputs (a custom Function's
    #                                  second result: 1); an in-place op makes it 0 again
    cut: bool = False                # a custom Function's backward sends it no gradient (FUNC-6):
    #                                  a pass may reach it with none, so no hook is drawn on it
    hidden: bool = False             # never used again (aliased as some .grad; UNSPEC-9)
    old_node: Node | None = None     # after requires_grad_(False): the accumulator old graphs hold
    stale: bool = False              # its grad_fn is regenerated lazily by torch
    of_leaf_rg: bool = False         # a view made of a leaf that required grad at the time
    made_at: int = 0                 # storage version when its grad_fn was last set
    doubt_at: int = 0                # storage doubt then (Storage.doubt)
    shares: T | None = None          # the tensor whose memory it shares (a view, detach() or
    #                                  .data of it; `storage` is the version counter only)
    exact: bool = False              # computed from leaves by exact ops only (ops.Op.exact)
    at_kink: bool = False            # a leaf holding a value of tables.KINKS, or a view of one
    graph_open: int = 0              # UNSPEC-9: 2 a gradient a create_graph pass recorded (its
    #                                  grad_fn is open), 1 computed from one (its edges are)
    inference: bool = False          # made in inference mode, or a view of such a tensor: only
    #                                  the draws aimed at it use it (gen/inference.py)
    no_version: bool = False         # an inference tensor: no version counter (INFER-3)
    version_open: bool = False       # computed from an inference tensor: its _version starts
    #                                  at what torch's kernel leaves (UNSPEC-10)
    reach_at: tuple[int, ...] | None = None     # from vocabulary 16, a copy that may be a view
    #                                  (Storage.may_reach): those storages' versions then
    grad_dtype: str | None = ""      # set by set_grad_dtype: a dtype or None; "" unset, which
    #                                  reads the tensor's own dtype (GRAD-7, LEAF-13)
    data_set: bool = False           # given new contents by `.data =` (DATA-1, set_data)
    grad_plain: bool = False         # a leaf whose .grad is a tensor the spec fixes all of: not
    #                                  recorded, not shared with another's (UNSPEC-16), no
    #                                  failed pass since (UNSPEC-1); only vocabulary 21 reads it
    grad_mem: Storage | None = None  # ... and the storage of that .grad, once a name holds it
    grad_of: T | None = None         # a name bound to this leaf's .grad (grad_ref, set_grad)
    grad_node_known: bool = False    # a create_graph pass stored its .grad, whose node the spec
    #                                  fixes (DOUBLE-4, DOUBLE-1); no failed pass or assignment
    #                                  since, nor a plain pass into a retained one (UNSPEC-16)
    reshaped: bool = False           # a reshape made it or what it views: its _base is open
    #                                  (UNSPEC-3: a reshape may copy)
    is_float: bool = field(init=False, repr=False)      # float32 or float64 (else int64)

    def __post_init__(self) -> None:
        self.is_float = self.dtype in ("float32", "float64")

    def hookable(self) -> bool:
        # torch 2.13 segfaults registering a hook on a view whose storage was written since
        # the view was made (x[0], then x written under no_grad; pytorch/pytorch#196459):
        # never draw that, nor where a write may have reached it (Storage.doubt).
        # The same for a copy torch may have made a view of what was written since (reach_at).
        return self.rg and self.node is not None and not self.cut and (
            self.base is None or self.storage.version == self.made_at
            and self.storage.doubt == self.doubt_at) and (
            self.reach_at is None or self.reach_at == tuple(
                s.version for s in self.storage.may_reach))

    def version_unobserved(self) -> bool:
        """Its `_version` is never observed: a result torch's engine may write into (UNSPEC-3),
        an inference tensor, which has none (INFER-3), or a result computed from one, whose
        start is open (UNSPEC-10)."""
        return self.origin in ("grad", "held_grad", "assigned_grad") or self.no_version or \
            self.version_open

    def exact_now(self) -> bool:
        """Both engines hold its values bit for bit: computed from leaves by exact ops only,
        and no write has reached its memory since (the ops whose results jump at some inputs
        are drawn on such tensors only: ops.Op.jumps)."""
        if not self.exact:
            return False
        own, mem = self.storage, (self.shares or self).storage
        # a copy that torch may have made a view (Storage.may_reach) reads what its source holds
        for s in (own, mem, *own.may_reach, *mem.may_reach):
            if s.overwritten or s.doubt:
                return False
        return True

    def wrote(self) -> None:
        """Record an in-place write into its memory (and into what it may be a view of)."""
        own, mem = self.storage, self.memory().storage
        for s in (own, mem, *own.may_reach, *mem.may_reach):
            s.overwritten = True

    def memory(self) -> T:
        """The tensor that owns its memory (itself when it owns it)."""
        return self.shares or self

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n
