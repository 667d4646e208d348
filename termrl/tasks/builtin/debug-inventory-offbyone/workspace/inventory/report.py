"""Reports over an Inventory."""


def top_items(inventory, n):
    """Return at most n items with the highest stock value, highest first (ties by SKU)."""
    ranked = sorted(inventory.items(), key=lambda item: (-item.value_cents, item.sku))
    result = []
    for i in range(n):
        result.append(ranked[i])
    return result


def format_report(inventory):
    """One line per item: 'SKU  QTY  VALUE' with the value in units.cents."""
    lines = []
    for item in inventory.items():
        cents = item.value_cents
        lines.append(f"{item.sku:<10}{item.qty:>6}{cents // 100:>10}.{cents % 100:02d}")
    return "\n".join(lines)
