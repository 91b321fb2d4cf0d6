#!/usr/bin/env python3
# make-age-seeds.py - the seed corpus of fuzz-age-header (tests/fuzz/corpus-age-header):
# age v1 headers written here independently of the code under test (Python's
# cryptography: X25519, HKDF-SHA256, ChaCha20-Poly1305, HMAC-SHA256), wrapping
# fuzz-age-header.c's fixed file key for its fixed identity, then each kind of damage.
#
#   tests/fuzz/make-age-seeds.py tests/fuzz/corpus-age-header
import base64
import hashlib
import hmac
import os
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import (X25519PrivateKey,
                                                              X25519PublicKey)
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

# the same constants as fuzz-age-header.c
SCALAR = bytes(range(1, 33))
FILE_KEY = bytes(range(0x40, 0x50))
MAGIC = b"age-encryption.org/v1\n"


def b64(data):
    return base64.b64encode(data).rstrip(b"=")


def hkdf(ikm, salt, info):
    return HKDF(hashes.SHA256(), 32, salt, info).derive(ikm)


def raw_pub(key):
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def x25519_stanza(recipient_pub, seed):
    eph = X25519PrivateKey.from_private_bytes(hashlib.sha256(seed).digest())
    share = raw_pub(eph)
    shared = eph.exchange(X25519PublicKey.from_public_bytes(recipient_pub))
    key = hkdf(shared, share + recipient_pub, b"age-encryption.org/v1/X25519")
    body = ChaCha20Poly1305(key).encrypt(bytes(12), FILE_KEY, None)
    return b"-> X25519 " + b64(share) + b"\n" + b64(body) + b"\n"


def body_lines(data):
    text = b64(data)
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    if not lines or len(lines[-1]) == 64:
        lines.append(b"")
    return b"\n".join(lines) + b"\n"


def seal(stanzas):
    head = MAGIC + b"".join(stanzas) + b"---"
    mac = hmac.new(hkdf(FILE_KEY, None, b"header"), head, hashlib.sha256).digest()
    return head + b" " + b64(mac) + b"\n"


def payload(text):
    """The nonce and the one last chunk of @text."""
    nonce = bytes(range(16))
    key = hkdf(FILE_KEY, nonce, b"payload")
    return nonce + ChaCha20Poly1305(key).encrypt(bytes(11) + b"\x01", text, None)


def main():
    out = sys.argv[1]
    me = raw_pub(X25519PrivateKey.from_private_bytes(SCALAR))
    other = raw_pub(X25519PrivateKey.from_private_bytes(bytes(32 * [7])))
    mine = x25519_stanza(me, b"a")
    theirs = x25519_stanza(other, b"b")
    valid = seal([mine])
    seeds = {
        "valid": valid + payload(b"hello"),
        "valid-header-only": valid,
        "two-recipients-second": seal([theirs, mine]),
        "scrypt-and-x25519": seal([b"-> scrypt " + b64(bytes(16)) + b" 18\n" +
                                   body_lines(bytes(32)), mine]),
        "ssh-and-x25519": seal([b"-> ssh-ed25519 Ab12Cd " + b64(bytes(32)) + b"\n" +
                                body_lines(bytes(32)), mine]),
        "plugin-long-body": seal([b"-> piv-p256 x y z\n" + body_lines(bytes(range(200))),
                                  mine]),
        "body-exactly-48": seal([b"-> grease\n" + body_lines(bytes(48)), mine]),
        "no-identity-matches": seal([theirs]),
        "only-scrypt": seal([b"-> scrypt " + b64(bytes(16)) + b" 18\n" +
                             body_lines(bytes(32))]),
        "mac-of-another-header": seal([theirs, mine]).split(b"---")[0] +
                                 valid[valid.index(b"---"):],
        "no-footer": MAGIC + mine,
        "crlf": valid.replace(b"\n", b"\r\n"),
        "padded-base64": valid.replace(valid.split(b"\n")[2], valid.split(b"\n")[2] + b"="),
        "non-canonical-base64": valid[:len(MAGIC) + 10 + 42] + b"x" +
                                valid[len(MAGIC) + 10 + 43:],
        "empty-stanza-type": seal([b"-> \n\n", mine]),
        "version-v2": valid.replace(b"/v1", b"/v2"),
        "not-age": b"\x00" * 64,
        "too-many-stanzas": seal([b"-> a\n\n"] * 1024 + [mine]),
        "longer-than-64k": seal([b"-> a\n" + body_lines(bytes(48 * 1400)), mine]),
    }
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


main()
