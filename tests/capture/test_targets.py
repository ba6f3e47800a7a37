"""Parsing of capture targets, SSH hosts and durations: what users type on the command line."""

from __future__ import annotations

import pytest

from tpuscope.capture.errors import CaptureError
from tpuscope.capture.targets import (
    SshHost,
    Target,
    file_label,
    parse_duration,
    parse_ssh_host,
    parse_targets,
)


def test_targets_accept_lists_scheme_and_bare_ports():
    two = [Target("localhost", 9012), Target("10.0.0.2", 9012)]
    assert parse_targets("localhost:9012,10.0.0.2:9012") == two
    deduplicated = [Target("vm", 9012), Target("localhost", 9013)]
    assert parse_targets(["grpc://vm:9012", "9013", "vm:9012"]) == deduplicated
    assert parse_targets("[::1]:9012") == [Target("::1", 9012)]
    assert str(Target("::1", 9012)) == "[::1]:9012"


@pytest.mark.parametrize("text, fragment", [
    ("vm", "has no port"),
    ("vm:http", "not a number from 1 to 65535"),
    ("vm:70000", "not a number from 1 to 65535"),
    (" , ", "No capture target"),
    ("[::1:9012", "IPv6"),
])  # fmt: skip
def test_bad_targets_are_one_sentence(text, fragment):
    with pytest.raises(CaptureError, match=fragment):
        parse_targets(text)


def test_ssh_hosts():
    assert parse_ssh_host("alice@tpu-vm:2222") == SshHost("tpu-vm", "alice", 2222)
    assert parse_ssh_host("tpu-vm") == SshHost("tpu-vm")
    assert parse_ssh_host("ssh://bob@10.1.2.3") == SshHost("10.1.2.3", "bob")
    with pytest.raises(CaptureError, match="names no host"):
        parse_ssh_host("bob@")


def test_durations():
    assert parse_duration("2s") == 2.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("1.5") == 1.5
    assert parse_duration("1m") == 60.0
    with pytest.raises(CaptureError, match="is not a duration"):
        parse_duration("two seconds")


def test_file_labels_name_the_machine():
    assert file_label(Target("10.0.0.2", 9012)) == "10.0.0.2_9012"
    # through SSH, "localhost" would not say which VM it was: the SSH host names it
    assert file_label(Target("localhost", 9012), SshHost("tpu-vm-1", "me")) == "tpu-vm-1_9012"
    assert file_label(Target("10.0.0.3", 9012), SshHost("tpu-vm-1")) == "10.0.0.3_9012"
