"""A tiny shopping-cart library."""
from .models import Product
from .cart import Cart

__all__ = ["Product", "Cart"]
