"""Disk taken by task environments that have packages in common, shared against copied.

Builds each requirement set given (as ``termrl tasks prepare`` would, from the package index) into
a fresh cache, one after another, and prints:
  env_N_added_mib=    what environment N added to the disk
  env_N_shared_mib=   what it links from environments built before it (no space)
  copies_mib=         the disk the environments would take as separate copies (added + shared, summed)
  usage_mib=          the disk they take (``termrl.tasks.pyenv.usage``: each file once)
  saved_ratio=        copies_mib / usage_mib
  share_s=            seconds spent hashing and linking (``pyenv.share``), all environments together
The cache is deleted afterwards.

Usage: python bench/env_sharing.py "pandas==2.3.2 scipy==1.16.1" "pandas==2.3.2 scipy==1.16.1 scikit-learn==1.7.1"
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="requirement sets, each one quoted string")
    args = parser.parse_args()

    cache = Path(tempfile.mkdtemp(prefix="termrl-env-sharing-"))
    os.environ["TERMRL_CACHE"] = str(cache)
    from termrl.tasks import pyenv

    real_share, spent = pyenv.share, [0.0]

    def timed_share(tree):
        start = time.monotonic()
        try:
            return real_share(tree)
        finally:
            spent[0] += time.monotonic() - start

    pyenv.share = timed_share
    try:
        copies = 0
        for i, text in enumerate(args.sets, 1):
            built = pyenv.build(text.split())
            copies += built.size_bytes + built.shared_bytes
            print(f"env_{i}_added_mib={built.size_bytes / 2**20:.1f}")
            print(f"env_{i}_shared_mib={built.shared_bytes / 2**20:.1f}")
        usage = pyenv.usage()
        print(f"copies_mib={copies / 2**20:.1f}")
        print(f"usage_mib={usage / 2**20:.1f}")
        print(f"saved_ratio={copies / usage:.2f}")
        print(f"share_s={spent[0]:.2f}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
