"""The token key set, read alone (:mod:`webauth.tokens.keys`): every algorithm and
curve pairing, the size limits at their edges, each way a key is given, and the
message each refusal carries. No Django: this is what the settings builder and
the system checks call.
"""

from __future__ import annotations

import json

import pytest
from jwcrypto import jwk

from webauth.tokens.keys import (
    ALGORITHMS,
    MAX_KEY_LENGTH,
    MIN_RSA_BITS,
    KeyProblem,
    generate,
    public_jwks,
    read_key,
    read_keys,
)

P256 = jwk.JWK.generate(kty="EC", crv="P-256")
P384 = jwk.JWK.generate(kty="EC", crv="P-384")
ED25519 = jwk.JWK.generate(kty="OKP", crv="Ed25519")
X25519 = jwk.JWK.generate(kty="OKP", crv="X25519")
RSA = jwk.JWK.generate(kty="RSA", size=MIN_RSA_BITS)


def jwk_dict(key: jwk.JWK, **members: object) -> dict[str, object]:
    value = dict(key.export(private_key=True, as_dict=True))
    value.update(members)
    return value


def test_the_algorithm_table_is_as_documented():
    assert dict(ALGORITHMS) == {
        "ES256": ("EC", "P-256"),
        "ES384": ("EC", "P-384"),
        "EdDSA": ("OKP", "Ed25519"),
        "RS256": ("RSA", None),
        "PS256": ("RSA", None),
    }
    assert MIN_RSA_BITS == 2048
    assert MAX_KEY_LENGTH == 16_000


@pytest.mark.parametrize(
    ("key", "alg"), [(P256, "ES256"), (P384, "ES384"), (ED25519, "EdDSA"), (RSA, "RS256")]
)
def test_a_key_without_alg_takes_the_one_its_type_implies(key, alg):
    read = read_key(jwk_dict(key))
    assert read.alg == alg
    assert read.kid == key.thumbprint()
    assert read.can_sign


def test_an_rsa_key_may_name_pss():
    assert read_key(jwk_dict(RSA), alg="PS256").alg == "PS256"
    assert read_key(jwk_dict(RSA, alg="PS256")).alg == "PS256"


def test_the_given_alg_wins_over_the_keys_own():
    # The key says RS256; the entry's "alg" is what it signs with.
    assert read_key(jwk_dict(RSA, alg="RS256"), alg="PS256").alg == "PS256"


@pytest.mark.parametrize(
    ("key", "alg", "message"),
    [
        (P384, "ES256", "is a EC key on P-384, which cannot sign ES256 (it needs EC on P-256)"),
        (P256, "ES384", "is a EC key on P-256, which cannot sign ES384 (it needs EC on P-384)"),
        (P256, "EdDSA", "is a EC key on P-256, which cannot sign EdDSA (it needs OKP on Ed25519)"),
        (
            X25519,
            "EdDSA",
            "is a OKP key on X25519, which cannot sign EdDSA (it needs OKP on Ed25519)",
        ),
        (P256, "RS256", "is a EC key on P-256, which cannot sign RS256 (it needs RSA)"),
        (RSA, "ES256", "is a RSA key, which cannot sign ES256 (it needs EC on P-256)"),
        (RSA, "EdDSA", "is a RSA key, which cannot sign EdDSA (it needs OKP on Ed25519)"),
    ],
)
def test_a_key_that_cannot_sign_its_alg_is_refused(key, alg, message):
    with pytest.raises(KeyProblem) as caught:
        read_key(jwk_dict(key), alg=alg)
    assert str(caught.value) == message


def test_a_curve_that_signs_nothing_is_refused_by_name():
    with pytest.raises(KeyProblem) as caught:
        read_key(jwk_dict(X25519))
    assert str(caught.value) == (
        "is a OKP key on curve 'X25519', which signs with none of ES256, ES384, EdDSA, RS256, PS256"
    )


@pytest.mark.parametrize("alg", ["HS256", "none", "ES512", "XXES256"])
def test_an_algorithm_outside_the_table_is_refused(alg):
    with pytest.raises(KeyProblem) as caught:
        read_key(jwk_dict(P256), alg=alg)
    assert str(caught.value) == (
        f"names the algorithm {alg!r}; use one of ES256, ES384, EdDSA, RS256, PS256"
    )


def test_a_key_whose_own_alg_is_no_string_is_refused():
    with pytest.raises(KeyProblem, match="names the algorithm 7"):
        read_key(jwk.JWK(**jwk_dict(P256)), alg=7)  # type: ignore[arg-type]


@pytest.mark.parametrize("alg", [["ES256"], {"ES256": 1}])
def test_an_alg_of_another_type_is_refused_not_raised(alg):
    with pytest.raises(KeyProblem, match="names the algorithm"):
        read_key(jwk_dict(P256), alg=alg)  # type: ignore[arg-type]


def test_a_key_given_as_text_is_never_taken_for_an_entry():
    # JSON and PEM text can hold the word "key": only a mapping is an entry.
    text = P256.export(private_key=True, as_dict=False)
    named = json.dumps(jwk_dict(P256, kid="my-key"))
    assert [k.kid for k in read_keys([text, named.replace("my-key", "key-2")])] == [
        P256.thumbprint(),
        "key-2",
    ]


def test_a_shared_secret_is_refused():
    with pytest.raises(KeyProblem) as caught:
        read_key({"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"})
    assert str(caught.value) == (
        "is a shared secret (kty 'oct'): every service that verifies could also mint; "
        "use an asymmetric key (python manage.py webauth_tokenkey)"
    )


def test_a_key_without_kty_is_refused():
    class NoKty(jwk.JWK):
        def get(self, name, default=None):
            return None if name == "kty" else super().get(name, default)

    key = jwk.JWK(**jwk_dict(P256))
    key.__class__ = NoKty  # jwcrypto itself never makes a JWK without kty
    with pytest.raises(KeyProblem) as caught:
        read_key(key)
    assert str(caught.value) == "has no 'kty' (is it a JWK?)"


def test_an_rsa_key_of_the_least_size_is_read_and_one_bit_less_is_not():
    assert read_key(jwk_dict(RSA)).key.get_op_key("verify").key_size == MIN_RSA_BITS
    short = jwk.JWK.generate(kty="RSA", size=MIN_RSA_BITS - 1)
    with pytest.raises(KeyProblem) as caught:
        read_key(jwk_dict(short))
    assert str(caught.value) == "is an RSA key of 2047 bits; use at least 2048"


@pytest.mark.parametrize("use", ["enc", "", "SIG"])
def test_a_key_for_another_use_is_refused(use):
    with pytest.raises(KeyProblem) as caught:
        read_key(jwk_dict(P256, use=use))
    assert str(caught.value) == f"is marked for use {use!r}; a signing key's use is 'sig'"


def test_a_key_for_signing_and_its_own_kid_are_kept():
    read = read_key(jwk_dict(P256, use="sig", kid="mine"))
    assert (read.kid, read.alg) == ("mine", "ES256")


def test_a_key_is_read_from_each_form():
    exported = P256.export(private_key=True)
    pem = P256.export_to_pem(private_key=True, password=None)
    for value in (
        P256,
        jwk_dict(P256),
        exported,
        exported.encode(),
        f"  \n{exported}\n ",
        pem,
        pem.decode(),
    ):
        read = read_key(value)
        assert read.kid == P256.thumbprint()
        assert read.can_sign


def test_a_given_jwk_object_is_used_as_it_is():
    assert read_key(P256).key is P256


def test_a_public_key_reads_but_cannot_sign():
    public = jwk.JWK(**P256.export_public(as_dict=True))
    assert not read_key(public).can_sign
    assert read_key(public).can_sign is False


def test_key_text_at_the_length_limit_is_read_and_one_more_is_not():
    text = P256.export(private_key=True)
    padded = text + " " * (MAX_KEY_LENGTH - len(text))
    assert len(padded) == MAX_KEY_LENGTH
    assert read_key(padded).kid == P256.thumbprint()
    with pytest.raises(KeyProblem) as caught:
        read_key(padded + " ")
    assert str(caught.value) == "is longer than 16000 characters"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "must be a JWK (a JSON string or a dict) or a PEM string, got 42"),
        (None, "must be a JWK (a JSON string or a dict) or a PEM string, got None"),
        ("not a key", "is neither a JWK (JSON) nor a PEM block"),
        ("", "is neither a JWK (JSON) nor a PEM block"),
        ("{not json", "could not be read (JSONDecodeError)"),
        ('{"kty": "EC"}', "could not be read (InvalidJWKValue)"),
        (
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
            "could not be read (ValueError)",
        ),
        ({"kty": "EC", "crv": "P-256"}, "is not a usable JWK (InvalidJWKValue)"),
    ],
)
def test_a_value_that_is_no_key_says_so_without_its_text(value, message):
    with pytest.raises(KeyProblem) as caught:
        read_key(value)
    assert str(caught.value) == message
    # A parse failure's own exception (which may quote the key) is not chained.
    assert caught.value.__suppress_context__ == message.endswith(")")


def test_public_drops_private_and_certificate_members_and_says_sig():
    key = jwk.JWK(**jwk_dict(P256, kid="k", alg="ES256", key_ops=["sign", "verify"]))
    for member in ("x5c", "x5t", "x5u", "x5t#S256"):
        key[member] = ["AAAA"] if member == "x5c" else "AAAA"
    published = read_key(key).public()
    assert published == {
        "kty": "EC",
        "crv": "P-256",
        "x": P256["x"] if "x" in P256 else json.loads(P256.export_public())["x"],
        "y": json.loads(P256.export_public())["y"],
        "kid": "k",
        "alg": "ES256",
        "use": "sig",
    }
    assert public_jwks([read_key(key)]) == {"keys": [published]}


def test_read_keys_takes_entries_with_an_alg_and_names_the_index_of_a_problem():
    keys = read_keys([{"key": jwk_dict(RSA), "alg": "PS256"}, jwk_dict(P256)])
    assert [(k.alg, k.kid) for k in keys] == [
        ("PS256", RSA.thumbprint()),
        ("ES256", P256.thumbprint()),
    ]
    assert isinstance(keys, tuple)
    assert read_keys([{"key": jwk_dict(P256)}])[0].alg == "ES256"
    with pytest.raises(KeyProblem) as caught:
        read_keys([jwk_dict(P256), {"key": jwk_dict(P384), "alg": 3}])
    assert str(caught.value) == "keys[1]: 'alg' must be a string, got 3"
    with pytest.raises(KeyProblem) as caught:
        read_keys([jwk_dict(P256), {"key": jwk_dict(P384), "alg": "ES256"}])
    assert str(caught.value).startswith("keys[1] is a EC key on P-384")
    assert caught.value.__suppress_context__


def test_a_plain_jwk_dict_is_a_key_not_an_entry():
    # A JWK has no "key" member: it is read as the key itself.
    assert read_keys([jwk_dict(P384)])[0].alg == "ES384"


def test_read_keys_refuses_a_repeated_kid_an_empty_set_and_a_public_first_key():
    with pytest.raises(KeyProblem) as caught:
        read_keys([jwk_dict(P256, kid="a"), jwk_dict(P384, kid="b"), jwk_dict(RSA, kid="a")])
    assert str(caught.value) == "keys[2] has the kid 'a' of an earlier key"
    with pytest.raises(KeyProblem) as caught:
        read_keys([])
    assert str(caught.value) == "keys is empty; give at least the key that signs"
    public = P256.export_public(as_dict=True)
    with pytest.raises(KeyProblem) as caught:
        read_keys([public, jwk_dict(P384)])
    assert str(caught.value) == (
        "keys[0] is a public key; the first key signs new tokens and must be private "
        "(put the new private key first, the old ones after it)"
    )
    assert len(read_keys([jwk_dict(P384), public])) == 2


@pytest.mark.parametrize("alg", list(ALGORITHMS))
def test_generate_makes_a_signing_key_for_each_algorithm(alg):
    key = generate(alg)
    assert key.has_private
    assert (key.get("alg"), key.get("use"), key.get("kid")) == (alg, "sig", key.thumbprint())
    kty, curve = ALGORITHMS[alg]
    assert key.get("kty") == kty
    assert key.get("crv") == curve
    read = read_key(key.export(private_key=True))
    assert read.alg == alg
    if kty == "RSA":
        assert key.get_op_key("verify").key_size == 3072


def test_generate_takes_a_kid_and_refuses_an_unknown_algorithm():
    assert generate(kid="k-7").get("kid") == "k-7"
    assert generate().get("alg") == "ES256"
    with pytest.raises(KeyProblem) as caught:
        generate("HS256")
    assert str(caught.value) == "'HS256' is not one of ES256, ES384, EdDSA, RS256, PS256"
