"""A tiny dependency-free PNG line-plot writer (used when matplotlib is not installed)."""

import struct
import zlib

_COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, pixels, width, height):
    raw = b"".join(b"\x00" + bytes(pixels[y * width * 3:(y + 1) * width * 3]) for y in range(height))
    data = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)


def plot_panels(path, panels, width=400, height=260):
    """panels: a list of lists of series (lists of y values), drawn side by side, each panel scaled to its
    own range, with a frame; no text (the JSON log holds the numbers)."""
    W = width * len(panels)
    px = bytearray([255]) * (W * height * 3)

    def put(x, y, c):
        if 0 <= x < W and 0 <= y < height:
            i = (y * W + x) * 3
            px[i:i + 3] = bytes(c)

    def line(x0, y0, x1, y1, c):
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            put(x0, y0, c)
            put(x0, y0 + 1, c)
            if x0 == x1 and y0 == y1:
                break
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    m = 20
    for p, series in enumerate(panels):
        ox = p * width
        line(ox + m, m, ox + width - m, m, (0, 0, 0))
        line(ox + m, height - m, ox + width - m, height - m, (0, 0, 0))
        line(ox + m, m, ox + m, height - m, (0, 0, 0))
        line(ox + width - m, m, ox + width - m, height - m, (0, 0, 0))
        vals = [v for s in series for v in s]
        if not vals:
            continue
        lo, hi = min(vals), max(vals)
        hi = hi if hi > lo else lo + 1.0
        for k, s in enumerate(series):
            pts = []
            for i, v in enumerate(s):
                x = ox + m + int((width - 2 * m) * (i / max(1, len(s) - 1)))
                y = height - m - int((height - 2 * m) * ((v - lo) / (hi - lo)))
                pts.append((x, y))
            for (a, b), (c, d) in zip(pts, pts[1:]):
                line(a, b, c, d, _COLORS[k % len(_COLORS)])
            if len(pts) == 1:
                put(*pts[0], _COLORS[k % len(_COLORS)])
    write_png(path, px, W, height)
