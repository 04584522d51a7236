"""``chatmon bench`` names the CPU and whether it has AVX-512 VNNI (int8 speed depends on it)."""

from __future__ import annotations

from pipeline.bench.embedded import machine
from pipeline.bench.report import isa


def test_machine_names_the_cpu_and_its_int8_instructions() -> None:
    m = machine()
    assert m["cores"] >= 1 and m["cpu_model"]
    assert isinstance(m["avx512_vnni"], bool) and isinstance(m["avx2"], bool)
    assert isa(m) in {"AVX-512 VNNI", "AVX-512 VNNI, AMX", "no AVX-512 VNNI; AVX2",
                      "no AVX-512 VNNI"}


def test_isa_wording() -> None:
    assert isa({"avx512_vnni": True, "amx": True}) == "AVX-512 VNNI, AMX"
    assert isa({"avx512_vnni": False, "avx2": True}) == "no AVX-512 VNNI; AVX2"
    assert isa({}) == "instruction sets not recorded"  # an older bench JSON
