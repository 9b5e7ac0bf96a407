"""The custom `torch.autograd.Function`s the program language can apply (spec/function.md).

A program file is data, never code, so a program cannot define a Function: it names one of
this closed catalogue (the statement kind `function`, conformance/kinds/function.py). Each row
says what gradspec's model needs about the Function; `define` holds the Functions themselves,
written once against a torch-shaped module: the torch-shaped adapters call it with the engine's
module, and a repro script carries its source (conformance/reports/render.py), so that the
classes a divergence shows are the classes that ran. An engine without a torch-shaped module
implements the same catalogue through its own API (docs/engines.md, "Custom Functions").

Every Function's values show what it was given: `Gated` adds what `ctx.needs_input_grad` held
to its output (FUNC-5), and the backward of `Pair` and `PairLazy` tells a gradient of zeros
from None (FUNC-9, FUNC-10) by what it returns, so nothing beyond values is compared.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fn:
    """One Function of the catalogue: its name (the class's: its node is `<name>Backward`,
    FUNC-2), its arguments (`tensors` tensor arguments, then `numbers` numbers), and what the
    model of gradspec's generator needs."""

    name: str
    tensors: int = 1
    numbers: int = 0
    outputs: int = 1                    # 2: forward returns a tuple (FUNC-9)
    saves: tuple[str, ...] = ()         # "input0", "input1", "output0": save_for_backward
    dirty: bool = False                 # writes its first argument, marks it dirty, returns it
    returns_input: bool = False         # returns its argument as it is (FUNC-14)
    nondiff: tuple[int, ...] = ()       # outputs marked non-differentiable (FUNC-12)
    cuts: tuple[int, ...] = ()          # tensor arguments its backward returns None for
    mixed: bool = False                 # shows which arguments require grad: drawn with one
    #                                     that does not, half the time
    raises: str = ""                    # the error a pass through its node raises
    clauses: tuple[str, ...] = ()       # the clauses an apply of it exercises
    doc: str = ""


FNS: tuple[Fn, ...] = (
    Fn("Square", saves=("input0",), clauses=("FUNC-4", "FUNC-1", "FUNC-2"),
       doc="x * x, saving x; backward 2 * x * g"),
    Fn("ScaleOut", saves=("output0",), clauses=("FUNC-4", "FUNC-1", "FUNC-2"),
       doc="x * 3, saving its output; backward g * 3 + y * 0 (y unpacked: FUNC-4)"),
    Fn("MulCtx", tensors=2, saves=("input0", "input1"),
       clauses=("FUNC-3", "FUNC-8", "FUNC-4", "FUNC-2"),
       doc="forward(x, y) = x * y without ctx; setup_context saves both; backward g * y, "
           "g * x at the broadcast shape, summed to each argument's (FUNC-8)"),
    Fn("Gated", tensors=2, numbers=1, saves=("input0", "input1"), mixed=True,
       clauses=("FUNC-5", "FUNC-6", "FUNC-1", "FUNC-2"),
       doc="x * y * k + needs_input_grad[0] + 2 * needs_input_grad[1]; backward returns a "
           "gradient only where needs_input_grad says, None for k"),
    Fn("FirstOnly", tensors=2, cuts=(1,), clauses=("FUNC-6", "FUNC-1", "FUNC-2"),
       doc="x + y; backward (g, None): no gradient reaches y from it"),
    Fn("Pair", outputs=2, clauses=("FUNC-9", "FUNC-1", "FUNC-2"),
       doc="(x * 2, x * 3); backward g1 * 2 + g2 * 3 (an unused output's gradient is zeros)"),
    Fn("PairLazy", outputs=2, clauses=("FUNC-10", "FUNC-9", "FUNC-2"),
       doc="Pair after ctx.set_materialize_grads(False): a None gradient counts 100 (g1) or "
           "1000 (g2) instead"),
    Fn("WithFloor", outputs=2, nondiff=(1,), clauses=("FUNC-12", "FUNC-1", "FUNC-2"),
       doc="(x * 2, (x * 2).floor()), the second marked non-differentiable; backward "
           "g1 * 2 + g2 (g2 zeros)"),
    Fn("ScaleDirty", dirty=True, clauses=("FUNC-11", "FUNC-2"),
       doc="x.mul_(2), marked dirty and returned; backward g * 2"),
    Fn("OnceSquare", saves=("input0",), clauses=("FUNC-13", "FUNC-1", "FUNC-2"),
       doc="Square with a backward under @once_differentiable"),
    Fn("Identity", returns_input=True, clauses=("FUNC-14", "FUNC-1", "FUNC-2"),
       doc="returns x as it is (a view of x, FUNC-14); backward g"),
    # the errors a pass through them raises (conformance/gen/errors_function.py)
    Fn("TooFew", tensors=2, raises="FUNCTION_GRAD_COUNT", clauses=("FUNC-7",),
       doc="x + y; backward returns one gradient for its two arguments"),
    Fn("BadShape", raises="FUNCTION_INVALID_GRADIENT", clauses=("FUNC-8",),
       doc="x * 2; backward returns a gradient of one element more than x has"),
)
ROWS: dict[str, Fn] = {f.name: f for f in FNS}


def source() -> str:
    """The catalogue as a repro script's helpers: `define` and what it calls, then
    `F = define(torch)`."""
    parts = [inspect.getsource(f) for f in (define, _saving, _shaped, _failing)]
    return "from typing import Any\n\n\n" + "\n\n".join(parts) + "\n\nF = define(torch)\n"


def define(torch: Any) -> Any:
    """The catalogue's Functions on the torch-shaped module `torch`, as attributes of one
    namespace (`F.Square.apply(x)`)."""
    class Functions:
        """The catalogue (conformance/lang/functions.py)."""
    for make in (_saving, _shaped, _failing):
        for cls in make(torch):
            setattr(Functions, cls.__name__, cls)
    return Functions


def _saving(torch: Any) -> list[Any]:
    """The Functions that save tensors for backward (FUNC-3, -4, -5, -13)."""
    Function = torch.autograd.Function
    once_differentiable = torch.autograd.function.once_differentiable

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    class ScaleOut(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 3
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * 3 + y * 0

    class MulCtx(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    class Gated(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.k = k
            ctx.save_for_backward(x, y)
            needs = ctx.needs_input_grad
            return x * y * k + float(needs[0]) + 2.0 * float(needs[1])

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            needs = ctx.needs_input_grad
            return (g * y * ctx.k if needs[0] else None, g * x * ctx.k if needs[1] else None,
                    None)

    class OnceSquare(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    return [Square, ScaleOut, MulCtx, Gated, OnceSquare]


def _shaped(torch: Any) -> list[Any]:
    """The Functions whose outputs or gradients have a shape of their own: None gradients,
    tuples, a non-differentiable output, a dirty input, an input returned (FUNC-6, -9 to -12,
    -14)."""
    Function = torch.autograd.Function

    class FirstOnly(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g, None

    class Pair(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    class PairLazy(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            if g1 is None and g2 is None:
                return None
            a = g1 * 2 if g1 is not None else 100.0
            b = g2 * 3 if g2 is not None else 1000.0
            return a + b

    class WithFloor(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            low = y.floor()
            ctx.mark_non_differentiable(low)
            return y, low

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2

    class ScaleDirty(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    return [FirstOnly, Pair, PairLazy, WithFloor, ScaleDirty, Identity]


def _failing(torch: Any) -> list[Any]:
    """The Functions whose backward returns what the engine refuses (FUNC-7, FUNC-8)."""
    Function = torch.autograd.Function

    class TooFew(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return torch.zeros(g.numel() + 1, dtype=g.dtype, device=g.device)

    return [TooFew, BadShape]
