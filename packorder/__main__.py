"""`python -m packorder`: the same command line as the `packorder` script."""

from packorder.cli import main

if __name__ == "__main__":
    main(prog_name="packorder")
