"""Differential tests for grad modes: MODE-1 to MODE-11 (spec/mode.md).

Grad mode is global to the thread, so every program that changes it restores it in `finally`:
a failing engine must not leave later tests running with recording off.
"""
import pytest


@pytest.mark.clause("MODE-1")
def test_no_grad_results_do_not_require_grad(differential):
    def prog(torch, log):
        w = torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64, requires_grad=True)
        h = w.exp()                               # recorded before the block
        with torch.no_grad():
            outs = {"matmul": w @ h, "pow": w ** 2, "clamp": h.clamp(0.0, 5.0),
                    "mean": (w * h).mean(1), "neg": -h, "reflected": 1 - w}
        for label, t in outs.items():
            log(label, [t.requires_grad, t.grad_fn is None])
        log("values", outs["mean"])
        log("inputs keep their flags", [w.requires_grad, h.requires_grad, h.is_leaf])
    differential(prog)


@pytest.mark.clause("MODE-2")
def test_enable_grad_nests_inside_no_grad(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        with torch.no_grad():
            a = x * 2
            with torch.enable_grad():
                b = x * 3
                with torch.no_grad():
                    c = x * 4
                d = b * x
            e = x * 5
        log("requires_grad", [t.requires_grad for t in (a, b, c, d, e)])
        d.sum().backward()
        log("x.grad", x.grad)
    differential(prog)


@pytest.mark.clause("MODE-3")
def test_set_grad_enabled_follows_a_flag(differential):
    def prog(torch, log):
        w = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
        try:
            for train in (True, False, True):
                with torch.set_grad_enabled(train):
                    out = (w * w).sum()
                log(f"train={train}", [out.requires_grad, torch.is_grad_enabled()])
            torch.set_grad_enabled(False)
            log("bare call", [torch.is_grad_enabled(), (w + 1).requires_grad])
            with torch.set_grad_enabled(True):
                inner = w + 1
            log("after ctx", [torch.is_grad_enabled(), inner.requires_grad])
            torch.set_grad_enabled(True)
            log("bare call back", [torch.is_grad_enabled(), (w + 1).requires_grad])
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("MODE-3")
@pytest.mark.parametrize("made", [True, False])
@pytest.mark.parametrize("outer", ["grad", "no_grad", "set_false", "raises"])
def test_set_grad_enabled_sets_its_mode_each_time_its_block_is_entered(differential, made, outer):
    """A set_grad_enabled object made before the `with` (or entered again) sets its mode on
    entering; the exit restores the mode in force when it was made, not when it was entered."""
    def prog(torch, log):
        x = torch.tensor([1.0, -2.0] if outer != "grad" else 1.5, dtype=torch.float64,
                         requires_grad=True)
        try:
            torch.set_grad_enabled(not made)
            manager = torch.set_grad_enabled(made)
            log("at the call", torch.is_grad_enabled())
            if outer == "no_grad":
                torch.set_grad_enabled(True)
                outer_cm = torch.no_grad()
            elif outer == "set_false":
                outer_cm = torch.set_grad_enabled(False)
            else:
                torch.set_grad_enabled(not made)
                outer_cm = torch.enable_grad() if made else torch.no_grad()
            with outer_cm:
                log("outer", torch.is_grad_enabled())
                for turn in range(2):
                    def block(turn=turn):
                        with manager:
                            y = (x * x).sum()
                            log(f"entered {turn}", [torch.is_grad_enabled(), y.requires_grad])
                            if outer == "raises":
                                raise ValueError("inside")
                    log.attempt(f"block {turn}", block)
                    log(f"after {turn}", [torch.is_grad_enabled(), (x + 1).requires_grad])
            log("after outer", torch.is_grad_enabled())
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("UNSPEC-19")
@pytest.mark.clause("MODE-4")
@pytest.mark.parametrize("manager", ["no_grad()", "enable_grad()", "set_grad_enabled(True)",
                                     "set_grad_enabled(False)", "inference_mode()",
                                     "inference_mode(False)"])
@pytest.mark.parametrize("outer", [True, False])
def test_a_manager_entered_again_after_its_block_ended(differential, manager, outer):
    """Entering one manager object again once its block has ended is specified (only a
    nested entry is open, UNSPEC-19, and is never run here: it corrupts torch 2.13's thread
    state). set_grad_enabled is made in the outer mode, so that its exit restores it."""
    def prog(torch, log):
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        try:
            torch.set_grad_enabled(outer)
            cm = eval("torch." + manager, {"torch": torch})
            torch.set_grad_enabled(outer)
            for turn in range(3):
                with cm:
                    y = x * 2
                    log(f"inside {turn}", [torch.is_grad_enabled(),
                                           torch.is_inference_mode_enabled(),
                                           y.requires_grad, y.is_inference()])
                log(f"after {turn}", [torch.is_grad_enabled(), torch.is_inference_mode_enabled()])
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("MODE-4")
def test_mode_restored_after_exceptions(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], requires_grad=True)

        def fail_in(manager, mode_inside):
            with manager:
                log("inside", torch.is_grad_enabled() == mode_inside)
                raise ValueError("boom")
        try:
            log.attempt("no_grad", lambda: fail_in(torch.no_grad(), False))
            log("after no_grad", torch.is_grad_enabled())
            with torch.no_grad():
                log.attempt("enable_grad", lambda: fail_in(torch.enable_grad(), True))
                log("after enable_grad", torch.is_grad_enabled())
                log.attempt("set_grad_enabled", lambda: fail_in(torch.set_grad_enabled(True), True))
                log("after set_grad_enabled", torch.is_grad_enabled())
            log("outside", torch.is_grad_enabled())

            def backward_in_no_grad():
                with torch.no_grad():
                    (x * 2).sum().backward()
            log.attempt("engine error", backward_in_no_grad)
            log("after engine error", [torch.is_grad_enabled(), (x * 2).requires_grad])
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("MODE-5")
def test_decorators_apply_per_call(differential):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        try:
            @torch.no_grad
            def bare(t):
                return t * 2, torch.is_grad_enabled()

            @torch.set_grad_enabled(True)
            def recording(t):
                return t * 2

            @torch.no_grad()
            def failing():
                raise KeyError("inside")

            @torch.enable_grad()
            def fn_grad(t):
                return (t * t).sum()

            log("after decorating", torch.is_grad_enabled())
            r, mode = bare(x)
            log("bare no_grad", [r.requires_grad, mode, torch.is_grad_enabled()])
            with torch.no_grad():
                rec = recording(x)
                log("caller mode kept", torch.is_grad_enabled())
                g = fn_grad(x)
            log("set_grad_enabled(True) under no_grad", rec.requires_grad)
            g.backward()
            log("x.grad via enable_grad", x.grad)
            log.attempt("exception", failing)
            log("after exception", torch.is_grad_enabled())
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("MODE-12")
@pytest.mark.parametrize("mode", ["no_grad()", "no_grad", "enable_grad()",
                                  "set_grad_enabled(False)", "set_grad_enabled(True)",
                                  "inference_mode()"])
@pytest.mark.parametrize("outer", [True, False])
def test_a_decorated_generator_runs_each_resumption_in_the_mode(differential, mode, outer):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        deco = {"no_grad()": torch.no_grad(), "no_grad": torch.no_grad,
                "enable_grad()": torch.enable_grad(),
                "set_grad_enabled(False)": torch.set_grad_enabled(False),
                "set_grad_enabled(True)": torch.set_grad_enabled(True),
                "inference_mode()": torch.inference_mode()}[mode]

        @deco
        def steps(t):
            got = yield (t * 2).requires_grad, torch.is_grad_enabled()
            try:
                yield got, (t * 3).requires_grad, torch.is_grad_enabled()
            except KeyError:
                yield "thrown", torch.is_grad_enabled()
            yield "last", torch.is_grad_enabled()

        try:
            with torch.set_grad_enabled(outer):
                gen = steps(x)
                log("made, caller's mode", torch.is_grad_enabled())
                log("first", next(gen))
                log("between", torch.is_grad_enabled())
                log("send", gen.send(7))
                log("throw", gen.throw(KeyError("k")))
                log("between again", torch.is_grad_enabled())
                log("rest", list(gen))
                early = steps(x)
                next(early)
                early.close()
                log("after close", torch.is_grad_enabled())
            log("restored", torch.is_grad_enabled())
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("MODE-6")
def test_is_grad_enabled_tracks_every_change(differential):
    def prog(torch, log):
        seen = [torch.is_grad_enabled()]
        try:
            with torch.set_grad_enabled(False):
                seen.append(torch.is_grad_enabled())
                with torch.no_grad():
                    seen.append(torch.is_grad_enabled())
                    with torch.enable_grad():
                        seen.append(torch.is_grad_enabled())
                    seen.append(torch.is_grad_enabled())
                seen.append(torch.is_grad_enabled())
            seen.append(torch.is_grad_enabled())
            torch.set_grad_enabled(False)
            seen.append(torch.is_grad_enabled())
        finally:
            torch.set_grad_enabled(True)
        seen.append(torch.is_grad_enabled())
        log("modes", seen)
        log("all bools", all(type(s) is bool for s in seen))
    differential(prog)


@pytest.mark.clause("MODE-7")
def test_factories_keep_requires_grad_under_no_grad(differential):
    def prog(torch, log):
        torch.manual_seed(3)
        with torch.no_grad():
            made = {"randn": torch.randn(3, requires_grad=True),
                    "arange": torch.arange(1.0, 4.0, requires_grad=True),
                    "zeros_like": torch.zeros_like(torch.ones(3), requires_grad=True),
                    "tensor f64": torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64,
                                               requires_grad=True)}
            inside = made["arange"] * made["zeros_like"]
        for label, t in made.items():
            log(label, [t.requires_grad, t.is_leaf, t.grad_fn is None])
        log("op inside", inside.requires_grad)
        out = (made["arange"] * made["arange"] + made["zeros_like"]).sum()
        out.backward()
        log("grads", [made["arange"].grad, made["zeros_like"].grad])
    differential(prog)


@pytest.mark.clause("MODE-8")
def test_backward_runs_with_grad_mode_off(differential):
    def prog(torch, log):
        w = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        k = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
        seen = []
        h = w * k
        h.register_hook(lambda g: seen.append(
            [torch.is_grad_enabled(), g.requires_grad, (g * k).requires_grad]))
        h.sum().backward()
        log("hook saw", seen)
        try:
            torch.set_grad_enabled(False)
            (w * w).sum()                          # not recorded: no graph to run
            log("mode off", torch.is_grad_enabled())
        finally:
            torch.set_grad_enabled(True)
        y = (w * w).sum()
        with torch.set_grad_enabled(False):
            y.backward()
        log("w.grad", w.grad)
        z = (w * k).sum()
        with torch.no_grad():
            gw, gk = torch.autograd.grad(z, (w, k))
        log("autograd.grad under no_grad", [gw, gk, gw.requires_grad])
    differential(prog)


@pytest.mark.clause("MODE-9")
def test_views_taken_under_no_grad(differential):
    def prog(torch, log):
        base = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        with torch.no_grad():
            views = {"t": base.t(), "unsqueeze": base.unsqueeze(0), "row": base[1],
                     "view": base.view(4), "slice": base[:, 1:]}
            plain = base * 1
        log("non-view", [plain.requires_grad, plain.is_leaf])
        for label, v in views.items():
            log(label, [v.requires_grad, v.is_leaf, v.grad_fn is None])
        out = (views["row"] * views["t"]).sum()
        log("op on views", out.requires_grad)
        out.backward()
        log("no gradient flowed", [base.grad is None, views["row"].grad is None])
        log.attempt("in-place with grad on", lambda: views["view"].add_(1))
        with torch.no_grad():
            views["row"].mul_(10)
        log("in-place under no_grad", base)
        other = torch.ones(2)
        with torch.no_grad():
            ov = other[0:1]
        log("view of plain tensor", ov.requires_grad)
    differential(prog)


@pytest.mark.clause("MODE-9")
def test_a_gradient_summed_to_a_0d_input_is_no_view(differential):
    """Only where a backward formula returns a view is a returned gradient a view made under
    no_grad; a gradient summed to a 0-d input is a plain sum, so a view of it may be written
    in place with a value that requires grad."""
    def prog(torch, log):
        s = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
        m = torch.tensor([[0.25, 0.25, -0.25], [1.0, 2.0, 1.0]], dtype=torch.float64,
                         requires_grad=True)
        gout = torch.tensor([[-0.5, 0.75, 2.0], [2.0, 0.5, -2.0]], dtype=torch.float64)
        gs, gm = torch.autograd.grad([m + s], [s, m], grad_outputs=[gout])
        log("gs", [gs, gs._base is None, gs.requires_grad])
        v = gs.reshape(1, 1)
        log.attempt("v[-1, 0::2] = s", lambda: v.__setitem__((-1, slice(0, None, 2)), s))
        log("gs after", [gs, gs.requires_grad, gs.is_leaf])
        r = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        c = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
        (gr,) = torch.autograd.grad([c + r], [r], grad_outputs=[c])
        log("a gradient summed to shape (2,) is a view", [gr, gr._base is not None])
        log.attempt("and may not take a value that requires grad",
                    lambda: gr.__setitem__(0, r[0]))
    differential(prog)


# ======================= MODE-11 =======================

def _nograd_view_after_write(torch, log, dtype, base_kind, written, write_mode):
    """A view taken under no_grad, and a view of it taken with grad mode on, then a write of a
    value that requires grad (refused where MODE-9 or INPLACE-1/2 refuse it)."""
    dt = getattr(torch, dtype)
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=dt, requires_grad=True)
    s = torch.tensor(0.5, dtype=dt, requires_grad=True)
    base = {"leaf": x, "non-leaf": x * 2, "no grad": torch.zeros(2, 3, dtype=dt)}[base_kind]
    with torch.no_grad():
        v = base.t()[1]
    vv = v[0:1]
    target = {"the base": base, "another view": base[0], "the view": v}[written]
    try:
        torch.set_grad_enabled(write_mode == "grad")
        log.attempt("write", lambda: target.add_(s))
    finally:
        torch.set_grad_enabled(True)
    return base, v, vv


@pytest.mark.clause("MODE-11")
@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("base_kind", ("leaf", "non-leaf", "no grad"))
@pytest.mark.parametrize("written", ("the base", "another view", "the view"))
@pytest.mark.parametrize("write_mode", ("no_grad", "grad"))
def test_a_no_grad_view_refuses_its_history_after_a_write(differential, dtype, base_kind,
                                                          written, write_mode):
    def prog(torch, log):
        base, v, vv = _nograd_view_after_write(torch, log, dtype, base_kind, written,
                                               write_mode)
        log("base", [base, base.requires_grad])
        for name, t in (("view", v), ("view of it", vv)):
            log(name + " requires_grad", t.requires_grad)
            log.attempt(name + " grad_fn", lambda t=t: t.grad_fn)
            log.attempt(name + " is_leaf", lambda t=t: t.is_leaf)
            log.attempt(name + " in an op", lambda t=t: t * 2)
            log.attempt(name + " in a view op", lambda t=t: t[0:1])
    differential(prog)


@pytest.mark.clause("MODE-11")
@pytest.mark.parametrize("base_kind", ("leaf", "non-leaf"))
def test_a_refused_no_grad_view_keeps_its_values(differential, base_kind):
    def prog(torch, log):
        base, v, vv = _nograd_view_after_write(torch, log, "float64", base_kind,
                                               "another view", "no_grad")
        log("values", [v, vv])
        log("detach", [v.detach() * 3, vv.detach().requires_grad])
        try:
            with torch.no_grad():
                log("an op under no_grad", [v * 3, (v * 3).requires_grad])
        finally:
            torch.set_grad_enabled(True)
    differential(prog)


@pytest.mark.clause("MODE-11")
@pytest.mark.parametrize("base_kind", ("non-leaf", "no grad"))
def test_a_pass_reaching_the_accumulator_of_a_refused_view_raises(differential, base_kind):
    def prog(torch, log):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = x * 1 if base_kind == "non-leaf" else torch.zeros(3)
        with torch.no_grad():
            v = base[1:]
        v.requires_grad_()                  # a leaf of its own (MODE-10)
        s = (v * torch.tensor([2.0, 3.0])).sum()
        other = (x * 4).sum()
        base[0:1].copy_(x[0:1] * 5)
        log.attempt("a pass through the view's accumulator", lambda: s.backward())
        log("v.grad", v.grad)
        other.backward()
        log("x.grad through another graph", x.grad)
    differential(prog)


@pytest.mark.clause("MODE-11")
def test_a_no_grad_view_of_a_base_without_grad_is_not_refused(differential):
    def prog(torch, log):
        buf = torch.zeros(2, 2)
        with torch.no_grad():
            v = buf[1]
        buf.mul_(2.0)
        buf[0].add_(1.0)
        log("base", [buf, buf.requires_grad])
        log("view", [v.grad_fn is None, v.is_leaf, v.requires_grad, v * 2])
    differential(prog)


@pytest.mark.clause("MODE-11")
@pytest.mark.parametrize("base_kind", ("leaf", "non-leaf", "no grad"))
@pytest.mark.parametrize("chain", ("slice", "t then select"))
def test_a_view_of_a_no_grad_view_is_written_as_one(differential, base_kind, chain):
    def prog(torch, log):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        base = {"leaf": x, "non-leaf": x * 2, "no grad": torch.zeros(2, 2)}[base_kind]
        with torch.no_grad():
            v = base[1]
        vv = v[0:1] if chain == "slice" else v.unsqueeze(0).t()[0]
        s = torch.tensor([0.5], requires_grad=True)
        log("view of it", [vv.requires_grad, vv.grad_fn is None])
        log.attempt("mul_ by a number", lambda: vv.mul_(2.0))
        log.attempt("add_ of a tensor that requires grad", lambda: vv.add_(s))
        try:
            with torch.no_grad():
                log.attempt("add_ under no_grad", lambda: vv.add_(s))
        finally:
            torch.set_grad_enabled(True)
        log("base", [base, base.requires_grad])
    differential(prog)


@pytest.mark.clause("MODE-9")
@pytest.mark.parametrize("made_by", ["function", "split", "unbind", "no_grad"])
@pytest.mark.parametrize("view", ["slice", "t", "view", "select"])
def test_a_view_taken_under_no_grad_of_a_view_that_refuses_in_place(differential, made_by, view):
    """A view taken under no_grad of an output of a custom Function returned as it is (FUNC-14)
    or of a multi-output view op (VIEW-7) is a no_grad view like any other: written in place
    with grad mode on it raises NO_GRAD_VIEW_INPLACE, not its base's error; taken with grad
    mode on it keeps its base's. refimpl crashed on the first until the generator's custom
    Functions met no_grad views (seed 2026, program 5612)."""
    def prog(torch, log):
        class Identity(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        y = x * 2
        if made_by == "function":
            v = Identity.apply(y)
        elif made_by == "split":
            v = y.split(1)[0]
        elif made_by == "unbind":
            v = y.unbind(0)[1].unsqueeze(0)
        else:
            with torch.no_grad():
                v = y[0:]
        take = {"slice": lambda t: t[0:], "t": lambda t: t.t(), "view": lambda t: t.view(-1),
                "select": lambda t: t[0]}[view]
        with torch.no_grad():
            quiet = take(v)
        loud = take(v)
        log("no_grad view", [quiet.requires_grad, quiet.grad_fn is None])
        log.attempt("in-place with grad on", lambda: quiet.add_(1.0))
        log.attempt("in-place on the view taken with grad on", lambda: loud.mul_(2.0))
        with torch.no_grad():
            quiet.mul_(3.0)
        log("y", y)
    differential(prog)


@pytest.mark.clause("MODE-3")
@pytest.mark.clause("INFER-2")
@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
def test_the_managers_under_autograd_and_torch_is_inference(differential, shape):
    """torch.autograd.no_grad, enable_grad, set_grad_enabled and inference_mode are torch's
    managers under another name, and torch.is_inference(t) is t.is_inference()."""
    def prog(torch, log):
        ag = torch.autograd
        x = torch.ones(shape, dtype=torch.float64, requires_grad=True)
        try:
            with ag.no_grad():
                a = x * 2
                with ag.enable_grad():
                    b = x * 2
            with ag.set_grad_enabled(False):
                c = x * 2
            with ag.inference_mode():
                d = x * 2
                v = x.detach()
            log("flags", [t.requires_grad for t in (a, b, c, d)] + [torch.is_grad_enabled()])
            log("is_inference", [torch.is_inference(t) for t in (x, a, d, v)])
            if shape:
                log("a view of an inference tensor", torch.is_inference(d[0]))
            log.attempt("not a tensor", lambda: torch.is_inference(1.0))
        finally:
            torch.set_grad_enabled(True)
    differential(prog)
