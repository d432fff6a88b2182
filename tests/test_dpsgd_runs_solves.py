"""The solves of the other sampling schemes (dpcalc.api.dpsgd_runs, issue 13 item 1: "and
the same with --sampling"): a secant on the cheap bound seeds the solver, few evaluations,
and the printed answer reads back as a certified point."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dpcalc
import dpcalc.pld.accountant as pld_accountant
from dpcalc.api._dpsgd_runs_guess import printed_answer, readback, secant_guess
from dpcalc.api.dpsgd_runs import NOISE
from dpcalc.params import Q

SCHEMES = [dict(examples_per_user=2), dict(relation="replace-one"),
           dict(sampling="fixed-batch")]


def _count(monkeypatch) -> dict[str, int]:
    counts = {"epsilon_upper": 0, "epsilon_bounds": 0}
    for name in counts:
        real = getattr(pld_accountant, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            counts[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(pld_accountant, name, counted)
    return counts


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_sigma_steps_and_q_solves_take_few_evaluations(monkeypatch, scheme):
    # the bisection from the whole domain took 20-30 evaluations each (3-5 s at K = 2)
    target = dict(epsilon=2, delta=1e-5, compare=False, **scheme)
    for kw in (dict(q=0.02, steps=100), dict(q=0.02, sigma=1.5, solve_for="steps"),
               dict(sigma=1.5, steps=100)):
        counts = _count(monkeypatch)
        r = dpcalc.dpsgd(**kw, **target)
        assert sum(counts.values()) <= 12, (kw, counts)
        forward = dict(kw, **{r.solved_for: r.value}, delta=1e-5, compare=False, **scheme)
        forward.pop("solve_for", None)
        assert dpcalc.dpsgd(**forward).value <= 2


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_q_solves_with_the_epochs_given_take_few_full_evaluations(monkeypatch, scheme):
    # the steps ⌈epochs/q⌉ follow the rate: the search went from scratch (K = 2: 3.4 s,
    # fixed batches: 30 full evaluations, 12 s); a secant seeds it now, and a passing
    # point whose full bound lies within 1e-5 of the target ends it (settles)
    counts = _count(monkeypatch)
    r = dpcalc.dpsgd(sigma=1.1, epochs=3, epsilon=1.5, delta=1e-5, compare=False, **scheme)
    assert counts["epsilon_bounds"] <= 6, counts      # from scratch: 13-23
    forward = dict(q=r.value, sigma=1.1, epochs=3, delta=1e-5, compare=False, **scheme)
    assert dpcalc.dpsgd(**forward).value <= 1.5
    # the root at its own step count, to the accuracy (2e-5 in ε): at the same steps a rate
    # 1e-4 higher fails.  (A later plateau, one step fewer at a rate up to 1/T higher, can
    # pass again, as it could for the bisection: ε drops by ~1/(2T) where a step goes.)
    steps = math.ceil(3 / r.value)
    at = dict(forward, steps=steps, q=r.value * (1 + 1e-4))
    del at["epochs"]
    assert dpcalc.dpsgd(**at).value > 1.5


@pytest.mark.parametrize("scheme", [dict(relation="replace-one"), dict(sampling="fixed-batch")],
                         ids=str)
def test_a_sigma_solve_ends_at_a_passing_point_within_the_window(monkeypatch, scheme):
    # σ at MNIST: the secant's guess passed in full within 1e-5 below the target, and the
    # solver evaluated its failing neighbour in full before answering it (settles: no more)
    counts = _count(monkeypatch)
    r = dpcalc.dpsgd(batch_size=256, dataset_size=60000, epochs=60, epsilon=3, delta=1e-5,
                     compare=False, **scheme)
    assert counts["epsilon_bounds"] <= 1, counts
    assert dpcalc.dpsgd(batch_size=256, dataset_size=60000, epochs=60, sigma=r.value,
                        delta=1e-5, compare=False, **scheme).value <= 3.0


@pytest.mark.parametrize("kw", [
    dict(q=0.0045, steps=23, epsilon=1.795, examples_per_user=2),   # read back 1.4e-10 above
    dict(q=0.0088, steps=871, epsilon=6.538, sampling="fixed-batch"),
    dict(q=0.02, steps=100, epsilon=2, sampling="fixed-batch"),
    dict(sigma=1.5, steps=100, epsilon=2, examples_per_user=2),
], ids=str)
def test_the_printed_answer_reads_back_as_a_certified_point(kw):
    r = dpcalc.dpsgd(**kw, delta=1e-5, compare=False)
    name = r.solved_for
    printed = repr(r.value)                       # what --json shows
    assert (NOISE if name == "sigma" else Q).parse(printed) == r.value
    forward = {k: v for k, v in kw.items() if k != "epsilon"}
    forward[name] = printed
    assert dpcalc.dpsgd(**forward, delta=1e-5, compare=False).value <= kw["epsilon"]


def test_printed_answer_moves_to_the_private_side_only():
    # 1.5 reads back as itself; a value whose repr reads back one ulp off is moved up for σ
    # (more noise), down for q (a smaller rate), and checked by holds
    seen = []

    def holds(x):
        seen.append(x)
        return True

    assert printed_answer(1.5, NOISE, holds) == 1.5
    assert seen == []
    x = 0.7072635457995514                        # reads back one ulp below as a σ
    assert NOISE.parse(repr(x)) != x
    up = printed_answer(x, NOISE, holds)
    assert up > x and NOISE.parse(repr(up)) == up and seen == [up]
    down = printed_answer(x, Q, lambda r: True)
    assert down <= x and Q.parse(repr(down)) == down
    # nothing passes: the certified answer itself
    assert printed_answer(x, NOISE, lambda s: False) == x


def test_secant_guess_finds_the_root_of_a_smooth_bound():
    # ε = 3/σ²: the root of ε = 1 at σ = √3, from σ = 1 with a rough slope
    guess, accuracy = secant_guess(lambda x: 3.0 * math.exp(-2.0 * x), 0.0, 1.0, -5.0, 5.0,
                                   -1.0)
    assert guess == pytest.approx(math.sqrt(3.0), rel=1e-9) and accuracy <= 4e-5
    assert secant_guess(lambda x: math.inf, 0.0, 1.0, -5.0, 5.0, -1.0) == (None, 0.5)


def test_secant_guess_moves_to_the_full_bounds_root():
    """helper-49: the cheap bound 3 % above the full one put the steps guess 6 % short of the
    predicate's threshold; with ``full`` the guess is moved to the full bound's root."""
    def full(x):                 # ε = √(T/1000): the root of ε = 1 at T = 1000
        return math.exp(0.5 * (x - math.log(1000.0)))

    calls = []

    def counted(x):
        calls.append(x)
        return full(x)

    cheap = lambda x: 1.03 * full(x)  # noqa: E731
    short, _ = secant_guess(cheap, math.log(200.0), 1.0, 0.0, 30.0, 0.5)
    assert short == pytest.approx(1000.0 / 1.03 ** 2, rel=1e-6)
    moved, accuracy = secant_guess(cheap, math.log(200.0), 1.0, 0.0, 30.0, 0.5, full=counted)
    # a Newton step on the cheap chord, then a secant through the two full values
    assert moved == pytest.approx(1000.0, rel=1e-6) and len(calls) == 2
    assert abs(math.log(moved / 1000.0)) <= accuracy <= 0.01
    # curved, and the cheap bound's slope not the full one's: the root still within accuracy
    def curved(x):
        u = x - math.log(1000.0)
        return math.exp(0.5 * u + 0.05 * u * u)

    guess, accuracy = secant_guess(lambda x: 1.03 * curved(x) * math.exp(0.01 * (
        x - math.log(1000.0))), math.log(200.0), 1.0, 0.0, 30.0, 0.5, full=curved)
    assert abs(math.log(guess / 1000.0)) <= accuracy <= 0.01
    # a full bound that cannot be had leaves the cheap secant's root
    def broken(x):
        raise ValueError("no bound")

    assert secant_guess(cheap, math.log(200.0), 1.0, 0.0, 30.0, 0.5, full=broken)[0] == \
        pytest.approx(short, rel=1e-12)


def test_secant_guess_moves_to_the_full_bounds_root_of_a_falling_bound():
    """A σ-like unknown (ε falls as x grows) whose full bound lies 0.7 % below the cheap
    one: the Newton step goes down, and the secant through the two full values then lands
    on the full root with a small accuracy.  The sign test read (f1 − f0)·chord without the
    step's direction, so every falling bound gave up after the Newton step and handed the
    solver a quarter of it as accuracy (σ replace-one at q 1e-5: six full brackets)."""
    def full(x):                 # ε = 3/σ², curved a little: the root of ε = 1 near √3
        u = x - 0.5 * math.log(3.0)
        return math.exp(-2.0 * u + 0.1 * u * u)

    calls = []

    def counted(x):
        calls.append(x)
        return full(x)

    guess, accuracy = secant_guess(lambda x: 1.007 * full(x), 0.0, 1.0, -5.0, 5.0, -1.0,
                                   full=counted)
    assert len(calls) == 2
    assert abs(math.log(guess / math.sqrt(3.0))) <= accuracy <= 1e-5


def test_chi2_of_the_pairs_against_quadrature():
    # add/remove: ∫ P²/Q − 1 exactly; replace-one and fixed batches: to second order in q
    # (the seeds only need an estimate; at q = 1e-3 they agree to 1 %)
    import mpmath

    from dpcalc.api._dpsgd_runs_guess import chi2
    from dpcalc.api.dpsgd_runs import Scheme, pair_of

    q, sigma = 1e-3, 1.3
    for scheme, rtol in ((Scheme("poisson", "add-remove", 3), 1e-9),
                         (Scheme("poisson", "replace-one", 2), 1e-2)):
        side = pair_of(scheme, q, sigma)._side("remove")
        with mpmath.workdps(30):
            s = mpmath.mpf(sigma)

            def dens(log_w, means, x, s=s):
                return mpmath.fsum(mpmath.exp(mpmath.mpf(w)) * mpmath.npdf(x, m, s)
                                   for w, m in zip(log_w, means, strict=True))

            def ratio(x, side=side):
                return dens(side.log_a, side.mp, x) ** 2 / dens(side.log_b, side.mq, x)

            want = mpmath.quad(ratio, [-20, 0, 20]) - 1
        assert chi2(scheme, q, sigma) == pytest.approx(float(want), rel=rtol)


@pytest.mark.parametrize("scheme", [dict(examples_per_user=2), dict(relation="replace-one"),
                                    dict(sampling="fixed-batch")], ids=str)
def test_mnist_sigma_solves_start_near_the_answer(monkeypatch, scheme):
    # the χ² CLT seed [DRS19, Sec 5] lies within 1-2 % of the answer (the Poisson CLT seed
    # was 40-60 % off: 5 cheap probes before the secant met the root, and with fixed batches
    # the printed answer's neighbour failed on the bound's 4e-7 jitter: 16 evaluations)
    counts = _count(monkeypatch)
    r = dpcalc.dpsgd(batch_size=256, dataset_size=60000, epochs=60, epsilon=3, delta=1e-5,
                     compare=False, **scheme)
    # ≤ 5: three cheap probes, the full bound at the secant's root, and the failing
    # neighbour below it (the secants' points print as themselves, and the guess's accuracy
    # reaches past the aimed-inside root: 6-9 before)
    assert sum(counts.values()) <= 5, counts
    from dpcalc.api._dpsgd_runs_guess import clt_seed
    from dpcalc.api.dpsgd_runs import scheme_of

    s = scheme_of(scheme.get("sampling"), scheme.get("relation"),
                  scheme.get("examples_per_user"))
    seed = clt_seed(s, "sigma", 256 / 60000, None, 14063, 3.0, math.log(1e-5))
    assert seed == pytest.approx(r.value, rel=0.02)


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_rate_solves_take_at_most_seven_evaluations(monkeypatch, scheme):
    # σ 1.5, 100 steps, ε 2: 8-10 evaluations before (a read-back check of the printed rate
    # and a gallop of 1e-7 from a guess 1e-6 inside the target)
    counts = _count(monkeypatch)
    r = dpcalc.dpsgd(sigma=1.5, steps=100, epsilon=2, delta=1e-5, compare=False, **scheme)
    assert sum(counts.values()) <= 7, counts
    assert Q.parse(repr(r.value)) == r.value


@given(st.floats(1e-300, 1.0) | st.floats(1.0, 1e6), st.sampled_from([NOISE, Q]))
@settings(max_examples=2000, deadline=None)
def test_readback_reads_back_on_the_private_side_and_keeps_order(x, param):
    assume(x <= param.high)
    y = readback(x, param)
    assert y == x or param.parse(repr(y)) == y    # (x itself past 16 ulps: rare, see above)
    assert (y >= x) if param.safer == "larger" else (y <= x)
    assert abs(y - x) <= 16 * math.ulp(x)
    z = math.nextafter(x, math.inf)
    if z <= param.high:
        assert readback(z, param) >= y         # nondecreasing: snapped predicates stay monotone


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_a_q_solve_with_the_epochs_given_stays_within_the_steps_dpcalc_accounts_for(scheme):
    # 1e9 epochs need q >= 0.1 to stay within 1e10 steps, and none of those meets ε 10: a
    # target no rate meets (exit 1, as the default run says), not the usage error of a
    # probe below 0.1 (exit 2, "--epochs/--q give 1.6e+10 steps")
    from dpcalc.errors import InfeasibleError

    with pytest.raises(InfeasibleError, match=r"no q >= 0\.1 meets the target"):
        dpcalc.dpsgd(sigma=1, epochs=1e9, epsilon=10, delta=1e-5, compare=False, **scheme)


@pytest.mark.parametrize("scheme", [{}] + SCHEMES, ids=str)
def test_a_q_solve_with_more_epochs_than_steps_says_so_naming_the_epochs(scheme):
    # above 1e10 epochs every q <= 1 gives more steps than dpcalc accounts for: a usage
    # error about --epochs (it said "--epochs/--q give 1e+12 steps", naming a --q the user
    # did not give), through the real entry point: one line, exit 2
    import subprocess
    import sys

    flags = [f"--{k.replace('_', '-')}={v}" for k, v in scheme.items()]
    run = subprocess.run([sys.executable, "-m", "dpcalc", "dpsgd", "--sigma", "1.1",
                          "--epochs", "1e12", "--epsilon", "3", "--delta", "1e-5", *flags],
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "--epochs 1e+12 " in run.stderr
    assert "--q" not in run.stderr
    just = subprocess.run([sys.executable, "-m", "dpcalc", "dpsgd", "--sigma", "1.1",
                           "--epochs", "1.00000001e10", "--epsilon", "3", "--delta", "1e-5",
                           *flags], capture_output=True, text=True)
    assert just.returncode == 2 and "--epochs 10000000100 " in just.stderr   # not "1e+10"


@pytest.mark.parametrize("scheme", SCHEMES, ids=str)
def test_the_solves_full_brackets_compose_upper_ends_only_and_keep_the_answer(monkeypatch,
                                                                              scheme):
    # a solve reads upper ends alone: its full brackets skip the last pass's optimistic
    # side (for_solve, the same upper end bit for bit; fixed batches, q with 60 epochs:
    # 5.1 -> 2.9 s), except Poisson replace-one at K = 1, whose lower end decides whether
    # the add/remove run bounds it too (the upper end then)
    from dpcalc.api._runs_pld import _Pld

    asked = []
    real = pld_accountant.epsilon_bounds

    def spy(*args, **kwargs):
        asked.append(kwargs.get("for_solve", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(pld_accountant, "epsilon_bounds", spy)
    question = dict(q=0.01, steps=300, epsilon=1.5, delta=1e-5, compare=False, **scheme)
    r = dpcalc.dpsgd(**question)
    triangular = scheme.get("relation") == "replace-one"
    assert asked and all(a is (not triangular) for a in asked), asked
    # the same answer as with every bracket in full
    monkeypatch.setattr(_Pld, "solving", lambda self: __import__("contextlib").nullcontext())
    asked.clear()
    assert dpcalc.dpsgd(**question).value == r.value
    assert asked and not any(asked)


def test_the_solves_brackets_are_not_reported_after_it():
    # a bracket kept from the solve (lower end possibly looser) is forgotten on leaving
    from dpcalc.api._runs_pld import _Pld
    from dpcalc.api.dpsgd_runs import scheme_of

    acc = _Pld(scheme_of("fixed-batch", None, 1), 1e-3)
    log_d = math.log(1e-5)
    with acc.solving():
        assert acc.for_solve
        inside = acc.epsilon(0.01, 1.5, 300, log_d)
    assert not acc.for_solve
    after = acc.epsilon(0.01, 1.5, 300, log_d)
    assert after[0] == inside[0]                       # the same upper end, bit for bit
    assert after[1][0] >= inside[1][0]                 # the forward lower end, recomputed
    assert (after[1][1] - after[1][0]) / after[1][1] <= 1e-3


@pytest.mark.parametrize("scheme", SCHEMES + [dict(examples_per_user=3)], ids=str)
def test_mnist_sigma_solves_take_three_cheap_probes_and_one_full(monkeypatch, scheme):
    # the first Newton step on the scheme's own CLT slope (clt_slope; the one-example
    # model's, −1.88, missed K = 2's −1.40 and the secant took a fourth probe), and a full
    # bound at the secant's root that passes within the settle window is not moved (three
    # full evaluations 1e-7 apart chased the aim within the bounds' jitter)
    counts = _count(monkeypatch)
    r = dpcalc.dpsgd(batch_size=256, dataset_size=60000, epochs=60, epsilon=3, delta=1e-5,
                     compare=False, **scheme)
    assert counts["epsilon_upper"] <= 3 and counts["epsilon_bounds"] <= 1, counts
    got = dpcalc.dpsgd(batch_size=256, dataset_size=60000, epochs=60, sigma=r.value,
                       delta=1e-5, compare=False, **scheme).value
    assert 3.0 * (1 - 1e-5) <= got <= 3.0


@pytest.mark.parametrize("scheme", SCHEMES + [dict(examples_per_user=3)], ids=str)
def test_the_schemes_clt_slope_is_near_the_pld_bounds_slope(scheme):
    # d log ε / d log σ of the scheme's χ² CLT model against the PLD bound's own (a central
    # difference of the cheap bound at the answer), and likewise for the steps
    from dpcalc.api._dpsgd_runs_guess import clt_slope
    from dpcalc.api._runs_pld import _Pld
    from dpcalc.api.dpsgd_runs import scheme_of

    s = scheme_of(scheme.get("sampling"), scheme.get("relation"),
                  scheme.get("examples_per_user"))
    q, steps, log_d = 256 / 60000, 14063, math.log(1e-5)
    sigma = dpcalc.dpsgd(q=q, steps=steps, epsilon=3, delta=1e-5, compare=False,
                         **scheme).value
    acc = _Pld(s, 1e-3)
    h = 0.01
    pld = (math.log(acc.upper(q, sigma * (1 + h), steps, log_d))
           - math.log(acc.upper(q, sigma / (1 + h), steps, log_d))) / (2 * math.log1p(h))
    model = clt_slope(s, "sigma", q, None, steps, 3.0, log_d)
    assert model == pytest.approx(pld, rel=0.1), (model, pld)
    pld_t = (math.log(acc.upper(q, 1.1, 15000, log_d))
             - math.log(acc.upper(q, 1.1, 13000, log_d))) / math.log(15000 / 13000)
    at = acc.upper(q, 1.1, 14000, log_d)
    assert clt_slope(s, "steps", q, 1.1, None, at, log_d) == pytest.approx(pld_t, rel=0.15)


def test_secant_guess_keeps_a_full_root_that_settles():
    # the full bound at the cheap secant's root meets the target within the settle window:
    # the guess stays there (one full evaluation), where it was moved by a tiny Newton step
    def full(x):                 # ε = √(T/1000) (1 − 3e-6): passes just below ε = 1
        return math.exp(0.5 * (x - math.log(1000.0))) * (1 - 3e-6)

    calls = []

    def counted(x):
        calls.append(x)
        return full(x)

    cheap = lambda x: full(x) * (1 + 2e-6)  # noqa: E731
    aim = 1.0 - 1e-6
    guess, _ = secant_guess(cheap, math.log(900.0), aim, 0.0, 30.0, 0.5, full=counted,
                            inside=1e-6, settle=1e-5)
    assert len(calls) == 1 and math.log(guess) == calls[0]
    assert 1.0 - 1e-5 <= full(calls[0]) <= 1.0
    calls.clear()            # without the window: moved towards the aimed root
    secant_guess(cheap, math.log(900.0), aim, 0.0, 30.0, 0.5, full=counted, inside=1e-6)
    assert len(calls) == 2


def test_secant_guess_asks_the_full_bound_at_a_probe_that_meets_the_target():
    # the last probe's cheap bound already meets the target within the settle window: the
    # full bound is asked there (its first pass is kept, a probe's composition), not at the
    # secant's point a step beyond (a first pass composed again); on a curved bound, whose
    # last secant step is not nil
    def bound(x, c=0.01):         # ε = √(T/1000)·e^{c(log T − log 1000)²}: 1 at T = 1000
        return math.exp(0.5 * (x - math.log(1000.0)) + c * (x - math.log(1000.0)) ** 2)

    probes, fulls = [], []

    def cheap(x):
        probes.append(x)
        return bound(x)

    def counted(x):
        fulls.append(x)
        return bound(x)

    guess, _ = secant_guess(cheap, math.log(900.0), 1.0 - 5e-6, 0.0, 30.0, 0.5,
                            full=counted, inside=5e-6, settle=1e-5)
    assert fulls == [probes[-1]] and math.log(guess) == probes[-1]
    assert 1.0 - 1e-5 <= bound(fulls[0]) <= 1.0
    # without a window the secant's own point is asked, as before (a full bound at the
    # probe, off the window, would move on: σ at MNIST, replace-one)
    probes.clear()
    fulls.clear()
    secant_guess(cheap, math.log(900.0), 1.0, 0.0, 30.0, 0.5, full=counted)
    assert len(fulls) >= 1 and fulls[0] != probes[-1]


def test_mnist_sigma_at_k2_composes_no_first_pass_twice(monkeypatch):
    # σ at MNIST, K = 2: the secant's last probe meets the target within the settle window,
    # and its full bracket reuses that probe's first pass: one pessimistic first pass per
    # probe and direction (a fourth, at the secant's next point, cost 0.05 s of 0.5)
    from dpcalc.pld import compose

    fresh = []
    real = compose._compose_points_fresh

    def counted(pair, steps_list, rho, plans, log_eta, evaluate, sides, dirs, *a, **kw):
        fresh.extend((rho, d) for d in dirs if True in sides)
        return real(pair, steps_list, rho, plans, log_eta, evaluate, sides, dirs, *a, **kw)

    monkeypatch.setattr(compose, "_compose_points_fresh", counted)
    counts = _count(monkeypatch)
    r = dpcalc.dpsgd(batch_size=256, dataset_size=60000, epochs=60, epsilon=3, delta=1e-5,
                     examples_per_user=2, compare=False)
    first = max(rho for rho, _ in fresh)
    passes = [d for rho, d in fresh if rho == first]
    assert passes.count("remove") == counts["epsilon_upper"] == 3, (fresh, counts)
    got = dpcalc.dpsgd(batch_size=256, dataset_size=60000, epochs=60, sigma=r.value,
                       delta=1e-5, examples_per_user=2, compare=False).value
    assert 3.0 * (1 - 1e-5) <= got <= 3.0


def test_a_count_solves_failing_neighbour_is_decided_by_the_cheap_bound(monkeypatch):
    # epochs at MNIST, K = 2: the full bracket at the secant's count was its cheap bound
    # (the first pass final), so the next count, a likely fail, is decided by the cheap
    # bound too (as the default run's Accountant.holds): one full bracket, not two
    counts = _count(monkeypatch)
    r = dpcalc.dpsgd(batch_size=256, dataset_size=60000, sigma=1.1, epsilon=8, delta=1e-5,
                     examples_per_user=2, compare=False)
    assert counts["epsilon_bounds"] <= 1, counts
    steps = r.parameters["steps"]
    at = dict(q=256 / 60000, sigma=1.1, delta=1e-5, examples_per_user=2, compare=False)
    assert dpcalc.dpsgd(steps=steps, **at).value <= 8
    # the answer is the largest whole epochs whose steps pass (⌊most·q⌋, most the largest
    # passing count: its neighbour fails under the full bracket too)
    most = dpcalc.dpsgd(**at, epsilon=8, solve_for="steps").value
    assert dpcalc.dpsgd(steps=most + 1, **at).value > 8
    assert r.value == math.floor(most * 256 / 60000)


def test_secant_guess_keeps_a_newton_point_that_settles():
    # the full bound at the cheap root lies 0.15 % below: a Newton step moves it; the full
    # bound at the Newton point meets the target within the window, and the guess is that
    # point (the solver's first probe, already evaluated) where a further secant step moved
    # it by 1e-9 to a point the solver then evaluated in full (q with 60 epochs, fixed
    # batches: three full brackets for two)
    def full(x):                 # ε = √(T/1000)·(1 − 5e-6 + 1e-7 (x − log 1000)²)
        u = x - math.log(1000.0)
        return math.exp(0.5 * u) * (1 - 5e-6 + 1e-7 * u * u)

    calls = []

    def counted(x):
        calls.append(x)
        return full(x)

    cheap = lambda x: full(x) * (1 + 1.5e-3)  # noqa: E731
    guess, _ = secant_guess(cheap, math.log(900.0), 1.0 - 5e-6, 0.0, 30.0, 0.5,
                            full=counted, inside=5e-6, settle=1e-5)
    assert len(calls) == 2 and math.log(guess) == calls[-1]
    assert 1.0 - 1e-5 <= full(calls[-1]) <= 1.0


@pytest.fixture
def full_brackets(monkeypatch):
    """The full brackets (``_Pld._own("epsilon_bounds", ...)``) a solve evaluates, listed."""
    import dpcalc.api._runs_pld as runs_pld

    seen = []
    own = runs_pld._Pld._own

    def counted(self, name, *args, **kwargs):
        if name == "epsilon_bounds":
            seen.append(args)
        return own(self, name, *args, **kwargs)

    monkeypatch.setattr(runs_pld._Pld, "_own", counted)
    return seen


def test_a_newton_step_far_off_declares_the_secant_points_own_residual(full_brackets):
    """helper-16: where the Newton step on the cheap chord lands far off (K = 2 replace-one,
    q 1e-4, 10 steps, δ 1e-12: a secant step of 9e-4 after it), the guess's accuracy was half
    that step, and the solver bisected it to 2e-5 with five more full brackets (nine in all)
    that returned the guess itself.  The secant point is the solver's first probe, so its
    full bound is read there (no extra cost) and its residual sets the accuracy."""
    r = dpcalc.dpsgd(q=1e-4, steps=10, epsilon=0.3, delta=1e-12, examples_per_user=2,
                     relation="replace-one")
    assert len(full_brackets) <= 5
    back = dpcalc.dpsgd(q=1e-4, steps=10, sigma=r.value, delta=1e-12, examples_per_user=2,
                        relation="replace-one", compare=False)
    assert back.value <= 0.3


@pytest.mark.parametrize("given", [{"epochs": 10}, {"steps": 2000}])
def test_a_batch_size_solve_starts_from_the_rate_secant(full_brackets, given):
    """helper-16: the batch-size search started from B = 1 without a guess and paid a full
    bracket for every failing probe (9 at K = 2, N 60000, σ 1.1, 10 epochs, ε 3); it is now
    seeded by the q secant on whole batches, whose points the solver reads again."""
    kw = dict(dataset_size=60000, sigma=1.1, epsilon=3, delta=1e-5, examples_per_user=2,
              **given)
    r = dpcalc.dpsgd(**kw)
    assert len(full_brackets) <= 3
    b = r.value
    assert isinstance(b, int) and 1 <= b <= 60000
    back = dpcalc.dpsgd(**{k: v for k, v in kw.items() if k != "epsilon"}, batch_size=b,
                        compare=False)
    assert back.value <= 3


@pytest.mark.parametrize("width, fulls", [(1e-5, 1), (9e-4, 2)])
def test_a_fail_next_to_a_surely_final_first_pass_is_decided_by_the_cheap_bound(width, fulls):
    # the other schemes' accountant takes the default run's rule (first_pass_sure): where
    # the full bracket next to a probe found its first pass final with room to spare, the
    # probe's cheap bound decides its fail; near the tolerance the full bracket still does
    from dpcalc.api._runs_pld import _Pld
    from dpcalc.api.dpsgd_runs import scheme_of

    acc = _Pld(scheme_of("fixed-batch", None, None), 1e-3)
    asked = []

    def engine(name, q, sigma, steps, arg, **kw):
        asked.append(name)
        return 1000.0 * q if name == "epsilon_upper" else (1000.0 * q * (1 - width),
                                                           1000.0 * q)

    acc._engine = engine
    acc.upper(0.00099, 1.0, 100, -10.0)
    acc.epsilon(0.00099, 1.0, 100, -10.0)             # the first pass final (cheap = full)
    assert acc._first_pass_final and asked.count("epsilon_bounds") == 1
    assert not acc.holds(0.00100001, 1.0, 100, 1.0, -10.0)
    assert asked.count("epsilon_bounds") == fulls
    assert acc.holds(0.000999, 1.0, 100, 1.0, -10.0)  # a pass: the cheap bound, as before
    assert asked.count("epsilon_bounds") == fulls
