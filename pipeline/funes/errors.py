"""The one error type users see: a message and a hint that names the fix."""

from __future__ import annotations


class FunesError(Exception):
    """A user-facing failure: printed as one line (plus hint) by cli.py, never a traceback."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(FunesError):
    """Bad arguments or bad input named by the user (unknown harness, empty query, no such path)."""

    exit_code = 2


class MemoryMissing(FunesError):
    """No memory has been built yet at the requested location."""


class MemoryIncompatible(FunesError):
    """The memory was built with another embedding model or schema."""


class MemoryUnreadable(FunesError):
    """The memory exists but cannot be opened."""


class MemoryOffline(FunesError):
    """A remote memory cannot be reached and is not cached."""


class MemoryUnauthorized(FunesError):
    """The Hub will not show a remote memory to this token (or to no token)."""


class LockBusy(FunesError):
    """Another writer holds the memory lock."""


class SourceError(FunesError):
    """A transcript source cannot be read at all (missing file, not a database...)."""
