#!/usr/bin/env python3
"""Pillow's ImageDraw on the canvas bench/drawing-core wrote (the paths
flattened to polylines within half a pixel), timed two ways, each with the
PNG encoding (zlib level 1, as ours):

  codemonet: Code Monet's paint-mode rasteriser (rendering.py): each
      stroke drawn with ImageDraw.line on a cleared RGBA layer of its own
      and alpha-composited onto the canvas, so that translucent strokes
      accumulate; no anti-aliasing, no round caps;
  one-layer: every stroke drawn straight onto one RGBA image (Pillow's
      fastest; overlapping translucent strokes of one path darken, and
      there is still no anti-aliasing).

  bench/drawing-pillow.py CANVAS-POLYLINES.json ROUNDS [STROKES]
"""
import io
import json
import statistics
import sys
import time

from PIL import Image, ImageDraw

paths = json.load(open(sys.argv[1]))
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
if len(sys.argv) > 3:
    paths = paths[:int(sys.argv[3])]


def rgba(hex_, opacity):
    return (int(hex_[1:3], 16), int(hex_[3:5], 16), int(hex_[5:7], 16),
            int(round(opacity * 255)))


def encode(img):
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "PNG", compress_level=1)
    return len(buf.getvalue())


def codemonet():
    canvas = Image.new("RGBA", (800, 600), (255, 255, 255, 255))
    layer = Image.new("RGBA", (800, 600), (0, 0, 0, 0))
    clear = Image.new("RGBA", (800, 600), (0, 0, 0, 0))
    for p in paths:
        layer.paste(clear)
        d = ImageDraw.Draw(layer)
        fill = rgba(p["color"], p["opacity"])
        w = max(1, int(p["width"]))
        for line in p["lines"]:
            pts = list(zip(line[0::2], line[1::2]))
            d.line(pts, fill=fill, width=w)
        canvas.alpha_composite(layer)
    return encode(canvas)


def one_layer():
    canvas = Image.new("RGBA", (800, 600), (255, 255, 255, 255))
    d = ImageDraw.Draw(canvas, "RGBA")
    for p in paths:
        fill = rgba(p["color"], p["opacity"])
        w = max(1, int(p["width"]))
        for line in p["lines"]:
            pts = list(zip(line[0::2], line[1::2]))
            d.line(pts, fill=fill, width=w, joint="curve")
    return encode(canvas)


for name, fn in (("one-layer", one_layer), ("codemonet", codemonet)):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        size = fn()
        times.append((time.perf_counter() - t0) * 1000)
    print("pillow %s: %d paths, median of %d: %.1f ms (PNG %d bytes)" % (
        name, len(paths), rounds, statistics.median(times), size))
