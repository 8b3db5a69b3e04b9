"""banditd_client: the name the client had when it was one module; kept so that
`from banditd_client import Client` goes on working. The code lives in the
banditd package (banditd/client.py); this module only re-exports it."""

from banditd.client import BanditdError, Client, read_token

__all__ = ["Client", "BanditdError", "read_token"]
