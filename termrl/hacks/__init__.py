"""Reward-hack detection: detectors that read one finished episode (``termrl.hacks.detectors``)."""
