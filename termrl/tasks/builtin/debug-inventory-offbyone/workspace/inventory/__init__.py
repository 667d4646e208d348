"""A tiny stock-keeping library."""
from .models import Item
from .store import Inventory

__all__ = ["Item", "Inventory"]
