"""banditd: the Python package for the banditd hyperparameter-suggestion daemon.

    from banditd import Client, read_token
    client = Client("http://127.0.0.1:8080", read_token("banditd.db.admin-token"))

banditd.client is the HTTP client (standard library only). The names below are
the package's public interface.
"""

from banditd.client import BanditdError, Client, read_token

__version__ = "0.1.0"  # keep equal to pyproject.toml
__all__ = ["Client", "BanditdError", "read_token", "__version__"]
