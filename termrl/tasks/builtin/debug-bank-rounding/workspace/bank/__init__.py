"""Money handling in integer cents."""
