"""vramdesk: will this LLM run or fine-tune on this GPU, and where does every byte go?"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("vramdesk")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.1.0"
