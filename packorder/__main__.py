"""`python -m packorder`: the same command line as the `packorder` script."""

from packorder.cli.launch import main

if __name__ == "__main__":
    main()
