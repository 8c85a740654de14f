"""`python -m platpay`: the `platpay` command."""

from platpay.cli import main

if __name__ == "__main__":  # imported (by tools that walk the package), it runs nothing
    main()
