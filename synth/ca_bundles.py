"""A CA bundle a spec names (`ca_bundle`): a committed PEM file of certificates that the
runner's downloads trust besides the image's own CAs, checked as such before it reaches a
ConfigMap.

Only CERTIFICATE blocks are allowed, each one an X.509 certificate OpenSSL parses (through
Python's ssl module, as the runner will load it); text between blocks is allowed, as
OpenSSL allows it (bundles carry comments). A private key is refused by name: committed, it
is leaked to everyone who reads the repository, and a bundle never needs one.
"""

import binascii
import hashlib
import re
import ssl
from dataclasses import dataclass
from typing import Final

from synth.repo_files import RepoFileError

_BLOCK: Final = re.compile(
    r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END ([A-Z0-9 ]+)-----", re.DOTALL
)
_BEGIN: Final = "-----BEGIN "
CERTIFICATE: Final = "CERTIFICATE"
KEY_LENGTH: Final = 16
"""Hex characters of the bundle's sha256 in its file name in the pod."""


@dataclass(frozen=True)
class CaBundle:
    """A checked bundle: its text and the name the pod finds it under."""

    sha256: str
    text: str
    certificates: int

    @property
    def key(self) -> str:
        """Its file name under the pod's CA_PATH (and its key in the ConfigMap): named by
        content, so two bundles never share a name and an edited one gets a new one."""
        return f"ca-{self.sha256[:KEY_LENGTH]}.pem"


class BadBundle(RepoFileError):
    """A file that is not a bundle of PEM certificates."""


def check_ca_bundle(file: str, data: bytes) -> CaBundle:
    """`data`, the file `file`, as a CaBundle; raises BadBundle saying what is wrong where."""
    hint = (
        "a CA bundle is the PEM text of one or more CA certificates (-----BEGIN CERTIFICATE-----"
        " ... -----END CERTIFICATE-----), e.g. what `openssl x509 -in ca.crt -outform PEM` writes"
    )
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as error:
        raise BadBundle(
            f"{file} is not PEM text: byte {error.start + 1} is not ASCII (a DER file?)", hint
        ) from None
    count = 0
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        kind, body, end = match.group(1), match.group(2), match.group(3)
        if "PRIVATE KEY" in kind:
            raise BadBundle(
                f"{file} holds a private key ({kind}) at line {line}",
                "a committed key is leaked to everyone with the repository: remove the file "
                "from git's history, replace the key, and commit the CA's certificate only",
            )
        if kind != CERTIFICATE or end != kind:
            raise BadBundle(f"{file} holds a {kind} block at line {line}, not a certificate", hint)
        try:
            der = binascii.a2b_base64("".join(body.split()), strict_mode=True)
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=der)
        except (binascii.Error, ssl.SSLError) as error:
            raise BadBundle(
                f"{file}: the certificate at line {line} cannot be read ({error})", hint
            ) from None
        count += 1
    if count != text.count(_BEGIN):
        raise BadBundle(f"{file} has a BEGIN line without its END line", hint)
    if count == 0:
        raise BadBundle(f"{file} holds no certificate", hint)
    return CaBundle(hashlib.sha256(data).hexdigest(), text, count)
