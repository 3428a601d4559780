# Blender Cycles' empty Cornell box with the light left out of light
# sampling: ../shared/anchors/bench/cycles_cornell.py with the emitter's
# "sample_as_light" (Blender <= 3.4) or "emission_sampling" (>= 3.5)
# turned off, so that Cycles finds the light only by BSDF sampling.
#
# Why: Cycles 3.4's own 1024-spp image (tests/data/
# cycles_cornell_empty_1024.pfm) is up to 1.65 % darker than this one in
# the regions near the light's plane (the ceiling's corners and the top of
# the walls), with any seed, while our tracer with next-event estimation
# and with BSDF sampling alone agree with this one there to 0.5 %: the
# mesh light's sampling in Cycles is what differs, not the light
# transport. tests/unit/test_render.c checks against this image at 1 %.
#
#   SPP=4096 NO_SPHERES=1 BOUNCES=4 PFM=1 THREADS=2 OUT=/tmp/cyc_bsdf \
#     blender -b --factory-startup -P bench/cycles-bsdf-reference.py
#
# CYCLES_PY names the anchor script if it is not at its usual place.
import os

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
