"""Sphinx configuration of the zklock docs site (`make docs`, scripts/docs.sh).

The pages are this directory's Markdown (MyST): the overview, a page per
language, the guides, the reference pages, the protocol and the API
references; rustdoc and TypeDoc output is copied in beside the HTML by
scripts/docs.sh. The README is the repository's landing page and is not
part of the site; it links to these pages.
"""

from __future__ import annotations

import glob
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# The Python API page documents the package installed in the test venv
# (`make python-install`): its compiled module cannot be imported from source.
for site in glob.glob(os.path.join(ROOT, "target", "python-venv", "lib", "python3*", "site-packages")):
    sys.path.insert(0, site)

project = "zklock"
author = "the zklock authors"
copyright = "the zklock authors, Apache-2.0"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["requirements.txt"]
myst_heading_anchors = 3
html_theme = "alabaster"
html_title = "zklock"
html_copy_source = False
autodoc_member_order = "bysource"
# Google-style docstrings; "Attributes:" as fields, not a second description
# of what autodoc documents already.
napoleon_use_ivar = True
