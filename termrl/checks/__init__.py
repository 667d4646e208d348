"""Checks on tasks and reward specs before any training: task validation, test strength and its
mutants, impossible variants, the exploit library and the audit that plays it against a spec.

These sit above the episode (they play episodes); the detectors that read one episode are in
``termrl.hacks``.
"""
