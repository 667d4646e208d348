"""Command line interface of the inventory tool."""
import argparse
import json
import sys

import report
import storage

VERSION = "1.3.0"


def load_defaults():
    with open("defaults.json", encoding="utf-8") as f:
        return json.load(f)


def build_parser(defaults):
    p = argparse.ArgumentParser(prog="stockpile", description="Inventory reports from CSV files.")
    p.add_argument("--version", action="version", version=f"stockpile {VERSION}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="print a value report of a CSV inventory")
    r.add_argument("csv")
    r.add_argument("--threshold", type=int, default=defaults["low_stock"],
                   help="quantity below which an item is flagged LOW (default from defaults.json)")
    low = sub.add_parser("low", help="list the SKUs whose quantity is below the threshold")
    low.add_argument("csv")
    low.add_argument("--threshold", type=int, default=defaults["low_stock"])
    return p


def main(argv=None):
    defaults = load_defaults()
    args = build_parser(defaults).parse_args(argv)
    try:
        items = storage.load_csv(args.csv)
    except (OSError, storage.InventoryError) as e:
        print(f"stockpile: error: {e}", file=sys.stderr)
        sys.exit(1)
    if args.command == "report":
        print(report.render(items, args.threshold, defaults["currency"]))
    else:
        for sku in report.low_stock_skus(items, args.threshold):
            print(sku)
    sys.exit(0)
