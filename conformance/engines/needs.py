"""What each engine capability needs of an adapter: the Engine methods its statements and
observables call (NEEDS) and the keywords they pass (KEYWORDS). conformance/engines/base.py
checks an adapter against them (`unimplemented`) and re-exports both."""
from __future__ import annotations

import inspect
from typing import Any

# capability (spec/README.md) -> the Engine methods the statements and observables it allows
# call: an engine that declares the capability implements each (load_engine checks it, and
# docs/engines.md lists them; tests/conformance/test_engines.py checks this table against what
# the statement kinds call). `core` is every engine's.
NEEDS: dict[str, tuple[str, ...]] = {
    "core": ("leaf", "call", "detach", "data", "requires_grad_", "backward",
             "autograd_backward", "set_grad", "to_list", "get_grad", "is_leaf",
             "requires_grad", "shape", "dtype"),
    "grad_fn": ("grad_fn_name", "next_functions"),
    "retain_grad": ("retain_grad", "retains_grad"),
    "hooks": ("register_hook", "remove_hook"),
    "post_accumulate_hooks": ("register_post_accumulate_grad_hook", "remove_hook"),
    "node_hooks": ("register_node_hook", "remove_hook"),
    "version_counter": ("version_counter",),
    "views": ("view", "getitem"),
    "inplace": ("inplace", "setitem"),
    "autograd_grad": ("autograd_grad",),
    "grad_modes": ("grad_mode", "grad_mode_decorator", "is_grad_enabled"),
    "retain_graph": (),
    "warnings": (),                 # classify_warning has a default: the spec's own table
    "backward_inputs": (),
    "deriv_ops": (),                # ops of the op table: call and inplace (core's)
    "create_graph": ("autograd_grad",),     # ... with the keywords below
    "inference_mode": ("grad_mode", "grad_mode_decorator", "is_inference"),
    "custom_function": ("apply_function",),     # the catalogue of conformance/lang/functions.py
    "data_assign": ("set_data", "set_"),
    "saved_tensors_hooks": ("saved_tensors_hooks", "save_on_cpu", "clone",
                            "disable_saved_tensors_hooks"),
    "multi_grad_hooks": ("register_multi_grad_hook", "remove_hook"),
    "narrow_select": (),            # view rows of the op table (views' own method)
    "multi_views": ("view_many",),
    "grad_dtype": ("grad_dtype", "set_grad_dtype"),
    "requires_grad_setter": ("set_requires_grad",),
    "detach_inplace": ("detach_",),
    "grad_tensor": ("stride",),     # and get_grad (core's), whose result it binds
    "view_base": ("base",),
    "nn_module": ("parameter", "module_zero_grad"),
    # finer capabilities (conformance/spec/capabilities.py): what the coarse ones need, in part
    "view_ops": ("view", "getitem"),
    "no_grad": ("grad_mode",),      # grad_mode("no_grad") alone
    "graph_structure": ("grad_fn_name", "next_functions"),    # any names: None or not counts
}
# capability -> (method, keyword) pairs: the keywords its statements pass (an adapter whose
# method predates the keyword, say a TorchLike subclass overriding backward, would fail every
# program that uses it, so it is refused at load instead)
KEYWORDS: dict[str, tuple[tuple[str, str], ...]] = {
    "create_graph": (("backward", "create_graph"), ("autograd_backward", "create_graph"),
                     ("autograd_grad", "create_graph")),
}


def accepts(method: Any, keyword: str) -> bool:
    """Whether a bound method takes `keyword` (a parameter of that name, or **kwargs)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):     # no signature to read: take it at its word
        return True
    return any((p.name == keyword and p.kind is not p.POSITIONAL_ONLY)
               or p.kind is p.VAR_KEYWORD for p in params)
