"""Naming what a file is when it is not an XPlane profile, for the one-sentence error."""

from __future__ import annotations


def describe_foreign_format(data: bytes) -> str | None:
    """Names the format of bytes that are clearly not an XSpace, for the error message."""
    head = data[:16]
    stripped = data[:256].lstrip()
    if head.startswith(b"\x89PNG"):
        return "it is a PNG image, not an XPlane profile"
    if head[:3] == b"\xff\xd8\xff":
        return "it is a JPEG image, not an XPlane profile"
    if head.startswith(b"PK\x03\x04"):
        return "it is a ZIP archive, not an XPlane profile"
    if head.startswith(b"%PDF"):
        return "it is a PDF document, not an XPlane profile"
    if stripped[:1] in (b"{", b"["):
        if b"traceEvents" in data[:4096]:
            return "it is a Chrome trace-event JSON file, not an XPlane profile (.xplane.pb)"
        return "it is a JSON file, not an XPlane profile (.xplane.pb)"
    if stripped[:1] == b"<":
        return "it is an HTML or XML document, not an XPlane profile"
    if looks_utf8_reencoded(data):
        return (
            "it looks like a binary profile that a text tool re-encoded as UTF-8; "
            "copy or download the original file in binary mode"
        )
    return None


def looks_utf8_reencoded(data: bytes) -> bool:
    """True for binary data that went through a text decode/encode round trip.

    Such files decode as valid UTF-8 and carry many U+FFFD replacement
    characters (EF BF BD), or many C2/C3 lead bytes where raw bytes >= 0x80
    were re-encoded as Latin-1.
    """
    sample = data[: 1 << 20]
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut in the middle of a multi-byte character at the sample's end is fine.
        if exc.start < len(sample) - 4:
            return False
    replacements = sample.count(b"\xef\xbf\xbd")
    latin = sample.count(b"\xc2") + sample.count(b"\xc3")
    high = sum(1 for b in sample[:65536] if b >= 0x80)
    return replacements * 3 >= max(16, high // 4) or (latin >= 16 and latin * 2 >= high // 2)
