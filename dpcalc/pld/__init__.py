"""The certified PLD engine: composes the privacy loss distributions of dominating pairs.

It knows nothing of any mechanism: a mechanism enters through the DominatingPair interface
(dpcalc.pld.pair); the pairs live in dpcalc.mechanisms.  References: [KJH20], [DGKKM22].
"""
