"Value types of numcook.nupa.numbers against Python's exact Fraction and Decimal arithmetic."
from fractions import Fraction as Q

import pytest
from hypothesis import given, settings, strategies as st

from numcook.nupa.numbers import (Float, Fraction, Integer, Scientific, format_decimal, format_scientific,
                                  number_length, parse_number, representation_of, split_parts)
from number_oracle import as_float as oracle_float_text, as_sci as oracle_sci_text

FAST = settings(max_examples=150, deadline=None)






@FAST
@given(st.integers(0, 10**40), st.integers(0, 40))
def test_format_decimal_matches_decimal(m, k):
    assert format_decimal(m, k) == oracle_float_text(Q(m, 10**k))
    assert Float(m, k).value == Q(m, 10**k)
    assert Float.parse(format_decimal(m, k)).value == Q(m, 10**k)


@FAST
@given(st.integers(1, 10**40), st.integers(0, 40), st.one_of(st.none(), st.integers(2, 45)))
def test_format_scientific_matches_decimal(m, k, sig):
    s = format_scientific(m, k, sig=sig)
    assert s == oracle_sci_text(Q(m, 10**k), sig)
    sci = Scientific.parse(s)
    if sig is None: assert sci.value == Q(m, 10**k)
    else:
        assert len(sci.digits) == sig
        assert abs(sci.value - Q(m, 10**k)) <= Q(1, 2) * Q(10) ** (sci.exponent - sig + 1)


@FAST
@given(st.integers(0, 10**30), st.integers(1, 10**30))
def test_fraction_is_irreducible(n, d):
    f = Fraction(n, d)
    assert f.value == Q(n, d)
    assert str(f) == f"{Q(n, d).numerator}/{Q(n, d).denominator}"
    assert parse_number(str(f)) == f


@FAST
@given(st.integers(0, 10**30), st.text('0123456789', min_size=1, max_size=30))
def test_parts_and_length_of_floats(ip, dp):
    dp = dp.rstrip('0') or '0'
    s = f"{ip}.{dp}"
    assert representation_of(s) == 'float'
    assert split_parts(s) == (str(ip), dp)
    assert number_length(s) == max(len(str(ip)), len(dp))
    assert str(Float.parse(s)) == s


def test_paper_examples():
    assert str(Float.from_value(Q(9, 5))) == '1.8'
    assert str(Float.from_value(Scientific.parse('8.538e2').value)) == '853.8'
    assert str(Scientific.from_value(50400)) == '5.04e4'
    assert str(Scientific.from_value(Q(262534, 1000))) == '2.62534e2'
    assert str(Scientific.from_value(50194, sig=3)) == '5.02e4'
    assert str(Scientific.from_value(Q(65669, 1000), sig=2)) == '6.6e1'
    assert split_parts('1.5e8') == ('1', '5', '8') and number_length('12/7') == 2
    assert Integer.parse('1234567').length == 7


@pytest.mark.parametrize('bad,cls', [('1,234', Integer), ('12.', Float), ('1.50', None), ('12.5e3', Scientific),
                                     ('3/', Fraction), ('-4', Integer)])
def test_rejects_non_paper_text(bad, cls):
    if cls is None:  # '1.50' parses (values are exact) but is printed canonically
        assert str(Float.parse(bad)) == '1.5'; return
    with pytest.raises(ValueError): cls.parse(bad)


def test_one_significant_figure_is_refused():
    with pytest.raises(ValueError, match='>= 2'): format_scientific(5, 0, sig=1)


def test_not_a_finite_decimal():
    with pytest.raises(ValueError): Float.from_value(Q(1, 3))
