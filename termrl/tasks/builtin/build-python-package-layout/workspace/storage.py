"""Reading inventory CSV files."""
import csv
from decimal import Decimal, InvalidOperation

from models import Item


class InventoryError(Exception):
    pass


def load_csv(path):
    """Load items from a CSV file with the header sku,name,qty,price."""
    items = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or [h.strip() for h in reader.fieldnames] != ["sku", "name", "qty", "price"]:
            raise InventoryError(f"{path}: expected header sku,name,qty,price")
        for lineno, row in enumerate(reader, start=2):
            try:
                qty = int(row["qty"])
                price = Decimal(row["price"].strip())
            except (ValueError, InvalidOperation, AttributeError):
                raise InventoryError(f"{path}:{lineno}: bad qty or price") from None
            if qty < 0 or price < 0 or not price.is_finite():
                raise InventoryError(f"{path}:{lineno}: negative or invalid value")
            items.append(Item(row["sku"].strip(), row["name"].strip(), qty, price))
    return items
