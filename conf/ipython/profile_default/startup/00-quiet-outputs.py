# Executed pages show an error as its type and message only: no long traceback and no path
# of the build machine (its home, virtual environment or site-packages) reaches the site.
get_ipython().run_line_magic("xmode", "Minimal")  # noqa: F821 (IPython injects get_ipython)
# torch.profiler (Kineto) logs "profiler_start" lines with a date and pids to stderr, which a
# page would show as an output that changes with every build; level 6 keeps its errors only.
__import__("os").environ.setdefault("KINETO_LOG_LEVEL", "6")  # leaves no name in the notebook
