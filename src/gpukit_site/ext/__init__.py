"""The site's Sphinx extensions, listed in ``conf/conf.py``'s ``extensions``."""
