"""sweep: experiments on the scale (= 1/temperature) of contrastive sentence-embedding losses."""

__version__ = "0.1.0"
