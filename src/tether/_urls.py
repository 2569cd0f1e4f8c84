"""URLs as tether shows them: the password a URL carries (``redis://:secret@host``) never is.

Every place that prints, logs or answers a URL that may hold credentials (a Redis URL, an MCP
server's url, a model's base URL) shows it through :func:`masked_url`.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

__all__ = ["MASK", "masked_in", "masked_url", "url_password"]

#: What a password is shown as.
MASK: Final = "****"
#: The user info of a URL: what stands between ``//`` and the last ``@`` of the authority
#: (the authority ends at the first ``/``, ``?`` or ``#``, as urlsplit and the clients read it).
_USERINFO: Final = re.compile(r"(?<=//)([^/?#]*)@")


def masked_url(url: str) -> str:
    """``url`` with its password shown as ``****``: ``redis://:****@host:6379/0``,
    ``https://bot:****@host/mcp``. User info without a password (``https://token@host``, where
    the name often is the credential) is shown as ``****@`` whole. The rest is left as given,
    and a malformed URL is masked all the same."""

    def hide(match: re.Match[str]) -> str:
        user, colon, _ = match.group(1).partition(":")
        return f"{user}:{MASK}@" if colon else f"{MASK}@"

    return _USERINFO.sub(hide, url, count=1)


def url_password(url: str) -> str | None:
    """The password ``url`` carries (as a client reads it), None when it has none or cannot
    be read: for taking it out of a text that may quote it (an error message)."""
    try:
        return urlsplit(url).password or None
    except ValueError:  # a malformed port, say
        match = _USERINFO.search(url)
        return match.group(1).partition(":")[2] or None if match else None


def masked_in(text: str, url: str) -> str:
    """``text`` (an error message, say) with ``url`` shown through :func:`masked_url`, and the
    password of ``url`` masked wherever else ``text`` quotes it (one of 4 characters or more:
    a shorter one would mask every such bit of the text)."""
    text = text.replace(url, masked_url(url))
    password = url_password(url)
    return text.replace(password, MASK) if password and len(password) >= 4 else text
