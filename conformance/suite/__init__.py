"""gradspec's conformance suite as a pytest package that ships in the wheel, for an engine
project's CI:

    python -m pytest --pyargs conformance.suite --gradspec-engine mypkg.adapter:engine -n auto

One item per spec clause (`test_clause[VER-7]`) and one per probed capability; the options and
fixtures are the pytest plugin's (conformance/pytest_plugin.py), which pytest loads from the
`pytest11` entry point. docs/ci.md has a workflow.
"""
