"""The program generator: the drawing loop and the helpers draws share (core.py), the
statement draw's explicit order (order.py), the deliberate error moves, one declaration each
(error_move.py declares, errors.py and errors_backward.py hold them, errors.py reads them in
its order), and the labelled-draw sources (strategies.py). Statement kinds draw themselves
(conformance/kinds/) over the model of the program's tensors (conformance/model/).

Entry points: core.generate(chooser, capabilities, n_statements), core.program_for_seed(seed,
...) and core.programs(capabilities, size), a Hypothesis strategy. Nothing is imported here,
so that importing one module of the package loads only what it needs."""
