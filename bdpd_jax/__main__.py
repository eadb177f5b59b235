"""`python -m bdpd_jax`: the `bdpd` command line (the process settings first: ``cli.main``)."""

from .cli import main

main()
