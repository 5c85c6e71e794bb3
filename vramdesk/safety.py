"""Output safety any layer may use (stdlib only, outside the layers; no Qt, no network): secrets taken out of
messages, and outputs that would replace one of their own inputs refused.

* :func:`redact` blanks what must never reach a message, a log or the screen: the password of a URL
  (``http://***@host``), token-like query parameters (``?token=***``), Hugging Face tokens (``hf_***``)
  and bearer tokens. It is applied where library and network errors become our messages (``HubError``,
  ``ResolveError``), so that huggingface_hub / httpx texts that quote the URL are cleaned too.
* :func:`check_output` raises :class:`OutputIsInputError` when an output path is one of the input files:
  the same path, a symlink or hard link to it, or another spelling of it on a case-insensitive file system.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

# scheme://userinfo@ : greedy up to the last "@" of the token, so a password with "@" or "/" in it goes too
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s'\"<>]*@")
# user:password@host written without a scheme (an HF_ENDPOINT typed without http://)
_BARE_USERINFO = re.compile(r"(?<![\w/:.@-])([\w.%+-]+):(?!//)[^\s'\"<>]+@(?=[\w\[])")
# ?token=..., &access_token=..., ?X-Amz-Signature=..., ?api_key=..., ?password=...
_QUERY_SECRET = re.compile(
    r"(?i)([?&;][\w.-]*(?:token|key|secret|password|passwd|pwd|signature|sig|auth|credential)[\w.-]*=)[^&\s#'\"<>]+"
)
# Hugging Face tokens are "hf_" and 34 letters and digits: 16 or more count (names like hf_hub_url do not)
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{16,}\b")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")


def redact(text: str) -> str:
    """``text`` with URL passwords, token query parameters and token-looking strings replaced by ``***``."""
    if not text:
        return text
    text = _URL_USERINFO.sub(r"\1***@", text)
    text = _BARE_USERINFO.sub(r"\1:***@", text)
    text = _QUERY_SECRET.sub(r"\1***", text)
    text = _HF_TOKEN.sub("hf_***", text)
    return _BEARER.sub(r"\1***", text)


class OutputIsInputError(FileExistsError):
    """Writing this output would replace one of the files it was made from (a subclass of OSError, so every
    place that reports a failed write reports this one too)."""


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name one file: samefile where both exist (links, case-insensitive names),
    else the fully resolved, case-normalised paths."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist (yet)
        return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def check_output(
    output: str | os.PathLike[str],
    inputs: Iterable[str | os.PathLike[str]],
    *,
    what: str = "the input scenario",
    advice: str = "choose another -o",
) -> None:
    """Raise :class:`OutputIsInputError` (one line, naming ``output`` as given) when ``output`` is one of
    ``inputs``."""
    if any(same_file(output, i) for i in inputs):
        raise OutputIsInputError(f"{os.fspath(output)}: the output would replace {what}; {advice}")
