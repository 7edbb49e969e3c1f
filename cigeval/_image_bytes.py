"""What the bytes of an image file say without decoding its pixels.

:func:`cigeval.images.load_image` decodes pixels only when something needs them (a tool, an
encoding that re-encodes, a thumbnail): an RGB PNG or JPEG file sent byte for byte never is.
Deciding that early needs two facts the header alone does not give, read here from the file
structure: the file is whole (a truncated download must still be refused when the sample is
loaded), and it holds no EXIF orientation that Pillow would only find by decoding (a PNG
``eXIf`` chunk may come after the pixel data). Anything unusual answers "decode now", which
is what every image went through before.
"""

from __future__ import annotations

import struct

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_START, _JPEG_END = b"\xff\xd8", b"\xff\xd9"


def png_is_plain(data: bytes) -> bool:
    """True when ``data`` is a complete PNG (every chunk whole, up to ``IEND``) with no
    ``eXIf`` chunk anywhere. Chunk CRCs are not checked: a damaged pixel stream is found
    when the pixels are decoded."""
    if not data.startswith(_PNG_SIGNATURE):
        return False
    position, size = len(_PNG_SIGNATURE), len(data)
    while position + 8 <= size:
        (length,) = struct.unpack_from(">I", data, position)
        kind = data[position + 4 : position + 8]
        position += 12 + length  # length, type, data, CRC
        if position > size or kind == b"eXIf":
            return False
        if kind == b"IEND":
            return True
    return False


def jpeg_is_whole(data: bytes) -> bool:
    """True when ``data`` starts like a JPEG file and ends with its end-of-image marker
    (trailing zero padding allowed): a truncated file does not."""
    return data.startswith(_JPEG_START) and data.rstrip(b"\x00").endswith(_JPEG_END)
