"""Issue 9, the numerical items: budgets equal to Σδ, no NaN/inf results, comparison rows that
never abort the answer, base ε = 0, inputs read on the private side, one solve per mode, the
optimal zCDP conversion and δ ranges. CLI behaviour runs through the installed entry point."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest

ERROR = re.compile(r"^dpcalc: error: .+\n$")


def _exe() -> list[str]:
    script = Path(sys.executable).with_name("dpcalc")
    return [str(script)] if script.exists() else [sys.executable, "-m", "dpcalc"]


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(_exe() + list(args), capture_output=True, text=True, check=False,
                          input=stdin)


def value(*args: str) -> float:
    done = cli(*args, "--value")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return float(done.stdout)


def no_nonfinite(text: str) -> None:
    assert not re.search(r"\b(nan|NaN|inf|Infinity)\b", text), text


def kov_delta(eps: float, delta: float, k: int, total_eps: float) -> mpmath.mpf:
    """Exact optimal composition [KOV15, Thm 3.3], mpmath at 60 digits (independent oracle)."""
    with mpmath.workdps(60):
        e, d, big = mpmath.mpf(eps), mpmath.mpf(delta), mpmath.mpf(total_eps)
        p, r = 1 / (1 + mpmath.exp(-e)), 1 / (1 + mpmath.exp(e))  # p and 1 − p
        s = mpmath.mpf(0)
        for ell in range(k + 1):
            term = (p ** (k - ell) * r ** ell
                    - mpmath.exp(big) * p ** ell * r ** (k - ell))
            if term > 0:
                s += mpmath.binomial(k, ell) * term
        return 1 - (1 - d) ** k + (1 - d) ** k * s


# ---- item 2: a total δ equal to Σδ ------------------------------------------------------------

def test_budget_equal_to_delta_k1_gives_epsilon():
    assert value("compose", "--epsilon", "2.382", "--delta", "1e-5", "--k", "1",
                 "--total-delta", "1e-5") == 2.382


def test_budget_equal_to_sum_basic_gives_k_epsilon():
    assert value("compose", "--epsilon", "1", "--delta", "1e-6", "--k", "2",
                 "--total-delta", "2e-6", "--method", "basic") == 2.0


@pytest.mark.parametrize("k", [2, 3, 7])
def test_budget_equal_to_sum_optimal_is_sound(k):
    got = value("compose", "--epsilon", "0.5", "--delta", "1e-6", "--k", str(k),
                "--total-delta", f"{k}e-6")
    assert got <= 0.5 * k * (1 + 1e-15)
    assert kov_delta(0.5, 1e-6, k, got) <= mpmath.mpf(k) * mpmath.mpf("1e-6")


def test_budget_equal_to_sum_solves_k_and_leaves_advanced_na():
    assert value("compose", "--epsilon", "1", "--delta", "1e-6", "--total-epsilon", "2",
                 "--total-delta", "2e-6", "--method", "basic") == 2
    done = cli("compose", "--epsilon", "1", "--delta", "1e-6", "--k", "2",
               "--total-delta", "2e-6", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["method"]: r for r in json.loads(done.stdout)["comparison"]}
    assert rows["advanced"]["total_epsilon"] is None and "slack" in rows["advanced"]["note"]


def test_piped_dpsgd_result_composes_to_its_own_epsilon():
    first = cli("dpsgd", "--q", "0.01", "--sigma", "1.1", "--epochs", "1", "--delta", "1e-5",
                "--json")
    assert first.returncode == 0, first.stderr
    eps = json.loads(first.stdout)["value"]
    for method in ("optimal", "basic"):
        done = cli("compose", "--from", "-", "--total-delta", "1e-5", "--method", method,
                   "--value", stdin=first.stdout)
        assert done.returncode == 0, done.stderr
        # the record's ε is read up to a double (at most one ulp when its decimal is not one)
        assert eps <= float(done.stdout) <= math.nextafter(eps, math.inf)
    human = cli("compose", "--from", "-", "--total-delta", "1e-5", stdin=first.stdout)
    assert human.returncode == 0 and "Infinity" not in human.stdout


def test_relation_basic_fits_is_exact():
    from dpcalc.relations import compose as rel

    assert rel.basic_fits(1.0, 1e-6, 2, 2.0, 2e-6)
    assert not rel.basic_fits(1.0, 1e-6, 3, 3.0, 2e-6)
    assert rel.basic_fits(1.0, Decimal("1e-400"), 3, math.inf, Decimal("3e-400"))
    assert not rel.basic_fits(1.0, Decimal("1e-400"), 3, math.inf, Decimal("2.9e-400"))
    assert rel.basic_hetero_fits([0.5, 0.25], [1e-6, 2e-6], 0.75, 3e-6) is (
        Fraction(1e-6) + Fraction(2e-6) <= Fraction(3e-6))


# ---- item 3: never NaN or inf with exit 0 -----------------------------------------------------

@pytest.mark.parametrize("args", [
    ("compose", "--epsilon", "1e11", "--delta", "1e-6", "--k", "50", "--total-epsilon", "3"),
    ("compose", "--method", "advanced", "--epsilon", "1e10", "--delta", "1e-6", "--k", "50",
     "--delta-slack", "1e-5"),
])
def test_vacuous_or_impossible_is_exit_1_not_nan(args):
    for mode in ((), ("--json",), ("--value",)):
        done = cli(*args, *mode)
        assert done.returncode == 1, (mode, done.stdout, done.stderr)
        assert done.stdout == "" and ERROR.match(done.stderr)


def test_from_with_zero_total_delta_is_infeasible_not_infinity():
    rec = json.dumps({"epsilon": 1.0, "delta": 1e-6})
    done = cli("compose", "--from", "-", "--total-delta", "0", stdin=rec)
    assert done.returncode == 1 and done.stdout == "" and ERROR.match(done.stderr)


@pytest.mark.parametrize("eps,k,total", [(1000.0, 1, 999.0), (800.0, 2, 1599.0),
                                         (720.0, 3, 1000.0)])
def test_optimal_delta_for_huge_epsilon_is_finite_and_sound(eps, k, total):
    from dpcalc.relations import compose as rel

    got = rel.optimal_log_delta(eps, math.log(1e-6), k, total)
    assert math.isfinite(got) or got == 0.0
    truth = kov_delta(eps, 1e-6, k, total)
    assert mpmath.exp(got) >= truth
    assert mpmath.exp(got) <= truth * (1 + 1e-6) + mpmath.mpf(k) * mpmath.exp(-eps) * 2


def test_nonfinite_comparison_row_becomes_na():
    from dpcalc.result import Comparison

    row = Comparison("x", math.inf, "ref")
    assert row.value is None and row.note
    assert Comparison("y", math.nan, "ref").value is None


# ---- item 4 and 16: one solve, comparison rows after it, never aborting it --------------------

def test_solving_q_with_epochs_works_in_every_mode():
    args = ("dpsgd", "--sigma", "1.1", "--epochs", "60", "--epsilon", "3", "--delta", "1e-5")
    q = value(*args)
    done = cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["value"] == q
    for row in out["comparison"]:
        assert row["q"] is None or 0 < row["q"] <= 1
        if row["q"] is None:
            assert "--q" not in row["note"] and "--epochs" not in row["note"]
    human = cli(*args)
    assert human.returncode == 0, human.stderr


def test_value_and_json_solve_sigma_to_the_same_number():
    args = ("dpsgd", "--q", "0.01", "--epochs", "100", "--epsilon", "1", "--delta", "1e-5")
    done = cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == value(*args)


def test_comparison_row_failure_of_any_kind_becomes_a_note(monkeypatch):
    import importlib

    api = importlib.import_module("dpcalc.api.dpsgd")
    real = api._solve

    def broken(acc, unknown, values):
        if acc.name == "moments":
            raise api.DomainError("--q out of range")
        if acc.name == "strong":
            raise RuntimeError("boom")
        return real(acc, unknown, values)

    monkeypatch.setattr(api, "_solve", broken)
    res = api.dpsgd(q=0.01, sigma=1.1, epochs=1, delta=1e-5, accountant="rdp")
    rows = {r.method: r for r in res.comparison}
    assert rows["moments"].value is None and rows["strong"].value is None
    assert rows["pld"].value is not None and res.value > 0


# ---- item 5: base ε (or δ) of 0 is an answer ---------------------------------------------------

@pytest.mark.parametrize("left_out", ["--epsilon", "--delta"])
def test_zero_base_budget_meets_zero_target(left_out):
    other = "--delta" if left_out == "--epsilon" else "--epsilon"
    assert value("subsample", "--q", "0.3", "--amplified-epsilon", "0",
                 "--amplified-delta", "0", other, "0") == 0.0


def test_largest_passing_returns_a_closed_low_end():
    from dpcalc.errors import InfeasibleError
    from dpcalc.solve import largest_passing

    assert largest_passing(lambda x: x <= 0.0, low=0.0, high=math.inf, high_open=True,
                           low_open=False, name="x") == 0.0
    got = largest_passing(lambda x: x <= 0.25, low=0.125, high=math.inf, high_open=True,
                          low_open=False, name="x")
    assert 0.125 <= got <= 0.25
    with pytest.raises(InfeasibleError):
        largest_passing(lambda x: x <= 0.0, low=0.0, high=math.inf, high_open=True, name="x")


# ---- item 7: inputs read to the private-side double, in one place ------------------------------

def _all_params():
    import importlib

    from dpcalc.params import Param

    out = []
    for mod in ("dpcalc.params", "dpcalc.api.compose", "dpcalc.api.compose_list",
                "dpcalc.api.dpsgd", "dpcalc.api.subsample", "dpcalc.api.rdp"):
        m = importlib.import_module(mod)
        out += [(mod, n, v) for n, v in vars(m).items() if isinstance(v, Param)]
    return out


@pytest.mark.parametrize("text", ["0.1", "0.3000000000000000000001", "2.38200000000000000001",
                                  "0.99999999999999994"])
def test_every_param_reads_a_decimal_to_its_private_side(text):
    exact = Decimal(text)
    for mod, name, param in _all_params():
        if param.integer or exact >= Decimal(repr(param.high)):
            continue
        try:
            got = param.parse(text)
        except Exception as exc:  # only a domain error, never a crash
            from dpcalc.errors import DomainError

            assert isinstance(exc, DomainError), (mod, name)
            continue
        if param.safer == "larger":
            assert Decimal(got) <= exact, (mod, name)
        else:
            assert Decimal(got) >= exact, (mod, name)
        assert abs(Decimal(got) - exact) <= Decimal(math.ulp(float(exact))), (mod, name)


def test_directions_of_the_parameters_that_matter():
    import importlib

    from dpcalc.api import compose as _  # noqa: F401

    comp = importlib.import_module("dpcalc.api.compose")
    from dpcalc.params import DELTA, SENSITIVITY, SIGMA, Q

    assert SIGMA.input_rounding == "down" and DELTA.input_rounding == "down"
    assert Q.input_rounding == "up" and SENSITIVITY.input_rounding == "up"
    assert comp.EPSILON.input_rounding == "up" and comp.TOTAL_EPSILON.input_rounding == "down"
    assert Decimal(SIGMA.parse("0.1")) < Decimal("0.1") < Decimal(Q.parse("0.1"))


def test_just_below_one_stays_below_one_or_is_refused():
    nines = "0.999999999999999999999"
    done = cli("gaussian", "--sigma", "1", "--delta", nines, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout, parse_float=Decimal)["parameters"]["delta"] < 1
    done = cli("dpsgd", "--q", "0.01", "--sigma", "1", "--epochs", "1", "--delta", "1e-5",
               "--tolerance", nines, "--value")
    assert done.returncode == 0, done.stderr
    # a mechanism's own δ is read up: 1.0 is outside [0, 1), so exit 2 naming it
    done = cli("compose", "--epsilon", "1", "--delta", nines, "--k", "2", "--total-epsilon", "3")
    assert done.returncode == 2 and ERROR.match(done.stderr) and "--delta" in done.stderr
    assert "[0, 1)" in done.stderr


def test_record_guarantee_in_from_is_read_up():
    import importlib

    cl = importlib.import_module("dpcalc.api.compose_list")
    mech = cl._mechanism({"epsilon": Decimal("0.1"), "delta": Decimal("1e-6")}, 1)
    assert Decimal(mech["epsilon"]) >= Decimal("0.1")
    assert Decimal(mech["delta"]) >= Decimal("1e-6")


# ---- item 17: dpsgd δ range, one rule ----------------------------------------------------------

@pytest.mark.parametrize("delta", ["0", "1", "0.0"])
def test_dpsgd_delta_outside_open_interval_is_exit_2(delta):
    done = cli("dpsgd", "--q", "0.01", "--sigma", "1", "--epochs", "1", "--delta", delta)
    assert done.returncode == 2 and done.stdout == "" and ERROR.match(done.stderr)
    assert "--delta" in done.stderr and "(0, 1)" in done.stderr


# ---- item 16: the optimal zCDP conversion; no cap on the RDP order ----------------------------

def _cks_log_delta_inf(mu: float, eps: float) -> mpmath.mpf:
    """inf over α > 1 of the [CKS20, Prop 12] bound for RDP αμ²/2, mpmath at 50 digits."""
    with mpmath.workdps(50):
        rho, e = mpmath.mpf(mu) ** 2 / 2, mpmath.mpf(eps)

        def f(log_am1):
            a = 1 + mpmath.exp(log_am1)
            return (a - 1) * (a * rho - e + mpmath.log(1 - 1 / a)) - mpmath.log(a)

        centre = mpmath.log(max(e / (2 * rho), mpmath.mpf("1e-10")))
        grid = [centre + mpmath.mpf(i) / 10 for i in range(-200, 201)]
        best = min(grid, key=f)
        x = mpmath.findroot(lambda t: mpmath.diff(f, t), best)
        return min(f(x), f(best))


def test_zcdp_uses_the_optimal_conversion_on_the_issue_example():
    got = value("gaussian", "--sigma", "4", "--delta", "1e-3", "--method", "zcdp")
    assert got < 0.70  # Bun–Steinke's ρ + 2√(ρ ln(1/δ)) gives 0.960 here
    assert round(got, 3) == 0.688
    # sound: at the reported ε even the optimal α cannot certify a smaller δ than the target…
    assert _cks_log_delta_inf(0.25, got) <= mpmath.log(mpmath.mpf(1e-3))
    # …and never below the exact (analytic) ε
    assert got >= value("gaussian", "--sigma", "4", "--delta", "1e-3")


@pytest.mark.parametrize("sigma,eps", [(1e14, 3.28e-13), (1e9, 3e-8), (0.7, 3.0), (50.0, 0.5)])
def test_rdp_order_search_is_not_capped_and_is_sound(sigma, eps):
    from dpcalc.relations import gaussian as rel

    mu = 1.0 / sigma
    for method in ("rdp", "zcdp"):
        got = rel.log_delta(method, sigma, eps)
        best = _cks_log_delta_inf(mu, eps)
        assert got >= best - mpmath.mpf(1e-9) * abs(best)  # never below the best α's bound
        assert got <= best + mpmath.mpf(1e-6) * abs(best) + mpmath.mpf(1e-12)  # and near it
        with mpmath.workdps(60):
            mu_m, e = mpmath.mpf(mu), mpmath.mpf(eps)
            exact = mpmath.ncdf(mu_m / 2 - e / mu_m) - mpmath.exp(e) * mpmath.ncdf(
                -mu_m / 2 - e / mu_m)
            assert got >= mpmath.log(exact)  # [BW18] exact profile: dominance


def test_rdp_gives_a_tiny_delta_for_huge_orders():
    done = cli("gaussian", "--method", "rdp", "--sigma", "1e14", "--epsilon", "3.28e-13",
               "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout, parse_float=Decimal)["value"] < Decimal("1e-240")


def test_pld_sigma_solve_passes_and_is_tight():
    import importlib

    api = importlib.import_module("dpcalc.api.dpsgd")
    from dpcalc.relations import pld

    res = api.dpsgd(q=0.01, epochs=10, epsilon=1, delta=1e-5, compare=False)
    sigma = res.value
    upper = pld.epsilon_bounds(0.01, sigma, 1000, math.log(1e-5), 1e-3)[1]
    assert upper <= 1.0
    below = pld.epsilon_bounds(0.01, sigma * (1 - 1e-4), 1000, math.log(1e-5), 1e-3)[1]
    assert below > 1.0


# ---- items 13 and 14: extreme inputs answer in seconds, name no OverflowError ------------------

def test_huge_sigma_is_evaluated_at_the_cap_with_a_note():
    import importlib

    api = importlib.import_module("dpcalc.api.dpsgd")
    res = api.dpsgd(q=0.01, sigma="1e308", epochs=1, delta=1e-5)
    capped = api.dpsgd(q=0.01, sigma=api.SIGMA_EVAL_MAX, epochs=1, delta=1e-5, compare=False)
    assert res.value == capped.value  # more noise is never less private: same upper bound
    assert any("evaluated at" in n for n in res.notes)
    done = cli("dpsgd", "--q", "0.01", "--sigma", "1e308", "--epochs", "1", "--epsilon", "1",
               "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout, parse_float=Decimal)
    assert out["value"] < Decimal("1e-300")
    assert Decimal("9.99e307") < out["parameters"]["sigma"] <= Decimal("1e308")  # read down


def test_sigma_solve_stops_at_its_floor_with_a_note():
    done = cli("dpsgd", "--q", "1", "--epochs", "1", "--epsilon", "1e300", "--delta", "0.999999",
               "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["value"] >= 1e-3 and any("smallest noise" in n for n in out["notes"])


@pytest.mark.parametrize("args", [
    ("--q", "1", "--sigma", "1e-5", "--steps", "100000", "--epsilon", "1e5"),
    ("--q", "1", "--sigma", "1e-30", "--steps", "10000000000", "--epsilon", "1e-30"),
])
def test_pld_out_of_range_answers_with_rdp_and_says_so(args):
    done = cli("dpsgd", *args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["value"] == 1.0 and any("no guarantee" in n for n in out["notes"])
    assert any("cannot certify" in n for n in out["notes"])


_EXTREMES = ["1e-300", "1e-30", "1e-5", "0.5", "1", "30", "700", "1e5", "1e15", "1e154",
             "2e154", "1e300", "1.7976931348623157e308"]


@pytest.mark.parametrize("method", ["analytic", "classic", "chernoff", "rdp", "zcdp"])
def test_gaussian_log_delta_is_a_number_at_every_extreme(method):
    from dpcalc.relations import gaussian as rel

    for s in _EXTREMES:
        for e in ["0", *_EXTREMES]:
            got = rel.log_delta(method, float(s), float(e))
            assert got == got and got <= 0.0 and got != -math.inf, (method, s, e)


def test_gaussian_extreme_delta_is_an_upper_bound_not_zero():
    from dpcalc.relations import gaussian as rel

    # t = ε/μ − μ/2 = 3e308·… overflows: the floor of the double range, never −inf (δ = 0)
    assert rel.log_delta("analytic", 30.0, 1e308) == rel.LOG_FLOOR
    with mpmath.workdps(30):
        z = mpmath.mpf(1e100)  # σ = 1, ε = 1e100: log δ ≈ −z²/2
        assert rel.log_delta("analytic", 1.0, 1e100) >= -(z * z) / 2 - z


def test_small_fuzz_never_overflow_nan_or_internal_error(capsys):
    import random

    from dpcalc.cli import main

    rng = random.Random(9)
    shapes = {
        "gaussian": [["--sigma", "--epsilon"], ["--sigma", "--delta"], ["--epsilon", "--delta"]],
        "laplace": [["--scale", "--delta"], ["--epsilon", "--delta"], ["--scale", "--epsilon"]],
        "compose": [["--epsilon", "--delta", "--k", "--total-delta"],
                    ["--epsilon", "--delta", "--k", "--total-epsilon"],
                    ["--delta", "--k", "--total-epsilon", "--total-delta"]],
        "subsample": [["--epsilon", "--delta", "--q"],
                      ["--delta", "--q", "--amplified-epsilon", "--amplified-delta"]],
    }
    values = ["0", "1e-300", "1e-10", "1e-5", "0.5", "0.999999", "1", "30", "710", "1e10",
              "1e154", "1e300", "1e308"]
    for _ in range(150):
        cmd = rng.choice(list(shapes))
        argv = [cmd]
        for opt in rng.choice(shapes[cmd]):
            v = rng.choice(["1", "50", "100000"]) if opt == "--k" else rng.choice(values)
            argv += [opt, v]
        if cmd in ("gaussian", "compose"):
            methods = (("analytic", "classic", "chernoff", "rdp", "zcdp") if cmd == "gaussian"
                       else ("optimal", "advanced", "basic"))
            argv += ["--method", rng.choice(methods)]
        code = main([*argv, "--json"])
        out, err = capsys.readouterr()
        assert code in (0, 1, 2), (argv, err)
        assert "OverflowError" not in err and "internal error" not in err, (argv, err)
        no_nonfinite(out)
        if code == 0:
            assert err == "", (argv, err)
            json.loads(out, parse_float=Decimal)


@pytest.mark.parametrize("lam", [1e101, 1e150, 1e200, 1e308])
def test_laplace_rdp_for_huge_scale_is_an_upper_bound(lam):
    from dpcalc.relations import rdp as rel

    for alpha in (1.01, 2.0, 32.0):
        got = rel.rdp_laplace([alpha], lam)[0]
        with mpmath.workdps(1400):
            a, al = 1 / mpmath.mpf(lam), mpmath.mpf(alpha)
            exact = mpmath.log(al / (2 * al - 1) * mpmath.exp((al - 1) * a)
                               + (al - 1) / (2 * al - 1) * mpmath.exp(-al * a)) / (al - 1)
        assert got > 0 and got >= exact


def test_gaussian_sigma_too_small_to_solve_epsilon_names_the_option():
    done = cli("gaussian", "--sigma", "1e-300", "--delta", "1e-5")
    assert done.returncode == 2 and ERROR.match(done.stderr)
    assert "--sigma must be at least" in done.stderr and "OverflowError" not in done.stderr
    assert value("gaussian", "--sigma", "1e-150", "--delta", "1e-5") >= 5e299  # ≈ μ²/2


def test_huge_per_mechanism_epsilon_total_is_sound_and_quiet():
    done = cli("compose", "--epsilon", "1000", "--delta", "0", "--k", "10", "--total-delta",
               "1e-5", "--value")
    assert done.returncode == 0 and done.stderr == ""  # no RuntimeWarning either
    got = float(done.stdout)
    assert got <= 10000.0
    assert kov_delta(1000.0, 0.0, 10, got) <= mpmath.mpf(1e-5)


def test_fallback_note_describes_the_answer_not_a_probe(monkeypatch):
    import importlib

    api = importlib.import_module("dpcalc.api.dpsgd")
    from dpcalc.relations import pld

    honest = api.dpsgd(q=0.01, epochs=1, epsilon=1, delta=1e-5, compare=False)
    real, failed = pld.epsilon_bounds, []

    def flaky(q, sigma, steps, log_delta, tol):
        if sigma < honest.value * 0.999:  # probes well below the answer cannot be certified
            failed.append(sigma)
            raise pld.PLDUncertifiable("test")
        return real(q, sigma, steps, log_delta, tol)

    monkeypatch.setattr(pld, "epsilon_bounds", flaky)
    res = api.dpsgd(q=0.01, epochs=1, epsilon=1, delta=1e-5, compare=False)
    assert failed, "the search never probed below the answer"
    assert res.method == "pld" and not any("cannot certify" in n for n in res.notes)
    upper = real(0.01, res.value, 100, math.log(1e-5), 1e-3)[1]
    assert upper <= 1.0
