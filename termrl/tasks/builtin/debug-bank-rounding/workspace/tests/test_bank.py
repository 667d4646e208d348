import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bank.account import Account
from bank.money import format_cents, to_cents


def test_parse_simple():
    assert to_cents("12.50") == 1250
    assert to_cents("7") == 700


def test_format_positive():
    assert format_cents(123456) == "1,234.56"


def test_statement():
    acc = Account("ann")
    acc.deposit("100")
    acc.withdraw("20.50")
    assert acc.statement() == "deposit 100.00\nwithdrawal 20.50\nbalance 79.50"
