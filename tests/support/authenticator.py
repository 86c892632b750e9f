"""A software WebAuthn authenticator for the tests: no browser, every byte under control.

It answers the options of ``GET /auth/webauthn-options/<id>`` as a browser and
a platform authenticator would: ``create()`` gives the registration response
(attestation "none", an ES256 key) and ``get()`` an assertion, each in the JSON
form ``PublicKeyCredential.toJSON()`` produces, ready to post as ``data``.
Keyword arguments let a test break one thing at a time: the origin, the RP id,
the user verification flag, the counter, the challenge, the signature.

Test-only code: the product never builds or parses these formats itself
(py_webauthn does), and this module is the independent implementation the
tests check it against (CTAP2 / WebAuthn Level 3 byte layouts, with
``cryptography`` and ``cbor2``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

# authenticatorData flags (WebAuthn 6.1)
UP = 0x01
UV = 0x04
BE = 0x08
BS = 0x10
AT = 0x40

#: A made-up AAGUID that no list names (so the passkey is named after the browser).
TEST_AAGUID = bytes.fromhex("0badc0de0badc0de0badc0de0badc0de")
#: Google Password Manager's AAGUID, for the naming test.
GOOGLE_AAGUID = bytes.fromhex("ea9b8d664d011d213ce4b6b48cb575d4")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Credential:
    """One credential the authenticator holds."""

    id: bytes
    key: ec.EllipticCurvePrivateKey
    rp_id: str
    user_handle: bytes
    sign_count: int = 0

    @property
    def id_b64url(self) -> str:
        return b64url(self.id)

    @property
    def id_b64(self) -> str:
        """The id as webauth stores it (standard base64)."""
        return base64.b64encode(self.id).decode("ascii")


def _cose_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    numbers = key.public_key().public_numbers()
    return cbor2.dumps(
        {
            1: 2,  # kty: EC2
            3: -7,  # alg: ES256
            -1: 1,  # crv: P-256
            -2: numbers.x.to_bytes(32, "big"),
            -3: numbers.y.to_bytes(32, "big"),
        }
    )


@dataclass
class SoftAuthenticator:
    """A platform authenticator with user verification and synced (backed-up) passkeys.

    ``counter_step``: how much the signature counter goes up per assertion
    (0: a synced passkey that always says 0).
    """

    aaguid: bytes = TEST_AAGUID
    counter_step: int = 1
    backup_eligible: bool = True
    backed_up: bool = True
    credentials: dict[bytes, Credential] = field(default_factory=dict)

    # -- building blocks ------------------------------------------------------------------
    def _flags(self, *, up: bool, uv: bool, attested: bool = False) -> int:
        flags = (UP if up else 0) | (UV if uv else 0)
        if self.backup_eligible:
            flags |= BE
            if self.backed_up:
                flags |= BS
        return flags | (AT if attested else 0)

    @staticmethod
    def client_data(kind: str, challenge: str, origin: str, **extra: Any) -> bytes:
        data = {"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False}
        data.update(extra)
        return json.dumps(data, separators=(",", ":")).encode()

    # -- navigator.credentials.create() -------------------------------------------------------
    def create(
        self,
        options: dict[str, Any],
        *,
        origin: str,
        rp_id: str | None = None,
        uv: bool = True,
        up: bool = True,
        challenge: str | None = None,
        client_data: bytes | None = None,
        discoverable: bool | None = True,
        kind: str = "webauthn.create",
        credential_id: bytes | None = None,
    ) -> dict[str, Any]:
        """The registration response to *options* (the ``options`` of the JSON answer).

        *credential_id* makes the new credential reuse an id (an authenticator
        that ignored ``excludeCredentials``, or a forged one).
        """
        rp = rp_id or options["rp"]["id"]
        key = ec.generate_private_key(ec.SECP256R1())
        credential = Credential(
            id=credential_id or os.urandom(32),
            key=key,
            rp_id=rp,
            user_handle=unb64url(options["user"]["id"]),
        )
        cose = _cose_key(key)
        auth_data = (
            hashlib.sha256(rp.encode()).digest()
            + bytes([self._flags(up=up, uv=uv, attested=True)])
            + struct.pack(">I", credential.sign_count)
            + self.aaguid
            + struct.pack(">H", len(credential.id))
            + credential.id
            + cose
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        cdj = client_data or self.client_data(kind, challenge or options["challenge"], origin)
        self.credentials[credential.id] = credential
        extensions: dict[str, Any] = {}
        if discoverable is not None:
            extensions["credProps"] = {"rk": discoverable}
        return {
            "id": credential.id_b64url,
            "rawId": credential.id_b64url,
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "response": {
                "clientDataJSON": b64url(cdj),
                "attestationObject": b64url(attestation),
                "transports": ["hybrid", "internal"],
            },
            "clientExtensionResults": extensions,
        }

    # -- navigator.credentials.get() ----------------------------------------------------------
    def get(
        self,
        options: dict[str, Any],
        *,
        origin: str,
        credential: Credential | None = None,
        rp_id: str | None = None,
        uv: bool = True,
        up: bool = True,
        challenge: str | None = None,
        client_data: bytes | None = None,
        sign_count: int | None = None,
        kind: str = "webauthn.get",
        tamper_signature: bool = False,
    ) -> dict[str, Any]:
        """An assertion for *options* with *credential* (default: the only one held)."""
        if credential is None:
            (credential,) = self.credentials.values()
        rp = rp_id or options.get("rpId") or credential.rp_id
        if sign_count is None:
            credential.sign_count += self.counter_step
            sign_count = credential.sign_count
        auth_data = (
            hashlib.sha256(rp.encode()).digest()
            + bytes([self._flags(up=up, uv=uv)])
            + struct.pack(">I", sign_count)
        )
        cdj = client_data or self.client_data(kind, challenge or options["challenge"], origin)
        signature = credential.key.sign(
            auth_data + hashlib.sha256(cdj).digest(), ec.ECDSA(hashes.SHA256())
        )
        if tamper_signature:
            signature = signature[:-1] + bytes([signature[-1] ^ 1])
        return {
            "id": credential.id_b64url,
            "rawId": credential.id_b64url,
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "response": {
                "clientDataJSON": b64url(cdj),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                "userHandle": b64url(credential.user_handle),
            },
            "clientExtensionResults": {},
        }
