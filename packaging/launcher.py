"""The frozen app's entry script: the same as the `vramdesk` console script (vramdesk.main:main).

A file given to the app by the desktop (double-click on a ``.vramdesk.json``, macOS "open with") arrives as a
bare path; it opens in the window, like ``vramdesk gui FILE``.
"""

import sys

from vramdesk.main import main


def _argv() -> list[str]:
    args = sys.argv[1:]
    if len(args) == 1 and args[0].endswith(".vramdesk.json"):
        return ["gui", args[0]]
    return args


if __name__ == "__main__":
    sys.exit(main(_argv()))
