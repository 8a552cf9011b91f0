"""`--monitor` URLs as people type them, split so that their credentials never reach a terminal or a log.

People paste passwords raw: `redis://:pa/ss#w?rd@host`. A URL parser reads the first `/`, `?` or `#` as
the end of the authority, which leaves part of the password in the "host", "path" or "fragment" it then
prints. A host, a port or a database number never holds `@`, so here everything before the LAST `@` after
`scheme://` is the credential, whatever characters it holds; the URL handed to redis-py has it
percent-encoded, so redis-py reads the same user and password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from cachescope.errors import UsageError

SCHEMES = ("redis", "rediss", "unix")


@dataclass(frozen=True)
class RedisUrl:
    scheme: str
    user: str  # percent-decoded; "" when none
    password: str
    location: str  # host[:port][/db] (or a socket path), without query or fragment
    query: str  # "" or "?..." (redis-py options; may hold a password=, so never printed)

    @property
    def redacted(self) -> str:
        return f"{self.scheme}://{self.location}"

    @property
    def for_client(self) -> str:
        """The URL redis-py parses into the same user and password, whatever characters they hold."""
        auth = ""
        if self.user or self.password:
            auth = f"{quote(self.user, safe='')}:{quote(self.password, safe='')}@"
        return f"{self.scheme}://{auth}{self.location}{self.query}"

    def secrets(self) -> list[str]:
        """Every spelling of the credentials a message could quote (raw and percent-encoded), longest first."""
        out = set()
        for s in (self.user, self.password):
            if s:
                out.update({s, quote(s, safe=""), quote(s)})
        for match in re.finditer(r"(?i)(?:^|&)[^=&]*(?:pass|auth|user|token)[^=&]*=([^&]*)", self.query[1:]):
            if match.group(1):
                out.update({match.group(1), unquote(match.group(1))})
        return sorted(out, key=len, reverse=True)

    def scrub(self, message: str) -> str:
        """`message` (redis-py's, an OS error) with any spelling of a credential replaced by ***."""
        for secret in self.secrets():
            message = message.replace(secret, "***")
        return message


def parse_redis_url(url: str) -> RedisUrl:
    """Splits `url`; a URL that is not `scheme://...` with a known scheme is refused without quoting it."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        # Not repeated: a URL that failed to parse may hold a password anywhere.
        raise UsageError("--monitor wants a URL like redis://host:port[/db] (or redis://[[user]:password@]..., "
                         "rediss://, unix://); the one given is not (not repeated here: it may hold a password)")
    userinfo, at, location = rest.rpartition("@")
    user, _, password = userinfo.partition(":") if at else ("", "", "")
    cut = min((i for i in (location.find("?"), location.find("#")) if i >= 0), default=len(location))
    query = location[cut:].split("#", 1)[0]
    return RedisUrl(scheme.lower(), unquote(user), unquote(password), location[:cut], query)
