"""Reward-hack detection: detectors over a finished episode, holdout and impossible tests, the audit."""
