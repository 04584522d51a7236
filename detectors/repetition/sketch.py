"""Small, stable sketches for the repetition detector: hashing, MinHash, HyperLogLog, packing.

Everything here is deterministic across processes and machines (no ``hash()``, whose salt
changes per process), because the state it builds is stored in a faust Table and read back by
another worker after a rebalance.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Sequence

import numpy as np

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a uint64 array (wrapping arithmetic is intended)."""
    x = x.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def token_hashes(tokens: Sequence[str]) -> np.ndarray:
    """32-bit CRC of each normalised token, as uint64 for later mixing."""
    return np.fromiter((zlib.crc32(t.encode()) for t in tokens), dtype=np.uint64,
                       count=len(tokens))


def bigram_hashes(tok: np.ndarray) -> np.ndarray:
    """Mixed 64-bit hashes of consecutive token pairs (empty for fewer than two tokens)."""
    if tok.size < 2:
        return np.zeros(0, dtype=np.uint64)
    return mix64((tok[:-1] << np.uint64(32)) | tok[1:])


def unigram_hashes(tok: np.ndarray) -> np.ndarray:
    return mix64(tok ^ np.uint64(0x5851F42D4C957F2D))


class MinHasher:
    """b-bit MinHash (Li & König 2010): ``num_perm`` multiply-shift hashes, keeping the low
    8 bits of each minimum, so a signature is ``num_perm`` bytes. ``similarity`` corrects for
    the 1/256 chance that two unrelated 8-bit minima agree."""

    def __init__(self, num_perm: int = 32, seed: int = 0x6368_6174) -> None:
        self.num_perm = num_perm
        self._a = np.array([_splitmix64(seed + 2 * i) | 1 for i in range(num_perm)],
                           dtype=np.uint64)
        self._b = np.array([_splitmix64(seed + 2 * i + 1) for i in range(num_perm)],
                           dtype=np.uint64)

    def signature(self, shingles: np.ndarray) -> np.ndarray:
        if shingles.size == 0:
            return np.zeros(self.num_perm, dtype=np.uint8)
        h = (shingles[:, None] * self._a[None, :] + self._b[None, :]) >> np.uint64(32)
        return (h.min(axis=0) & np.uint64(0xFF)).astype(np.uint8)

    @staticmethod
    def similarity(sig: np.ndarray, others: np.ndarray) -> np.ndarray:
        """Estimated Jaccard similarity of ``sig`` to each row of ``others``."""
        match = (others == sig[None, :]).mean(axis=1)
        return np.clip((match - 1 / 256) / (1 - 1 / 256), 0.0, 1.0)

    @staticmethod
    def band_candidates(sig: np.ndarray, others: np.ndarray, bands: int) -> np.ndarray:
        """LSH: rows of ``others`` (a C-contiguous uint8 matrix) that agree with ``sig`` on at
        least one whole band of ``num_perm // bands`` minima."""
        if others.shape[0] == 0:
            return np.zeros(0, dtype=bool)
        rows = sig.size // bands
        view = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(rows)
        if view is not None:  # one comparison per band: view each band as one integer
            eq = others.view(view) == sig.view(view)[None, :]
            if bands % 8:
                return eq.any(axis=1)
            words = eq.view(np.uint64)  # 8 band flags per word: OR a few columns, not rows
            hit = words[:, 0] != 0
            for j in range(1, words.shape[1]):
                hit |= words[:, j] != 0
            return hit
        a = others.reshape(others.shape[0], bands, rows)
        return (a == sig.reshape(bands, rows)[None]).all(axis=2).any(axis=1)


class HyperLogLog:
    """Register updates and the cardinality estimate (Flajolet et al. 2007, with linear
    counting for small sets). Registers are a plain uint8 array so they pack into state."""

    def __init__(self, precision: int = 10) -> None:
        self.p = precision
        self.m = 1 << precision
        self.alpha = 0.7213 / (1 + 1.079 / self.m)
        self._inverse_powers = np.power(2.0, -np.arange(64, dtype=float))

    def empty(self, sketches: int = 1) -> np.ndarray:
        """Registers for ``sketches`` HyperLogLogs side by side in one array."""
        return np.zeros(sketches * self.m, dtype=np.uint8)

    def add(self, registers: np.ndarray, *hashes: np.ndarray) -> None:
        """Add the i-th hash array to the i-th sketch of ``registers`` (one scatter for all)."""
        parts = [(h >> np.uint64(64 - self.p)).astype(np.int64) + i * self.m
                 for i, h in enumerate(hashes) if h.size]
        if not parts:
            return
        idx = np.concatenate(parts)
        w = (np.concatenate([h for h in hashes if h.size]) & np.uint64(0xFFFFFFFF)).astype(
            np.float64)
        # rank = position of the leftmost 1 bit in the low 32 bits (33 when they are all 0)
        bits = np.where(w > 0, np.floor(np.log2(np.maximum(w, 1))) + 1, 0)
        np.maximum.at(registers, idx, (33 - bits).astype(np.uint8))

    def estimate(self, registers: np.ndarray) -> float:
        counts = np.bincount(registers, minlength=64)
        zeros = int(counts[0])
        raw = self.alpha * self.m * self.m / float(counts[:64] @ self._inverse_powers)
        if raw <= 2.5 * self.m and zeros > 0:
            return float(self.m * np.log(self.m / zeros))
        return raw


def pack(arr: np.ndarray) -> str:
    """A numpy array as base64 text (little-endian), so state stays JSON."""
    return base64.b64encode(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"))
                            .tobytes()).decode("ascii")


def unpack(text: str, dtype: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.dtype(dtype).newbyteorder("<")).astype(
        dtype)


def marginal_compressed_size(data: bytes, context: bytes) -> int:
    """Bytes that raw DEFLATE needs for ``data`` when the preceding ``context`` (at most 32 KiB,
    deflate's own window) is known: summed over a stream, this is what zlib would need for the
    concatenation, apart from block headers."""
    if not data:
        return 0
    co = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=context) if context else \
        zlib.compressobj(6, zlib.DEFLATED, -15)
    return len(co.compress(data) + co.flush())
