"""Built-in distribution shifts of test images, each at five severities, deterministic from a seed.

In the spirit of the corruption benchmarks for this data (MNIST-C, Mu & Gilmer 2019; Fashion-MNIST-C,
Weiss & Tonella 2022): lighting, background, framing, geometry, blur, noise and flips. Images are
float32 [N, 28, 28] in [0, 1] (garment light on a dark background, as Fashion-MNIST has it) and stay
so; every transform works on the whole batch at once with numpy and scipy.ndimage.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Dict, List, Tuple

import numpy as np
from scipy import ndimage

SEVERITIES = (1, 2, 3, 4, 5)


def _clip(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0.0, 1.0).astype(np.float32, copy=False)


def _operator(map2d: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The [784, 784] matrix of a linear 2-D map (scipy's), built by mapping each basis image once."""
    basis = np.eye(28 * 28, dtype=np.float32).reshape(-1, 28, 28)
    return np.stack([map2d(b).ravel() for b in basis], axis=1)


def _apply_operator(images: np.ndarray, op: np.ndarray) -> np.ndarray:
    """The same linear map on every image: one matrix product over the batch."""
    return _clip((images.reshape(-1, 28 * 28) @ op.T).reshape(images.shape))


def _affine(images: np.ndarray, matrix: np.ndarray, offset: np.ndarray = np.zeros(2)) -> np.ndarray:
    """One 2×2 map (output → input coordinates) about the image centre, bilinear, on every image of the batch."""
    centre = np.array([13.5, 13.5])
    shift = centre - matrix @ centre + offset
    return _apply_operator(
        images, _operator(lambda b: ndimage.affine_transform(b, matrix, offset=shift, order=1, mode="constant"))
    )


def brightness(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Add a constant light level (a brighter exposure)."""
    return _clip(images + level)


def contrast(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Scale each image's pixels towards its mean (flat lighting)."""
    means = images.mean(axis=(1, 2), keepdims=True)
    return _clip((images - means) * level + means)


def gamma(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Raise pixels to a power above 1 (a darker, under-exposed tone curve)."""
    return _clip(np.power(images, level))


def light_background(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Lift the dark background to a grey level while the garment keeps its brightness (a lit backdrop)."""
    return _clip(level + (1.0 - level) * images)


def inverted(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """A dark garment on a light background, as most photos are, blended in by `level`."""
    return _clip((1.0 - level) * images + level * (1.0 - images))


def zoom(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Zoom about the centre by `level`: below 1 the garment fills less of the frame, above 1 its edges are cut."""
    return _affine(images, np.eye(2) / level, np.zeros(2))


def translate(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Shift each image by `level` pixels in one of eight directions, drawn per image (off-centre framing)."""
    out = np.empty_like(images)
    directions = rng.integers(0, 8, size=len(images))  # eight compass directions: one linear map each
    for d in np.unique(directions):
        a = d * np.pi / 4
        pick = directions == d
        out[pick] = _affine(images[pick], np.eye(2), np.array([-level * np.sin(a), -level * np.cos(a)]))
    return out


def rotate(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Rotate by ±`level` degrees (the sign drawn per image)."""
    out = np.empty_like(images)
    signs = rng.choice((-1.0, 1.0), size=len(images))
    for sign in (-1.0, 1.0):
        op = _operator(partial(ndimage.rotate, angle=sign * level, reshape=False, order=1, mode="constant"))
        out[signs == sign] = _apply_operator(images[signs == sign], op)
    return out


def shear(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Shear along the rows by `level` (a camera not square to the garment)."""
    return _affine(images, np.array([[1.0, 0.0], [level, 1.0]]), np.zeros(2))


def motion_blur(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Average over `level` pixels along the rows (a moving camera)."""
    return _clip(ndimage.uniform_filter1d(images, size=int(level), axis=2, mode="constant"))


def defocus_blur(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Convolve with a disc of radius `level` pixels (an out-of-focus lens)."""
    r = int(np.ceil(level))
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    disc = (yy**2 + xx**2 <= level**2).astype(np.float32)
    disc /= disc.sum()
    return _apply_operator(images, _operator(lambda b: ndimage.convolve(b, disc, mode="constant")))


def shot_noise(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Poisson photon noise: `level` photons at full brightness (fewer photons, more noise)."""
    return _clip(rng.poisson(images * level) / level)


def impulse_noise(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Salt and pepper: a fraction `level` of the pixels set to 0 or 1."""
    hit = rng.random(images.shape) < level
    salt = rng.random(images.shape) < 0.5
    return _clip(np.where(hit, salt.astype(np.float32), images))


def flip(images: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """Mirror left-right (level 1), upside down (2), turn by 180° (3), 90° (4) or 270° (5)."""
    k = int(level)
    if k == 1:
        return images[:, :, ::-1].copy()
    if k == 2:
        return images[:, ::-1, :].copy()
    return np.rot90(images, k={3: 2, 4: 1, 5: 3}[k], axes=(1, 2)).copy()


Transform = Callable[[np.ndarray, float, np.random.Generator], np.ndarray]

# name -> (family, transform, parameter at severities 1..5, what the parameter is)
SHIFTS: Dict[str, Tuple[str, Transform, Tuple[float, ...], str]] = {
    "brightness": ("lighting", brightness, (0.1, 0.2, 0.3, 0.45, 0.6), "light added"),
    "contrast": ("lighting", contrast, (0.75, 0.55, 0.4, 0.25, 0.15), "contrast factor"),
    "gamma": ("lighting", gamma, (1.4, 1.8, 2.4, 3.2, 4.5), "gamma"),
    "light_background": ("background", light_background, (0.15, 0.3, 0.45, 0.6, 0.75), "background level"),
    "inverted": ("background", inverted, (0.2, 0.4, 0.6, 0.8, 1.0), "inversion blend"),
    "scale": ("framing", zoom, (0.9, 0.8, 0.7, 0.6, 0.5), "zoom-out factor"),
    "translate": ("framing", translate, (1.5, 3.0, 4.5, 6.0, 8.0), "pixels"),
    "crop_resize": ("framing", zoom, (1.15, 1.3, 1.45, 1.6, 1.8), "zoom-in factor"),
    "rotate": ("geometry", rotate, (10.0, 20.0, 30.0, 45.0, 60.0), "degrees"),
    "shear": ("geometry", shear, (0.1, 0.2, 0.3, 0.45, 0.6), "shear"),
    "motion_blur": ("blur", motion_blur, (2, 3, 4, 6, 8), "pixels"),
    "defocus_blur": ("blur", defocus_blur, (1.0, 1.5, 2.0, 2.5, 3.0), "disc radius"),
    "shot_noise": ("noise", shot_noise, (60.0, 25.0, 12.0, 6.0, 3.0), "photons at full light"),
    "impulse_noise": ("noise", impulse_noise, (0.01, 0.03, 0.06, 0.1, 0.17), "pixels hit"),
    "flip": ("flips", flip, (1, 2, 3, 4, 5), "mirror / upside down / 180° / 90° / 270°"),
}


def names() -> List[str]:
    """The built-in shifts, in table order."""
    return list(SHIFTS)


def parameter(name: str, severity: int) -> float:
    """The parameter of shift `name` at `severity` (1..5)."""
    return SHIFTS[name][2][severity - 1]


def describe(name: str, severity: int) -> str:
    """The shift at a severity in words, e.g. 'light added 0.2', 'rotated ±30°', 'mirrored left-right'."""
    if name == "flip":
        return ("mirrored left-right", "upside down", "turned 180°", "turned 90°", "turned 270°")[severity - 1]
    value = parameter(name, severity)
    return "%s %s" % (SHIFTS[name][3], ("%g" % value))


def apply(name: str, severity: int, images: np.ndarray, seed: int) -> np.ndarray:
    """Shift `images` (float32 [N, 28, 28] in [0, 1]) by `name` at `severity`; the same seed gives the same pixels."""
    if name not in SHIFTS:
        raise KeyError("unknown shift %r (known: %s)" % (name, ", ".join(SHIFTS)))
    if severity not in SEVERITIES:
        raise ValueError("severity %r is not one of %s" % (severity, SEVERITIES))
    # One generator per (seed, shift, severity): a set does not change when another set is added or removed.
    rng = np.random.default_rng([seed, names().index(name), severity])
    return SHIFTS[name][1](np.asarray(images, dtype=np.float32), parameter(name, severity), rng)
