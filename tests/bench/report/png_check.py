"""Tiny PNG reader (stdlib zlib only) used to prove a headless-browser screenshot is not blank."""
import struct
import zlib


def decode_png(path):
    """Returns (width, height, channels, rows) for 8-bit RGB/RGBA non-interlaced PNGs."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if width is None:
        raise ValueError(f"{path}: no IHDR")
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        filt = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if filt == 1:
                line[x] = (line[x] + a) & 0xFF
            elif filt == 2:
                line[x] = (line[x] + b) & 0xFF
            elif filt == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def colour_stats(path, probe_colours=()):
    """Distinct colours, fraction of non-white pixels, and which probe colours (±24 per channel) occur."""
    width, height, channels, rows = decode_png(path)
    colours, non_white = set(), 0
    found = {c: False for c in probe_colours}
    for row in rows:
        for x in range(0, width * channels, channels):
            px = (row[x], row[x + 1], row[x + 2])
            colours.add(px)
            if px != (255, 255, 255):
                non_white += 1
            for c in probe_colours:
                if not found[c] and all(abs(px[k] - c[k]) <= 24 for k in range(3)):
                    found[c] = True
    return len(colours), non_white / float(width * height), found
