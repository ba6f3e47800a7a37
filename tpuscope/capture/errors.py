"""The failures a capture can end with, each carrying one sentence for the user."""

from __future__ import annotations


class CaptureError(Exception):
    """A capture failed; str(error) is one sentence naming the target and the cause."""


class CaptureCancelled(Exception):
    """The user cancelled the capture (Cancel button or a progress callback returning False)."""


class UnknownHostKey(CaptureError):
    """The SSH server's host key is not in known_hosts; the GUI may offer to trust it."""

    def __init__(self, message: str, hostname: str, key, fingerprint: str, known_hosts_file: str):
        super().__init__(message)
        self.hostname = hostname  # the known_hosts entry name ("host" or "[host]:port")
        self.key = key  # the paramiko PKey the server presented
        self.fingerprint = fingerprint
        self.known_hosts_file = known_hosts_file  # where trusting it should write (the file that was read)


class PassphraseRequired(CaptureError):
    """The SSH private key is encrypted and no passphrase was given; the caller may ask for one."""

    def __init__(self, message: str, key_file: str):
        super().__init__(message)
        self.key_file = key_file
