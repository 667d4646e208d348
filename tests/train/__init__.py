"""Tests of termrl.training."""
