"""The change map of the noise-robust Difference (``DifferenceConfig(robust=True)``).

Real editors re-render the whole picture: the output drifts by a pixel or two, its tone and
white balance shift slightly, its texture is softened or sharpened, and it is saved as a JPEG.
A plain pixel difference then marks every edge and texture as changed. Here, in order:

1. **Alignment**: the second image's shift is found by phase correlation, its peak sought
   among small shifts only (a moved object makes a peak of its own farther away), and undone
   with a sub-pixel warp; the strip the warp invents along the border is left out.
2. **Tone**: a gain and offset per channel, fitted robustly (the changed pixels are outliers),
   then bent per band of levels towards the pixels near the line (a gamma change bends the
   dark end), map the first image's colours onto the second's, so a global tone or
   white-balance shift is no change; all of it is held to a slight shift (:data:`GAIN_RANGE`,
   :data:`LEVEL_SHIFT`, :data:`CURVE_BEND`): a recoloured picture is a change, not a tone to
   match.
3. **Structure**: scikit-image's SSIM per colour channel, on both images halved and slightly
   blurred (JPEG blocks, noise, a pixel of blur or sharpening do not survive that), the
   change being ``1 - SSIM`` of the least similar channel.
4. **Thresholds from the image's own noise**: a pixel changed when its structural change
   stands out from the picture's (median plus :data:`NOISE_FACTOR` robust deviations, at
   least :data:`STRUCTURE_FLOOR`) and its colour, tone-matched, differs by more than the
   picture's own pixel noise (median plus :data:`PIXEL_FACTOR` robust deviations, at least
   :data:`PIXEL_FLOOR`/255), which keeps each region's box on the changed pixels; specks
   narrower than :data:`OPENING` pixels are dropped.
5. **The whole image**: when at least half of the picture changed (in structure beyond
   :data:`STRUCTURE_FLOOR`, or in tone-matched colour beyond :data:`PIXEL_FLOOR`), it says so
   rather than point at a region.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cigeval._caller import in_callers_words
from cigeval.errors import MissingDependency

#: The largest shift sought, as a share of the image's longer side (at least 4 pixels).
SHIFT_REACH = 0.01
#: A slight tone shift: its gain per channel within these bounds, and the level it moves the
#: channel's typical (median) value by at most this (0-255).
GAIN_RANGE = (0.75, 1.33)
LEVEL_SHIFT = 32.0
#: A slight tone shift bends the line by at most this many levels (0-255) at any level.
CURVE_BEND = 16.0
#: Structure is compared on images scaled by this factor (when at least 64 pixels remain).
STRUCTURE_SCALE = 0.5
#: Blur (sigma, pixels of the scaled images) before the structural comparison.
STRUCTURE_BLUR = 1.5
#: How far above the picture's typical change a pixel's must stand, in robust deviations.
NOISE_FACTOR = 8.0
#: The least structural change (1 - SSIM) that counts.
STRUCTURE_FLOOR = 0.1
#: Colour difference beyond the picture's pixel noise, in robust deviations, and at least this.
PIXEL_FACTOR = 4.0
PIXEL_FLOOR = 10.0
#: Changed areas narrower than this many pixels are noise.
OPENING = 5
#: At least this share of the picture changed: the whole image changed.
WHOLE_SHARE = 0.5


@dataclass(frozen=True)
class RobustChange:
    """The robust change map (0/255 uint8, the first image's size) and what it rests on: the
    second image's ``shift`` (its content sits this far right and down of the first's), the
    two thresholds, and whether the whole image changed."""

    changed: np.ndarray
    shift: tuple[float, float]
    structure_threshold: float
    pixel_threshold: float
    whole_image: bool


def _reach(height: int, width: int) -> int:
    return max(4, round(SHIFT_REACH * max(height, width)))


def small_shift(gray_a: np.ndarray, gray_b: np.ndarray, reach: int) -> tuple[float, float]:
    """How far ``gray_b``'s content sits right and down of ``gray_a``'s, within ``reach``
    pixels: phase correlation (a Hann window, the normalised cross-power spectrum), its peak
    sought among the small shifts only, refined to sub-pixel by the centroid around it."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    window = cv2.createHanningWindow(gray_a.shape[::-1], cv2.CV_32F)
    cross = np.fft.rfft2(gray_b * window) * np.conj(np.fft.rfft2(gray_a * window))
    cross /= np.abs(cross) + 1e-9
    surface = np.fft.fftshift(np.fft.irfft2(cross, s=gray_a.shape))
    cy, cx = surface.shape[0] // 2, surface.shape[1] // 2
    near = surface[cy - reach : cy + reach + 1, cx - reach : cx + reach + 1]
    iy, ix = np.unravel_index(int(np.argmax(near)), near.shape)
    py, px = cy - reach + int(iy), cx - reach + int(ix)
    around = np.maximum(surface[py - 1 : py + 2, px - 1 : px + 2], 0)
    total = float(around.sum())
    if total <= 0:
        return float(px - cx), float(py - cy)
    offsets = np.arange(-1, 2)
    dx = float((around.sum(axis=0) * offsets).sum()) / total
    dy = float((around.sum(axis=1) * offsets).sum()) / total
    return px - cx + dx, py - cy + dy


def _line_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The least-squares ``y = gain * x + offset``, held to a slight tone shift: the gain
    within :data:`GAIN_RANGE`, the shift at the data's median within :data:`LEVEL_SHIFT`."""
    centre = float(np.median(x))
    spread = float(np.var(x))
    gain = float(np.mean((x - x.mean()) * (y - y.mean()))) / spread if spread > 1 else 1.0
    gain = min(max(gain, GAIN_RANGE[0]), GAIN_RANGE[1])
    shift = float(np.median(y - gain * x)) + (gain - 1) * centre
    shift = min(max(shift, -LEVEL_SHIFT), LEVEL_SHIFT)
    return gain, shift - (gain - 1) * centre


def _bend(x: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """How the tone curve bends away from the fitted line, at each level 0-255: per band of
    16 levels of ``x``, the median residual of the pixels that lie within
    :data:`CURVE_BEND` of the line (gamma bends it most at the dark end), interpolated
    between the bands' medians; none where no band holds 50 pixels."""
    near = np.abs(residual) <= CURVE_BEND
    bands = (x // 16).astype(np.int64)
    centres, values = [], []
    for band in range(16):
        chosen = near & (bands == band)
        if chosen.sum() >= 50:
            centres.append(float(np.median(x[chosen])))
            values.append(float(np.median(residual[chosen])))
    if not centres:
        return np.zeros(256)
    return np.interp(np.arange(256), centres, values)


def _tone_matched(a: np.ndarray, b: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``a``'s colours mapped onto ``b``'s tone: per channel, a gain and offset fitted on the
    valid pixels, dropping outliers (changed pixels) over three rounds."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    rng = np.random.default_rng(0)  # a fixed subsample: the same answer every time
    picked = np.flatnonzero(valid.ravel())
    picked = picked[rng.permutation(len(picked))[:40000]]
    out = np.empty_like(a)
    for channel in range(3):
        x = a[..., channel].ravel()[picked].astype(np.float64)
        y = b[..., channel].ravel()[picked].astype(np.float64)
        keep = np.ones(len(x), bool)
        for _ in range(3):
            gain, offset = _line_fit(x[keep], y[keep])
            residual = y - (gain * x + offset)
            spread = 1.4826 * float(np.median(np.abs(residual[keep]))) + 1e-6
            keep = np.abs(residual) < 3 * spread + 2
            if keep.sum() < 10:
                keep[:] = True
        levels = gain * np.arange(256) + offset + _bend(x, y - (gain * x + offset))
        lut = np.clip(np.rint(levels), 0, 255).astype(np.uint8)
        out[..., channel] = cv2.LUT(np.ascontiguousarray(a[..., channel]), lut)
    return out


def _structural_change(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``1 - SSIM`` of the least similar channel, per pixel, at the images' size."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    try:
        from skimage.metrics import structural_similarity
    except ImportError:
        option = in_callers_words("--diff-robust", "difference={'robust': True}")
        raise MissingDependency(
            "scikit-image", "robust", f"The noise-robust Difference ({option})"
        ) from None
    height, width = a.shape[:2]
    scale = STRUCTURE_SCALE if min(height, width) * STRUCTURE_SCALE >= 64 else 1.0
    if scale != 1.0:
        a = cv2.resize(a, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        b = cv2.resize(b, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    a = cv2.GaussianBlur(a, (0, 0), STRUCTURE_BLUR)
    b = cv2.GaussianBlur(b, (0, 0), STRUCTURE_BLUR)
    _, similarity = structural_similarity(
        a,
        b,
        channel_axis=2,
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
        data_range=255,
        full=True,
    )
    change = (1.0 - similarity.min(axis=2)).astype(np.float32)
    if scale != 1.0:
        change = cv2.resize(change, (width, height), interpolation=cv2.INTER_LINEAR)
    return np.asarray(change)


def _noise_threshold(values: np.ndarray, factor: float, floor: float) -> float:
    """The median plus ``factor`` robust deviations (MAD) of ``values``, at least ``floor``."""
    median = float(np.median(values))
    deviation = 1.4826 * float(np.median(np.abs(values - median)))
    return max(floor, median + factor * deviation)


def robust_change_map(a: np.ndarray, b: np.ndarray) -> RobustChange:
    """Where ``b`` changed from ``a`` (RGB uint8 arrays of one size), ignoring what an
    editor's re-rendering does to the whole picture (see the module notes)."""
    import cv2  # OpenCV loads on first use, keeping `import cigeval` light

    height, width = a.shape[:2]
    gray_a = cv2.cvtColor(a, cv2.COLOR_RGB2GRAY).astype(np.float32)
    gray_b = cv2.cvtColor(b, cv2.COLOR_RGB2GRAY).astype(np.float32)
    dx, dy = small_shift(gray_a, gray_b, _reach(height, width))
    undo = np.array([[1, 0, -dx], [0, 1, -dy]], np.float32)
    b = np.asarray(
        cv2.warpAffine(
            b, undo, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
    )
    border = int(np.ceil(max(abs(dx), abs(dy)))) + 1
    valid = np.zeros((height, width), bool)
    valid[border : height - border, border : width - border] = True
    a = _tone_matched(a, b, valid)

    structure = _structural_change(a, b)
    structure_threshold = _noise_threshold(structure[valid], NOISE_FACTOR, STRUCTURE_FLOOR)
    colour = cv2.absdiff(cv2.GaussianBlur(a, (0, 0), 1.0), cv2.GaussianBlur(b, (0, 0), 1.0))
    colour = colour.max(axis=2).astype(np.float32)
    pixel_threshold = _noise_threshold(colour[valid], PIXEL_FACTOR, PIXEL_FLOOR)

    structural = (structure > structure_threshold) & valid
    # Judged against the floors: the thresholds above rise with a change that is everywhere.
    whole = bool(
        (structure[valid] > STRUCTURE_FLOOR).mean() >= WHOLE_SHARE
        or (colour[valid] > PIXEL_FLOOR).mean() >= WHOLE_SHARE
    )
    kernel = np.ones((OPENING, OPENING), np.uint8)
    opened = cv2.morphologyEx(structural.astype(np.uint8), cv2.MORPH_OPEN, kernel)
    changed = (opened > 0) & (colour > pixel_threshold)
    return RobustChange(
        changed=np.where(changed, 255, 0).astype(np.uint8),
        shift=(dx, dy),
        structure_threshold=structure_threshold,
        pixel_threshold=pixel_threshold,
        whole_image=whole,
    )
