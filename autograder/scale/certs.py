"""``python -m autograder cluster-certs DIR``: the certificates of a grading cluster (mutual TLS).

A Dask cluster without TLS lets anyone who reaches the scheduler join as a worker (and receive
every submission and the hidden tests) or as a client (and run code on the workers).  This
command makes a private certificate authority (CA) and, signed by it, one certificate and key
for the scheduler, one for the workers and one for the instructor's ``grade --cluster``:

    DIR/ca-key.pem                         the CA's key: stays with the instructor, never copied
    DIR/scheduler/{ca,scheduler,scheduler-key}.pem   to the scheduler's machine
    DIR/worker/{ca,worker,worker-key}.pem             to every worker machine
    DIR/client/{ca,client,client-key}.pem             this machine (``grade --cluster-certs DIR``)

Dask's TLS (``distributed.security.Security``) then requires a certificate signed by this CA
from every peer, both ways (``ssl.CERT_REQUIRED`` on the listening side too): a worker or client
without one is refused during the TLS handshake.  Dask does not tell roles apart: whoever holds
the worker's (or the scheduler's) certificate and key can also connect as a client, so each of
them is as trusted as the instructor (README.md, "Grading on a cluster").  Keys are written
0600; a folder that already holds certificates is never overwritten.
"""
from __future__ import annotations

import datetime
import os
from pathlib import Path

ROLES = ("scheduler", "worker", "client")
DAYS = 400                 # a term and its resits; then make new ones
CA_KEY = "ca-key.pem"


def files(folder: Path, role: str) -> dict:
    """The CA certificate, certificate and key of ``role`` in a ``cluster-certs`` folder."""
    base = Path(folder) / role
    return {"ca": base / "ca.pem", "cert": base / f"{role}.pem", "key": base / f"{role}-key.pem"}


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)       # whatever the umask


def make(folder: Path, *, days: int = DAYS) -> dict:
    """Write the CA and the three roles' certificates into ``folder`` (which must be empty or
    new); returns {role: files(folder, role)} and the CA key's path under "ca-key"."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise SystemExit(f"{folder} is not an empty folder: cluster-certs never overwrites "
                         "certificates (the cluster's machines hold copies); give a new folder")
    now = datetime.datetime.now(datetime.timezone.utc)
    until = now + datetime.timedelta(days=days)

    def pem_key(key) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    def name(cn: str):
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "L-ReAct grading"),
                          x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def builder(subject, issuer, key):
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(until))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("L-ReAct grading cluster CA")
    ca = (builder(ca_name, ca_name, ca_key)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    _write(folder / CA_KEY, pem_key(ca_key), 0o600)
    made = {"ca-key": folder / CA_KEY}
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (builder(name(f"lreact-{role}"), ca_name, key)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"lreact-{role}")]),
                               critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        paths = files(folder, role)
        _write(paths["ca"], ca_pem, 0o644)
        _write(paths["cert"], cert.public_bytes(serialization.Encoding.PEM), 0o644)
        _write(paths["key"], pem_key(key), 0o600)
        made[role] = paths
    os.chmod(folder, 0o700)
    return made


def expiry(cert: Path) -> datetime.datetime:
    """When the certificate at ``cert`` stops being valid (UTC)."""
    from cryptography import x509
    return x509.load_pem_x509_certificate(Path(cert).read_bytes()).not_valid_after_utc


def instructions(folder: Path, made: dict) -> str:
    """What ``cluster-certs`` prints: which file goes to which machine, and the commands."""
    s, w, c = (made[r] for r in ROLES)
    until = expiry(c["cert"]).strftime("%Y-%m-%d")
    return "\n".join([
        f"wrote a private CA and certificates for a grading cluster to {folder} "
        f"(valid until {until}):",
        f"  {made['ca-key']}",
        "      the CA's key: KEEP IT HERE, never copy it; whoever has it can make "
        "certificates that join the cluster",
        f"  {s['ca'].parent}/  -> the scheduler's machine only",
        f"  {w['ca'].parent}/  -> every worker machine (only machines you control: a worker "
        "receives every submission and the hidden tests)",
        f"  {c['ca'].parent}/  -> stays on this machine, for grade --cluster",
        "each *-key.pem is a secret (mode 0600): copy it only to its machine (e.g. scp -r), "
        "and give it to no one else.",
        "",
        "start the scheduler (from the repository, PYTHONPATH=$PWD):",
        f"  dask scheduler --tls-ca-file {s['ca']} --tls-cert {s['cert']} "
        f"--tls-key {s['key']}",
        "each worker:",
        f"  dask worker tls://HOST:8786 --tls-ca-file {w['ca']} --tls-cert {w['cert']} "
        f"--tls-key {w['key']}",
        "grade:",
        f"  python -m autograder grade SUBMISSIONS --cluster tls://HOST:8786 "
        f"--cluster-certs {folder}",
        "(on the other machines, use the paths where you copied the folders). To shut a "
        "machine out, make a new folder with cluster-certs and give it to the others only.",
    ])


def command(folder: Path) -> int:
    made = make(folder)
    print(instructions(Path(folder), made))
    return 0
