"""bench/run_all.py: what it records about the CPU, and that docs/ is written only when asked."""

from __future__ import annotations

from bench.run_all import FLAGS, benches, cpu_info

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu avx2 avx512f amx_tile amx_bf16

processor\t: 1
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu avx2 avx512f amx_tile amx_bf16
"""


def test_cpu_info_reads_the_model_the_count_and_which_flags_are_there():
    got = cpu_info(CPUINFO)
    assert got["model_name"] == "Intel(R) Xeon(R) Processor"
    assert got["logical_cpus"] == 2
    assert got["flags"] == {f: f in ("avx2", "avx512f", "amx_tile", "amx_bf16") for f in FLAGS}


def test_cpu_info_says_no_to_amx_on_a_cpu_without_it():
    got = cpu_info(CPUINFO.replace(" amx_tile amx_bf16", ""))
    assert got["flags"]["amx_tile"] is False and got["flags"]["avx512f"] is True


def test_docs_are_written_only_with_update_docs():
    for quick in (False, True):
        plain = [a for b in benches(quick, False) for a in b["argv"]]
        assert "--write" not in plain and not any("docs" in a for a in plain)
        asked = [a for b in benches(quick, True) for a in b["argv"]]
        assert "--write" in asked
