"""Colour science for the palette test: how a colour looks to a reader with deuteranopia or
protanopia (Machado, Oliveira and Fernandes 2009, severity 1, applied in linear sRGB), CIELAB
(D65) and the CIEDE2000 colour difference (Sharma, Wu and Dalal 2005). A difference of about 10
or more is two colours told apart at a glance on a chart; under 5 they pass for one."""

from __future__ import annotations

import math

Matrix = tuple[tuple[float, float, float], ...]
Lab = tuple[float, float, float]

NORMAL: Matrix = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
DEUTERANOPIA: Matrix = ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413),
                        (-0.011820, 0.042940, 0.968881))
PROTANOPIA: Matrix = ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216),
                      (-0.003882, -0.048116, 1.051998))
_XYZ: Matrix = ((0.4124564, 0.3575761, 0.1804375), (0.2126729, 0.7151522, 0.0721750),
                (0.0193339, 0.1191920, 0.9503041))
_WHITE = (0.95047, 1.0, 1.08883)


def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _apply(m: Matrix, v: tuple[float, float, float]) -> tuple[float, float, float]:
    x, y, z = (sum(m[i][j] * v[j] for j in range(3)) for i in range(3))
    return x, y, z


def lab(colour: str, vision: Matrix = NORMAL) -> Lab:
    """CIELAB of ``#RRGGBB`` as seen with ``vision``."""
    rgb = tuple(_linear(int(colour[i:i + 2], 16)) for i in (1, 3, 5))
    seen = tuple(min(1.0, max(0.0, c)) for c in _apply(vision, rgb))  # type: ignore[arg-type]
    xyz = _apply(_XYZ, seen)  # type: ignore[arg-type]

    def f(t: float) -> float:
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    fx, fy, fz = (f(c / w) for c, w in zip(xyz, _WHITE, strict=True))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def hue(colour: str) -> float:
    _, a, b = lab(colour)
    return math.degrees(math.atan2(b, a)) % 360


def delta_e(x: Lab, y: Lab) -> float:
    """CIEDE2000."""
    (l1, a1, b1), (l2, a2, b2) = x, y
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    h1, h2 = (math.degrees(math.atan2(b, a)) % 360 for a, b in ((a1, b1), (a2, b2)))
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    d_l, d_c = l2 - l1, c2 - c1
    d_h = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    l_bar, cp_bar = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_bar = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_bar = (h1 + h2) / 2
    else:
        h_bar = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_bar - 30)) + 0.24 * math.cos(math.radians(2 * h_bar))
         + 0.32 * math.cos(math.radians(3 * h_bar + 6))
         - 0.20 * math.cos(math.radians(4 * h_bar - 63)))
    rotation = 30 * math.exp(-(((h_bar - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(cp_bar ** 7 / (cp_bar ** 7 + 25 ** 7))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    s_c, s_h = 1 + 0.045 * cp_bar, 1 + 0.015 * cp_bar * t
    r_t = -math.sin(math.radians(2 * rotation)) * r_c
    return math.sqrt((d_l / s_l) ** 2 + (d_c / s_c) ** 2 + (d_h / s_h) ** 2
                     + r_t * (d_c / s_c) * (d_h / s_h))
