"""Downloading a `url` model: once per pod, resumed where a connection dropped, within a size
and a time budget, its sha256 computed as it streams, and never loaded unless complete.

The bytes go to `<sha256>.part` in the pod's /tmp (an emptyDir synth sizes for them) and are
renamed to `<sha256>.pt2` only once the digest matches, so a later variant of the pod finds
the verified file and a cut-off one is never loaded. Each failure says whether another try
could help (contract.errors): a client error, a wrong digest, a download larger than allowed
and an untrusted certificate come back the same every time; a dropped connection, a server
error or a timeout is retried here, and, when the budget runs out, by the Job.
"""

import hashlib
import http.client
import logging
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final, NoReturn
from urllib.parse import urlsplit

from contract.config import DEFAULT_DOWNLOAD_BUDGET_S, DEFAULT_DOWNLOAD_BYTES, ProgramConfig
from contract.text import shown
from runner.errors import (
    ConfigError,
    DownloadFailed,
    DownloadRefused,
    DownloadUntrusted,
    ModelMismatch,
)

log = logging.getLogger(__name__)

CHUNK_BYTES: Final = 1 << 20
READ_TIMEOUT_S: Final = 60.0
"""The longest one connect or read may wait, within what is left of the budget."""
MAX_IDLE_ATTEMPTS: Final = 5
"""Connections in a row that add no byte before the download gives up; one that brings
bytes starts the count again, so a large model over a flaky link gets there."""
MAX_ATTEMPTS: Final = 50
"""Connections in all, however much each brings."""
MAX_BACKOFF_S: Final = 30.0
PROGRESS_EVERY_S: Final = 10.0
_RETRIED_STATUS: Final = frozenset({408, 425, 429})
"""Client errors that say "later" rather than "no"; every 5xx is retried too."""
_MIB: Final = 1 << 20


class _Retry(Exception):
    """A failure another connection may get past: its words, for the log and the error."""


def fetch(model: ProgramConfig, folder: Path, ca_dir: Path | None) -> Path:
    """The verified `.pt2` of `model` in `folder`, downloaded unless an earlier variant of this
    pod already did. Raises the ModelLoadError subclass of its failure (ConfigError for a CA
    bundle the pod cannot read)."""
    if urlsplit(model.location).scheme != "https":
        raise ConfigError(f"{shown(model.location)} is not an https URL; the runner needs one")
    target = folder / f"{model.sha256}.pt2"
    if target.is_file():
        return target
    partial = target.with_suffix(".part")
    transfer = _Transfer(model, partial, _opener(model, ca_dir))
    try:
        transfer.run()
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.rename(target)
    return target


def _opener(model: ProgramConfig, ca_dir: Path | None) -> urllib.request.OpenerDirector:
    """An opener that verifies the server against the image's CAs and the model's bundle,
    follows redirects to https only, and goes through the pod's proxy if its env names one."""
    context = ssl.create_default_context()
    if model.ca_bundle is not None:
        if ca_dir is None:
            raise ConfigError(
                f"the model at {model.location} names the CA bundle "
                f"{model.ca_bundle_file or model.ca_bundle}, but the "
                "pod has no CA_PATH"
            )
        bundle = ca_dir / model.ca_bundle
        try:
            context.load_verify_locations(cafile=bundle)
        except (OSError, ssl.SSLError) as error:
            named = f"{model.ca_bundle_file} ({bundle})" if model.ca_bundle_file else bundle
            raise ConfigError(f"cannot read the CA bundle {named}: {error}") from error
    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _HttpsOnly())


class _HttpsOnly(urllib.request.HTTPRedirectHandler):
    """Redirects (a model store handing over to its CDN) stay on https: urllib would follow
    one to plain http, where anyone on the path could answer."""

    def redirect_request(  # noqa: PLR0917 (urllib's signature)
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urlsplit(newurl).scheme != "https":
            raise DownloadRefused(
                f"{shown(req.full_url)} redirects ({code}) to {shown(newurl)}, which is not "
                "https: serve the model over https all the way"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass
class _Transfer:
    """One model's download: the bytes so far, their digest, and what the server said."""

    model: ProgramConfig
    partial: Path
    opener: urllib.request.OpenerDirector
    have: int = 0
    digest: "hashlib._Hash" = field(default_factory=hashlib.sha256)
    total: int | None = None
    """The whole file's size, where the server said it."""
    validator: str | None = None
    """The ETag (or Last-Modified) of the first answer: a resumed request asks for the rest of
    that same file (If-Range), and gets the whole of a file that changed since."""
    began: float = field(default_factory=time.monotonic)
    reported: float = field(default_factory=time.monotonic)

    @property
    def url(self) -> str:
        return shown(self.model.location)

    @property
    def limit(self) -> int:
        return self.model.size_bytes or DEFAULT_DOWNLOAD_BYTES

    @property
    def deadline(self) -> float:
        return self.began + (self.model.download_budget_s or DEFAULT_DOWNLOAD_BUDGET_S)

    def run(self) -> None:
        """Download until complete, then check the digest; raises on failure."""
        log.info("downloading %s (at most %s)", self.url, _size(self.limit))
        idle = attempts = 0
        with self.partial.open("wb") as file:
            while True:
                attempts += 1
                before = self.have
                try:
                    self._attempt(file)
                    break
                except _Retry as error:
                    idle = 0 if self.have > before else idle + 1
                    self._wait_or_give_up(str(error), idle, attempts)
        self._check_digest()
        took = time.monotonic() - self.began
        log.info(
            "downloaded %s in %.1f s (%.1f MiB/s), sha256 verified",
            _size(self.have),
            took,
            self.have / _MIB / max(took, 1e-3),
        )

    def _attempt(self, file: IO[bytes]) -> None:
        remaining = self.deadline - time.monotonic()
        request = urllib.request.Request(
            self.model.location, headers={"Accept-Encoding": "identity"}
        )
        if self.have:
            request.add_header("Range", f"bytes={self.have}-")
            if self.validator is not None:
                request.add_header("If-Range", self.validator)
        try:
            with self.opener.open(request, timeout=min(READ_TIMEOUT_S, remaining)) as response:
                self._start(response, file)
                self._stream(response, file)
        except urllib.error.HTTPError as error:
            self._refuse_or_retry(error)
        except urllib.error.URLError as error:
            self._untrusted_or_retry(error.reason)
        except ssl.SSLCertVerificationError as error:
            self._untrusted_or_retry(error)
        except (OSError, http.client.HTTPException) as error:  # timeouts, resets, cut-offs
            raise _Retry(f"{type(error).__name__}: {error}") from error
        if self.total is not None and self.have < self.total:
            raise _Retry(f"the connection closed after {_size(self.have)} of {_size(self.total)}")

    def _start(self, response: http.client.HTTPResponse, file: IO[bytes]) -> None:
        """Take up the answer: the rest of the file after what we have (206), or all of it
        (200: the server ignores ranges, or the file changed), whose size must fit."""
        headers = response.headers
        if response.status == 206:
            start, total = _content_range(headers.get("Content-Range"))
            if start != self.have:
                self._restart(file)
                raise _Retry(f"asked for bytes from {self.have}, got them from {start}")
            self.total = total
        else:
            if self.have:
                log.info("the server sends the whole file again: starting over")
                self._restart(file)
            length = headers.get("Content-Length")
            self.total = int(length) if length and length.isdigit() else None
            self.validator = headers.get("ETag") or headers.get("Last-Modified")
        if self.total is not None and self.total > self.limit:
            raise ModelMismatch(
                f"{self.url} is {self.total:,} bytes, more than the {self.limit:,} its spec "
                f"allows: {self._size_advice()}"
            )

    def _stream(self, response: http.client.HTTPResponse, file: IO[bytes]) -> None:
        # read1: one system call at a time, so the budget is checked however slowly bytes come.
        while chunk := response.read1(CHUNK_BYTES):
            self.have += len(chunk)
            if self.have > self.limit:
                raise ModelMismatch(
                    f"{self.url} sent more than the {self.limit:,} bytes its spec allows: "
                    f"{self._size_advice()}"
                )
            file.write(chunk)
            self.digest.update(chunk)
            now = time.monotonic()
            if now > self.deadline:
                raise self._out_of_time(f"after {_size(self.have)}")
            if now - self.reported >= PROGRESS_EVERY_S:
                self.reported = now
                log.info("downloading %s: %s", self.url, self._progress(now))

    def _restart(self, file: IO[bytes]) -> None:
        file.seek(0)
        file.truncate()
        self.have, self.total, self.validator = 0, None, None
        self.digest = hashlib.sha256()

    def _refuse_or_retry(self, error: urllib.error.HTTPError) -> NoReturn:
        said = f"HTTP {error.code} {shown(str(error.reason))}"
        if error.code >= 500 or error.code in _RETRIED_STATUS:
            raise _Retry(said) from error
        if error.code == 416 and self.have:
            raise _Retry(f"{said} for bytes from {self.have}: starting over") from error
        raise DownloadRefused(
            f"{self.url} answered {said}: check the model's url in the spec, and that the "
            "file is served there to anyone, without credentials"
        ) from error

    def _untrusted_or_retry(self, reason: object) -> NoReturn:
        if isinstance(reason, ssl.SSLCertVerificationError):
            bundle = self.model.ca_bundle_file or self.model.ca_bundle
            trusted = "the image's CAs" + (f" and the CA bundle {bundle}" if bundle else "")
            advice = (
                "the bundle does not hold the CA that issued the server's certificate: add "
                "that CA's certificate to the bundle's file"
                if bundle
                else "if your company's own CA issued it, commit the CA's certificate (PEM) "
                "and name it as ca_bundle in specs/clusters.yaml or on the model"
            )
            raise DownloadUntrusted(
                f"{self.url}: the server's certificate is not trusted "
                f"({reason.verify_message}); the download trusts {trusted}: {advice}"
            ) from reason
        raise _Retry(f"{type(reason).__name__}: {reason}")

    def _wait_or_give_up(self, why: str, idle: int, attempts: int) -> None:
        backoff = min(2.0 ** (idle - 1), MAX_BACKOFF_S) if idle else 0.0
        if idle >= MAX_IDLE_ATTEMPTS or attempts >= MAX_ATTEMPTS:
            raise DownloadFailed(
                f"{self.url}: gave up after {attempts} connections ({idle} in a row with no "
                f"progress), {self._progress(time.monotonic())}; the last: {why}"
            )
        if time.monotonic() + backoff >= self.deadline:
            raise self._out_of_time(f"after {attempts} connections; the last: {why}")
        log.warning(
            "downloading %s: %s; %s, trying again in %.0f s",
            self.url,
            why,
            self._progress(time.monotonic()),
            backoff,
        )
        time.sleep(backoff)

    def _out_of_time(self, when: str) -> DownloadFailed:
        budget = self.model.download_budget_s or DEFAULT_DOWNLOAD_BUDGET_S
        return DownloadFailed(
            f"{self.url}: the download's time budget of {budget:g} s ran out {when}, "
            f"{self._progress(time.monotonic())}: raise the model's download_budget in the "
            "spec, or serve the model nearer the cluster"
        )

    def _check_digest(self) -> None:
        actual = self.digest.hexdigest()
        if actual != self.model.sha256:
            raise ModelMismatch(
                f"{self.url} served {self.have:,} bytes with sha256 {actual}, but the spec pins "
                f"{self.model.sha256}: the server holds another file than the spec names; if "
                "the model changed on purpose, update its sha256 (and size) in the spec, "
                "otherwise restore the file on the server"
            )

    def _size_advice(self) -> str:
        if self.model.size_bytes is None:
            most = _size(DEFAULT_DOWNLOAD_BYTES)
            return f"a url model without `size` may be {most}; give the model's size"
        return "if the model grew on purpose, update its size and sha256 in the spec"

    def _progress(self, now: float) -> str:
        of = f" of {_size(self.total)}" if self.total else ""
        share = f" ({100 * self.have / self.total:.0f} %)" if self.total else ""
        rate = self.have / _MIB / max(now - self.began, 1e-3)
        return f"{_size(self.have)}{of}{share} in {now - self.began:.1f} s, {rate:.1f} MiB/s"


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """The first byte and the whole size of `bytes START-END/TOTAL` (None where unsaid)."""
    if value is None or not value.startswith("bytes "):
        return None, None
    span, _, total = value.removeprefix("bytes ").partition("/")
    start = span.partition("-")[0]
    return (
        int(start) if start.isdigit() else None,
        int(total) if total.isdigit() else None,
    )


def _size(count: int) -> str:
    return f"{count / _MIB:.1f} MiB" if count >= _MIB else f"{count:,} bytes"
