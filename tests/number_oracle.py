"""Canonical number text computed independently of numcook, with Python's exact Decimal arithmetic."""
from decimal import Decimal, localcontext, ROUND_HALF_UP
from fractions import Fraction as Q


def as_float(q: Q) -> str:
    "Canonical float text of a finite decimal: trailing zeros dropped, one decimal digit kept."
    with localcontext() as ctx:
        ctx.prec = 3000
        s = format(Decimal(q.numerator) / Decimal(q.denominator), 'f')
    if '.' not in s: return s + '.0'
    s = s.rstrip('0')
    return s + '0' if s.endswith('.') else s


def as_sci(q: Q, sig=None) -> str:
    "Canonical scientific text `d.ddde<exp>`, rounded half up to `sig` significant figures when given."
    with localcontext() as ctx:
        ctx.prec = 3000
        d = Decimal(q.numerator) / Decimal(q.denominator)
        if sig is not None:
            ctx.prec, ctx.rounding = sig, ROUND_HALF_UP
            d = ctx.plus(d)
    _, digits, exp = d.as_tuple()
    ds = ''.join(map(str, digits))
    e = exp + len(ds) - 1
    ds = ds.rstrip('0') if sig is None else ds.ljust(sig, '0')
    return ds[0] + '.' + (ds[1:] or '0') + f'e{e}'
