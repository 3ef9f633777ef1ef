"""The site's own code: its Sphinx extensions and the tools that build and check it.

Not part of gpukit's API: the site's machinery, which works from the repository it lives in
(``pip install -e .``, as nox does; or ``PYTHONPATH=src``, as the GPU check on a bare Python).

- :mod:`gpukit_site.ext`: the Sphinx extensions that ``conf/conf.py`` loads;
- :mod:`~gpukit_site.languages` and :mod:`~gpukit_site.kernel_env`: the site's languages and
  its kernels' environment (standard library only: nox reads them before installing anything);
- the tools, each run as ``python -m gpukit_site.<tool>``: :mod:`~gpukit_site.parity` (the two
  languages match), :mod:`~gpukit_site.zh_style` (Chinese typography and terms),
  :mod:`~gpukit_site.recordings` (other machines' recorded runs), :mod:`~gpukit_site.budgets`
  (the pages' time budgets), :mod:`~gpukit_site.lighthouse` (Lighthouse's scores) and
  :mod:`~gpukit_site.gpu_check` (what works on a GPU machine, in minutes).

``conf/`` keeps the Sphinx configuration, the templates, the static files, the Chinese catalog
and the kernels' IPython profile.
"""
