"""Results leaving r2med in formats the field already reads (one module per format).

* :mod:`r2med.export.mteb` -- MTEB's results layout, written with the ``mteb`` package's own classes
  (optional extra ``r2med[mteb]``).
"""
