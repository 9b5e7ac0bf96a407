"""Grad-mode statements: with-blocks and decorated blocks (inference mode too), and
is_grad_enabled."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..lang.program import Stmt
from ..lang.trace import plain
from ..model.tables import GRAD_MODES
from . import fields
from .registry import Kind, kind

# params.mode -> its context manager in a script (set_grad_enabled takes params.enabled, and
# inference_mode takes it too: inference_mode(False), INFER-1)
MODES = {"no_grad": "torch.no_grad()", "enable_grad": "torch.enable_grad()",
         "set_grad_enabled": None, "inference_mode": None}


def block_name(path: str) -> str:
    """The name of the function a decorated block is rendered as."""
    return "_block_" + path.replace(".", "_")


@kind
class Mode(Kind):
    name = "mode"
    param_keys = ("mode", "enabled", "decorator", "generator")
    weight = 4
    reweighted = ((3, 6),)      # vocabulary 3 (tests/generator_stats.py: programs per clause)
    doc = ("with <params.mode>: body, or with params.decorator true: body as a function "
           "decorated by <params.mode>, called at once. params: mode ('no_grad'|"
           "'enable_grad'|'set_grad_enabled'|'inference_mode'), enabled (bool, "
           "set_grad_enabled and inference_mode only: its argument, default true), "
           "decorator (bool, default false), generator (bool, default false; with decorator: "
           "the function is a generator that yields once before the body, and the block "
           "iterates it to its end)")
    caps = ("no_grad",)     # implied by grad_modes; alone, `with no_grad()` blocks only
    block = True

    def needs(self, s):
        # an inference-mode block is the capability inference_mode's (spec/infer.md)
        if s.params.get("mode") == "inference_mode":
            return ["inference_mode"]
        p = s.params
        plain = p.get("mode") == "no_grad" and not p.get("decorator") and "enabled" not in p
        return ["no_grad" if plain else "grad_modes"]

    def check(self, s, path):
        fields.param(s, path, "mode", (str,), choices=MODES)
        fields.param(s, path, "enabled", (bool,), required=False)
        fields.param(s, path, "decorator", (bool,), required=False)
        fields.param(s, path, "generator", (bool,), required=False)
        if s.params.get("generator") and not s.params.get("decorator"):
            fields.fail(path, "params.generator", "needs params.decorator true")

    def run(self, x, s, ev, path):
        e, p = x.e, s.params
        # no `enabled` in the program: none passed, so that the adapter may call the mode with
        # no argument as the script does (an engine's default is part of what is checked)
        given = (p["enabled"],) if "enabled" in p else ()
        if p.get("generator"):
            # MODE-12: every resumption of a decorated generator runs in the mode; the body is
            # the second, so that a wrapper around the first alone is seen
            @e.grad_mode_decorator(p["mode"], *given)
            def steps() -> Iterator[None]:
                yield
                x.current = None
                x.block(s.body, path + ".")
            for _ in steps():
                pass
        elif p.get("decorator"):
            @e.grad_mode_decorator(p["mode"], *given)
            def block() -> None:
                x.current = None
                x.block(s.body, path + ".")
            block()
        else:
            with e.grad_mode(p["mode"], *given):
                x.current = None
                x.block(s.body, path + ".")

    def body_mode(self, s):
        """no_grad, enable_grad and set_grad_enabled set the grad mode; inference_mode(True)
        turns grad mode off and inference mode on, inference_mode(False) the other way round
        (torch 2.13's InferenceMode guard sets both)."""
        p = s.params
        mode, enabled = p.get("mode"), bool(p.get("enabled", True))
        if mode == "inference_mode":
            return not enabled, enabled
        return {"no_grad": False, "enable_grad": True}.get(mode, enabled), None

    def render(self, s, path):
        p = s.params
        cm = MODES.get(p["mode"]) or (
            f"torch.{p['mode']}({bool(p.get('enabled', True))!r})" if "enabled" in p
            else f"torch.{p['mode']}()")
        if p.get("decorator"):      # the body and the call: render_body
            return [f"@{cm}", f"def {block_name(path)}():"]
        return [f"with {cm}:"]

    def render_body(self, s, path, body, bound):
        lines = []
        if s.params.get("decorator") and bound:     # the body binds program names, not locals
            lines.append(f"    global {', '.join(bound)}")
        if s.params.get("generator"):
            lines.append("    yield")
        lines += ["    " + ln for ln in body] or ["    pass"]
        if s.params.get("generator"):
            lines += [f"for _ in {block_name(path)}():", "    pass"]
        elif s.params.get("decorator"):
            lines.append(f"{block_name(path)}()")
        return lines

    def draw(self, g, mode=None, body=None):
        """Draw a grad-mode block of one to three steps (none inside a block two deep);
        `mode` fixes the mode, `body(g)` draws the body instead of the steps."""
        if g.depth >= 2 or g.inference:     # no block inside inference mode (INFER-1)
            return False
        full = g.has("grad_modes")          # else no_grad alone: `with no_grad()` only
        if not full and mode not in (None, "no_grad", "inference_mode"):
            return False
        mode = mode or (g.weighted("grad mode", GRAD_MODES) if full else "no_grad")
        params: dict[str, Any] = {"mode": mode}
        enabled = mode == "enable_grad"
        if mode == "set_grad_enabled":
            enabled = g.boolean("enabled", 30)
            params["enabled"] = enabled
        if mode == "inference_mode":    # drawn only by gen/inference.py, always on
            cl = ["INFER-1"]
        else:
            cl = ["MODE-4"]
            if not enabled:
                cl.append("MODE-1")
            if mode == "enable_grad" or (enabled and not g.grad_enabled):
                cl.append("MODE-2")
            if mode == "set_grad_enabled":
                cl.append("MODE-3")
        if (full or mode == "inference_mode") and g.boolean("as a decorator", 30):
            params["decorator"] = True
            cl.append("MODE-5" if mode != "inference_mode" else "INFER-1")
            # vocabulary 17: a generator function, each resumption in the mode (MODE-12)
            if g.vocabulary >= 17 and g.boolean("a generator function", 40):
                params["generator"] = True
                cl.append("MODE-12")
        stmt = Stmt("mode", params=params)
        saved_out, saved_mode, saved_inference = g.out, g.grad_enabled, g.inference
        g.out, g.grad_enabled = stmt.body, enabled
        g.inference = mode == "inference_mode"
        g.depth += 1
        if body is not None:
            body(g)
        else:
            for _ in range(g.integer("block length", 1, 3)):
                g.step(in_block=True)
        g.depth -= 1
        g.out, g.grad_enabled, g.inference = saved_out, saved_mode, saved_inference
        if stmt.body:
            g.emit(stmt, cl)
        return bool(stmt.body)


@kind
class GradEnabled(Kind):
    name = "grad_enabled"
    weight = 2
    doc = "record torch.is_grad_enabled()"
    caps = ("grad_modes",)
    valued = True

    def run(self, x, s, ev, path):
        ev.value = plain(x.e.is_grad_enabled())

    def render(self, s, path):
        return [f"show({f'[{path}] is_grad_enabled'!r}, torch.is_grad_enabled())"]

    def draw(self, g):
        g.emit(Stmt("grad_enabled"), ["MODE-6"] + ([] if g.grad_enabled else ["MODE-1"]))
        return True
