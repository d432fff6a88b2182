"""Issue 9, items 7, 13, 14 and 17: inputs read to the private-side double, extreme inputs
answered in seconds (or refused naming the option), no OverflowError, dpsgd's δ range.
CLI behaviour runs through the installed entry point (subprocess)."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import mpmath
import pytest

from tests.issue9_helpers import ERROR, cli, kov_delta, no_nonfinite, value

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


_OUT_OF_GRID = [("--sigma", "1e-5", "--steps", "100000", "--epsilon", "1e5"),
                ("--sigma", "1e-30", "--steps", "10000000000", "--epsilon", "1e-30")]


@pytest.mark.parametrize("args", _OUT_OF_GRID)
def test_pld_out_of_range_answers_with_rdp_and_says_so(args):
    done = cli("dpsgd", "--q", "0.5", *args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["value"] == 1.0 and any("no guarantee" in n for n in out["notes"])
    assert any("cannot certify" in n for n in out["notes"])


@pytest.mark.parametrize("args", _OUT_OF_GRID)
def test_full_batch_out_of_the_grid_range_is_exact(args):
    # q = 1 needs no grid (dpcalc.relations.full_batch): δ = 1 − (far below an ulp), certified
    done = cli("dpsgd", "--q", "1", *args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["value"] == 1.0 and out["method"] == "pld"
    assert out["bounds"]["lower"] >= 1.0 - 2.3e-16
    assert not any("cannot certify" in n for n in out["notes"])
    assert any("its exact profile" in n for n in out["notes"])


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
    real, real_upper, failed = pld.epsilon_bounds, pld.epsilon_upper, []

    def flaky(q, sigma, steps, log_delta, tol, for_solve=False):
        if sigma < honest.value * 0.999:  # probes well below the answer cannot be certified
            failed.append(sigma)
            raise pld.PLDUncertifiable("test")
        return real(q, sigma, steps, log_delta, tol, for_solve)

    def flaky_upper(q, sigma, steps, log_delta, tol, stop_above=math.inf):
        if sigma < honest.value * 0.999:  # the same probes fail for the cheap bound too
            failed.append(sigma)
            raise pld.PLDUncertifiable("test")
        return real_upper(q, sigma, steps, log_delta, tol, stop_above)

    monkeypatch.setattr(pld, "epsilon_bounds", flaky)
    monkeypatch.setattr(pld, "epsilon_upper", flaky_upper)
    res = api.dpsgd(q=0.01, epochs=1, epsilon=1, delta=1e-5, compare=False)
    assert failed, "the search never probed below the answer"
    assert res.method == "pld" and not any("cannot certify" in n for n in res.notes)
    upper = real(0.01, res.value, 100, math.log(1e-5), 1e-3)[1]
    assert upper <= 1.0


def test_inputs_are_shown_as_written():
    done = cli("gaussian", "--sigma", "1", "--delta", "0.999999999999999999999")
    assert done.returncode == 0 and "0.999999999999999999999" in done.stdout
    done = cli("gaussian", "--sigma", "2", "--delta", "1e-5")
    assert done.returncode == 0 and "δ = 1e-05" in done.stdout
