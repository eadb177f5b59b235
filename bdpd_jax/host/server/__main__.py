"""``python -m bdpd_jax.host.server [OPTIONS]`` is ``bdpd serve [OPTIONS]``."""

import sys

from bdpd_jax.cli import app

app(["serve", *sys.argv[1:]])
