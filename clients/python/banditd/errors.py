"""banditd.errors: BanditdError, the error answer of the daemon, which every
module of the package raises or catches. It sits below them all (client.py
and optimize.py import it; it imports nothing of the package), and
banditd.client re-exports it, so banditd.BanditdError and
banditd.client.BanditdError are this class."""

from typing import Optional

__all__ = ["BanditdError"]


class BanditdError(Exception):
    """An error answer: HTTP status, error code ("not_found", ...), message, field (or None)."""

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None) -> None:
        super().__init__(status, code, message, field)
        self.status = status
        self.code = code
        self.message = message
        self.field = field

    def __str__(self) -> str:
        where = " (field %s)" % self.field if self.field else ""
        return "HTTP %d %s: %s%s" % (self.status, self.code, self.message, where)
