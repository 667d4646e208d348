import os
import sys
from datetime import date

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from datekit.business import is_business_day
from datekit.months import days_in_month, month_end
from datekit.parse import parse_date


def test_days_in_month():
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2023, 4) == 30


def test_month_end():
    assert month_end(date(2023, 2, 10)) == date(2023, 2, 28)


def test_parse_iso():
    assert parse_date("2024-03-05") == date(2024, 3, 5)
    assert parse_date(" 05.03.2024 ") == date(2024, 3, 5)


def test_business_day_weekday():
    assert is_business_day(date(2024, 3, 6))          # Wednesday
    assert not is_business_day(date(2024, 3, 10))     # Sunday
