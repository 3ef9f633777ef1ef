# Executed pages show an error as its type and message only: no long traceback and no path
# of the build machine (its home, virtual environment or site-packages) reaches the site.
get_ipython().run_line_magic("xmode", "Minimal")  # noqa: F821 (IPython injects get_ipython)
