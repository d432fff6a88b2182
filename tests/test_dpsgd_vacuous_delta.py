"""A vacuous PLD δ (upper end 1, lower end far below) falls back to the tighter accountants.

Before: q 1e-8, σ 1, 10¹⁰ steps, ε 0.0104 answered δ ≤ 1 ("no guarantee"), certified
bracket [0, 1], while the RDP accountant certifies 0.0072 and the PLD's own ε at δ 5e-6 is
0.0104; the answer now is the RDP accountant's, said in the fallback note.
"""

from __future__ import annotations

from tests.cli_helpers import run


def test_a_vacuous_pld_delta_takes_the_fallback(capsys):
    r = run(capsys, "dpsgd", "--q", "1e-8", "--sigma", "1", "--steps", "10000000000",
            "--epsilon", "0.0104", "--json")
    assert r.code == 0, r.err
    assert 0 < r.json["value"] <= 0.0073
    assert any("δ bound is vacuous" in n for n in r.json["notes"])
    rdp = run(capsys, "dpsgd", "--q", "1e-8", "--sigma", "1", "--steps", "10000000000",
              "--epsilon", "0.0104", "--accountant", "rdp", "--value")
    assert float(rdp.out) == float(r.json["value"])
