"""gradspec conformance: the spec reader, example runner, program generator, engine adapters,
runner and reports. The command line is `gradspec` (conformance.cli)."""
__version__ = "0.1.0"
