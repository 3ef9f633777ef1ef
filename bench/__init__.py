"""``nox -s bench``: build cost of the site and compute speed of this machine (``bench.run``)."""
