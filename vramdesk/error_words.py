"""Errors of other layers and of the OS as pieces of a :class:`~vramdesk.core.messages.Text` (shared by the services
and storage layers, which may not import each other; outside the layers like :mod:`vramdesk.safety`).

* :func:`said` is what an exception says: the :class:`Text` it carries as ``args[0]`` (a converted layer's
  refusal), the words of an :class:`OSError`, else its English marked :func:`~vramdesk.core.messages.free`
  (a library's or the network's own text, shown as it is).
* :func:`os_reason` is the OS's reason of an :class:`OSError` (``err.strerror or err``): the POSIX wording of
  the common ones has a message id; any other wording (another OS, another errno) is kept as English.
* :func:`redact_text` is :func:`vramdesk.safety.redact` that keeps the message ids: the plain arguments are
  cleaned and the sentence formatted again; where that does not give exactly the redacted English, the redacted
  English without ids is returned (a secret never survives for the sake of a translation).
"""

from __future__ import annotations

from vramdesk.core.messages import MESSAGES, Message, Text, free, join
from vramdesk.safety import redact

#: the OS's words (POSIX strerror) for the errors a user meets with files, each with an id
_STRERROR = {
    m.template: m
    for m in (
        Message("paths.os.permission_denied", "Permission denied"),
        Message("paths.os.is_a_directory", "Is a directory"),
        Message("paths.os.not_a_directory", "Not a directory"),
        Message("paths.os.no_such_file", "No such file or directory"),
        Message("paths.os.read_only", "Read-only file system"),
        Message("paths.os.no_space", "No space left on device"),
        Message("paths.os.quota", "Disk quota exceeded"),
        Message("paths.os.not_permitted", "Operation not permitted"),
        # the network's (a Hub that cannot be reached)
        Message("paths.os.connection_refused", "Connection refused"),
        Message("paths.os.connection_reset", "Connection reset by peer"),
        Message("paths.os.network_unreachable", "Network is unreachable"),
        Message("paths.os.no_route", "No route to host"),
        Message("paths.os.timed_out", "Connection timed out"),
        Message("paths.os.unknown_host", "Name or service not known"),
        Message("paths.os.name_resolution", "Temporary failure in name resolution"),
    )
}
OS_ERROR_FILE = Message("paths.os.error_file", "[Errno {errno}] {reason}: {filename!r}")
OS_ERROR = Message("paths.os.error", "[Errno {errno}] {reason}")


def strerror_text(words: str) -> str:
    """The OS's reason ``words`` (``"Permission denied"``) with its id where it has one, else as English."""
    known = _STRERROR.get(words)
    return known() if known is not None else free(words)


def os_reason(err: OSError) -> str:
    """``err.strerror or err``, as a Text."""
    if err.strerror:
        return strerror_text(err.strerror)
    return os_error(err)


def os_error(err: OSError) -> str:
    """``str(err)`` (``"[Errno 13] Permission denied: '/x'"``), as a Text."""
    english = str(err)
    if isinstance(err.errno, int) and err.strerror and err.filename2 is None:
        reason = strerror_text(err.strerror)
        if err.filename is not None:
            out = OS_ERROR_FILE(errno=err.errno, reason=reason, filename=err.filename)
        else:
            out = OS_ERROR(errno=err.errno, reason=reason)
        if out == english:
            return out
    return free(english)


def said(err: BaseException) -> str:
    """What ``err`` says (``str(err)``), as a Text: its own Text, an OS error's words, else free English."""
    if err.args and isinstance(err.args[0], Text) and err.args[0] == str(err):
        return err.args[0]
    if isinstance(err, OSError):
        return os_error(err)
    # a library's error that repeats the OS's words (httpx's ConnectError: "[Errno 111] Connection refused")
    english, cause = str(err), err.__cause__ or err.__context__
    for _ in range(8):
        if cause is None:
            break
        if isinstance(cause, OSError) and str(cause) == english:
            return os_error(cause)
        cause = cause.__cause__ or cause.__context__
    return free(english)


def redact_text(text: str) -> str:
    """:func:`~vramdesk.safety.redact` of ``text``, keeping its message ids where the English comes out the same."""
    english = redact(text)
    if not isinstance(text, Text):
        return english
    cleaned = _redacted(text)
    return cleaned if cleaned == english else english


def _redacted(text: Text) -> Text:
    if text.parts:
        return join(text.separator, *(_redacted(p) if isinstance(p, Text) else redact(p) for p in text.parts))
    if not text.id:
        return Text(redact(text), "", text.args)
    args = {
        k: _redacted(v) if isinstance(v, Text) else redact(v) if isinstance(v, str) else v for k, v in text.args.items()
    }
    return Text(MESSAGES[text.id].format(**args), text.id, args)


__all__ = ["os_error", "os_reason", "redact_text", "said", "strerror_text"]
