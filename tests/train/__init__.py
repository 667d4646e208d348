"""Tests of termrl.train."""
