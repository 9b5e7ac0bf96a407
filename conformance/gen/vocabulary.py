"""What each generator vocabulary draws, the capabilities it knows, and the clauses no
generated program exercises."""
from __future__ import annotations

# Generator vocabulary versions: the ops a version draws are the op table's rows with `since`
# at most that version (conformance/lang/ops.py), so a seed drawn at an older version gives
# the same program byte for byte after ops are added. `gradspec run` draws the newest.
# Vocabulary 3 also draws graphs that join leaves on purpose, fills programs to their size
# under Hypothesis too, and ends every program with a sweep of what can be observed.
# Vocabulary 4 draws the ops of spec/deriv.md (comparisons, casts, floor / sign / round,
# max / min / argmax / argmin, where) where the engines have them (capability deriv_ops).
# Vocabulary 5 draws higher-order gradients (spec/double.md): autograd.grad with
# create_graph=True, then a pass through the gradient's graph (capability create_graph).
# Vocabulary 6 draws inference mode (spec/infer.md): blocks that make inference tensors and
# views, what may and may not be done with them afterwards (gen/inference.py, capability
# inference_mode), and the observable is_inference.
# Vocabulary 7 draws narrow and select among the views (spec/view.md, VIEW-5; capability
# narrow_select).
# Vocabulary 8 draws the error move of MODE-11: a view taken under no_grad used after its base
# was written in place (gen/errors.py, NO_GRAD_VIEW_BASE_INPLACE).
# Vocabulary 9 draws views and indexing three and two times as often (kinds/tensors.py): at
# vocabulary 8 a program of 20 statements held 0.2 view statements, so that in 300 programs
# a view form (unsqueeze by a dim counted from the end, squeeze of a size-1 dim) came up a
# handful of times, and the mutation score (benchmarks/README.md) found refimpl's view code
# the least watched.
# Vocabulary 10 draws more forms of three errors (gen/errors.py, gen/errors_backward.py):
# PARTIAL_OVERLAP by a transposed operand or target, a one-element target and an operand
# before its target; VERSION_MISMATCH by an in-place op that is its own operand (y.mul_(y));
# and the new move SELF_OVERLAPPING_WRITE, a backward into an expanded .grad (LEAF-12).
# Vocabulary 11 draws five scenarios (gen/layouts.py, gen/focus.py): a view of a view that is
# not contiguous or has three dims, a narrow at its dim's end (an empty view), a view of a
# tensor of more than 256 elements, a setitem whose value broadcasts to the view it writes, and
# a node post-hook that scales a gradient beside an undefined one (HOOK-17); the setitem draw
# also widens a value one time in four. Seed 0's stream at vocabulary 10 reached these too
# rarely to catch seven faults of refimpl there (benchmarks/README.md, mutation score). It also
# draws SELF_OVERLAPPING_WRITE from an in-place op or a setitem on an expanded view
# (INPLACE-18, gen/errors_overlap.py).
# Vocabulary 12 draws split, chunk and unbind (the statement kind multi_view, VIEW-6, VIEW-9)
# where the engine declares `multi_views`: refimpl could not run hooks on their outputs before
# de25ff1, and no program had them.
# Vocabulary 13 draws four more layout scenarios (gen/layouts.py): views of tensors of four
# dims that merge dims, expands that add leading dims to a matrix (some sizes -1), indices
# with a None after a kept or consumed dim, and views of a tensor with a stride above 256.
# Seed 0's stream at vocabulary 12 never reached them, and a fault of refimpl's code for each
# went unseen (benchmarks/README.md, mutation score).
# Vocabulary 14 draws the statement kind multi_grad_hook (HOOK-19, HOOK-20) where the engine
# declares multi_grad_hooks: hooks on up to three tensors, a pass or two from a result of one of
# them, and their removal (kinds/hooks.py), so that no pass UNSPEC-14 leaves open is drawn.
# Vocabulary 15 draws two more layout scenarios (gen/layouts.py): views of tensors with a size-1
# dim, a one-element tensor viewed as 0-d among them, and a narrow whose start is counted from
# the end; and in gen/higher.py a pass through the gradient's graph alone (`g.sum()`) and one
# with create_graph. A third mutation sample found refimpl's code for each unwatched.
# Vocabulary 16 draws `grad_dtype` where the engine declares it (capability grad_dtype, GRAD-7):
# the statement kind set_grad_dtype and an observable of leaves (never swept: it raises on a
# non-leaf); the setter `t.requires_grad = flag` beside requires_grad_() (capability
# requires_grad_setter, LEAF-11, LEAF-15); a retained tensor reached twice under create_graph
# (DOUBLE-3); and in gen/higher.py a function of relu alone before a pass from its gradient
# (DOUBLE-10). The mutation score's third sample found refimpl's code for each unwatched. No
# pass starts from an inference tensor (kinds/backward.py, UNSPEC-10).
# Vocabulary 17 draws `.data =` where the engine declares data_assign (the statement kind
# set_data, kinds/contents.py: DATA-1, -2, -4, -5, -6) and its two errors, DATA_REQUIRES_GRAD_DTYPE
# and DATA_NOT_TENSOR (gen/errors_data.py); grad-mode decorators on generator functions
# (kinds/modes.py, MODE-12), which refimpl ran outside the mode until then; and tensor hooks
# returning what HOOK-5 refuses: the other float dtype, or a list (gen/errors_backward.py).
# Vocabulary 18 draws saved-tensor hooks where the engine declares saved_tensors_hooks (the
# block kind saved_hooks, kinds/saved.py: SAVED-1, -2, -5, -6, -7, -9, -12): forward statements
# whose nodes pack what they save through hooks that keep the tensor, a copy or a key, or
# through save_on_cpu, and the passes after them; and the error move UNPACK_NOT_TENSOR (SAVED-3,
# gen/errors_saved.py).
# Vocabulary 19 draws custom autograd Functions where the engine declares custom_function: the
# statement kinds function and dirty_function (kinds/function.py), which apply a Function of
# the catalogue conformance/lang/functions.py (FUNC-1 to -6 and -8 to -14), and the error moves
# FUNCTION_GRAD_COUNT, FUNCTION_INVALID_GRADIENT, DIRTY_LEAF, CUSTOM_VIEW_INPLACE and
# LEGACY_FUNCTION (gen/errors_function.py: FUNC-7, -8, -11, -14, -15).
# Vocabulary 20 draws detach_() where the engine declares detach_inplace (the statement kind
# detach_, kinds/flags.py: VER-16, VIEW-8 and INPLACE-1 for a leaf) and its errors
# DETACH_VIEW_INPLACE and SAVED_DETACHED_INPLACE (gen/errors_detach.py); and set_() where it
# declares data_assign (the statement kind set_, kinds/contents.py: DATA-7, DATA-8) and its
# errors SET_DTYPE and SET_BACKWARD (gen/errors_data.py); and, where it declares
# saved_tensors_hooks, a saved_hooks block nested in another (SAVED-4), a custom Function applied
# inside one (SAVED-11) and the block kind disable_saved_hooks (SAVED-10, kinds/saved.py).
# Vocabulary 21 draws the tensor .grad holds where the engine declares grad_tensor
# (kinds/grad_tensor.py): `h = x.grad` of a leaf whose .grad the spec fixes all of (GRAD-1,
# GRAD-3), writes into it that x.grad shows (GRAD-3), the passes that add into it (GRAD-4),
# `x.grad is h` (the statement kind grad_is), the observable grad_layout (GRAD-2), and a
# tensor assigned to .grad that the program keeps using (set_grad, GRAD-3); and in gen/higher.py
# a write between a create_graph pass and the pass through its gradient's graph (DOUBLE-6);
# and where the engine declares view_base, `t._base is b` (the statement kind base_is, VIEW-1).
# Vocabulary 22 ends a program, before its sweep, with the node of each .grad a create_graph
# pass recorded where the spec fixes it (the observable grad_grad_fn, drawn by no observe
# statement: gen/higher.py, observe_recorded_grads; DOUBLE-4); and, where the engine declares
# nn_module, before them, sometimes a module's zero_grad over fresh parameters (the statement
# kinds parameter and zero_grad, kinds/modules.py; gen/modules.py: GRAD-5, GRAD-6).
VOCABULARIES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)
GENERATOR_VERSION = VOCABULARIES[-1]
# the steps Hypothesis takes per statement of a program's size (vocabulary 3): 11 steps for
# size 20 give it about the statements and backward passes per program RandomChooser fills
# to (22.7 against 22.5, 2.4 against 2.9: tests/generator_stats.py measures both); more steps
# make programs that Hypothesis shrinks less well
STEPS_PER_STATEMENT = 0.55
ALL_CAPABILITIES = ("core", "grad_fn", "retain_grad", "hooks", "post_accumulate_hooks",
                    "node_hooks", "version_counter", "views", "inplace", "autograd_grad",
                    "grad_modes", "retain_graph", "warnings", "backward_inputs", "deriv_ops",
                    "create_graph", "inference_mode", "custom_function",
                    "data_assign", "saved_tensors_hooks", "multi_grad_hooks", "narrow_select",
                    "multi_views", "grad_dtype", "requires_grad_setter", "detach_inplace",
                    "grad_tensor", "view_base", "nn_module")
# capabilities an older vocabulary has nothing to draw for: it neither uses nor records them,
# so that its programs stay byte for byte what they were
# (custom_function: vocabulary 19 is the first to draw a torch.autograd.Function; from
# vocabulary 6 on a program records it among its capabilities, as the engines declare it)
CAPABILITY_SINCE = {"deriv_ops": 4, "create_graph": 5, "inference_mode": 6,
                    "custom_function": 6, "data_assign": 6, "saved_tensors_hooks": 6,
                    "multi_grad_hooks": 6, "narrow_select": 7, "multi_views": 12,
                    "grad_dtype": 16, "requires_grad_setter": 16, "detach_inplace": 20,
                    "grad_tensor": 21, "view_base": 21, "nn_module": 22}
# Clauses no generated program exercises, and why; spec examples and tests/differential cover them.
NOT_GENERATED: dict[str, str] = {
    "GRAPH-8": "control flow on values: a program's statements are fixed before it runs",
    "INPLACE-11": "rebinding a Python name: a program binds each name once",
    "API-13": "the grad and backward kinds pass `inputs` as a list, never a dict",
    "INPLACE-16": "writes through a view are tagged INPLACE-8 (model/inplace.py); the name "
                  "they give the base is compared as a node name",
    "MODE-10": "hooks are drawn only on tensors that require grad outside a no_grad view",
    # vocabulary 5 draws create_graph on autograd.grad of a function of one leaf (gen/higher.py)
    # and on some tensor.backward calls (kinds/backward.py); vocabulary 22 reads the node of a
    # recorded .grad (DOUBLE-4)
    "DOUBLE-8": "CREATE_GRAPH_CYCLE is not compared in generated programs: torch gives it "
                "once per process, and a campaign's worker runs many (UNSPEC-9)",
    # spec/data.md
    "DATA-3": "set_data is drawn only on a tensor no view, detach() or .data of it shares "
              "memory with (kinds/contents.py)",
    # spec/saved.md
    "SAVED-8": "no pack hook writes its input (what it leaves is UNSPEC-13)",
    # spec/view.md
    "VIEW-2": "a write through a view of a view is tagged INPLACE-8 (model/inplace.py)",
    "VIEW-3": "the views a write rebases are modelled (model/inplace.py), tagged with the "
              "write's own clauses (INPLACE-8, INPLACE-14)",
    "VIEW-4": "a write through a view is tagged INPLACE-8, a repeated pass through it FREE-3",
    "VIEW-7": "no statement writes an output of split, chunk or unbind in place (the model "
              "never does, and hides them once their memory is written)",
    # spec/grad.md: vocabulary 21 binds, writes and observes a .grad (kinds/grad_tensor.py),
    # vocabulary 22 calls a module's zero_grad (kinds/modules.py)
    # spec/hook.md
    "HOOK-18": "a pass is tagged with the clauses of the hook kinds it runs (HOOK-2, HOOK-13, "
               "HOOK-15, RETAIN-5); the order across kinds is checked by spec examples and "
               "tests/differential/test_hook_order.py",
}
