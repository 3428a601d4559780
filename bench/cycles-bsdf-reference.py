# Blender Cycles' empty Cornell box with the light left out of light
# sampling: ../shared/anchors/bench/cycles_cornell.py with the emitter's
# "sample_as_light" (Blender <= 3.4) or "emission_sampling" (>= 3.5)
# turned off, so that Cycles finds the light only by BSDF sampling.
#
# Why: Cycles 3.4's own 1024-spp image (tests/data/
# cycles_cornell_empty_1024.pfm) is up to 1.3 % darker than this one (at
# 4096 spp) in the 4 x 4 regions near the light's plane (the ceiling's
# corners and the top of the walls), with any seed, while our tracer with
# next-event estimation and with BSDF sampling alone agree with this one
# to 0.2 %: the mesh light's sampling in Cycles is what differs, not the
# light transport. tests/unit/test_render.c checks against this image at
# 1 % (bench/README.md, render-quality).
#
#   SPP=4096 NO_SPHERES=1 BOUNCES=4 PFM=1 THREADS=2 OUT=/tmp/cyc_bsdf \
#     blender -b --factory-startup -P bench/cycles-bsdf-reference.py
#   python3 bench/cycles-bsdf-reference.py --shrink /tmp/cyc_bsdf.pfm \
#     tests/data/cycles_cornell_empty_bsdf_4096.pfm
#
# The second command keeps the test's copy small: each pixel of the
# 100 x 100 file is the mean of 4 x 4 of the 400 x 400 render, which
# leaves every region's mean as it was.
#
# CYCLES_PY names the anchor script if it is not at its usual place.
import os
import struct
import sys


def shrink(src, dst, k=4):
    """Box-averages the PFM src by k x k into dst (row order kept)."""
    with open(src, "rb") as f:
        if f.readline().strip() != b"PF":
            raise SystemExit("cycles-bsdf-reference: %s is not an RGB PFM" % src)
        w, h = map(int, f.readline().split())
        scale = float(f.readline())
        end = "<" if scale < 0 else ">"
        px = struct.unpack(end + "%df" % (w * h * 3), f.read(w * h * 12))
    if w % k or h % k:
        raise SystemExit("cycles-bsdf-reference: %dx%d is not a multiple of %d"
                         % (w, h, k))
    out = []
    for y in range(h // k):
        for x in range(w // k):
            for c in range(3):
                out.append(sum(px[((k * y + j) * w + k * x + i) * 3 + c]
                               for j in range(k) for i in range(k)) / (k * k))
    with open(dst, "wb") as f:
        f.write(b"PF\n%d %d\n-1.0\n" % (w // k, h // k))
        f.write(struct.pack("<%df" % len(out), *out))


if len(sys.argv) == 4 and sys.argv[1] == "--shrink":
    shrink(sys.argv[2], sys.argv[3])
    raise SystemExit(0)

here = os.path.dirname(os.path.abspath(__file__))
path = os.environ.get("CYCLES_PY") or os.path.join(
    here, "..", "..", "shared", "anchors", "bench", "cycles_cornell.py")
with open(path) as f:
    text = f.read()
for old, new in (
        ('setattr_if(mat.cycles, "sample_as_light", True)',
         'setattr_if(mat.cycles, "sample_as_light", False)'),
        ('setattr_if(mat.cycles, "emission_sampling", "FRONT")',
         'setattr_if(mat.cycles, "emission_sampling", "NONE")')):
    if old not in text:
        raise SystemExit("cycles-bsdf-reference: %s no longer has %s" %
                         (path, old))
    text = text.replace(old, new)
exec(compile(text, path, "exec"))
