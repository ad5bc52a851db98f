"""Ed25519 signatures on report locks (``certify --sign KEY``, ``verify --trust FILE``): proof
that a lock is the one the key holder produced. The signed message is
``b"workbench-lock-v1\n" + lock_sha256``."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ._docs import add_field_docs
from ._io import read_bounded
from .errors import Problem, WorkbenchError, problem
from .errors import refusal as _refused

PASSPHRASE_ENV = "WORKBENCH_SIGNING_PASSPHRASE"
MESSAGE_PREFIX = b"workbench-lock-v1\n"


class LockSignature(BaseModel):
    """An Ed25519 signature over a lock's ``lock_sha256``."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    algorithm: Literal["ed25519"] = "ed25519"
    """Signature algorithm."""
    public_key: str
    """The signer's public key, OpenSSH one-line form (``ssh-ed25519 AAAA...``)."""
    key_fingerprint: str
    """``SHA256:<base64>`` of the public key blob, as ``ssh-keygen -l`` prints it."""
    signed: Literal["lock_sha256"] = "lock_sha256"
    """What was signed: ``workbench-lock-v1\\n`` followed by the lock's ``lock_sha256``."""
    signature: str
    """The signature, base64."""


def _problem(location: str, code: str, message: str, fix: str) -> WorkbenchError:
    return _refused("signing key refused", location, code, message, fix)


def message_for(lock_sha256: str) -> bytes:
    return MESSAGE_PREFIX + lock_sha256.encode("ascii")


def ssh_fingerprint(public_key_openssh: str) -> str:
    """``SHA256:...`` fingerprint of an OpenSSH public key line."""
    blob = base64.b64decode(public_key_openssh.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


@dataclass(frozen=True)
class Signer:
    """A loaded Ed25519 private key."""

    key: object
    public_key: str

    def sign(self, lock_sha256: str) -> LockSignature:
        signature = self.key.sign(message_for(lock_sha256))  # type: ignore[attr-defined]
        return LockSignature(
            public_key=self.public_key,
            key_fingerprint=ssh_fingerprint(self.public_key),
            signature=base64.b64encode(signature).decode(),
        )


def load_signer(path: str | Path) -> Signer:
    """Read an Ed25519 private key (OpenSSH or PEM), or raise :class:`WorkbenchError`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key_path = Path(path)
    loc = str(key_path)
    try:
        data = read_bounded(key_path)  # bounded: a pipe or /dev/zero is refused
    except WorkbenchError as exc:
        raise _problem(
            loc,
            "signing_key_unreadable",
            f"the signing key cannot be read ({exc.problems[0].message if exc.problems else exc})",
            "point --sign at an Ed25519 private key file (ssh-keygen -t ed25519 -f KEY)",
        ) from None
    passphrase = os.environ.get(PASSPHRASE_ENV)
    password = passphrase.encode() if passphrase else None
    key = None
    errors: list[str] = []
    loaders = (
        (serialization.load_ssh_private_key, serialization.load_pem_private_key)
        if b"OPENSSH PRIVATE KEY" in data
        else (serialization.load_pem_private_key, serialization.load_ssh_private_key)
    )
    for loader in loaders:
        try:
            key = loader(data, password=password)
            break
        except TypeError as exc:  # encrypted without a passphrase, or a passphrase for a plain key
            errors.append(str(exc))
        except (ValueError, binascii.Error) as exc:
            errors.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - cryptography raises backend-specific errors for garbage
            errors.append(type(exc).__name__)
    if key is None:
        encrypted = any("encrypted" in e.lower() or "password" in e.lower() for e in errors)
        fix = (
            f"set ${PASSPHRASE_ENV} to the key's passphrase"
            if encrypted
            else (
                "give an Ed25519 private key in OpenSSH (ssh-keygen -t ed25519) or PEM (PKCS#8)"
                " format"
            )
        )
        message = f"not a readable private key ({errors[0][:100] if errors else 'unknown format'})"
        raise _problem(loc, "signing_key_invalid", message, fix)
    if not isinstance(key, Ed25519PrivateKey):
        message = f"the key is {type(key).__name__.replace('_', '')}, not Ed25519"
        fix = "create an Ed25519 key: ssh-keygen -t ed25519 -f KEY"
        raise _problem(loc, "signing_key_not_ed25519", message, fix)
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return Signer(key, public)


def load_trust(path: str | Path) -> dict[bytes, str]:
    """Trusted Ed25519 public keys: raw key bytes -> the line's comment (or fingerprint)."""
    from cryptography.hazmat.primitives import serialization

    trust_path = Path(path)
    try:
        text = read_bounded(trust_path).decode("utf-8")  # bounded: a pipe or /dev/zero is refused
    except (WorkbenchError, UnicodeDecodeError) as exc:
        why = exc.problems[0].message if isinstance(exc, WorkbenchError) and exc.problems else exc
        raise _refused(
            "trust file refused",
            str(trust_path),
            "trust_unreadable",
            f"the trust file cannot be read ({why})",
            "give a text file with one OpenSSH public key per line",
        ) from None
    keys: dict[bytes, str] = {}
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, problem = _trusted_key(line, f"{trust_path}:{number}")
        if problem is not None:
            problems.append(problem)
            continue
        raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        keys[raw] = " ".join(line.split()[2:]) or ssh_fingerprint(line)
    if problems:
        raise WorkbenchError("trust file refused", problems)
    if not keys:
        message = "the trust file lists no key"
        fix = "add the certifying team's Ed25519 public keys, one per line"
        raise _refused("trust file refused", str(trust_path), "trust_empty", message, fix)
    return keys


def _trusted_key(line: str, where: str) -> tuple[Any, Problem | None]:
    """The Ed25519 public key of one trust-file line, or the problem with the line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    parts = line.split()
    try:
        key = serialization.load_ssh_public_key(" ".join(parts[:2]).encode())
    except Exception:  # noqa: BLE001 - any parse failure is the same user error
        fix = "write one key per line as `ssh-ed25519 AAAA... comment` (the .pub file of the key)"
        return None, problem(where, "trust_invalid", "not an OpenSSH public key line", fix)
    if not isinstance(key, Ed25519PublicKey):
        message = f"{parts[0]} key: only Ed25519 keys sign locks"
        fix = "list the Ed25519 public keys of the certifying team"
        return None, problem(where, "trust_not_ed25519", message, fix)
    return key, None


def check_signature(
    signature: LockSignature, lock_sha256: str, trusted: dict[bytes, str] | None
) -> tuple[str, str]:
    """``(status, detail)``; status is ``trusted``, ``valid`` (no trust list given), ``untrusted``
    or ``invalid``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_ssh_public_key(signature.public_key.encode())
        if not isinstance(key, Ed25519PublicKey):
            return "invalid", "the signature's public key is not Ed25519"
        key.verify(base64.b64decode(signature.signature, validate=True), message_for(lock_sha256))
    except InvalidSignature:
        return "invalid", f"the signature by {signature.key_fingerprint} does not match this lock"
    except Exception as exc:  # noqa: BLE001 - a garbled signature block is an invalid signature
        return "invalid", f"the signature cannot be read ({type(exc).__name__})"
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    fingerprint = ssh_fingerprint(signature.public_key)
    if trusted is None:
        return (
            "valid",
            (
                f"signed by {fingerprint}; the key was not checked against a trust list (pass"
                " --trust FILE)"
            ),
        )
    if raw not in trusted:
        return "untrusted", f"signed by {fingerprint}, which is not in the trust file"
    return "trusted", f"signed by a trusted key: {trusted[raw]} ({fingerprint})"
