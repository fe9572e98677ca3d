"""Credentials never leave the collector in a message: what a kubeconfig holds that would let
someone act as the collector is masked wherever the collector words an error.

Two things are masked: the userinfo of any URL (`https://user:password@host` becomes
`https://***@host`, contract/addresses.py's one rule), whoever wrote it, and each secret
value the kubeconfig in use holds (tokens, passwords, client key data, exec plugin
environment values, auth-provider secrets), wherever it turns up: in an exec plugin's
complaint, or a proxy's error page echoing a header.
"""

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from contract.addresses import MASK, masked, userinfo

SHORTEST_SECRET: Final = 4
"""Values shorter than this are not searched for: masking every "abc" in a message would hide
what it says, and no token or key is that short."""
_USER_SECRETS: Final = ("token", "password", "client-key-data")
"""The fields of a kubeconfig's user that are secret in themselves (not paths or names)."""
_SECRET_WORDS: Final = ("token", "secret", "password", "key")
"""An auth-provider's config entries whose names say they are secret."""


@dataclass(frozen=True)
class Redactor:
    """Masks URL userinfo and `secrets` in a text."""

    secrets: frozenset[str] = frozenset()

    def __call__(self, text: str) -> str:
        # Longest first: a secret that contains another is masked whole.
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, MASK)
        return masked(text)

    def adding(self, secrets: Iterable[str]) -> "Redactor":
        """This redactor, masking `secrets` too (those long enough to be told apart)."""
        more = {secret for secret in secrets if len(secret) >= SHORTEST_SECRET}
        return Redactor(self.secrets | more)


def kubeconfig_secrets(kubeconfig: Mapping[str, Any]) -> set[str]:
    """Every secret value in a parsed kubeconfig: each user's token, password, client key,
    exec environment values and auth-provider secrets, and the userinfo of each cluster's
    server and proxy URL. Whatever is not shaped as a kubeconfig is passed over."""
    return set(_user_secrets(kubeconfig)) | set(_url_secrets(kubeconfig))


def _entries(kubeconfig: Mapping[str, Any], kind: str, field: str) -> Iterator[Mapping[str, Any]]:
    listed = kubeconfig.get(kind)
    for entry in listed if isinstance(listed, list) else ():
        inner = entry.get(field) if isinstance(entry, Mapping) else None
        if isinstance(inner, Mapping):
            yield inner


def _user_secrets(kubeconfig: Mapping[str, Any]) -> Iterator[str]:
    for user in _entries(kubeconfig, "users", "user"):
        yield from (str(user[key]) for key in _USER_SECRETS if user.get(key))
        plugin = user.get("exec")
        env = plugin.get("env") if isinstance(plugin, Mapping) else None
        for variable in env if isinstance(env, list) else ():
            if isinstance(variable, Mapping) and variable.get("value"):
                yield str(variable["value"])
        provider = user.get("auth-provider")
        config = provider.get("config") if isinstance(provider, Mapping) else None
        for key, value in config.items() if isinstance(config, Mapping) else ():
            if value and any(word in str(key).lower() for word in _SECRET_WORDS):
                yield str(value)


def _url_secrets(kubeconfig: Mapping[str, Any]) -> Iterator[str]:
    for cluster in _entries(kubeconfig, "clusters", "cluster"):
        for key in ("server", "proxy-url"):
            found = userinfo(str(cluster.get(key) or ""))
            if found is not None:
                # The password alone too: a library may quote it without the user.
                yield from (found, found.partition(":")[2])
