"""What the tests share: repositories built with Git, packs built by hand, packorder and Git run
as a user runs them."""
