"""Formatting inventory reports."""
from decimal import Decimal


def render(items, low_stock, currency):
    lines = []
    total = Decimal("0.00")
    for item in sorted(items, key=lambda i: i.sku):
        flag = " LOW" if item.qty < low_stock else ""
        lines.append(f"{item.sku} {item.name} {item.qty} {item.value} {currency}{flag}")
        total += item.value
    lines.append(f"TOTAL {len(items)} items {total:.2f} {currency}")
    return "\n".join(lines)


def low_stock_skus(items, low_stock):
    return sorted(i.sku for i in items if i.qty < low_stock)
