import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from inventory import Inventory, Item
from inventory.report import top_items


def make():
    return Inventory([Item("A1", "bolt", 5, 10), Item("B2", "nut", 2, 5), Item("C3", "gear", 9, 250)])


def test_total_value():
    assert make().total_value_cents() == 5 * 10 + 2 * 5 + 9 * 250


def test_add_merges_quantity():
    inv = make()
    inv.add(Item("A1", "bolt", 3, 10))
    assert inv.get("A1").qty == 8


def test_top_items():
    assert [i.sku for i in top_items(make(), 2)] == ["C3", "A1"]
