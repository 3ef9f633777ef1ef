# Executed pages show a warning as its category and message only. Python's default format
# starts with the file the warning came from: a path of the build machine (site-packages, or
# /tmp/ipykernel_<pid>/<n>.py for a cell) that also changes from one build to the next.
# A warning also lands in the output where it happened: what the cell printed before it is
# sent first. (The kernel sends stdout and stderr on timers of their own, so without this a
# warning would come before or after the cell's printed lines depending on the machine's speed.)
import warnings


def _show_in_order(message, category, filename, lineno, file=None, line=None):
    # Imported here: this file runs in the notebook's namespace, which the page may change.
    import sys

    sys.stdout.flush()
    stream = sys.stderr if file is None else file
    stream.write(f"{category.__name__}: {message}\n")
    stream.flush()


warnings.showwarning = _show_in_order
del warnings, _show_in_order  # keep the notebook's namespace clean
