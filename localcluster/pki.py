"""The cluster's certificates, made with openssl: one CA, what it signs, a service-account key.

The scheme is kwokctl's: one certificate serves 127.0.0.1 and is also the admin's client
certificate (group system:masters), and every component authenticates with it. A real
cluster gives each component its own identity; here they all run as the same user on the
same machine, and what the tests prove about RBAC uses ServiceAccount tokens, not these.
"""

import subprocess
from dataclasses import dataclass
from pathlib import Path

ADMIN_USER = "benchfleet-admin"
VALID_DAYS = 30
# Names the API server is reached by: loopback, and the in-cluster service names that
# controllers put into the kubeconfigs they hand out.
_SERVER_NAMES = (
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
    "IP:127.0.0.1",
)


@dataclass(frozen=True)
class Pki:
    """Paths of the files `make_pki` writes."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "service-account.key"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(directory: Path) -> Pki:
    """Write a fresh CA, the admin/serving certificate and the service-account signing key."""
    pki = Pki(directory)
    directory.mkdir(parents=True, exist_ok=True)
    days = str(VALID_DAYS)
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(pki.ca_key))
    _openssl(
        "req", "-x509", "-new", "-key", str(pki.ca_key), "-days", days,
        "-subj", "/CN=benchfleet-local-ca", "-out", str(pki.ca_cert),
    )  # fmt: skip
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(pki.admin_key))
    extensions = directory / "admin.ext"
    extensions.write_text(
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
        f"subjectAltName={','.join(_SERVER_NAMES)}\n"
    )
    request = directory / "admin.csr"
    _openssl(
        "req", "-new", "-key", str(pki.admin_key),
        "-subj", f"/O=system:masters/CN={ADMIN_USER}", "-out", str(request),
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(pki.ca_cert), "-CAkey", str(pki.ca_key),
        "-CAcreateserial", "-days", days, "-extfile", str(extensions), "-out", str(pki.admin_cert),
    )  # fmt: skip
    # RS256: the algorithm every Kubernetes version accepts for service-account tokens.
    _openssl("genrsa", "-out", str(pki.service_account_key), "2048")
    for path in directory.iterdir():
        path.chmod(0o600)
    return pki
