"""``python -m bdpd_jax.host.server [OPTIONS]`` is ``bdpd serve [OPTIONS]`` (the process
settings first: ``cli.main``)."""

import sys

from bdpd_jax.cli import main

main(["serve", *sys.argv[1:]])
