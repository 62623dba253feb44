"""waza: evaluate AI agents.

The distribution installs several packages under this one namespace
(``waza.runner``, ``waza.protocol``, ``waza.adapters``, ``waza.graders``,
``waza.schemas``) so that nothing generic lands in site-packages.
"""

__version__ = "0.1.0"
