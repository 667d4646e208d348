"""The in-sandbox grading harness: files copied into every verification sandbox and run there by
``python3`` as top-level modules (``pytest_report``, ``isolate``, ``confine``, ``forkserver``).

They import the standard library, pytest and each other by top-level name.
"""
