"""Build the compiled parts of the per-page path (see ``scrapy_templates/compiled.py``).

They are optional: when they cannot be built (no C compiler), the package installs without
them and runs the pure-Python code, which gives the same results more slowly.
"""

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(
        f"scrapy_templates.{name}",
        [f"scrapy_templates/{name.replace('.', '/')}.pyx"],
        include_dirs=lxml.get_include(),
        optional=True,
    )
    for name in ("_walk", "_fingerprint", "templates._offsets", "urlnorm._pagetext")
]

compiled = cythonize(extensions, language_level=3, quiet=True)
for extension in compiled:
    extension.optional = True  # cythonize() makes new extensions without the flag

setup(ext_modules=compiled)
