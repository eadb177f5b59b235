"""`python -m bdpd_jax`: the `bdpd` command line."""

from .cli import main

main()
