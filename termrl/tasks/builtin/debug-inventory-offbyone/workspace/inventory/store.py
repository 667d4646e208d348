from .models import Item


class Inventory:
    """A collection of items keyed by SKU."""

    def __init__(self, items=()):
        self._items = {}
        for item in items:
            self.add(item)

    def add(self, item):
        """Add an item; if the SKU exists, its quantity grows by item.qty."""
        if item.qty < 0:
            raise ValueError("quantity must be >= 0")
        existing = self._items.get(item.sku)
        if existing is None:
            self._items[item.sku] = Item(item.sku, item.name, item.qty, item.price_cents)
        else:
            existing.qty += item.qty

    def remove(self, sku, qty):
        """Take qty units of sku out of stock; the item disappears when it reaches 0.

        Raises KeyError for an unknown SKU and ValueError if not enough units are in stock.
        """
        item = self._items[sku]
        if qty > item.qty:
            raise ValueError(f"only {item.qty} units of {sku} in stock")
        item.qty -= qty
        if item.qty == 0:
            del self._items[sku]

    def get(self, sku):
        return self._items.get(sku)

    def __len__(self):
        return len(self._items)

    def items(self):
        """All items sorted by SKU."""
        return [self._items[sku] for sku in sorted(self._items)]

    def page(self, page_no, per_page):
        """Return page ``page_no`` (1-based) of items() with ``per_page`` items per page.

        A page past the end is []. page_no < 1 or per_page < 1 raises ValueError.
        """
        if page_no < 1 or per_page < 1:
            raise ValueError("page_no and per_page must be >= 1")
        items = self.items()
        start = page_no * per_page
        end = start + per_page - 1
        return items[start:end]

    def page_count(self, per_page):
        """Number of non-empty pages with per_page items per page."""
        if per_page < 1:
            raise ValueError("per_page must be >= 1")
        return len(self._items) // per_page

    def low_stock(self, threshold):
        """Items with qty <= threshold, sorted by qty then SKU."""
        found = [item for item in self._items.values() if item.qty < threshold]
        return sorted(found, key=lambda item: (item.qty, item.sku))

    def total_value_cents(self):
        return sum(item.value_cents for item in self._items.values())
