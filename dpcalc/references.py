"""The single bibliography of dpcalc.

Every formula in ``dpcalc.relations`` cites one of these keys (a test checks it), with a
locator such as ``[BW18, Thm 8]`` on the line that implements it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ref:
    """One bibliography entry."""

    authors: str
    year: int
    title: str
    where: str

    @property
    def short(self) -> str:
        """Author-year form used in human output, e.g. "Balle & Wang 2018", "Abadi et al. 2016"."""
        names = self.authors.replace(" & ", ", ").split(", ")
        lead = self.authors if len(names) <= 3 else f"{names[0]} et al."
        return f"{lead} {self.year}"


REFS: dict[str, Ref] = {
    "BW18": Ref("Balle & Wang", 2018,
                "Improving the Gaussian Mechanism for Differential Privacy: Analytical "
                "Calibration and Optimal Denoising", "ICML 2018, arXiv:1805.06530v2"),
    "DR14": Ref("Dwork & Roth", 2014, "The Algorithmic Foundations of Differential Privacy",
                "Found. Trends Theor. Comput. Sci. 9(3-4)"),
    "DMNS06": Ref("Dwork, McSherry, Nissim & Smith", 2006,
                  "Calibrating Noise to Sensitivity in Private Data Analysis", "TCC 2006"),
    "DRV10": Ref("Dwork, Rothblum & Vadhan", 2010, "Boosting and Differential Privacy",
                 "FOCS 2010"),
    "KOV15": Ref("Kairouz, Oh & Viswanath", 2015,
                 "The Composition Theorem for Differential Privacy",
                 "ICML 2015, arXiv:1311.0776v4"),
    "MV16": Ref("Murtagh & Vadhan", 2016,
                "The Complexity of Computing the Optimal Composition of Differential Privacy",
                "TCC 2016, arXiv:1507.03113"),
    "BBG18": Ref("Balle, Barthe & Gaboardi", 2018,
                 "Privacy Amplification by Subsampling: Tight Analyses via Couplings and "
                 "Divergences", "NeurIPS 2018, arXiv:1807.01647v2"),
    "Mir17": Ref("Mironov", 2017, "Renyi Differential Privacy", "CSF 2017, arXiv:1702.07476v3"),
    "MTZ19": Ref("Mironov, Talwar & Zhang", 2019,
                 "Renyi Differential Privacy of the Sampled Gaussian Mechanism",
                 "arXiv:1908.10530v1"),
    "ZW19": Ref("Zhu & Wang", 2019,
                "Poisson Subsampled Renyi Differential Privacy", "ICML 2019"),
    "WBK19": Ref("Wang, Balle & Kasiviswanathan", 2019,
                 "Subsampled Renyi Differential Privacy and Analytical Moments Accountant",
                 "AISTATS 2019, arXiv:1808.00087v2"),
    "CKS20": Ref("Canonne, Kamath & Steinke", 2020,
                 "The Discrete Gaussian for Differential Privacy",
                 "NeurIPS 2020, arXiv:2004.00010v4"),
    "ALCKS21": Ref("Asoodeh, Liao, Calmon, Kosut & Sankar", 2021,
                   "A Better Bound Gives a Hundred Rounds: Enhanced Privacy Guarantees via "
                   "f-Divergences", "ISIT 2020, arXiv:2001.05990"),
    "BS16": Ref("Bun & Steinke", 2016,
                "Concentrated Differential Privacy: Simplifications, Extensions, and Lower "
                "Bounds", "TCC 2016, arXiv:1605.02065v1"),
    "ACGMMTZ16": Ref("Abadi, Chu, Goodfellow, McMahan, Mironov, Talwar & Zhang", 2016,
                     "Deep Learning with Differential Privacy", "CCS 2016, arXiv:1607.00133v2"),
    "MM18": Ref("Meiser & Mohammadi", 2018,
                "Tight on Budget? Tight Bounds for r-Fold Approximate Differential Privacy",
                "CCS 2018"),
    "KJH20": Ref("Koskela, Jalko & Honkela", 2020,
                 "Computing Tight Differential Privacy Guarantees Using FFT",
                 "AISTATS 2020, arXiv:1906.03049"),
    "GLW21": Ref("Gopi, Lee & Wutschitz", 2021, "Numerical Composition of Differential Privacy",
                 "NeurIPS 2021, arXiv:2106.02848v2"),
    "DGKKM22": Ref("Doroshenko, Ghazi, Kamath, Kumar & Manurangsi", 2022,
                   "Connect the Dots: Tighter Discrete Approximations of Privacy Loss "
                   "Distributions", "PETS 2022, arXiv:2207.04380"),
    "ZDW22": Ref("Zhu, Dong & Wang", 2022, "Optimal Accountant in Differential Privacy via "
                 "Characteristic Function", "AISTATS 2022, arXiv:2106.08567v3"),
    "DRS19": Ref("Dong, Roth & Su", 2019, "Gaussian Differential Privacy",
                 "JRSS-B 2022, arXiv:1905.02383v3"),
    "LRKS24": Ref("Lebeda, Regehr, Kamath & Steinke", 2024,
                  "Avoiding Pitfalls for Privacy Accounting of Subsampled Mechanisms under "
                  "Composition", "arXiv:2405.20769"),
    "SMG24": Ref("Schuchardt, Mihalache, Gutbrod & Günnemann", 2024,
                 "Unified Mechanism-Specific Amplification by Subsampling and Group Privacy "
                 "Amplification", "NeurIPS 2024, arXiv:2403.04867"),
    "Chua24": Ref("Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang", 2024,
                  "How Private are DP-SGD Implementations?", "ICML 2024, arXiv:2403.17673"),
    "ChuaS24": Ref("Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang", 2024,
                   "Scalable DP-SGD: Shuffling vs. Poisson Subsampling",
                   "NeurIPS 2024, arXiv:2411.04205"),
    "vEH14": Ref("van Erven & Harremoes", 2014,
                 "Renyi Divergence and Kullback-Leibler Divergence",
                 "IEEE Trans. Inf. Theory 60(7), arXiv:1206.2459"),
    "Vad17": Ref("Vadhan", 2017, "The Complexity of Differential Privacy",
                 "Tutorials on the Foundations of Cryptography, Springer"),
    "Loa00": Ref("Loader", 2000, "Fast and Accurate Computation of Binomial Probabilities",
                 "technical note, Bell Labs"),
    "Hig02": Ref("Higham", 2002, "Accuracy and Stability of Numerical Algorithms (2nd ed.)",
                 "SIAM; Thm 24.2 (FFT rounding error)"),
    "GS66": Ref("Gentleman & Sande", 1966, "Fast Fourier Transforms — for Fun and Profit",
                "AFIPS Fall Joint Computer Conference 29; mixed-radix FFT rounding error, "
                "as restated in Schatzman, SIAM J. Sci. Comput. 17(5), 1996, eq. (1)"),
    "Che19": Ref("Chen (Yuxuan)", 2019, "A Tail of Two Densities",
                 "blog post, 2019-03-13; shared/seeds/a-tail-of-two-densities.txt"),
    "UBC": Ref("UBC wiki", 2019, "Differential Privacy (course notes)",
               "shared/seeds/ubc-wiki-differential-privacy.txt"),
}
