"""Command-line interface: python3 -m textstat [options] [FILE ...]"""
import argparse
import sys

from .counter import count_text, new_counter, ranking_words, top_words

FIELDS = ("lines", "words", "chars")


def build_parser():
    parser = argparse.ArgumentParser(prog="textstat", description="Count lines, words and characters.")
    parser.add_argument("-l", "--lines", action="store_true", help="show the line count")
    parser.add_argument("-w", "--words", action="store_true", help="show the word count")
    parser.add_argument("-c", "--chars", action="store_true", help="show the character count")
    parser.add_argument("-i", "--ignore-case", action="store_true", help="lowercase words for --top")
    parser.add_argument("--top", metavar="N", default=0, help="print the N most frequent words")
    parser.add_argument("files", nargs="?", default=["-"], metavar="FILE", help="input files (- = stdin)")
    return parser


def read_input(name):
    if name == "-":
        return sys.stdin.read()
    with open(name, encoding="utf-8") as fh:
        return fh.read()


def main(argv=None):
    args = build_parser().parse_args(argv)
    fields = [f for f in FIELDS if getattr(args, f)] or list(FIELDS)
    totals = dict.fromkeys(FIELDS, 0)
    words = new_counter()
    for name in args.files:
        text = read_input(name)
        stats = count_text(text)
        for f in FIELDS:
            totals[f] += stats[f]
        words.update(ranking_words(text, args.ignore_case))
        print(" ".join(str(stats[f]) for f in fields), name)
    if len(args.files) > 1:
        print(" ".join(str(totals[f]) for f in fields), "total")
    if args.top:
        for word, count in top_words(words, args.top):
            print(count, word)
    return 0
