"""`python -m platpay`: the `platpay` command."""

from platpay.cli import main

main()
